#include "results/junit.hpp"

#include "matrix/input.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

namespace cts::junit {

const char* status_name(Status s) {
  switch (s) {
    case Status::passed:
      return "passed";
    case Status::failed:
      return "failed";
    case Status::error:
      return "error";
    case Status::skipped:
      return "skipped";
  }
  return "error";
}

std::optional<Status> parse_status(const std::string& text) {
  for (Status s : {Status::passed, Status::failed, Status::error, Status::skipped})
    if (text == status_name(s)) return s;
  return std::nullopt;
}

namespace {

// A testcase's time attribute: seconds, finite and not negative (absent: 0). Anything else is a
// file that cannot be read as JUnit, named with its line, never a time taken on trust.
double to_seconds(const std::string& s, const std::string& where) {
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || !std::isfinite(d) || d < 0 || d > 1e9)
    throw xml::XmlError(where + ": time '" + to_valid_utf8(s.substr(0, 40)) +
                        "' is not a number of seconds (0 to 1e9)");
  return d;
}

// The merged file keeps a case's properties in its <system-out> (a testcase holds no <properties>
// in the JUnit schema CI servers validate against), one "name=value" line each under kPropertiesHead.
constexpr const char* kPropertiesHead = "[gpucts properties]";
// A <system-out> of properties holds many values (one per rank and case): each is cut at
// kMaxReportText, and the whole at this, far below what a reader refuses.
constexpr std::size_t kMaxSystemOut = 16 * kMaxReportText;

void read_property_lines(const std::string& text, std::map<std::string, std::string>& props) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kPropertiesHead) return;
  while (std::getline(in, line))
    if (auto eq = line.find('='); eq != std::string::npos && eq > 0)
      props[line.substr(0, eq)] = line.substr(eq + 1);
}

void read_suite(const xml::Element& ts, const std::string& origin, const std::string& binary,
                std::vector<Case>& out) {
  std::string bin = ts.attr_or("package", binary);
  if (const auto* props = ts.child("properties"))  // files written before the package attribute
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
    // The merged file qualifies each classname with its binary ("gpucts_mp_collectives_w2.AllReduce")
    // so that CI servers keep cases of different binaries apart; the case's suite is the rest.
    if (!bin.empty() && c.suite.size() > bin.size() && c.suite.compare(0, bin.size() + 1, bin + ".") == 0)
      c.suite.erase(0, bin.size() + 1);
    c.time_s = to_seconds(tc.attr_or("time", "0"), origin + ":" + std::to_string(tc.line));
    if (const auto* props = tc.child("properties"))
      for (const auto* p : props->children_named("property"))
        if (auto n = p->attr("name")) c.properties[*n] = p->attr_or("value", "");
    if (const auto* out = tc.child("system-out")) read_property_lines(out->text, c.properties);
    const xml::Element* f = tc.child("failure");
    const xml::Element* e = tc.child("error");
    const xml::Element* s = tc.child("skipped");
    if (f || e) {
      const auto* x = f ? f : e;
      c.status = f ? Status::failed : Status::error;
      c.detail = x->text.empty() ? x->attr_or("message", "") : x->text;
      c.message = one_line(x->attr_or("message", c.detail));
      if (c.message.empty()) c.message = f ? "failed (no message)" : "error (no message)";
    } else if (s || tc.attr_or("result", "") == "skipped") {
      c.status = Status::skipped;
      std::string why = s ? s->attr_or("message", s->text) : "";
      c.detail = s && s->attr_or("type", "") == kWaivedType && !s->text.empty() ? s->text : why;
      // gtest prefixes the reason with "file:line\n"; the reason alone groups across files.
      if (auto nl = why.find('\n');
          nl != std::string::npos && why.find(' ') > nl && why.rfind(':', nl) != std::string::npos)
        why = why.substr(nl + 1);
      c.message = one_line(why.empty() ? "skipped (no reason given)" : why);
    } else {
      c.status = Status::passed;
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
    throw xml::XmlError(origin + ":" + std::to_string(root.line) + ": root element <" +
                        to_valid_utf8(root.name) + "> is not JUnit (<testsuites> or <testsuite>)");
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
    if (x.status == Status::passed)
      ++c.passed;
    else if (x.status == Status::failed)
      ++c.failed;
    else if (x.status == Status::error)
      ++c.errors;
    else
      ++c.skipped;
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

std::string time_text(double seconds) {
  if (!(seconds > 0) || seconds > 1e12) return "0";  // NaN, negative, absurd: no time
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", seconds);  // never an exponent
  return buf;
}

std::string failure_class(const Case& c) {
  if (std::string p = c.property("gpucts.failure_class"); !p.empty()) return p;
  std::string low = c.detail.empty() ? c.message : c.detail;
  std::transform(low.begin(), low.end(), low.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  auto has = [&](const char* needle) { return low.find(needle) != std::string::npos; };
  // The prefixes the harness writes (fixtures/reliability/failure_class.hpp), then the words of the
  // verification and of the journal reader for a rank that went.
  if (has("resource: ")) return "resource";
  if (has("timeout") || has("at the deadline")) return "timeout";
  if (has("element(s) wrong") || has("elements wrong") || has("wrong elements") || has("came out wrong"))
    return "corruption";
  if (has("killed") || has("sigsegv") || has("sigabrt") || has("sigbus") || has("signal") ||
      has("exited during") || has("exit() during") || has("vanished") || has("crash"))
    return "crash";
  if (has("nccl")) return "nccl";
  if (has("cuda")) return "cuda";
  return c.status == Status::error ? "error" : "assertion";
}

namespace {

std::string counts_attributes(const std::vector<const Case*>& v, bool with_skipped) {
  double t = 0;
  Counts n;
  for (const auto* c : v) {
    t += c->time_s > 0 ? c->time_s : 0;
    if (c->status == Status::passed)
      ++n.passed;
    else if (c->status == Status::failed)
      ++n.failed;
    else if (c->status == Status::error)
      ++n.errors;
    else
      ++n.skipped;
  }
  std::ostringstream o;
  o << " tests=\"" << n.total() << "\" failures=\"" << n.failed << "\" errors=\"" << n.errors << "\"";
  if (with_skipped) o << " skipped=\"" << n.skipped << "\"";
  o << " time=\"" << time_text(t) << "\"";
  return o.str();
}

// name=value lines under kPropertiesHead, the <system-out> form of properties.
std::string property_lines(const PropertyMap& props) {
  std::string out = std::string(kPropertiesHead) + "\n";
  for (const auto& [pk, pv] : props) {
    std::string flat = cap_report_text(pv);  // one line per property
    std::replace(flat.begin(), flat.end(), '\n', ' ');
    std::replace(flat.begin(), flat.end(), '\r', ' ');
    out += cap_report_name(pk) + "=" + flat + "\n";
  }
  // Many ranks' values together stay within what a reader takes for one text node.
  return cap_report_text(out, kMaxSystemOut);
}

void write_case(std::ostringstream& o, const Case& c, const std::string& classname) {
  o << "    <testcase classname=\"" << xml::escape(cap_report_name(classname)) << "\" name=\""
    << xml::escape(cap_report_name(c.name)) << "\" time=\"" << time_text(c.time_s) << "\"";
  if (c.status == Status::passed && c.properties.empty()) {
    o << "/>\n";
    return;
  }
  o << ">\n";
  const bool waived = !c.property("gpucts.waived").empty();
  if (c.status != Status::passed) {
    const char* tag = c.status == Status::failed  ? "failure"
                      : c.status == Status::error ? "error"
                                                  : "skipped";
    // Every text cut to kMaxReportText before it is read further: a 20 MB message stays readable.
    const std::string detail = cap_report_text(c.detail);
    const std::string message =
        cap_report_text(failing(c.status) && !detail.empty() ? cause(detail) : std::string());
    o << "      <" << tag;
    if (waived)
      o << " type=\"" << kWaivedType << "\"";
    else if (failing(c.status))
      o << " type=\"" << xml::escape(failure_class(c)) << "\"";
    o << " message=\"" << xml::escape(message.empty() ? cap_report_text(c.message) : message) << "\"";
    if (detail.empty() || (c.status == Status::skipped && !waived))
      o << "/>\n";
    else
      o << ">" << xml::escape(detail) << "</" << tag << ">\n";
  }
  if (!c.properties.empty())
    o << "      <system-out>" << xml::escape(property_lines(c.properties)) << "</system-out>\n";
  o << "    </testcase>\n";
}

}  // namespace

std::string write(const std::vector<Case>& cases, const std::string& name,
                  const PropertyMap& suite_properties,
                  const std::map<std::string, PropertyMap>& binary_properties) {
  // Group by (binary, suite) keeping first-seen order.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<const Case*>> groups;
  for (const auto& c : cases) {
    auto k = std::make_pair(c.binary, c.suite);
    if (!groups.count(k)) order.push_back(k);
    groups[k].push_back(&c);
  }
  std::vector<const Case*> all;
  for (const auto& c : cases) all.push_back(&c);
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"" << xml::escape(cap_report_name(name)) << "\"" << counts_attributes(all, false)
    << ">\n";
  // The stack's properties once, in the first testsuite: readers that gather every testsuite's
  // properties into one table (xunitparser) refuse a name twice. The binary is the testsuite's
  // package; a binary's own properties go to the <system-out> of its testsuites.
  bool stack_written = suite_properties.empty();
  auto stack_properties = [&]() {
    o << "    <properties>";
    for (const auto& [pk, pv] : suite_properties)
      o << "<property name=\"" << xml::escape(cap_report_name(pk)) << "\" value=\""
        << xml::escape(cap_report_text(pv)) << "\"/>";
    o << "</properties>\n";
    stack_written = true;
  };
  if (order.empty() && !stack_written) {
    o << "  <testsuite name=\"" << xml::escape(cap_report_name(name)) << "\"" << counts_attributes({}, true)
      << ">\n";
    stack_properties();
    o << "  </testsuite>\n";
  }
  for (const auto& k : order) {
    const auto& v = groups[k];
    const std::string classname = k.first.empty() ? k.second : k.first + "." + k.second;
    o << "  <testsuite name=\"" << xml::escape(cap_report_name(classname)) << "\"";
    if (!k.first.empty()) o << " package=\"" << xml::escape(cap_report_name(k.first)) << "\"";
    o << counts_attributes(v, true) << ">\n";
    if (!stack_written) stack_properties();
    for (const auto* c : v) write_case(o, *c, classname);
    if (auto it = binary_properties.find(k.first); it != binary_properties.end() && !it->second.empty())
      o << "    <system-out>" << xml::escape(property_lines(it->second)) << "</system-out>\n";
    o << "  </testsuite>\n";
  }
  o << "</testsuites>\n";
  return o.str();
}

}  // namespace cts::junit

namespace cts::junit {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// Length of a leading "path/file.cpp:123" (optionally followed by ':'), 0 when there is none. The
// token must look like a file (a '/' or '.') so that "rank 0:" or "index 7:" are never taken.
size_t location_prefix(const std::string& s) {
  size_t colon = s.find(':');
  if (colon == 0 || colon == std::string::npos) return 0;
  std::string file = s.substr(0, colon);
  if (file.find_first_of(" \t") != std::string::npos || file.find_first_of("/.") == std::string::npos)
    return 0;
  size_t i = colon + 1, digits = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == digits) return 0;
  if (i < s.size() && s[i] == ':') ++i;
  if (i < s.size() && s[i] != ' ' && s[i] != '\t') return 0;
  return i;
}

std::string strip_location(const std::string& line) { return trim(line.substr(location_prefix(line))); }

}  // namespace

std::string clean_message(const std::string& text) {
  std::vector<std::string> kept, all;
  bool in_equality = false;  // under "Expected equality of these values:": indented expressions
  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    std::string line = strip_location(raw);
    if (line.empty()) continue;
    all.push_back(line);
    bool indented = !raw.empty() && (raw[0] == ' ' || raw[0] == '\t');
    if (in_equality && indented) continue;
    in_equality = false;
    if (starts_with(line, "Expected equality of these values:")) {
      in_equality = true;
      continue;
    }
    if (line == "Failed" || starts_with(line, "Which is:") || starts_with(line, "Value of:") ||
        starts_with(line, "Actual:") || starts_with(line, "Expected:"))
      continue;
    // Already on one line (the merged junit.xml's message attribute): the boilerplate cannot be
    // told apart from the sentences any more, only the location and a bare "Failed" go.
    if (starts_with(line, "Failed ")) line = trim(line.substr(7));
    kept.push_back(line);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& l : v) s += (s.empty() ? "" : " ") + l;
    return one_line(s);
  };
  return kept.empty() ? join(all) : join(kept);
}

std::string cause(const std::string& text) {
  std::string defects, rest;
  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    const std::string line = strip_location(raw);
    if (starts_with(line, "known NCCL defect"))
      defects += (defects.empty() ? "" : " ") + line;
    else
      rest += raw + "\n";
  }
  const std::string cleaned = clean_message(rest);
  if (defects.empty()) return cleaned;
  return one_line(cleaned.empty() ? defects : defects + " -- " + cleaned);
}

std::string message_key(const std::string& cleaned) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  std::string out;
  const std::string& s = cleaned;
  for (size_t i = 0; i < s.size();) {
    bool word_start = i == 0 || !(alnum(s[i - 1]) || s[i - 1] == '_');
    size_t j = i;
    if (word_start && (s[j] == '-' || s[j] == '+') && j + 1 < s.size()) ++j;  // a sign belongs to the number
    if (word_start && s.size() - j >= 3) {
      std::string w = s.substr(j, 3);
      for (auto& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if ((w == "nan" || w == "inf") && (j + 3 == s.size() || !alnum(s[j + 3]))) {
        out += '#';
        i = j + 3;
        continue;
      }
    }
    if (word_start && j < s.size() && digit(s[j])) {
      while (j < s.size() && digit(s[j])) ++j;
      while (j + 1 < s.size() && s[j] == '.' && digit(s[j + 1]))  // 1.5, and versions: 2.11.0
        for (++j; j < s.size() && digit(s[j]);) ++j;
      if (j + 1 < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && digit(s[k])) {
          while (k < s.size() && digit(s[k])) ++k;
          j = k;
        }
      }
      // Only a number that stands alone: digits inside a name (f8e4m3, sm_90, 64M) stay.
      if (j < s.size() && (alnum(s[j]) || s[j] == '_')) {
        out.append(s, i, j - i);
        i = j;
        continue;
      }
      out += '#';
      i = j;
      continue;
    }
    out += s[i++];
  }
  return out;
}

}  // namespace cts::junit
