// summary.md and summary.html of a bundle: the verdict first, then what failed and why, then what
// was skipped and why (grouped by reason, with counts), the suites, the environment, the
// compatibility check, and the bandwidth tables and plots.
#pragma once
#include <string>

#include "bundle.hpp"
#include "doc.hpp"
#include "svg_plot.hpp"

namespace cts::summary {

// Busbw (or algbw for one rank, where busbw is not defined) against size for one collective of a
// run, one line per placement/graph mode and a dashed line for the threshold where there is one.
svg::Plot bandwidth_plot(const bw::Run& run, const std::string& collective, const std::string& run_name);

doc::Doc build(const bundle::Bundle& b);
// Writes summary.md, summary.html and plots/*.svg into the bundle directory.
void write(const bundle::Bundle& b);

}  // namespace cts::summary
