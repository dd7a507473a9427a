// Line plots as standalone SVG (no script, no external font): bandwidth against message size with
// a logarithmic (base 2) x axis, a linear y axis from 0, a legend, and dashed threshold lines.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace cts::svg {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x > 0
  bool dashed = false;                            // threshold lines
};

struct Plot {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  int width = 560, height = 340;
};

// x tick labels are byte sizes (8 B, 1 KiB, 1 MiB, 1 GiB). Empty series are left out; with no
// point at all the plot says "no data".
std::string render(const Plot& p);

}  // namespace cts::svg
