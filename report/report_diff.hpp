// `gpucts report`: a baseline bundle against one or more candidates. The first screen tells the
// change: floors crossed, then the bandwidth moves grouped into bands (report/bands.hpp); ratio and
// absolute plots follow, the environment, and the details (every point and case) after them.
// A candidate regresses when a case newly fails, a case that passed in the baseline is missing or
// skipped (coverage lost is not a pass), the run was interrupted, its verdict turns from pass to
// fail, a bandwidth point of the default variant is missing (its file gone, or the point re-tagged)
// or gets slower by more than both the tolerance and the spread either run recorded for it, or
// falls under its threshold floor (a variant, e.g. nonblocking, is shown only).
// Runs of different selections or levels (manifest keys `level`, `selection`, where recorded) are
// compared on what both ran; what only one ran is said, not counted as missing.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/across_runs.hpp"
#include "report/bands.hpp"
#include "report/bundle.hpp"
#include "report/doc.hpp"
#include "report/verdict.hpp"

namespace cts::report {

// A case's status in each run is what verdict::decide() says it means there (verdict::outcome_name:
// passed, failed, error, skipped, waived), never the bare string a run recorded.
struct CaseRow {
  std::string key;
  std::string baseline;                 // status or "absent"
  std::vector<std::string> candidates;  // status or "absent"
  // Per candidate: "newly failing", "newly passing", "newly skipped", "newly waived", "missing",
  // "new", "". A waived failure counts as a skip: no longer passing, not failing the run.
  std::vector<std::string> change;
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

// What a bundle's manifest records of what was run, where it does (older bundles do not: "").
struct Scope {
  std::string level;      // "quick", "standard", ...
  std::string selection;  // as the options were given, for people ("--label cpu, --exclude-label torch")
  std::string revision;   // gpucts's git revision
};
// The manifest's `level`, `selection` (the object qualify records: labels, exclude_label, tests,
// exclude_tests) and `gpucts_revision`; "" where not recorded.
Scope scope_of(const bundle::Bundle& b);

struct Comparison {
  double tolerance_pct = 5;
  bundle::Bundle baseline;
  std::vector<bundle::Bundle> candidates;
  std::vector<verdict::Verdict> verdicts;  // verdict::decide() of the baseline, then of each candidate
  std::vector<EnvRow> environment;
  std::vector<CaseRow> cases;           // only rows where some candidate differs from the baseline
  std::vector<SuiteDelta> suites;       // every binary of any run
  std::vector<BandwidthRow> bandwidth;  // only rows that moved beyond the tolerance in some candidate
  std::vector<std::vector<std::string>> regressions;  // per candidate, one line per regression
  // Points that moved from one run to the next in the order baseline, candidate 1, candidate 2, ...
  std::vector<across::PerfChange> adjacent;
  // The runs by what differs between them ("NCCL 2.21.5"): baseline first, then each candidate.
  std::vector<std::string> names;
  // Each candidate against the baseline told in lines: floors crossed, bands of moves.
  bands::Story story;
  // Compared anyway, said first: another gpucts version or revision.
  std::vector<std::string> warnings;
  std::vector<Scope> scopes;                       // baseline, then each candidate
  std::vector<std::vector<std::string>> left_out;  // per candidate: what only one of the two ran
  // Per candidate, where both ran the same selection: "<test>: <collective>: N point(s) only in this
  // run ..." for default points the baseline lacks (a collective it did not measure).
  std::vector<std::vector<std::string>> only_in_candidate;
  // Points where no data moves, shown without a bandwidth, one line per collective and dtype of
  // every run: "<test>: AllReduce f32 8 B - 1 GiB (28 sizes) in place, 1 rank(s): <reason>".
  std::vector<std::string> no_data;
  bool regressed() const;
};

// Throws bundle::BundleError when the bundles' manifests are of different schemas; bundles of
// different gpucts versions are compared with a warning.
Comparison compare(bundle::Bundle baseline, std::vector<bundle::Bundle> candidates, double tolerance_pct);

// link_plots: Markdown links each plot as plots/<name>.svg (doc::svg_files; `gpucts report --output`
// writes them beside report.md); otherwise Markdown names the plot only.
doc::Doc to_doc(const Comparison& c, bool link_plots = false);
nlohmann::json to_json(const Comparison& c);

}  // namespace cts::report
