// Line plots as standalone SVG (no script, no external font): bandwidth against message size with
// a logarithmic (base 2) x axis, a y axis that is logarithmic (base 10, a tick per decade) where
// the values span two decades or more and linear from 0 otherwise, a legend, and dashed threshold
// lines (a floor of one point is a short dashed bar at its size), a shaded band (a tolerance
// around 1.0 on a ratio plot) and marked points (a crossed floor).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cts::svg {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x > 0
  bool dashed = false;                            // threshold lines
};

enum class Scale { automatic, linear, log };

// A point drawn as a ring with a short label ("under floor").
struct Mark {
  double x = 0, y = 0;
  std::string text;
};

struct Plot {
  std::string title, x_label, y_label;
  Scale y_scale = Scale::automatic;  // automatic: log where max / min (of the positive values) >= 100
  // A linear axis over [y_min, y_max] where both are set (a ratio plot around 1.0); from 0 otherwise.
  std::optional<double> y_min, y_max;
  std::optional<std::pair<double, double>> band;  // shaded y range, named in the legend by band_label
  std::string band_label;
  std::vector<Series> series;
  std::vector<Mark> marks;
  int width = 560, height = 340;
};

// The decades a log y axis spans, [10^lo, 10^hi], and whether it is log at all.
struct LogAxis {
  bool on = false;
  int lo = 0, hi = 1;
};
LogAxis log_axis(Scale scale, double ymin_positive, double ymax);

// x tick labels are byte sizes (8 B, 1 KiB, 1 MiB, 1 GiB). A series' colour is that of its place
// (empty ones are left out of the legend but keep their colour's turn); with no point at all the
// plot says "no data".
std::string render(const Plot& p);

}  // namespace cts::svg
