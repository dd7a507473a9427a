#include "junit.hpp"

#include <cstdlib>
#include <map>
#include <sstream>

namespace cts::junit {

namespace {

double to_seconds(const std::string& s) {
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  return (s.empty() || *end) ? 0.0 : d;
}

void read_suite(const xml::Element& ts, const std::string& origin, const std::string& binary, std::vector<Case>& out) {
  std::string bin = binary;
  if (const auto* props = ts.child("properties"))
    for (const auto* p : props->children_named("property"))
      if (p->attr_or("name", "") == "gpucts.binary") bin = p->attr_or("value", bin);
  for (const auto& tc : ts.children) {
    if (tc.name == "testsuite") {  // nested suites (some producers)
      read_suite(tc, origin, bin, out);
      continue;
    }
    if (tc.name != "testcase") continue;
    // gtest lists DISABLED_ cases as not run; they are not part of the run (gtest counts them apart).
    if (tc.attr_or("status", "") == "notrun") continue;
    Case c;
    c.binary = bin;
    auto name = tc.attr("name");
    if (!name) throw xml::XmlError(origin + ":" + std::to_string(tc.line) + ": <testcase> without a name");
    c.name = *name;
    c.suite = tc.attr_or("classname", ts.attr_or("name", ""));
    c.time_s = to_seconds(tc.attr_or("time", "0"));
    const xml::Element* f = tc.child("failure");
    const xml::Element* e = tc.child("error");
    const xml::Element* s = tc.child("skipped");
    if (f || e) {
      const auto* x = f ? f : e;
      c.status = f ? "failed" : "error";
      c.detail = x->text.empty() ? x->attr_or("message", "") : x->text;
      c.message = one_line(x->attr_or("message", c.detail));
      if (c.message.empty()) c.message = f ? "failed (no message)" : "error (no message)";
    } else if (s || tc.attr_or("result", "") == "skipped") {
      c.status = "skipped";
      std::string why = s ? s->attr_or("message", s->text) : "";
      c.detail = why;
      // gtest prefixes the reason with "file:line\n"; the reason alone groups across files.
      if (auto nl = why.find('\n'); nl != std::string::npos && why.find(' ') > nl &&
                                     why.rfind(':', nl) != std::string::npos)
        why = why.substr(nl + 1);
      c.message = one_line(why.empty() ? "skipped (no reason given)" : why);
    } else {
      c.status = "passed";
    }
    out.push_back(std::move(c));
  }
}

}  // namespace

std::vector<Case> read(const xml::Element& root, const std::string& origin, const std::string& binary) {
  std::vector<Case> out;
  if (root.name == "testsuites") {
    for (const auto* ts : root.children_named("testsuite")) read_suite(*ts, origin, binary, out);
  } else if (root.name == "testsuite") {
    read_suite(root, origin, binary, out);
  } else {
    throw xml::XmlError(origin + ":" + std::to_string(root.line) + ": root element <" + root.name +
                        "> is not JUnit (<testsuites> or <testsuite>)");
  }
  return out;
}

std::vector<Case> read_file(const std::string& path, const std::string& binary) {
  return read(xml::parse_file(path), path, binary);
}

std::map<std::string, std::string> properties(const xml::Element& root) {
  std::map<std::string, std::string> p;
  for (const auto& [k, v] : root.attributes)
    if (k.rfind("gpucts.", 0) == 0) p[k] = v;
  return p;
}

Counts count(const std::vector<Case>& cases) {
  Counts c;
  for (const auto& x : cases) {
    if (x.status == "passed") ++c.passed;
    else if (x.status == "failed") ++c.failed;
    else if (x.status == "error") ++c.errors;
    else ++c.skipped;
  }
  return c;
}

std::string one_line(const std::string& text) {
  std::string out;
  bool space = false;
  for (char ch : text) {
    if (ch == '\n' || ch == '\r' || ch == '\t' || ch == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += ch;
    if (out.size() >= 300) {
      out += "...";
      break;
    }
  }
  return out;
}

std::string write(const std::vector<Case>& cases, const std::string& name) {
  // Group by (binary, suite) keeping first-seen order.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<const Case*>> groups;
  for (const auto& c : cases) {
    auto k = std::make_pair(c.binary, c.suite);
    if (!groups.count(k)) order.push_back(k);
    groups[k].push_back(&c);
  }
  auto attrs = [](const std::vector<const Case*>& v) {
    Counts n;
    double t = 0;
    for (const auto* c : v) {
      t += c->time_s;
      if (c->status == "passed") ++n.passed;
      else if (c->status == "failed") ++n.failed;
      else if (c->status == "error") ++n.errors;
      else ++n.skipped;
    }
    std::ostringstream o;
    o << " tests=\"" << n.total() << "\" failures=\"" << n.failed << "\" errors=\"" << n.errors << "\" skipped=\""
      << n.skipped << "\" time=\"" << t << "\"";
    return o.str();
  };
  std::vector<const Case*> all;
  for (const auto& c : cases) all.push_back(&c);
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"" << xml::escape(name) << "\"" << attrs(all) << ">\n";
  for (const auto& k : order) {
    const auto& v = groups[k];
    o << "  <testsuite name=\"" << xml::escape(k.second) << "\"" << attrs(v) << ">\n";
    o << "    <properties><property name=\"gpucts.binary\" value=\"" << xml::escape(k.first) << "\"/></properties>\n";
    for (const auto* c : v) {
      o << "    <testcase classname=\"" << xml::escape(c->suite) << "\" name=\"" << xml::escape(c->name)
        << "\" time=\"" << c->time_s << "\"";
      if (c->status == "passed") {
        o << "/>\n";
        continue;
      }
      o << ">\n";
      const char* tag = c->status == "failed" ? "failure" : c->status == "error" ? "error" : "skipped";
      o << "      <" << tag << " message=\"" << xml::escape(c->message) << "\"";
      if (c->detail.empty() || c->status == "skipped") {
        o << "/>\n";
      } else {
        o << ">" << xml::escape(c->detail) << "</" << tag << ">\n";
      }
      o << "    </testcase>\n";
    }
    o << "  </testsuite>\n";
  }
  o << "</testsuites>\n";
  return o.str();
}

}  // namespace cts::junit
