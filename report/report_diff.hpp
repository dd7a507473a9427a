// `gpucts report`: a baseline bundle against one or more candidates. Environment differences,
// cases newly failing / passing / skipped / missing, bandwidth points that moved more than a
// tolerance; one table with a column per run. A candidate regresses when a case newly fails, a
// case that passed in the baseline is missing (coverage lost is not a pass), its verdict turns
// from pass to fail, or a bandwidth point of the default variant gets slower by more than both the
// tolerance and the spread either run recorded for it (a variant, e.g. nonblocking, is shown only).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/across_runs.hpp"
#include "report/bundle.hpp"
#include "report/doc.hpp"

namespace cts::report {

struct CaseRow {
  std::string key;
  std::string baseline;                 // status or "absent"
  std::vector<std::string> candidates;  // status or "absent"
  std::vector<std::string>
      change;  // per candidate: "newly failing", "newly passing", "newly skipped", "missing", "new", ""
  std::string message;  // the newest failure / skip reason
};

struct BandwidthRow {
  std::string key;     // "<test>: AllReduce/f32/1073741824/out_of_place" (stable across runs)
  std::string label;   // "<test>: AllReduce f32 1 GiB out of place" (for people)
  std::string metric;  // busbw_gbps / algbw_gbps, or time_us for small messages
  double baseline = 0;
  std::vector<double> candidates;   // NaN where the candidate has no such point
  std::vector<double> change_pct;   // NaN where not comparable
  std::vector<std::string> change;  // "slower", "faster", ""
  double baseline_spread_pct = 0;   // (max - min) / median of the repetitions
  std::vector<double> candidate_spread_pct;
};

// Cases of one binary (CTest entry) in each run: how many, and how many are new or missing.
struct SuiteDelta {
  std::string binary;
  int baseline = 0;
  std::vector<int> candidates, added, missing;
};

struct EnvRow {
  std::string what, baseline;
  std::vector<std::string> candidates;
  bool changed = false;
};

struct Comparison {
  double tolerance_pct = 5;
  bundle::Bundle baseline;
  std::vector<bundle::Bundle> candidates;
  std::vector<EnvRow> environment;
  std::vector<CaseRow> cases;           // only rows where some candidate differs from the baseline
  std::vector<SuiteDelta> suites;       // every binary of any run
  std::vector<BandwidthRow> bandwidth;  // only rows that moved beyond the tolerance in some candidate
  std::vector<std::vector<std::string>> regressions;  // per candidate, one line per regression
  // Points that moved from one run to the next in the order baseline, candidate 1, candidate 2, ...
  std::vector<across::PerfChange> adjacent;
  // The runs by what differs between them ("NCCL 2.21.5"): baseline first, then each candidate.
  std::vector<std::string> names;
  bool regressed() const;
};

// Throws bundle::BundleError when the bundles come from different gpucts versions.
Comparison compare(bundle::Bundle baseline, std::vector<bundle::Bundle> candidates, double tolerance_pct);

doc::Doc to_doc(const Comparison& c);
nlohmann::json to_json(const Comparison& c);

}  // namespace cts::report
