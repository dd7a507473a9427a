// The one decision of gpucts: the verdict of a qualification, a pure function of what a bundle
// records. qualify, the summary, `gpucts report` and the campaign call decide(); none of them
// computes, amends or re-derives a verdict or its reasons.
//
//   kind     exit  when
//   fail     1     a case failed or errored; a suite crashed, timed out or was interrupted; a
//                  bandwidth point fell under its floor; `gpucts check` found an error (unless it is
//                  an accepted known defect; a known defect is an error only under --strict-defects,
//                  which the user asked for, whatever suites ran); fewer GPUs visible than expected
//   not_run  4     nothing failed, but a selected suite that applies to this machine did not run (a
//                  library it needs is absent), or no selected suite ran a case at all
//   no_gpu   3     nothing failed, but no GPU is visible and GPU suites were selected
//   waived   0     a pass once the known defects accepted with --accept-known are set aside
//   pass     0     every selected suite that applies here ran and nothing failed
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "report/bundle.hpp"

namespace cts::verdict {

enum class Kind { pass, waived, fail, no_gpu, not_run };
// "pass", "waived", "fail", "no_gpu", "not_run": the manifest's strings.
const char* kind_name(Kind k);
std::optional<Kind> parse_kind(const std::string& text);
int exit_code(Kind k);

// What decide() reads: the bundle as qualify wrote it or `gpucts report` loaded it.
struct Inputs {
  const bundle::Manifest& manifest;
  const std::vector<junit::Case>& cases;
  const nlohmann::json& check;
  const std::vector<std::pair<std::string, bw::Run>>& bandwidth;
  // Finding ids every run of a campaign has by construction (one build of the suites on every
  // NCCL release: the header never matches the library): not judged there.
  std::vector<std::string> set_aside_findings{};
};

struct Verdict {
  Kind kind = Kind::pass;
  std::vector<std::string> reasons;     // what it rests on, most important first; none for a plain pass
  std::vector<bundle::Waiver> waivers;  // accepted defects that waived a case or a finding (ids, counts)
  int check_errors = 0;                 // error findings of `gpucts check` that count
  std::vector<std::string> set_aside;   // set_aside_findings that this check had as errors
  int exit_code() const { return verdict::exit_code(kind); }
  std::string text() const;  // "PASS", "PASS (waived: nccl-1950)", "FAIL", "NO GPU: ...", "NOT RUN: ..."
};

Verdict decide(const Inputs& in);
Verdict decide(const bundle::Bundle& b, std::vector<std::string> set_aside_findings = {});

// A failed suite whose every failing case was waived with --accept-known: "passed with waivers".
bool suite_passed_with_waivers(const std::vector<junit::Case>& cases, const bundle::SuiteRun& s);

// Does this check finding count as an error of the run? Errors count, except a known NCCL defect
// that was accepted (check.json's own verdict says fail for it all the same).
bool finding_counts(const nlohmann::json& finding, const std::vector<std::string>& accepted);

}  // namespace cts::verdict
