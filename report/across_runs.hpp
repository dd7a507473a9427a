// Runs of the same suites side by side (`gpucts report`, the campaign): names for the runs from
// what differs between their fingerprints, and the bandwidth points that moved from one run to the
// next by more than a tolerance and more than the spread either run recorded for the point.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "report/bundle.hpp"
#include "report/doc.hpp"

namespace cts::across {

// Below this size a point is read as a latency (us per call, lower is better), as nccl-tests'
// small sizes are; at and above it as a rate in GB/s (busbw, or algbw where busbw is not defined).
inline constexpr std::uint64_t kLatencyBelowBytes = 64 * 1024;

struct PerfPoint {
  std::string key;  // "<test>: <Point::key()>[|<variant>]": the same measurement in another run
  std::string test, collective, dtype, placement;
  std::string variant;  // "" for the default measurement, else e.g. "nonblocking"
  std::uint64_t bytes = 0;
  bool graph = false;
  std::string label;   // "<test>: AllReduce f32 1 GiB out of place[ (graph)][ (nonblocking)]"
  std::string metric;  // time_us | busbw_gbps | algbw_gbps
  double value = 0, spread_pct = 0;
};
// Every comparable point of a bundle, in the order the suite measured them. Points where no data
// moves (bw::no_data_moves: one rank in place) are left out: they are no rate.
std::vector<PerfPoint> perf_points(const bundle::Bundle& b);

// `after` against `before`: the change in percent (NaN when not comparable), how much worse
// (positive: slower, whatever the metric) and "slower" / "faster" / "" once it is beyond both the
// tolerance and either point's spread: a point whose repetitions ranged 12% apart has not moved by 8%.
struct Move {
  double change_pct, worse_pct;
  std::string change;
};
Move judge_move(const PerfPoint& before, const PerfPoint& after, double tolerance_pct);

// One point that moved between two runs next to each other in `runs` (from, from + 1).
struct PerfChange {
  std::size_t from = 0;
  std::size_t index = 0;  // of `before` in its series (collective, dtype, placement, variant) of run `from`
  PerfPoint before, after;
  Move move;
};
// Points of the same test and key (so of the same variant) in runs i and i + 1, for every i, that
// moved; in run order, then in the order the suite measured them.
std::vector<PerfChange> adjacent_changes(const std::vector<const bundle::Bundle*>& runs,
                                         double tolerance_pct);

// "8.60 us", "1900.0 GB/s", "absent" for NaN.
std::string value_text(double v, const std::string& metric);
// The metric for people: "busbw", "algbw", "latency" (time_us).
std::string metric_text(const std::string& metric);
// "+55.0%"; "" for NaN.
std::string percent_text(double v);

// The table of `changes`: between which runs (by `names`), what, size, the two values, the
// change and its direction. Points measured one after the other (the next size of one series) that
// moved the same way are one row: "2 MiB - 1 GiB (10 sizes)", the values and changes at both ends.
// At most `max_rows` rows.
doc::Table change_table(const std::vector<PerfChange>& changes, const std::vector<std::string>& names,
                        std::size_t max_rows);

// A name for each run from the fingerprint fields whose values differ between the runs
// ("NCCL 2.21.5", "driver 570.86.15, torch 2.9.0"); the bundle's folder name where nothing differs,
// and the folder added where two runs would otherwise share a name (with as many of its parents as
// tell the runs apart: "d1/bundle", "d2/bundle"). Names are never shared.
std::vector<std::string> run_names(const std::vector<const bundle::Bundle*>& runs);

}  // namespace cts::across
