// The change between runs told in a few lines, for the first screen of `gpucts report` and of the
// campaign report: each run against the reference (the first run), the bandwidth points that moved
// beyond the tolerance and both runs' spread grouped into bands (run, collectives, size range,
// direction, metric, magnitude range), one line each:
//   "NCCL 2.27.7: AllReduce, AllGather, ReduceScatter busbw 9-11% slower from 64 KiB to 1 MiB"
// and, before them, the points that crossed a threshold floor:
//   "NCCL 2.28.9: AllReduce busbw 1 GiB: 405.9 GB/s, under its floor 431 (was 482.9)".
// Also the plots that show it: per collective a ratio plot (each run against the reference, by
// size, linear around 1.0 with the tolerance band shaded) and an absolute plot (floors, crossings).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/across_runs.hpp"
#include "report/bundle.hpp"

namespace cts::bands {

// One group of points of one run that moved the same way against the reference.
struct Band {
  std::size_t run = 0;                   // index into the runs (never 0, the reference)
  std::string direction;                 // "slower" | "faster"
  std::string metric;                    // "busbw" | "algbw" | "latency"
  std::vector<std::string> collectives;  // in the order the reference measured them
  std::string qualifier;                 // "" or e.g. "in place", "graph", "nonblocking", "bf16"
  std::uint64_t lo = 0, hi = 0;          // first and last size
  bool to_end = false;                   // hi is the largest size measured
  double min_pct = 0, max_pct = 0;       // how much the metric changed, in percent (positive)
  int points = 0;
  std::string text;  // the line
};

// A point of a run on the other side of its threshold floor than in the reference.
struct Crossing {
  std::size_t run = 0;
  std::string key;  // across::PerfPoint::key
  std::string test, collective, metric, qualifier;
  std::uint64_t bytes = 0;
  double value = 0, floor = 0;
  std::optional<double> was;  // the reference's value, absent when the reference has no such point
  bool under = true;          // false: back over the floor
  std::string text;
};

struct Story {
  std::vector<Crossing> crossings;         // in run order
  std::vector<Band> bands;                 // slower first, then faster; in run order, then by size
  std::vector<std::string> lines() const;  // crossings first, then the bands
};

// `runs[0]` is the reference; `names` name the runs (across::run_names).
Story tell(const std::vector<const bundle::Bundle*>& runs, const std::vector<std::string>& names,
           double tolerance_pct);
nlohmann::json to_json(const Story& s, const std::vector<std::string>& names);

// The points the plots and the headline tables show: out of place, the default communicator mode,
// graph launches only in a graph test, and only where data moves.
bool plotted_point(const std::string& test, const bw::Point& p);

struct Plot {
  std::string title, svg,
      file;  // title: the caption; file: a relative name for the SVG ("plots/ratio_...svg")
};
// The ratio plots of every (test, collective) of the reference first, then the absolute plots
// (threshold floors dashed, crossings marked).
std::vector<Plot> plots(const std::vector<const bundle::Bundle*>& runs, const std::vector<std::string>& names,
                        const Story& story, double tolerance_pct);

}  // namespace cts::bands
