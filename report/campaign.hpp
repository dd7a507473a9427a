// The NCCL release campaign report: the same suites run against several NCCL releases, one
// qualification bundle per release, read back here into one report with a column per release:
//   - per collective x dtype x op family, pass/fail/skip counts per release;
//   - every behaviour that changes between adjacent releases (a case's status going from one to
//     another), grouped, with the first release where it changed;
//   - bandwidth at 1 GiB and 8 B latency per release, with plots;
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
#include "report/bundle.hpp"
#include "report/doc.hpp"

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
};

// Reads one bundle as a release of the campaign: its version from the fingerprints' NCCL runtime.
// Throws bundle::BundleError.
Release load_release(const std::string& dir);
// The properties of every case of a bundle's gtest XML files (manifest suites[].xml).
std::map<std::string, std::map<std::string, std::string>> case_properties(const bundle::Bundle& b);

// "pass" | "fail" | "skip" | "absent" for a case status (error counts as fail).
std::string status_class(const std::string& junit_status);

// What a collective case is about, parsed from its suite and name ("AllReduce",
// "bf16_avg_1048577_outofplace_w1"): empty collective when the case is not a collective case.
struct CaseAxes {
  std::string collective, dtype, op;  // op "" for collectives that do not reduce
  int world = 0;                      // the _wN suffix, 0 when absent
};
CaseAxes case_axes(const std::string& suite, const std::string& name);

struct Cell {
  int pass = 0, fail = 0, skip = 0;
  bool operator==(const Cell& o) const { return pass == o.pass && fail == o.fail && skip == o.skip; }
};
struct GridRow {
  std::string collective, dtype, op;
  std::vector<Cell> cells;  // per release
};

// One behaviour change: cases that went from `from` to `to` between two adjacent releases.
struct Change {
  std::string collective, dtype, op;  // "" where the cases are not collective cases
  std::string binary;
  std::string from, to;  // status classes
  std::size_t at = 0;    // index of the first release with the new status
  int cases = 0;
  std::string example;               // one case key
  std::string message;               // the failure or skip text of the failing/skipping side
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
  std::vector<Release> releases;  // oldest first
  std::vector<GridRow> grid;
  std::vector<Change> changes;  // in release order, then collective
  std::vector<Claim> claims;    // disagreements first
  std::vector<BandwidthRow> bandwidth;
  std::vector<std::string> problems;  // releases that did not run as asked
};

// Orders the releases by version and builds every table. `m` is the matrix the claims come from.
Report build(std::vector<Release> releases, const Matrix& m);

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
