#include "report/verdict.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace cts::verdict {

namespace {

constexpr Kind kKinds[] = {Kind::pass, Kind::waived, Kind::fail, Kind::no_gpu, Kind::not_run};
constexpr const char* kKindNames[] = {"pass", "waived", "fail", "no_gpu", "not_run"};  // in Kind's order
// In Outcome's order; the first four are junit::Status's, in its order.
constexpr const char* kOutcomeNames[] = {"passed", "failed", "error", "skipped", "waived"};
static_assert(static_cast<int>(Outcome::skipped) == static_cast<int>(junit::Status::skipped));

std::string n(int x) { return std::to_string(x); }

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// What each case means: the status it ran with, or waived where it failed and every known defect
// it names was accepted (accepting one defect never covers another).
std::vector<Outcome> outcomes_of(const Inputs& in) {
  std::vector<Outcome> out;
  out.reserve(in.cases.size());
  for (const auto& c : in.cases) {
    const auto ids = bundle::split_ids(c.property("gpucts.known_defect"));
    const bool waived = junit::failing(c.status) && !ids.empty() &&
                        std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
                          return contains(in.manifest.accepted_known, id);
                        });
    out.push_back(waived ? Outcome::waived : static_cast<Outcome>(static_cast<int>(c.status)));
  }
  return out;
}

// The accepted defects with the cases they waived, described as the manifest recorded them.
std::vector<bundle::Waiver> count_waivers(const Inputs& in, const std::vector<Outcome>& outcomes) {
  std::vector<bundle::Waiver> out;
  for (size_t i = 0; i < in.cases.size(); ++i)
    if (outcomes[i] == Outcome::waived)
      for (const auto& id : bundle::split_ids(in.cases[i].property("gpucts.known_defect")))
        ++bundle::waiver_for(out, id).cases;
  for (auto& w : out)
    for (const auto& described : in.manifest.waivers)
      if (described.id == w.id) w.title = described.title, w.link = described.link, w.fix = described.fix;
  return out;
}

// The failed suites whose failing cases were all waived (at least one).
std::vector<std::string> passed_with_waivers(const Inputs& in, const std::vector<Outcome>& outcomes) {
  std::vector<std::string> out;
  for (const auto& s : in.manifest.suites) {
    if (s.status != bundle::SuiteStatus::failed) continue;
    bool waived = false, failed = false;
    for (size_t i = 0; i < in.cases.size(); ++i)
      if (in.cases[i].binary == s.name) {
        failed |= failing(outcomes[i]);
        waived |= outcomes[i] == Outcome::waived;
      }
    if (waived && !failed) out.push_back(s.name);
  }
  return out;
}

const nlohmann::json* findings_of(const nlohmann::json& check) {
  if (!check.is_object() || !check.contains("findings") || !check["findings"].is_array()) return nullptr;
  return &check["findings"];
}

std::string text_field(const nlohmann::json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

// Does this check finding count as an error of the run? Errors count, except a known defect that
// was accepted (check.json's own verdict says fail for it all the same).
bool finding_counts(const nlohmann::json& f, const std::vector<std::string>& accepted) {
  if (text_field(f, "severity") != "error") return false;
  const std::string defect = bundle::defect_of_finding(f);
  return defect.empty() || !contains(accepted, defect);
}

// Fail: what failed, one line each, in the order a person should read them.
std::vector<std::string> failures(const Inputs& in, const Verdict& v,
                                  const std::vector<std::string>& check_lines) {
  const auto& m = in.manifest;
  std::vector<std::string> out;
  if (m.interrupted) out.push_back("qualify was interrupted: the run is incomplete");
  if (m.gpus_expected && m.gpus_visible >= 0 && m.gpus_visible < *m.gpus_expected)
    out.push_back("expected at least " + n(*m.gpus_expected) + " GPU(s), " + n(m.gpus_visible) + " visible" +
                  (m.no_gpu_detail.empty() ? "" : " (" + m.no_gpu_detail + ")"));
  // Per binary: its failing cases and the first one's cause.
  std::map<std::string, std::pair<int, std::string>> failed;
  std::vector<std::string> order;
  for (size_t i = 0; i < in.cases.size(); ++i)
    if (const auto& c = in.cases[i]; failing(v.outcomes[i])) {
      auto [it, fresh] = failed.try_emplace(
          c.binary, 0, c.suite + "." + c.name + ": " + junit::cause(c.detail.empty() ? c.message : c.detail));
      if (fresh) order.push_back(c.binary);
      ++it->second.first;
    }
  std::set<std::string> named;
  for (const auto& s : m.suites) {
    using bundle::SuiteStatus;
    if (s.status == SuiteStatus::passed || s.status == SuiteStatus::skipped ||
        s.status == SuiteStatus::not_run)
      continue;
    if (v.suite_passed_with_waivers(s.name)) continue;
    named.insert(s.name);
    std::string line = s.name + " " + bundle::suite_status_name(s.status);
    if (auto it = failed.find(s.name); it != failed.end())
      line += ": " + n(it->second.first) + " failing case(s), first " + it->second.second;
    else if (!s.reason.empty())
      line += ": " + s.reason;
    out.push_back(junit::one_line(line));
  }
  for (const auto& bin : order)  // failing cases of no suite of the manifest
    if (!named.count(bin)) out.push_back(junit::one_line(bin + ": " + failed[bin].second));
  for (const auto& [name, run] : in.bandwidth) {
    int below = 0;
    for (const auto& p : run.points) below += p.verdict == "fail";
    if (below) out.push_back(name + ": " + n(below) + " bandwidth point(s) below threshold");
  }
  out.insert(out.end(), check_lines.begin(), check_lines.end());
  return out;
}

// Not run: the suites that apply here and did not run, or nothing ran at all.
std::vector<std::string> unrun(const Inputs& in) {
  std::vector<std::string> out;
  int ran = 0, skipped = 0, not_run = 0;
  for (const auto& s : in.manifest.suites) {
    if (s.status == bundle::SuiteStatus::not_run) {
      ++not_run;
      if (s.missed) out.push_back(junit::one_line(s.name + " not run: " + s.reason));
    } else if (s.status == bundle::SuiteStatus::skipped) {
      ++skipped;
    } else {
      ++ran;
    }
  }
  if (ran == 0 && !in.manifest.suites.empty())
    out.insert(out.begin(),
               "no selected suite ran a case (" + n(skipped) + " skipped, " + n(not_run) + " not run)");
  return out;
}

}  // namespace

const char* kind_name(Kind k) { return kKindNames[static_cast<int>(k)]; }

std::optional<Kind> parse_kind(const std::string& text) {
  for (Kind k : kKinds)
    if (text == kind_name(k)) return k;
  return std::nullopt;
}

int exit_code(Kind k) {
  switch (k) {
    case Kind::pass:
    case Kind::waived:
      return 0;
    case Kind::fail:
      return 1;
    case Kind::no_gpu:
      return 3;
    case Kind::not_run:
      return 4;
  }
  return 1;
}

std::string Verdict::text() const {
  switch (kind) {
    case Kind::pass:
      return "PASS";
    case Kind::fail:
      return "FAIL";
    case Kind::no_gpu:
      return "NO GPU: GPU suites not run";
    case Kind::not_run:
      return "NOT RUN: selected suites did not run";
    case Kind::waived:
      break;
  }
  std::string ids;
  for (const auto& w : waivers)
    if (w.cases || w.findings) ids += (ids.empty() ? "" : ", ") + w.id;
  return "PASS (waived: " + ids + ")";
}

const char* outcome_name(Outcome o) { return kOutcomeNames[static_cast<int>(o)]; }

Tally Verdict::tally() const {
  Tally t;
  for (Outcome o : outcomes) {
    int* counts[] = {&t.passed, &t.failed, &t.errors, &t.skipped, &t.waived};  // in Outcome's order
    ++*counts[static_cast<int>(o)];
  }
  return t;
}

bool Verdict::suite_passed_with_waivers(const std::string& suite) const {
  return contains(passed_with_waivers, suite);
}

Verdict decide(const Inputs& in) {
  const auto& m = in.manifest;
  Verdict v;
  v.outcomes = outcomes_of(in);
  v.waivers = count_waivers(in, v.outcomes);
  v.passed_with_waivers = passed_with_waivers(in, v.outcomes);
  std::vector<std::string> check_lines;
  if (const auto* fs = findings_of(in.check))
    for (const auto& f : *fs) {
      if (text_field(f, "severity") != "error") continue;
      const std::string id = text_field(f, "id"), defect = bundle::defect_of_finding(f);
      if (contains(in.set_aside_findings, id)) {
        if (!contains(v.set_aside, id)) v.set_aside.push_back(id);
        continue;
      }
      if (!defect.empty() && contains(m.accepted_known, defect))
        ++bundle::waiver_for(v.waivers, defect).findings;
      if (!finding_counts(f, m.accepted_known)) continue;
      v.check_errors.push_back({id, defect, text_field(f, "subject"), text_field(f, "message")});
      check_lines.push_back("check error " + (id.empty() ? "?" : id) + (defect.empty() ? "" : " " + defect) +
                            ": " + text_field(f, "subject"));
    }
  if (auto failed = failures(in, v, check_lines); !failed.empty()) {
    v.kind = Kind::fail;
    v.reasons = std::move(failed);
    return v;
  }
  // No GPU: nothing failed, but GPU suites were selected and none could run. A bundle written
  // before the GPU count was recorded keeps the decision qualify wrote into it.
  int gpu_unrun = 0;
  for (const auto& s : m.suites)
    gpu_unrun +=
        s.gpus > 0 && (s.status == bundle::SuiteStatus::not_run || s.status == bundle::SuiteStatus::skipped);
  const bool no_gpu =
      m.gpus_visible < 0 ? m.verdict == kind_name(Kind::no_gpu) : m.gpus_visible == 0 && gpu_unrun > 0;
  if (no_gpu) {
    v.kind = Kind::no_gpu;
    v.reasons.push_back("no GPU visible" +
                        (m.no_gpu_detail.empty() ? std::string() : " (" + m.no_gpu_detail + ")") +
                        (gpu_unrun ? ": " + n(gpu_unrun) + " GPU suite(s) not run" : std::string()));
    return v;
  }
  if (auto missed = unrun(in); !missed.empty()) {
    v.kind = Kind::not_run;
    v.reasons = std::move(missed);
    return v;
  }
  for (const auto& w : v.waivers)
    if (w.cases || w.findings)
      v.reasons.push_back("waived with --accept-known: " + w.id + " (" + n(w.cases) + " failed case(s)" +
                          (w.findings ? ", " + n(w.findings) + " check finding(s)" : std::string()) + ")");
  v.kind = v.reasons.empty() ? Kind::pass : Kind::waived;
  return v;
}

Verdict decide(const bundle::Bundle& b, std::vector<std::string> set_aside_findings) {
  return decide(Inputs{b.manifest, b.cases, b.check, b.bandwidth, std::move(set_aside_findings)});
}

namespace {

// Whose defects these are, by their ids' prefix: "NCCL", "torch", or "NCCL and torch".
std::string defect_owner(const std::vector<std::string>& ids) {
  bool nccl = false, torch = false;
  for (const auto& id : ids) (id.rfind("torch-", 0) == 0 ? torch : nccl) = true;
  return nccl && torch ? "NCCL and torch" : torch ? "torch" : "NCCL";
}

}  // namespace

std::vector<junit::Case> junit_cases(const std::vector<junit::Case>& cases, const Verdict& v) {
  std::vector<junit::Case> out = cases;
  for (size_t i = 0; i < out.size() && i < v.outcomes.size(); ++i) {
    if (v.outcomes[i] != Outcome::waived) continue;
    auto& c = out[i];
    const auto ids = bundle::split_ids(c.property("gpucts.known_defect"));
    std::string joined;
    for (const auto& id : ids) joined += (joined.empty() ? "" : ",") + id;
    c.properties["gpucts.waived"] = joined;
    c.properties["gpucts.waived_status"] = junit::status_name(c.status);
    c.status = junit::Status::skipped;
    c.message =
        junit::one_line("waived (known " + defect_owner(ids) + " defect " + joined +
                        ", --accept-known): " + junit::cause(c.detail.empty() ? c.message : c.detail));
  }
  return out;
}

}  // namespace cts::verdict
