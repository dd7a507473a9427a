#include "report/campaign.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "matrix/nccl_support.hpp"
#include "report/verdict.hpp"
#include "results/junit.hpp"
#include "results/text_format.hpp"
#include "results/xml.hpp"

namespace fs = std::filesystem;

namespace cts::campaign {
namespace {

constexpr std::size_t kMaxRows = 400;  // per table in Markdown/HTML; campaign.json has every row

std::string fmt(double v, const char* f = "%.1f") { return format_number(v, f); }

// Names of nccl_features.csv rows of one kind ("dtype", "op").
std::set<std::string> feature_names(const Matrix& m, const std::string& kind) {
  std::set<std::string> s;
  for (const auto& f : m.nccl_features)
    if (f.kind == kind) s.insert(f.name);
  return s;
}

// The version a bundle ran: the NCCL runtime of its first fingerprint that has one.
std::optional<Version> bundle_nccl(const bundle::Bundle& b, std::string* library) {
  for (const auto& [file, j] : b.fingerprints) {
    if (!j.is_object() || !j.contains("nccl") || !j["nccl"].is_object()) continue;
    const auto& n = j["nccl"];
    if (library && n.contains("library") && n["library"].is_string())
      *library = n["library"].get<std::string>();
    if (n.contains("runtime") && n["runtime"].is_string())
      if (auto v = Version::try_parse(n["runtime"].get<std::string>(), VersionKind::Nccl)) return v;
  }
  return std::nullopt;
}

// Exported NCCL functions as the fingerprint recorded them ("nccl_symbols"), empty when absent.
std::map<std::string, bool> bundle_symbols(const bundle::Bundle& b) {
  std::map<std::string, bool> out;
  for (const auto& [file, j] : b.fingerprints)
    if (j.is_object() && j.contains("nccl_symbols") && j["nccl_symbols"].is_object()) {
      for (auto it = j["nccl_symbols"].begin(); it != j["nccl_symbols"].end(); ++it)
        if (it->is_boolean()) out[it.key()] = it->get<bool>();
      break;
    }
  return out;
}

// Every finding object of a check.json, wherever its "findings" arrays sit.
void collect_findings(const nlohmann::json& j, std::vector<nlohmann::json>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "findings" && it->is_array()) {
        for (const auto& f : *it)
          if (f.is_object()) out.push_back(f);
      } else {
        collect_findings(*it, out);
      }
    }
  } else if (j.is_array()) {
    for (const auto& x : j) collect_findings(x, out);
  }
}

std::string str_field(const nlohmann::json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
}

// Defect ids of nccl_defects.csv ("nccl-1950", "nccl-2.30.3-symk-ll-unaligned") named by a
// comma-separated property value or a finding's text.
std::vector<std::string> defect_ids(const std::string& text) {
  static const std::regex id(R"(\bnccl-[0-9][0-9A-Za-z.\-]*[0-9A-Za-z])");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), id); it != std::sregex_iterator(); ++it)
    if (std::find(out.begin(), out.end(), it->str()) == out.end()) out.push_back(it->str());
  return out;
}

const std::map<std::string, std::string>* props_of(const Release& r, const std::string& key) {
  auto it = r.properties.find(key);
  return it == r.properties.end() ? nullptr : &it->second;
}

std::string prop(const Release& r, const std::string& key, const std::string& name) {
  const auto* p = props_of(r, key);
  if (!p) return "";
  auto it = p->find(name);
  return it == p->end() ? "" : it->second;
}

std::string label(const Release& r) { return r.version.release_str(); }

}  // namespace

std::string status_class(junit::Status s) {
  if (s == junit::Status::passed) return "pass";
  if (junit::failing(s)) return "fail";
  return "skip";
}

CaseAxes case_axes(const junit::Case& k) {
  if (auto recorded = axes_from_properties(k.properties)) return *recorded;
  // An older bundle: the name says dtype, op and world ("bf16_avg_1048577_outofplace_w1").
  static const std::set<std::string> dtypes = feature_names(builtin_matrix(), "dtype");
  static const std::set<std::string> ops = feature_names(builtin_matrix(), "op");
  CaseAxes a;
  std::vector<std::string> tok;
  std::stringstream ss(k.name);
  for (std::string t; std::getline(ss, t, '_');) tok.push_back(t);
  if (tok.size() < 2 || !dtypes.count(tok[0])) return a;
  const std::string& last = tok.back();
  if (last.size() < 2 || last[0] != 'w' || last.find_first_not_of("0123456789", 1) != std::string::npos)
    return a;
  a.collective = k.suite;
  a.dtype = tok[0];
  if (ops.count(tok[1])) a.op = tok[1];
  a.world = std::atoi(last.c_str() + 1);
  return a;
}

std::map<std::string, std::map<std::string, std::string>> case_properties(const bundle::Bundle& b) {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& s : b.manifest.suites)
    for (const auto& rel : s.xml) {
      const fs::path p = fs::path(b.dir) / rel;
      if (!fs::exists(p)) continue;
      xml::Element root;
      try {
        root = xml::parse_file(p.string());
      } catch (const xml::XmlError&) {
        continue;  // bundle::load already judged the file; a bad one adds no properties
      }
      std::vector<const xml::Element*> suites;
      if (root.name == "testsuite") suites.push_back(&root);
      for (const auto* ts : root.children_named("testsuite")) suites.push_back(ts);
      for (const auto* ts : suites)
        for (const auto* tc : ts->children_named("testcase")) {
          const auto* props = tc->child("properties");
          if (!props) continue;
          const std::string key = s.name + "/" + tc->attr_or("classname", ts->attr_or("name", "")) + "." +
                                  tc->attr_or("name", "");
          for (const auto* pr : props->children_named("property"))
            if (auto n = pr->attr("name")) out[key][*n] = pr->attr_or("value", "");
        }
    }
  return out;
}

Release load_release(const std::string& dir) {
  Release r;
  r.bundle = bundle::load(dir);
  auto v = bundle_nccl(r.bundle, &r.library);
  if (!v) throw bundle::BundleError(dir + ": no fingerprint names the NCCL the suites ran on");
  r.version = *v;
  r.properties = case_properties(r.bundle);
  return r;
}

bool Claim::disagrees() const { return std::find(agree.begin(), agree.end(), 0) != agree.end(); }

// ------------------------------------------------------------------------------------------------

namespace {

// Ranges of equal values over the releases: "rejected on 2.27.7-2.29.3, accepted and right on 2.29.7".
std::string runs_text(const std::vector<Release>& rel, const std::vector<std::string>& values) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i < values.size()) {
    std::size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[i]) ++j;
    if (!values[i].empty())
      parts.push_back(values[i] + " on " + label(rel[i]) + (j > i ? "-" + label(rel[j]) : ""));
    i = j + 1;
  }
  return parts.empty() ? "nothing" : join(parts, ", ");
}

void feature_claims(Report& r, const Matrix& m) {
  static const std::regex fn(R"(\((nccl[A-Za-z0-9_]+)\))");
  const std::size_t n = r.releases.size();
  std::vector<std::map<std::string, bool>> syms;
  for (const auto& rel : r.releases) syms.push_back(bundle_symbols(rel.bundle));
  for (const auto& f : m.nccl_features) {
    if (f.kind != "api" && f.kind != "collective") continue;
    std::smatch mm;
    if (!std::regex_search(f.meta.source, mm, fn)) continue;
    const std::string sym = mm[1].str();
    Claim c;
    c.file = "nccl_features.csv";
    c.key = f.name + " (" + sym + ")";
    c.claim = "matrix: " + sym + " from " + f.since.release_str() +
              (f.until ? " until " + f.until->release_str() : "");
    c.source = f.meta.cite();
    bool any = false;
    for (std::size_t i = 0; i < n; ++i) {
      const Version& v = r.releases[i].version;
      const bool says = v >= f.since && (!f.until || v < *f.until);
      c.matrix.push_back(says ? "yes" : "no");
      auto it = syms[i].find(sym);
      if (it == syms[i].end()) {
        c.observed.push_back("");
        c.agree.push_back(-1);
        continue;
      }
      any = true;
      c.observed.push_back(it->second ? "exported" : "not exported");
      c.agree.push_back(it->second == says ? 1 : 0);
    }
    if (!any) continue;
    c.claim += "; observed: " + runs_text(r.releases, c.observed);
    r.claims.push_back(std::move(c));
  }
}

// What the cases of one (dtype, op[, one rank]) showed on one release.
std::string op_observation(const Release& rel, const std::string& dtype, const std::string& op,
                           bool one_rank) {
  int rejected = 0, right = 0, wrong = 0, other_fail = 0;
  for (const auto& k : rel.bundle.cases) {
    const CaseAxes a = case_axes(k);
    if (a.dtype != dtype || a.op != op) continue;
    if (one_rank && a.world != 1) continue;
    const std::string probe = prop(rel, k.key(), "probe_result");
    const std::string cls = status_class(k.status);
    if (probe.rfind("rejected", 0) == 0)
      ++rejected;
    else if (cls == "pass")
      ++right;
    else if (cls == "fail") {
      const std::string text = k.message + " " + k.detail;
      if (text.find("computed it right") != std::string::npos)
        ++right;
      else if (text.find("wrong") != std::string::npos)
        ++wrong;
      else if (text.find("invalid argument") != std::string::npos ||
               text.find("ncclInvalid") != std::string::npos)
        ++rejected;
      else
        ++other_fail;
    }
  }
  std::vector<std::string> parts;
  if (rejected && !right && !wrong) return "rejected";
  if (right && !rejected && !wrong && !other_fail) return "accepted and right";
  if (wrong && !rejected) return right ? "accepted, some results wrong" : "accepted, results wrong";
  if (rejected) parts.push_back(std::to_string(rejected) + " rejected");
  if (right) parts.push_back(std::to_string(right) + " right");
  if (wrong) parts.push_back(std::to_string(wrong) + " wrong");
  if (other_fail) parts.push_back(std::to_string(other_fail) + " failed otherwise");
  return join(parts, ", ");
}

void op_claims(Report& r, const Matrix& m) {
  const std::size_t n = r.releases.size();
  for (const auto& row : m.nccl_ops) {
    if (row.dtype == "*" || row.op == "*") continue;  // a blanket row: no single case set to hold it against
    const bool one_rank = row.nranks == 1;
    Claim c;
    c.file = "nccl_ops.csv";
    c.key = row.dtype + "/" + row.op + (one_rank ? " (1 rank)" : "");
    c.claim = "matrix: " + row.dtype + " " + row.op + (row.supported ? " supported" : " unsupported") +
              " from " + row.since.release_str() + (row.until ? " until " + row.until->release_str() : "") +
              (one_rank ? " with one rank" : "") + " (" + row.evidence + ")";
    c.source = row.meta.cite();
    bool any = false;
    for (std::size_t i = 0; i < n; ++i) {
      const Version& v = r.releases[i].version;
      const SupportVerdict says = nccl_op_supported(m, row.dtype, row.op, v, one_rank ? 1 : 0);
      c.matrix.push_back(says.supported ? "yes" : "no");
      const std::string seen = op_observation(r.releases[i], row.dtype, row.op, one_rank);
      c.observed.push_back(seen);
      if (seen.empty()) {
        c.agree.push_back(-1);
        continue;
      }
      any = true;
      const bool accepted = seen.rfind("accepted", 0) == 0;
      const bool rejected = seen == "rejected";
      c.agree.push_back(says.supported ? (accepted   ? 1
                                          : rejected ? 0
                                                     : -1)
                                       : (rejected   ? 1
                                          : accepted ? 0
                                                     : -1));
    }
    if (!any) continue;
    c.claim += "; observed: " + runs_text(r.releases, c.observed);
    r.claims.push_back(std::move(c));
  }
}

// Known defects as the cases and the check name them: the seam to nccl_defects.csv (its rows are
// read by the suites and `gpucts check`; the report sees only what they recorded).
void defect_claims(Report& r) {
  const std::size_t n = r.releases.size();
  std::map<std::string, std::vector<std::pair<int, int>>> seen;  // id -> per release (seen, not seen)
  std::map<std::string, std::vector<bool>> in_check;
  std::map<std::string, std::string> titles;
  for (std::size_t i = 0; i < n; ++i) {
    const Release& rel = r.releases[i];
    for (const auto& [key, props] : rel.properties)
      for (const auto& [name, value] : props) {
        const bool hit = name == "gpucts.known_defect";
        const bool miss = name == "gpucts.known_defect_not_seen";
        if (!hit && !miss) continue;
        for (const auto& id : defect_ids(value)) {
          auto& v = seen[id];
          v.resize(n);
          (hit ? v[i].first : v[i].second)++;
        }
      }
    std::vector<nlohmann::json> findings;
    collect_findings(rel.bundle.check, findings);
    for (const auto& f : findings) {
      if (str_field(f, "id") != "nccl-known-defect") continue;
      for (const auto& id : defect_ids(str_field(f, "source") + " " + str_field(f, "subject") + " " +
                                       str_field(f, "message"))) {
        auto& v = in_check[id];
        v.resize(n);
        v[i] = true;
        if (!titles.count(id)) {
          // "... has <id> (<severity>): <title>, <link>; affects ...": the title is enough here.
          std::string t = str_field(f, "message");
          if (auto p = t.find("): "); p != std::string::npos) t = t.substr(p + 3);
          t = t.substr(0, std::min(t.find(", http"), t.find(';')));
          titles[id] = t;
        }
      }
    }
  }
  std::set<std::string> ids;
  for (const auto& [id, v] : seen) ids.insert(id);
  for (const auto& [id, v] : in_check) ids.insert(id);
  for (const auto& id : ids) {
    Claim c;
    c.file = "nccl_defects.csv";
    c.key = id;
    c.source = "nccl_defects.csv:" + id;
    auto s = seen.count(id) ? seen[id] : std::vector<std::pair<int, int>>(n);
    auto k = in_check.count(id) ? in_check[id] : std::vector<bool>(n);
    s.resize(n);
    k.resize(n);
    std::vector<std::string> affected;
    for (std::size_t i = 0; i < n; ++i) {
      const bool predicted = k[i] || s[i].first || s[i].second;
      if (predicted) affected.push_back(label(r.releases[i]));
      c.matrix.push_back(predicted ? "affected" : "");
      std::string o;
      if (s[i].first || s[i].second)
        o = std::to_string(s[i].first) + " case(s) hit" +
            (s[i].second ? ", " + std::to_string(s[i].second) + " predicted but passed" : "");
      c.observed.push_back(o);
      if (!predicted)
        c.agree.push_back(-1);
      else if (s[i].first + s[i].second == 0)
        c.agree.push_back(-1);  // no case of its condition ran
      // A defect row's condition is wider than the counts it hits (nccl-1950 misses only counts
      // just above a power of two): one hit confirms it; cases that ran and never hit refute it.
      else
        c.agree.push_back(s[i].first > 0 ? 1 : 0);
    }
    c.claim = "matrix: " + id + " affects " +
              (affected.empty() ? std::string("none of these releases") : join(affected, ", ")) +
              (titles.count(id) ? " (" + junit::one_line(titles[id]) + ")" : "") +
              "; observed: " + runs_text(r.releases, c.observed);
    r.claims.push_back(std::move(c));
  }
}

void build_grid(Report& r) {
  const std::size_t n = r.releases.size();
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& k : r.releases[i].bundle.cases) {
      const CaseAxes a = case_axes(k);
      if (a.collective.empty()) continue;
      auto key = std::make_tuple(a.collective, a.dtype, a.op);
      auto it = index.find(key);
      if (it == index.end()) {
        it = index.emplace(key, r.grid.size()).first;
        r.grid.push_back({a.collective, a.dtype, a.op, std::vector<Cell>(n)});
      }
      Cell& c = r.grid[it->second].cells[i];
      const std::string cls = status_class(k.status);
      if (cls == "pass")
        ++c.pass;
      else if (cls == "fail")
        ++c.fail;
      else if (cls == "skip")
        ++c.skip;
    }
}

void build_changes(Report& r) {
  const std::size_t n = r.releases.size();
  if (n < 2) return;
  std::vector<std::map<std::string, const junit::Case*>> by_key(n);
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& k : r.releases[i].bundle.cases) {
      by_key[i][k.key()] = &k;
      if (seen.insert(k.key()).second) order.push_back(k.key());
    }
  std::map<std::string, std::size_t> group;  // grouping key -> index in r.changes
  for (const auto& key : order) {
    for (std::size_t i = 0; i + 1 < n; ++i) {
      auto a = by_key[i].find(key), b = by_key[i + 1].find(key);
      if (a == by_key[i].end() || b == by_key[i + 1].end()) continue;
      const std::string from = status_class(a->second->status), to = status_class(b->second->status);
      if (from == to) continue;
      const junit::Case& k = *b->second;
      const CaseAxes ax = case_axes(k);
      // The failing or skipping side says what happened, and names the defect that explains it.
      const std::size_t told_side = to == "pass" ? i : i + 1;
      const junit::Case& told = to == "pass" ? *a->second : k;
      const std::string msg = junit::clean_message(told.message.empty() ? told.detail : told.message);
      const std::string defect =
          join(defect_ids(prop(r.releases[told_side], key, "gpucts.known_defect")), ", ");
      const std::string coll = ax.collective.empty() ? k.suite : ax.collective;
      r.case_changes.push_back({key, from, to, i + 1, msg, defect});
      const std::string change = from + ">" + to + "|" + std::to_string(i + 1);
      const std::string gk = defect.empty() ? "axes|" + coll + "|" + ax.dtype + "|" + ax.op + "|" + change
                                            : "defect|" + defect + "|" + change;
      auto it = group.find(gk);
      if (it == group.end()) {
        Change c;
        c.defect = defect;
        c.collective = coll;
        c.dtype = ax.dtype;
        c.op = ax.op;
        c.from = from;
        c.to = to;
        c.at = i + 1;
        c.example = key;
        c.message = msg;
        it = group.emplace(gk, r.changes.size()).first;
        r.changes.push_back(std::move(c));
      }
      Change& c = r.changes[it->second];
      ++c.cases;
      if (std::find(c.collectives.begin(), c.collectives.end(), coll) == c.collectives.end())
        c.collectives.push_back(coll);
      if (c.dtype != ax.dtype) c.dtype = "*";
      if (c.op != ax.op) c.op = "*";
      if (("," + c.binary + ",").find("," + k.binary + ",") == std::string::npos)
        c.binary += (c.binary.empty() ? "" : ",") + k.binary;
      for (std::size_t side : {i, i + 1})
        for (const char* p : {"gpucts.known_defect", "gpucts.known_defect_not_seen"})
          for (const auto& id : defect_ids(prop(r.releases[side], key, p)))
            if (std::find(c.defects.begin(), c.defects.end(), id) == c.defects.end()) c.defects.push_back(id);
    }
  }
  std::stable_sort(r.changes.begin(), r.changes.end(), [](const Change& a, const Change& b) {
    if (a.at != b.at) return a.at < b.at;
    if (a.defect.empty() != b.defect.empty()) return !a.defect.empty();
    return std::tie(a.defect, a.collective, a.dtype, a.op, a.from, a.to) <
           std::tie(b.defect, b.collective, b.dtype, b.op, b.from, b.to);
  });
  std::stable_sort(r.case_changes.begin(), r.case_changes.end(),
                   [](const CaseChange& a, const CaseChange& b) { return a.at < b.at; });
}

void build_bandwidth(Report& r) {
  const std::size_t n = r.releases.size();
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& [test, run] : r.releases[i].bundle.bandwidth)
      for (const auto& p : run.points) {
        if (!bands::plotted_point(test, p)) continue;
        if (p.bytes != (std::uint64_t(1) << 30) && p.bytes != 8) continue;
        auto key = std::make_pair(test, p.collective);
        auto it = index.find(key);
        if (it == index.end()) {
          it = index.emplace(key, r.bandwidth.size()).first;
          BandwidthRow row;
          row.test = test;
          row.collective = p.collective;
          row.gbps_1g.resize(n);
          row.latency_8b.resize(n);
          r.bandwidth.push_back(row);
        }
        BandwidthRow& row = r.bandwidth[it->second];
        if (p.bytes == 8)
          row.latency_8b[i] = p.time_us.median;
        else {
          row.gbps_1g[i] = p.busbw_gbps ? *p.busbw_gbps : p.algbw_gbps;
          row.metric = p.busbw_gbps ? "busbw" : "algbw";
        }
      }
}

std::string cell_text(const Cell& c) {
  if (c.pass + c.fail + c.skip == 0) return "-";
  return std::to_string(c.pass) + "/" + std::to_string(c.fail) + "/" + std::to_string(c.skip);
}

// A time or a rate: "-" where absent, never a negative figure.
std::string opt_text(const std::optional<double>& v, const char* f) {
  return v && std::isfinite(*v) && *v >= 0 ? fmt(*v, f) : "-";
}

std::string axes_text(const std::string& coll, const std::string& dtype, const std::string& op) {
  std::string s = coll;
  if (!dtype.empty()) s += " " + dtype;
  if (!op.empty()) s += " " + op;
  return s;
}

}  // namespace

std::string release_verdict(const bundle::Bundle& b, std::vector<std::string>* expected_seen) {
  const verdict::Verdict v =
      verdict::decide(b, std::vector<std::string>(kExpectedInCampaign.begin(), kExpectedInCampaign.end()));
  if (expected_seen)
    for (const auto& id : v.set_aside)
      if (std::find(expected_seen->begin(), expected_seen->end(), id) == expected_seen->end())
        expected_seen->push_back(id);
  return verdict::kind_name(v.kind);
}

Report build(std::vector<Release> releases, const Matrix& m, double tolerance_pct) {
  Report r;
  r.tolerance_pct = tolerance_pct;
  std::stable_sort(releases.begin(), releases.end(),
                   [](const Release& a, const Release& b) { return a.version < b.version; });
  r.releases = std::move(releases);
  for (auto& rel : r.releases) {
    if (!rel.requested.empty()) {
      auto want = Version::try_parse(rel.requested, VersionKind::Nccl);
      if (want && !want->same_release(rel.version))
        r.problems.push_back("asked for NCCL " + rel.requested + ", the suites loaded " +
                             rel.version.release_str() + " (" + rel.library + ")");
    }
    if (!rel.problem.empty()) r.problems.push_back(label(rel) + ": " + rel.problem);
    rel.expected.clear();
    rel.verdict = release_verdict(rel.bundle, &rel.expected);
  }
  build_grid(r);
  build_changes(r);
  feature_claims(r, m);
  op_claims(r, m);
  defect_claims(r);
  std::stable_sort(r.claims.begin(), r.claims.end(),
                   [](const Claim& a, const Claim& b) { return a.disagrees() > b.disagrees(); });
  build_bandwidth(r);
  std::vector<const bundle::Bundle*> runs;
  for (const auto& rel : r.releases) runs.push_back(&rel.bundle);
  r.perf = across::adjacent_changes(runs, tolerance_pct);
  std::vector<std::string> names;
  for (const auto& rel : r.releases) names.push_back("NCCL " + label(rel));
  r.story = bands::tell(runs, names, tolerance_pct);
  return r;
}

doc::Doc to_doc(const Report& r) {
  doc::Doc d;
  const std::size_t n = r.releases.size();
  std::vector<std::string> versions, names;
  for (const auto& rel : r.releases) {
    versions.push_back(label(rel));
    names.push_back("NCCL " + label(rel));
  }
  d.title = "gpucts NCCL campaign: " + join(versions, ", ");
  int disagree = 0, passing = 0;
  for (const auto& c : r.claims) disagree += c.disagrees();
  for (const auto& rel : r.releases) passing += verdict::exit_code(*verdict::parse_kind(rel.verdict)) == 0;
  std::vector<across::PerfChange> perf, perf_variants;
  for (const auto& p : r.perf) (p.before.variant.empty() ? perf : perf_variants).push_back(p);
  d.verdict(std::to_string(n) + " release(s), " + std::to_string(passing) + " passing; " +
                std::to_string(perf.size()) + " performance change(s); " +
                std::to_string(r.case_changes.size()) + " case(s) changed behaviour, in " +
                std::to_string(r.changes.size()) + " group(s); " + std::to_string(disagree) +
                " matrix disagreement(s)" +
                (r.problems.empty() ? "" : ", PROBLEMS: " + std::to_string(r.problems.size())),
            r.problems.empty() && disagree == 0 ? "pass" : "fail");
  if (!r.problems.empty()) {
    d.heading("Problems");
    d.list(r.problems);
  }

  d.heading(n < 2 ? "What changed" : "What changed against " + names[0]);
  if (n < 2)
    d.paragraph("one release: nothing to compare");
  else if (r.story.lines().empty())
    d.paragraph("no bandwidth point moved beyond the tolerance and the spread, and no floor was crossed");
  else
    d.list(r.story.lines());
  if (n > 1)
    d.paragraph(
        "each release against the oldest: floors crossed first, then the points that moved beyond the "
        "tolerance and the spread either run recorded, in bands; latency under 64 KiB, busbw (algbw "
        "with one rank) at and above; every point in the tables below and in campaign.json");

  d.heading("Releases");
  doc::Table runs{{"NCCL", "verdict", "cases pass/fail/err/skip", "check errors", "expected in a campaign",
                   "fetch s", "build s", "unpack s", "run s", "how", "library loaded"},
                  {},
                  {}};
  for (const auto& rel : r.releases) {
    auto k = junit::count(rel.bundle.cases);
    const Timing& t = rel.timing;
    std::vector<nlohmann::json> findings;
    collect_findings(rel.bundle.check, findings);
    std::vector<std::string> errors;
    for (const auto& f : findings) {
      const std::string id = str_field(f, "id");
      if (str_field(f, "severity") == "error" &&
          std::find(errors.begin(), errors.end(), id) == errors.end() &&
          std::find(rel.expected.begin(), rel.expected.end(), id) == rel.expected.end())
        errors.push_back(id);
    }
    runs.rows.push_back(
        {label(rel), rel.verdict,
         std::to_string(k.passed) + "/" + std::to_string(k.failed) + "/" + std::to_string(k.errors) + "/" +
             std::to_string(k.skipped),
         errors.empty() ? "-" : join(errors, ", "), rel.expected.empty() ? "-" : join(rel.expected, ", "),
         opt_text(t.fetch, "%.1f"), opt_text(t.build, "%.1f"), opt_text(t.unpack, "%.1f"),
         opt_text(t.run ? t.run : std::optional<double>(rel.bundle.manifest.elapsed_s), "%.1f"), t.how,
         rel.library});
    runs.row_class.push_back(verdict::exit_code(*verdict::parse_kind(rel.verdict)) == 0 ? "pass" : "fail");
  }
  d.table(std::move(runs));
  d.paragraph(
      "verdict: the bundle's, with the findings every campaign has set aside (" +
      join(kExpectedInCampaign, ", ") +
      ": the suites are built against one NCCL header and run on every release); a release passes when "
      "nothing else failed.");

  {
    std::vector<const bundle::Bundle*> seq;
    for (const auto& rel : r.releases) seq.push_back(&rel.bundle);
    auto plots = bands::plots(seq, names, r.story, r.tolerance_pct);
    if (!plots.empty()) {
      d.heading("Bandwidth by release");
      d.paragraph(
          "first each release against the oldest (speed = its time over the release's, out of place; "
          "the shaded band is the tolerance), then the values with the threshold floors dashed and "
          "the crossings ringed");
      for (const auto& plot : plots) d.svg(plot.svg, plot.title, plot.file);
    }
  }

  d.heading("Bandwidth at 1 GiB and latency at 8 B (out of place)");
  if (r.bandwidth.empty()) {
    d.paragraph("no bandwidth results in these bundles");
  } else {
    doc::Table t{{"suite", "collective"}, {}, {}};
    for (const auto& v : versions) t.header.push_back(v + " GB/s");
    for (const auto& v : versions) t.header.push_back(v + " 8 B latency us");
    for (const auto& b : r.bandwidth) {
      std::vector<std::string> row{b.test, b.collective + (b.metric.empty() ? "" : " (" + b.metric + ")")};
      for (const auto& v : b.gbps_1g) row.push_back(opt_text(v, "%.1f"));
      for (const auto& v : b.latency_8b) row.push_back(opt_text(v, "%.2f"));
      t.rows.push_back(std::move(row));
      t.row_class.push_back("");
    }
    d.table(std::move(t));
  }

  char tol[32];
  std::snprintf(tol, sizeof tol, "%g%%", r.tolerance_pct);
  d.heading("Performance between adjacent releases (" + std::to_string(perf.size()) + " point(s))");
  d.paragraph("bandwidth points that moved from one release to the next by more than " + std::string(tol) +
              " and more than the spread either run recorded: latency in us under 64 KiB, GB/s at and above "
              "(busbw, or algbw with one rank)");
  if (n < 2)
    d.paragraph("one release: nothing to compare");
  else if (perf.empty())
    d.paragraph("no point moved beyond the tolerance and the spread");
  else {
    doc::Table t = across::change_table(perf, names, kMaxRows);
    const bool cut = t.rows.size() == kMaxRows;
    d.table(std::move(t));
    if (cut)
      d.paragraph("the table stops at " + std::to_string(kMaxRows) +
                  " rows: every point is in campaign.json");
  }
  if (!perf_variants.empty()) {
    d.heading("Performance of the other variants between adjacent releases (" +
                  std::to_string(perf_variants.size()) + " point(s))",
              3);
    d.paragraph(
        "a variant (e.g. nonblocking communicators, polled after every call) is a measurement of its "
        "own: compared only with itself, never with the default");
    d.table(across::change_table(perf_variants, names, kMaxRows));
  }

  auto header = [&](std::vector<std::string> first) {
    first.insert(first.end(), versions.begin(), versions.end());
    return first;
  };

  d.heading("Behaviour changes between adjacent releases (" + std::to_string(r.case_changes.size()) +
            " case(s) in " + std::to_string(r.changes.size()) + " group(s))");
  if (r.changes.empty()) {
    d.paragraph(n < 2 ? "one release: nothing to compare"
                      : "every case has the same status on every release");
  } else {
    d.paragraph(
        "one row per known defect, and one per collective x dtype x op and change; every case is under "
        "\"Every case that changed\" at the end and in campaign.json");
    doc::Table t{{"first changed in", "before", "known defect", "what", "change", "cases", "binary",
                  "example", "message"},
                 {},
                 {}};
    for (const auto& c : r.changes) {
      if (t.rows.size() == kMaxRows) break;
      const std::string what = c.defect.empty()
                                   ? axes_text(c.collective, c.dtype, c.op)
                                   : join(c.collectives, ", ") + (c.dtype == "*" ? "" : " " + c.dtype) +
                                         (c.op == "*" || c.op.empty() ? "" : " " + c.op);
      t.rows.push_back({versions[c.at], versions[c.at - 1], c.defect.empty() ? "-" : c.defect, what,
                        c.from + " -> " + c.to, std::to_string(c.cases), c.binary, c.example, c.message});
      t.row_class.push_back(c.to == "fail" ? "fail" : c.to == "pass" ? "pass" : "skip");
    }
    d.table(std::move(t));
  }

  d.heading("Observed against the matrix (" + std::to_string(disagree) + " disagreement(s) first)");
  if (r.claims.empty()) {
    d.paragraph("no matrix claim could be held against these runs");
  } else {
    doc::Table t{header({"file", "claim"}), {}, {}};
    t.header.push_back("summary");
    for (const auto& c : r.claims) {
      std::vector<std::string> row{c.file, c.key};
      for (std::size_t i = 0; i < n; ++i) {
        std::string cell =
            (c.matrix[i].empty() ? "" : "matrix " + c.matrix[i]) +
            (c.observed[i].empty() ? ""
                                   : std::string(c.matrix[i].empty() ? "" : "; ") + "seen: " + c.observed[i]);
        if (c.agree[i] == 0) cell = "DISAGREE: " + cell;
        row.push_back(cell.empty() ? "-" : cell);
      }
      row.push_back(c.claim);
      t.rows.push_back(std::move(row));
      t.row_class.push_back(c.disagrees() ? "fail" : "pass");
    }
    d.table(std::move(t));
  }

  d.heading("Pass/fail/skip by collective, dtype and op");
  d.paragraph(
      "each cell: passed/failed/skipped cases of that release (every collective suite and world size "
      "together)");
  {
    doc::Table t{header({"collective", "dtype", "op"}), {}, {}};
    std::vector<GridRow> rows = r.grid;
    std::stable_sort(rows.begin(), rows.end(), [](const GridRow& a, const GridRow& b) {
      auto bad = [](const GridRow& g) {
        int f = 0;
        for (const auto& c : g.cells) f += c.fail;
        return f > 0;
      };
      return bad(a) > bad(b);
    });
    for (const auto& g : rows) {
      std::vector<std::string> row{g.collective, g.dtype, g.op.empty() ? "-" : g.op};
      bool fail = false, differs = false;
      for (std::size_t i = 0; i < n; ++i) {
        row.push_back(cell_text(g.cells[i]));
        fail |= g.cells[i].fail > 0;
        differs |= i > 0 && !(g.cells[i] == g.cells[i - 1]);
      }
      t.rows.push_back(std::move(row));
      t.row_class.push_back(fail ? "fail" : differs ? "skip" : "pass");
    }
    if (t.rows.empty())
      d.paragraph("no collective case in these bundles");
    else
      d.table(std::move(t));
  }

  if (!r.case_changes.empty()) {
    d.heading("Every case that changed (" + std::to_string(r.case_changes.size()) + ")");
    doc::Table t{{"first changed in", "before", "case", "change", "known defect", "message"}, {}, {}};
    for (const auto& c : r.case_changes) {
      if (t.rows.size() == kMaxRows) break;
      t.rows.push_back({versions[c.at], versions[c.at - 1], c.key, c.from + " -> " + c.to,
                        c.defect.empty() ? "-" : c.defect, c.message});
      t.row_class.push_back(c.to == "fail" ? "fail" : c.to == "pass" ? "pass" : "skip");
    }
    d.table(std::move(t));
    if (r.case_changes.size() > kMaxRows)
      d.paragraph("... and " + std::to_string(r.case_changes.size() - kMaxRows) +
                  " more: every case is in campaign.json");
  }
  return d;
}

namespace {

nlohmann::json number_or_null(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// A JSON array of one object per element (an empty vector gives [], not null).
template <class T, class ToJson>
nlohmann::json array_of(const std::vector<T>& items, ToJson to) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& item : items) a.push_back(to(item));
  return a;
}

// The run's time falls back to the bundle's own where the campaign did not time it.
nlohmann::json timing_json(const Release& rel) {
  const Timing& t = rel.timing;
  return {{"fetch_s", number_or_null(t.fetch)},
          {"unpack_s", number_or_null(t.unpack)},
          {"build_s", number_or_null(t.build)},
          {"run_s", number_or_null(t.run ? t.run : std::optional<double>(rel.bundle.manifest.elapsed_s))},
          {"how", t.how}};
}

nlohmann::json release_json(const Release& rel) {
  auto k = junit::count(rel.bundle.cases);
  return {{"nccl", rel.version.release_str()},
          {"requested", rel.requested},
          {"library", rel.library},
          {"bundle", rel.bundle.dir},
          {"verdict", rel.verdict},
          {"bundle_verdict", rel.bundle.manifest.verdict},
          {"expected_findings", rel.expected},
          {"passed", k.passed},
          {"failed", k.failed},
          {"errors", k.errors},
          {"skipped", k.skipped},
          {"timing", timing_json(rel)}};
}

nlohmann::json change_json(const Change& c, const std::vector<Release>& rels) {
  return {{"first_changed_in", label(rels[c.at])},
          {"before", label(rels[c.at - 1])},
          {"binary", c.binary},
          {"defect", c.defect},
          {"collectives", c.collectives},
          {"collective", c.collective},
          {"dtype", c.dtype},
          {"op", c.op},
          {"from", c.from},
          {"to", c.to},
          {"cases", c.cases},
          {"example", c.example},
          {"message", c.message},
          {"defects", c.defects}};
}

nlohmann::json case_change_json(const CaseChange& c, const std::vector<Release>& rels) {
  return {{"case", c.key},
          {"first_changed_in", label(rels[c.at])},
          {"before", label(rels[c.at - 1])},
          {"from", c.from},
          {"to", c.to},
          {"defect", c.defect},
          {"message", c.message}};
}

nlohmann::json perf_change_json(const across::PerfChange& p, const std::vector<Release>& rels) {
  return {{"first_changed_in", label(rels[p.from + 1])},
          {"before", label(rels[p.from])},
          {"suite", p.before.test},
          {"collective", p.before.collective},
          {"dtype", p.before.dtype},
          {"bytes", p.before.bytes},
          {"placement", p.before.placement},
          {"graph", p.before.graph},
          {"variant", p.before.variant.empty() ? bw::kBlocking : p.before.variant},
          {"metric", p.before.metric},
          {"before_value", p.before.value},
          {"after_value", p.after.value},
          {"before_spread_pct", p.before.spread_pct},
          {"after_spread_pct", p.after.spread_pct},
          {"change_pct", p.move.change_pct},
          {"change", p.move.change}};
}

nlohmann::json claim_json(const Claim& c) {
  return {{"file", c.file},         {"key", c.key},     {"claim", c.claim},           {"matrix", c.matrix},
          {"observed", c.observed}, {"agree", c.agree}, {"disagrees", c.disagrees()}, {"source", c.source}};
}

nlohmann::json grid_row_json(const GridRow& g) {
  nlohmann::json cells = array_of(g.cells, [](const Cell& c) -> nlohmann::json {
    return {{"pass", c.pass}, {"fail", c.fail}, {"skip", c.skip}};
  });
  return {{"collective", g.collective}, {"dtype", g.dtype}, {"op", g.op}, {"cells", cells}};
}

// The story names each release as its plots do.
nlohmann::json story_json(const Report& r) {
  std::vector<std::string> names;
  for (const auto& rel : r.releases) names.push_back("NCCL " + label(rel));
  nlohmann::json s = bands::to_json(r.story, names);
  s["lines"] = r.story.lines();
  return s;
}

nlohmann::json bandwidth_json(const BandwidthRow& b) {
  return {{"test", b.test},
          {"collective", b.collective},
          {"metric", b.metric},
          {"gbps_1gib", array_of(b.gbps_1g, number_or_null)},
          {"latency_8b_us", array_of(b.latency_8b, number_or_null)}};
}

}  // namespace

nlohmann::json to_json(const Report& r) {
  const auto& rels = r.releases;
  nlohmann::json j;
  j["schema"] = "gpucts.campaign/1";
  j["releases"] = array_of(rels, release_json);
  j["problems"] = r.problems;
  j["changes"] = array_of(r.changes, [&](const Change& c) { return change_json(c, rels); });
  j["case_changes"] =
      array_of(r.case_changes, [&](const CaseChange& c) { return case_change_json(c, rels); });
  j["tolerance_pct"] = r.tolerance_pct;
  j["performance"] = array_of(r.perf, [&](const across::PerfChange& p) { return perf_change_json(p, rels); });
  j["claims"] = array_of(r.claims, claim_json);
  j["grid"] = array_of(r.grid, grid_row_json);
  j["story"] = story_json(r);
  j["bandwidth"] = array_of(r.bandwidth, bandwidth_json);
  return j;
}

void write(const Report& r, const std::string& dir) {
  doc::Doc d = to_doc(r);
  fs::create_directories(fs::path(dir) / "plots");
  for (const auto& [file, svg] : doc::svg_files(d)) bundle::write_text((fs::path(dir) / file).string(), svg);
  bundle::write_text((fs::path(dir) / "campaign.md").string(), doc::to_markdown(d));
  bundle::write_text((fs::path(dir) / "campaign.html").string(), doc::to_html(d));
  bundle::write_text((fs::path(dir) / "campaign.json").string(), to_json(r).dump(2) + "\n");
}

namespace {
// [lo, hi]: the newest release known to behave as the oldest, and the first after it known to
// behave as the newest.
std::pair<std::size_t, std::size_t> bracket(const BisectState& s) {
  std::size_t lo = 0, hi = s.versions.size() - 1;
  for (const auto& [i, cls] : s.outcome)
    if (cls == s.old_cls && i > lo && i < hi) lo = i;
  for (const auto& [i, cls] : s.outcome)
    if (cls == s.new_cls && i > lo && i < hi) {
      hi = i;
      break;
    }
  return {lo, hi};
}
}  // namespace

std::optional<std::size_t> BisectState::next() const {
  if (versions.size() < 2) return std::nullopt;
  const auto [lo, hi] = bracket(*this);
  if (hi - lo <= 1) return std::nullopt;
  // A release that skipped or was absent cannot decide: try the next untried one from the middle.
  const std::size_t mid = lo + (hi - lo) / 2;
  for (std::size_t k = 0; k < hi - lo - 1; ++k) {
    const std::size_t cand = lo + 1 + (mid - lo - 1 + k) % (hi - lo - 1);
    if (!outcome.count(cand)) return cand;
  }
  return std::nullopt;
}

std::optional<std::size_t> BisectState::first_changed() const {
  if (versions.size() < 2 || next()) return std::nullopt;
  return bracket(*this).second;
}

}  // namespace cts::campaign
