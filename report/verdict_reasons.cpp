#include "report/verdict_reasons.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "matrix/matrix.hpp"
#include "matrix/nccl_defects.hpp"
#include "report/summary.hpp"

namespace cts::summary {

namespace {

std::string n(int x) { return std::to_string(x); }

bool failing(const junit::Case& c) {
  return c.status == junit::Status::failed || c.status == junit::Status::error;
}

bool accepted(const bundle::Manifest& m, const std::string& id) {
  return std::find(m.accepted_known.begin(), m.accepted_known.end(), id) != m.accepted_known.end();
}

}  // namespace

bool suite_passed_with_waivers(const bundle::Bundle& b, const bundle::SuiteRun& s) {
  if (s.status != bundle::SuiteStatus::failed) return false;
  bool waived = false;
  for (const auto& c : b.cases) {
    if (c.binary != s.name) continue;
    if (failing(c)) return false;
    waived |= !c.property("gpucts.waived").empty();
  }
  return waived;
}

std::vector<std::string> verdict_reasons(const bundle::Bundle& b) {
  const auto& m = b.manifest;
  std::vector<std::string> out;
  if (m.verdict == bundle::kVerdictNoGpu) {
    out.push_back(m.verdict_reason.empty() ? "no GPU visible: the GPU suites did not run" : m.verdict_reason);
    return out;
  }
  if (m.verdict == bundle::kVerdictWaived) {
    for (const auto& w : m.waivers)
      out.push_back("waived with --accept-known: " + w.id + " (" + n(w.cases) + " failed case(s)" +
                    (w.findings ? ", " + n(w.findings) + " check finding(s)" : std::string()) + ")");
    return out;
  }
  if (m.verdict != bundle::kVerdictFail) return out;
  if (m.interrupted) out.push_back("qualify was interrupted: the run is incomplete");
  // Per binary: its failing cases and the first one's cause.
  std::map<std::string, std::pair<int, std::string>> failed;
  std::vector<std::string> order;
  for (const auto& c : b.cases)
    if (failing(c)) {
      auto [it, fresh] = failed.try_emplace(
          c.binary, 0, c.suite + "." + c.name + ": " + junit::cause(c.detail.empty() ? c.message : c.detail));
      if (fresh) order.push_back(c.binary);
      ++it->second.first;
    }
  std::set<std::string> named;
  for (const auto& s : m.suites) {
    if (s.status == bundle::SuiteStatus::passed || s.status == bundle::SuiteStatus::skipped ||
        s.status == bundle::SuiteStatus::not_run)
      continue;
    if (suite_passed_with_waivers(b, s)) continue;
    named.insert(s.name);
    std::string line = s.name + " " + bundle::suite_status_name(s.status);
    if (auto it = failed.find(s.name); it != failed.end())
      line += ": " + n(it->second.first) + " failing case(s), first " + it->second.second;
    else if (!s.reason.empty())
      line += ": " + s.reason;
    out.push_back(junit::one_line(line));
  }
  for (const auto& bin : order)  // cases of no suite run: qualify's own (expected GPUs)
    if (!named.count(bin)) out.push_back(junit::one_line(bin + ": " + failed[bin].second));
  for (const auto& [name, run] : b.bandwidth) {
    int below = 0;
    for (const auto& p : run.points) below += p.verdict == "fail";
    if (below) out.push_back(name + ": " + n(below) + " bandwidth point(s) below threshold");
  }
  if (b.check.is_object() && b.check.contains("findings") && b.check["findings"].is_array())
    for (const auto& f : b.check["findings"]) {
      if (f.value("severity", "") != "error") continue;
      const std::string defect = bundle::defect_of_finding(f);
      if (f.value("id", "") == "nccl-known-defect" && (!m.nccl_selected || accepted(m, defect))) continue;
      out.push_back("check error " + f.value("id", std::string("?")) + (defect.empty() ? "" : " " + defect) +
                    ": " + f.value("subject", std::string()));
    }
  if (out.empty()) out.push_back("see the suites below");
  return out;
}

std::vector<std::string> defect_warnings(const bundle::Bundle& b, bool brief) {
  std::vector<std::string> out;
  if (!b.check.is_object() || !b.check.contains("findings") || !b.check["findings"].is_array()) return out;
  const auto groups = group_known_defects(b);
  std::map<std::string, std::string> seen;  // id -> subjects
  std::vector<std::string> ids;
  for (const auto& f : b.check["findings"]) {
    if (f.value("id", "") != "nccl-known-defect" || f.value("severity", "") != "warning") continue;
    const std::string id = bundle::defect_of_finding(f);
    if (id.empty()) continue;
    // "loaded NCCL 2.28.9 has nccl-1950 (...": the library and its release.
    std::string msg = f.value("message", std::string()), lib = msg.substr(0, msg.find(" has "));
    if (!seen.count(id)) ids.push_back(id);
    std::string& s = seen[id];
    if (s.find(lib) == std::string::npos) s += (s.empty() ? "" : " and ") + lib;
  }
  for (const auto& id : ids) {
    const NcclDefect* d = find_defect(builtin_matrix(), id);
    std::string line = id + " in " + seen[id];
    if (d && !brief)
      line += " (" + d->severity + "): " + d->title + "; hits only " + defect_condition_text(*d);
    const DefectGroup* g = nullptr;
    for (const auto& x : groups)
      if (x.id == id) g = &x;
    if (g && g->failed)
      line += "; reproduced here by " + n(g->failed) + " case(s)";
    else if (g && g->waived)
      line += "; reproduced here by " + n(g->waived) + " case(s), waived";
    else if (g && g->passed)
      line += "; " + n(g->passed) + " case(s) here meet its condition and passed";
    else
      line += "; not judged: no case of this run meets its condition";
    if (d && !brief) line += "; fix: " + d->fix_hint();
    if (brief) line += " (see Known NCCL defects)";
    out.push_back(line);
  }
  return out;
}

std::vector<std::string> run_mode_notes(const bundle::Bundle& b) {
  std::vector<std::pair<std::string, std::string>> modes;  // mode -> its suites, first-seen order
  for (const auto& s : b.manifest.suites) {
    if (s.mode.empty()) continue;
    auto it = std::find_if(modes.begin(), modes.end(), [&](const auto& p) { return p.first == s.mode; });
    if (it == modes.end())
      modes.emplace_back(s.mode, s.name);
    else
      it->second += ", " + s.name;
  }
  std::vector<std::string> out;
  for (const auto& [mode, suites] : modes) out.push_back(mode + " (" + suites + ")");
  return out;
}

}  // namespace cts::summary
