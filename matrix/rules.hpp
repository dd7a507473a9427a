// The rules engine: fingerprints in, findings out (the finding ids and severities that `gpucts
// check` prints and README lists). Each fingerprint is checked alone, then all of them against
// each other. A rule whose inputs are absent is reported in not_evaluated, never as passed.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "matrix/fingerprint.hpp"
#include "matrix/matrix.hpp"

namespace cts {

struct Finding {
  std::string id;
  std::string severity;  // error | warning | info
  std::string subject;   // "node-a rank 0", "node-a GPU 0", "NCCL_ALGO", ...
  std::string message;
  std::string source;    // "torch.csv:2.11/cu130" or "rule:<name>"
  std::string fix;       // what to do (wheel, driver branch, variable to change)
  std::string defect{};  // the defect id of an nccl-/torch-known-defect finding (JSON "defect"), else ""
};

struct CheckResult {
  std::vector<Finding> findings;           // sorted: errors, then warnings, then info
  std::vector<std::string> not_evaluated;  // rule ids that could not judge (for some input)
  // The part of not_evaluated whose inputs were there but outside the data: a release newer than its
  // rows (data-beyond-reach names it) or between them (JSON "not_evaluated_outside_data").
  std::vector<std::string> outside_data;
  DataReach reach;                                 // the newest releases the matrix knows (JSON "data_reach")
  std::vector<std::string> inputs_absent() const;  // not_evaluated less outside_data
  bool failed() const;                             // any error finding
  nlohmann::json to_json() const;                  // the contract's --json object
};

// Every finding id this engine can produce (the contract's table plus additions).
const std::vector<std::string>& finding_ids();

// How the check judges. A known NCCL defect matched by the library's version alone (no case of
// this run reproduced it) is a warning that names its condition and fix: most runs never meet the
// condition. `strict_defects` makes every such finding an error (a gate that refuses the release).
// `libtorch`: the libtorch the C++ suites were built against (a build fact no fingerprint records),
// checked for known torch defects beside the fingerprint's Python torch; `libtorch_has_nccl` where it
// has ProcessGroupNCCL.
struct CheckOptions {
  bool strict_defects = false;
  std::optional<Version> libtorch{};
  bool libtorch_has_nccl = false;
};

CheckResult check_fingerprints(const Matrix& m, const std::vector<Fingerprint>& fps,
                               const CheckOptions& opts = {});

}  // namespace cts
