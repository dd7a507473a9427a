// The NCCL release campaign report: the same suites run against several NCCL releases, one
// qualification bundle per release, read back here into one report with a column per release:
//   - per collective x dtype x op family, pass/fail/skip counts per release;
//   - every behaviour that changes between adjacent releases (a case's status going from one to
//     another), grouped (one row per known defect, one per collective x dtype x op x change), with
//     the first release where it changed; each case in a details section and campaign.json;
//   - the bandwidth points that moved between adjacent releases beyond the tolerance and both
//     runs' spread (only within one variant: blocking and nonblocking are never compared);
//   - bandwidth at 1 GiB and 8 B latency per release (the default variant), with plots;
//   - a verdict per release that sets aside what a campaign expects (the header the suites were
//     built against differs from the release loaded);
//   - observed against the matrix: each nccl_features.csv / nccl_ops.csv claim for each release
//     against what the run saw (an exported function, a rejected or accepted (dtype, op) pair),
//     and the nccl_defects.csv ids the cases name (JUnit properties gpucts.known_defect /
//     gpucts.known_defect_not_seen, check findings nccl-known-defect); disagreements first.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "matrix/matrix.hpp"
#include "matrix/version.hpp"
#include "report/across_runs.hpp"
#include "report/bands.hpp"
#include "report/bundle.hpp"
#include "report/doc.hpp"
#include "report/verdict.hpp"
#include "results/case_axes.hpp"
#include "results/junit.hpp"

namespace cts::campaign {

// Time spent on one release by `gpucts campaign` (seconds; absent: not measured, e.g. a report
// over bundles written elsewhere).
struct Timing {
  std::optional<double> fetch, unpack, build, run;
  std::string how;  // "cache", "archive .campaign/nccl-2.29.7-sm90.tar.xz", "source build", ...
};

struct Release {
  Version version;        // what the bundle's fingerprint says was loaded (or requested)
  std::string requested;  // the version asked for ("" when the report was given bundles)
  std::string library;    // the libnccl file the suites loaded
  bundle::Bundle bundle;
  // Case properties of the gtest XML (RecordProperty), by case key ("binary/Suite.name").
  std::map<std::string, std::map<std::string, std::string>> properties;
  Timing timing;
  std::string problem;  // e.g. the library loaded is not the one asked for
  // Filled by build(): the bundle's verdict once the findings a campaign expects are set aside
  // (kExpectedInCampaign), which of those the bundle's check had, and the whole decision (what
  // each case means: decision.outcomes follows bundle.cases).
  std::string verdict;
  std::vector<std::string> expected;
  verdict::Verdict decision;
};

// Check findings every campaign has, since each release is loaded under one build of the suites:
// they do not make a release fail.
inline const std::vector<std::string> kExpectedInCampaign = {"nccl-header-library-mismatch"};

// Reads one bundle as a release of the campaign: its version from the fingerprints' NCCL runtime.
// Throws bundle::BundleError.
Release load_release(const std::string& dir);
// The properties of every case of a bundle's gtest XML files (manifest suites[].xml).
std::map<std::string, std::map<std::string, std::string>> case_properties(const bundle::Bundle& b);

// "pass" | "fail" | "skip" for a case status (error counts as fail) or a case's outcome (a waived
// failure counts as a skip, as junit.xml shows it).
std::string status_class(junit::Status s);
std::string status_class(verdict::Outcome o);

// What a collective case is about: the gpucts.axis.* properties it recorded (results/case_axes.hpp)
// or, for a case without them (an older bundle), its suite and name parsed ("AllReduce",
// "bf16_avg_1048577_outofplace_w1": collective, dtype, op and world). Empty collective when the
// case is not a collective case.
using CaseAxes = ::cts::CaseAxes;
CaseAxes case_axes(const junit::Case& k);

struct Cell {
  int pass = 0, fail = 0, skip = 0;
  bool operator==(const Cell& o) const { return pass == o.pass && fail == o.fail && skip == o.skip; }
};
struct GridRow {
  std::string collective, dtype, op;
  std::vector<Cell> cells;  // per release
};

// One case whose status changed between two adjacent releases.
struct CaseChange {
  std::string key;       // binary/Suite.name
  std::string from, to;  // status classes
  std::size_t at = 0;    // index of the release with the new status
  std::string message;   // the failure or skip text of the failing/skipping side
  std::string defect;    // the known defect id(s) its failing side names, "" when none
};

// One group of behaviour changes between two adjacent releases: the cases a known defect explains
// (defect set: one row per defect), or else those of one collective x dtype x op with one change.
struct Change {
  std::string defect;                    // the known defect id(s) the group is of, "" otherwise
  std::string collective, dtype, op;     // the group's; for a defect group, the first case's
  std::vector<std::string> collectives;  // every collective among the cases (a defect spans several)
  std::string binary;                    // the binaries of its cases, comma-separated
  std::string from, to;                  // status classes
  std::size_t at = 0;                    // index of the first release with the new status
  int cases = 0;
  std::string example;               // one case key
  std::string message;               // the failure or skip text of the example's failing/skipping side
  std::vector<std::string> defects;  // known defect ids the cases carry (either side)
};

// One claim of the matrix data about one release, and what the run saw.
struct Claim {
  std::string file;  // nccl_features.csv | nccl_ops.csv | nccl_defects.csv
  std::string key;   // "AlltoAll", "f8e4m3/avg (1 rank)", "nccl-1950"
  // "matrix: f8e4m3 avg unsupported from 2.24.3 with one rank (observed); observed: rejected on
  // 2.27.7-2.29.3, accepted and right on 2.29.7-2.32.3"
  std::string claim;
  std::vector<std::string> matrix;    // per release: "yes" | "no" | "" (no claim)
  std::vector<std::string> observed;  // per release: what was seen, "" when nothing
  std::vector<int> agree;             // per release: 1 agree, 0 disagree, -1 not comparable
  std::string source;
  bool disagrees() const;
};

struct BandwidthRow {
  std::string test, collective;
  std::vector<std::optional<double>> gbps_1g;     // busbw (or algbw for 1 rank), out of place, 1 GiB
  std::vector<std::optional<double>> latency_8b;  // median time of one call at 8 B, microseconds
  std::string metric;                             // "busbw" or "algbw"
};

struct Report {
  double tolerance_pct = 5;
  std::vector<Release> releases;  // oldest first
  std::vector<GridRow> grid;
  std::vector<Change> changes;           // in release order, defect groups first, then collective
  std::vector<CaseChange> case_changes;  // every case of every change, in release order
  // Bandwidth points that moved between adjacent releases; `from` indexes `releases`.
  std::vector<across::PerfChange> perf;
  std::vector<Claim> claims;  // disagreements first
  std::vector<BandwidthRow> bandwidth;
  std::vector<std::string> problems;  // releases that did not run as asked
  // Each release against the oldest, told in lines (floors crossed, bands of moves): the first screen.
  bands::Story story;
};

// Orders the releases by version and builds every table. `m` is the matrix the claims come from;
// a bandwidth point has moved when it changed by more than `tolerance_pct` and either run's spread.
Report build(std::vector<Release> releases, const Matrix& m, double tolerance_pct = 5);
// A release's verdict: verdict::decide with kExpectedInCampaign set aside; its kind's name
// ("pass", "fail", ...) by release_verdict.
verdict::Verdict decide_release(const bundle::Bundle& b);
std::string release_verdict(const bundle::Bundle& b, std::vector<std::string>* expected_seen = nullptr);

doc::Doc to_doc(const Report& r);
nlohmann::json to_json(const Report& r);
// Writes campaign.md, campaign.html, campaign.json and plots/*.svg into `dir`.
void write(const Report& r, const std::string& dir);

// Bisect: given the outcome of a case on each release tried (class per version, in version order),
// the next release to try, or nullopt once the release where it changed is known. The oldest
// release's class is `old_cls`, the newest's `new_cls`: pass -> fail finds a regression, fail ->
// pass a fix.
struct BisectState {
  std::vector<std::string> versions;           // candidates, oldest first
  std::map<std::size_t, std::string> outcome;  // index -> status class
  std::string old_cls = "pass", new_cls = "fail";
  // The index to run next (between the last known old_cls and the first new_cls after it), or nullopt.
  std::optional<std::size_t> next() const;
  // Index of the first release with new_cls, once next() is nullopt.
  std::optional<std::size_t> first_changed() const;
};

}  // namespace cts::campaign
