#include "report/run_notes.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "matrix/matrix.hpp"
#include "matrix/nccl_defects.hpp"
#include "report/summary.hpp"

namespace cts::summary {

namespace {

std::string n(int x) { return std::to_string(x); }

}  // namespace

std::vector<std::string> defect_warnings(const bundle::Bundle& b, bool brief) {
  std::vector<std::string> out;
  if (!b.check.is_object() || !b.check.contains("findings") || !b.check["findings"].is_array()) return out;
  const auto groups = group_known_defects(b);
  std::map<std::string, std::string> seen;  // id -> subjects
  std::vector<std::string> ids;
  for (const auto& f : b.check["findings"]) {
    if (f.value("severity", "") != "warning") continue;
    const std::string id = bundle::defect_of_finding(f);
    if (id.empty()) continue;
    // "loaded NCCL 2.28.9 has nccl-1950 (...", "torch 2.11.0 (Python) has torch-190745 (...": what has it.
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
