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

// What a case means for the verdict: the status it ran with, or waived: it failed (or errored)
// and every known defect it names (its gpucts.known_defect property) was accepted with
// --accept-known. The bundle records what ran; decide() alone says what was waived.
enum class Outcome { passed, failed, error, skipped, waived };
// "passed", "failed", "error", "skipped", "waived".
const char* outcome_name(Outcome o);
inline bool failing(Outcome o) { return o == Outcome::failed || o == Outcome::error; }

// Cases counted by outcome (a waived case is not counted as skipped).
struct Tally {
  int passed = 0, failed = 0, errors = 0, skipped = 0, waived = 0;
  int total() const { return passed + failed + errors + skipped + waived; }
};

// An error finding of `gpucts check` that counts against the run: an error, not set aside, and not
// a known defect that was accepted with --accept-known (check.json's own verdict says fail for it
// all the same). Pages list these; none of them judges a finding itself.
struct CheckError {
  std::string id, defect, subject, message;  // defect: the known defect it cites, "" for others
};

struct Verdict {
  Kind kind = Kind::pass;
  std::vector<std::string> reasons;      // what it rests on, most important first; none for a plain pass
  std::vector<bundle::Waiver> waivers;   // accepted defects that waived a case or a finding (ids, counts)
  std::vector<CheckError> check_errors;  // in check.json's order
  std::vector<std::string> set_aside;    // set_aside_findings that this check had as errors
  std::vector<Outcome> outcomes;         // per case of the inputs, in their order
  // Failed suites whose every failing case was waived: "passed with waivers".
  std::vector<std::string> passed_with_waivers;
  int exit_code() const { return verdict::exit_code(kind); }
  std::string text() const;  // "PASS", "PASS (waived: nccl-1950)", "FAIL", "NO GPU: ...", "NOT RUN: ..."
  Tally tally() const;
  bool suite_passed_with_waivers(const std::string& suite) const;
};

Verdict decide(const Inputs& in);
Verdict decide(const bundle::Bundle& b, std::vector<std::string> set_aside_findings = {});

// The cases as junit.xml gives them to CI servers: each case decide() waived is a skip of type
// gpucts.waived, the defect ids in its gpucts.waived property and the status it ran with in
// gpucts.waived_status (bundle::load reads that status back). `v` is decide() of these cases.
std::vector<junit::Case> junit_cases(const std::vector<junit::Case>& cases, const Verdict& v);

}  // namespace cts::verdict
