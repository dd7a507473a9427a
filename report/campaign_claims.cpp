// The campaign report's matrix claims (campaign.hpp): each nccl_features.csv, nccl_ops.csv and
// nccl_defects.csv claim about each release, against what the release's run saw.
#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "matrix/nccl_support.hpp"
#include "report/campaign.hpp"
#include "report/campaign_parts.hpp"
#include "results/junit.hpp"
#include "results/text_format.hpp"

namespace cts::campaign {

bool Claim::disagrees() const { return std::find(agree.begin(), agree.end(), 0) != agree.end(); }

namespace parts {

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

}  // namespace parts

namespace {

using parts::collect_findings;
using parts::defect_ids;
using parts::label;
using parts::prop;
using parts::str_field;

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

// What the cases of one (dtype, op[, one rank]) showed on one release.
std::string op_observation(const Release& rel, const std::string& dtype, const std::string& op,
                           bool one_rank) {
  int rejected = 0, right = 0, wrong = 0, other_fail = 0;
  for (std::size_t j = 0; j < rel.bundle.cases.size(); ++j) {
    const junit::Case& k = rel.bundle.cases[j];
    const CaseAxes a = case_axes(k);
    if (a.dtype != dtype || a.op != op) continue;
    if (one_rank && a.world != 1) continue;
    const std::string probe = prop(rel, k.key(), "probe_result");
    const std::string cls = status_class(rel.decision.outcomes[j]);
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

}  // namespace

namespace parts {

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

}  // namespace parts
}  // namespace cts::campaign
