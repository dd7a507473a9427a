#include "report/campaign.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "report/campaign_parts.hpp"
#include "report/verdict.hpp"
#include "results/junit.hpp"
#include "results/text_format.hpp"
#include "results/xml.hpp"

namespace fs = std::filesystem;

namespace cts::campaign {
namespace {

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

const std::map<std::string, std::string>* props_of(const Release& r, const std::string& key) {
  auto it = r.properties.find(key);
  return it == r.properties.end() ? nullptr : &it->second;
}

}  // namespace

namespace parts {

std::string prop(const Release& r, const std::string& key, const std::string& name) {
  const auto* p = props_of(r, key);
  if (!p) return "";
  auto it = p->find(name);
  return it == p->end() ? "" : it->second;
}

std::string label(const Release& r) { return r.version.release_str(); }

// Defect ids of nccl_defects.csv ("nccl-1950", "nccl-2.30.3-symk-ll-unaligned") named by a
// comma-separated property value or a finding's text.
std::vector<std::string> defect_ids(const std::string& text) {
  static const std::regex id(R"(\bnccl-[0-9][0-9A-Za-z.\-]*[0-9A-Za-z])");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), id); it != std::sregex_iterator(); ++it)
    if (std::find(out.begin(), out.end(), it->str()) == out.end()) out.push_back(it->str());
  return out;
}

}  // namespace parts

using parts::defect_ids;
using parts::label;
using parts::prop;

std::string status_class(junit::Status s) {
  if (s == junit::Status::passed) return "pass";
  if (junit::failing(s)) return "fail";
  return "skip";
}

std::string status_class(verdict::Outcome o) {
  if (o == verdict::Outcome::passed) return "pass";
  if (verdict::failing(o)) return "fail";
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
      std::error_code ec;
      if (!fs::exists(fs::symlink_status(fs::path(b.dir) / rel, ec))) continue;
      xml::Element root;
      try {
        root = xml::parse_file(bundle::bundle_file(b.dir, rel));  // refused where it leads out of the bundle
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

namespace {

void build_grid(Report& r) {
  const std::size_t n = r.releases.size();
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < r.releases[i].bundle.cases.size(); ++j) {
      const junit::Case& k = r.releases[i].bundle.cases[j];
      const CaseAxes a = case_axes(k);
      if (a.collective.empty()) continue;
      auto key = std::make_tuple(a.collective, a.dtype, a.op);
      auto it = index.find(key);
      if (it == index.end()) {
        it = index.emplace(key, r.grid.size()).first;
        r.grid.push_back({a.collective, a.dtype, a.op, std::vector<Cell>(n)});
      }
      Cell& c = r.grid[it->second].cells[i];
      const std::string cls = status_class(r.releases[i].decision.outcomes[j]);
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
  // Per release: each case by key, with its class (what decide() says it means).
  std::vector<std::map<std::string, std::pair<const junit::Case*, std::string>>> by_key(n);
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < r.releases[i].bundle.cases.size(); ++j) {
      const junit::Case& k = r.releases[i].bundle.cases[j];
      by_key[i][k.key()] = {&k, status_class(r.releases[i].decision.outcomes[j])};
      if (seen.insert(k.key()).second) order.push_back(k.key());
    }
  std::map<std::string, std::size_t> group;  // grouping key -> index in r.changes
  for (const auto& key : order) {
    for (std::size_t i = 0; i + 1 < n; ++i) {
      auto a = by_key[i].find(key), b = by_key[i + 1].find(key);
      if (a == by_key[i].end() || b == by_key[i + 1].end()) continue;
      const std::string &from = a->second.second, &to = b->second.second;
      if (from == to) continue;
      const junit::Case& k = *b->second.first;
      const CaseAxes ax = case_axes(k);
      // The failing or skipping side says what happened, and names the defect that explains it.
      const std::size_t told_side = to == "pass" ? i : i + 1;
      const junit::Case& told = to == "pass" ? *a->second.first : k;
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

}  // namespace

verdict::Verdict decide_release(const bundle::Bundle& b) {
  return verdict::decide(b, std::vector<std::string>(kExpectedInCampaign.begin(), kExpectedInCampaign.end()));
}

std::string release_verdict(const bundle::Bundle& b, std::vector<std::string>* expected_seen) {
  const verdict::Verdict v = decide_release(b);
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
    rel.decision = decide_release(rel.bundle);
    rel.verdict = verdict::kind_name(rel.decision.kind);
    rel.expected = rel.decision.set_aside;
  }
  build_grid(r);
  build_changes(r);
  parts::feature_claims(r, m);
  parts::op_claims(r, m);
  parts::defect_claims(r);
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
