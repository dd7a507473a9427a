#include "report/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "results/text_format.hpp"
#include "results/xml.hpp"

namespace cts::svg {

namespace {

const char* kColors[] = {"#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#00838f", "#5d4037"};
const char* kThresholdColor = "#c62828";

std::string size_label(double bytes) {
  static const char* units[] = {"B", "K", "M", "G", "T"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%s", bytes, units[u]);
  return buf;
}

// A "nice" round upper bound and step for the y axis.
std::pair<double, double> nice_axis(double max) {
  if (max <= 0) return {1, 0.25};
  double mag = std::pow(10, std::floor(std::log10(max)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    double top = m * mag;
    if (top >= max * 1.05) return {top, top / 5};
  }
  return {10 * mag, 2 * mag};
}

// A step of about eight ticks over [lo, hi] (a ratio axis: 0.05, 0.1, 0.2, ...).
std::pair<double, double> nice_step(double lo, double hi) {
  const double raw = (hi - lo) / 8;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * mag >= raw) return {hi, m * mag};
  return {hi, 10 * mag};
}

}  // namespace

LogAxis log_axis(Scale scale, double ymin_pos, double ymax) {
  LogAxis a;
  if (scale == Scale::linear || ymin_pos <= 0 || ymax <= 0) return a;
  a.lo = static_cast<int>(std::floor(std::log10(ymin_pos) + 1e-9));
  a.hi = static_cast<int>(std::ceil(std::log10(ymax) - 1e-9));
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  a.on = scale == Scale::log || std::log10(ymax / ymin_pos) >= 2;
  return a;
}

namespace {

std::string num(double v) { return format_number(v, "%.1f"); }

std::string tick(double v) { return format_number(v, "%g"); }

}  // namespace

namespace {

// Where everything goes: the frame in pixels, the data's extent and the y axis chosen for it.
struct Canvas {
  double left = 64, top = 30, bottom = 48, right = 150;
  int width = 0;
  double w = 0, h = 0;
  double xmin = 0, xmax = 0, ymax = 0, ymin_pos = 0;
  bool any = false;  // a point to draw at all
  bool ranged = false;
  LogAxis ylog;
  double ybottom = 0, ytop = 0, ystep = 0;

  double X(double x) const { return left + (std::log2(x) - xmin) / (xmax - xmin) * w; }
  double Y(double y) const {
    if (ranged) y = std::clamp(y, ybottom, ytop);
    if (!ylog.on) return top + h - (y - ybottom) / (ytop - ybottom) * h;
    const double l = std::log10(std::max(y, std::pow(10.0, ylog.lo)));
    return top + h - (l - ylog.lo) / (ylog.hi - ylog.lo) * h;
  }
  bool plotted(double y) const { return std::isfinite(y) && (!ylog.on || y > 0); }
  double legend_x() const { return left + w; }
};

// The legend's column grows with its longest name (about 6.5 px a character at 11 px), the plot
// area keeps its size.
void size_frame(const Plot& p, Canvas& c) {
  std::size_t longest = 0;
  for (const auto& s : p.series) longest = std::max(longest, s.name.size());
  c.right = std::max(150.0, 44 + 6.5 * static_cast<double>(longest));
  c.width = p.width + static_cast<int>(c.right - 150);
  c.w = c.width - c.left - c.right;
  c.h = p.height - c.top - c.bottom;
}

// x in log2 units; points at x <= 0 or with a y that is not finite are not drawn.
void find_extent(const Plot& p, Canvas& c) {
  for (const auto& s : p.series)
    for (const auto& [x, y] : s.points) {
      if (x <= 0 || !std::isfinite(y)) continue;
      double lx = std::log2(x);
      if (!c.any) c.xmin = c.xmax = lx;
      c.xmin = std::min(c.xmin, lx);
      c.xmax = std::max(c.xmax, lx);
      c.ymax = std::max(c.ymax, y);
      if (y > 0) c.ymin_pos = c.ymin_pos > 0 ? std::min(c.ymin_pos, y) : y;
      c.any = true;
    }
  if (c.xmax - c.xmin < 1) {  // one size: centred
    c.xmin -= 0.5;
    c.xmax = c.xmin + 1;
  }
}

void choose_y_axis(const Plot& p, Canvas& c) {
  c.ranged = p.y_min && p.y_max && *p.y_max > *p.y_min;
  c.ylog = c.ranged ? LogAxis{} : log_axis(p.y_scale, c.ymin_pos, c.ymax);
  const std::pair<double, double> axis = c.ranged ? nice_step(*p.y_min, *p.y_max) : nice_axis(c.ymax);
  c.ybottom = c.ranged ? *p.y_min : 0;
  c.ytop = c.ranged ? *p.y_max : axis.first;
  c.ystep = axis.second;
}

Canvas lay_out(const Plot& p) {
  Canvas c;
  size_frame(p, c);
  find_extent(p, c);
  choose_y_axis(p, c);
  return c;
}

void write_opening(std::ostream& o, const Plot& p, const Canvas& c) {
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << c.width << "\" height=\"" << p.height
    << "\" viewBox=\"0 0 " << c.width << ' ' << p.height
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << c.width << "\" height=\"" << p.height << "\" fill=\"#fff\"/>\n";
  o << "<text x=\"" << c.left << "\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" << xml::escape(p.title)
    << "</text>\n";
}

void write_no_data(std::ostream& o, const Canvas& c) {
  o << "<text x=\"" << c.left + c.w / 2 << "\" y=\"" << c.top + c.h / 2
    << "\" text-anchor=\"middle\">no data</text>\n</svg>";
}

// On a log axis every decade (1, 10, 100), with 2 and 5 between where the axis spans few decades.
std::vector<double> y_ticks(const Canvas& c) {
  std::vector<double> ticks;
  if (c.ylog.on) {
    const bool minor = c.ylog.hi - c.ylog.lo <= 3;
    for (int e = c.ylog.lo; e <= c.ylog.hi; ++e)
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1.0 && !minor) continue;
        const double v = m * std::pow(10.0, e);
        if (std::log10(v) <= c.ylog.hi + 1e-9) ticks.push_back(v);
      }
  } else {
    for (double y = std::ceil(c.ybottom / c.ystep - 1e-9) * c.ystep; y <= c.ytop + 1e-9; y += c.ystep)
      ticks.push_back(std::fabs(y) < 1e-12 ? 0 : y);
  }
  return ticks;
}

void write_band(std::ostream& o, const Plot& p, const Canvas& c) {
  if (!p.band) return;
  const double y0 = c.Y(std::max(p.band->first, c.ybottom)), y1 = c.Y(std::min(p.band->second, c.ytop));
  o << "<rect class=\"band\" x=\"" << c.left << "\" y=\"" << num(y1) << "\" width=\"" << c.w << "\" height=\""
    << num(y0 - y1) << "\" fill=\"#c8e6c9\" fill-opacity=\"0.6\"/>\n";
}

void write_y_grid(std::ostream& o, const Canvas& c) {
  for (double y : y_ticks(c)) {
    o << "<line x1=\"" << c.left << "\" x2=\"" << c.left + c.w << "\" y1=\"" << num(c.Y(y)) << "\" y2=\""
      << num(c.Y(y)) << "\" stroke=\"#e0e0e0\"/>\n";
    o << "<text class=\"ytick\" x=\"" << c.left - 6 << "\" y=\"" << num(c.Y(y) + 4)
      << "\" text-anchor=\"end\">" << tick(y) << "</text>\n";
  }
}

// x ticks every other power of 2, or over a wide sweep at 1, 8 and 64 of each unit (8B 64B 1K 8K
// 64K 1M ... 1G), so labels do not collide.
void write_x_grid(std::ostream& o, const Canvas& c) {
  const bool wide = (c.xmax - c.xmin) > 16;
  for (int e = static_cast<int>(std::ceil(c.xmin)); e <= static_cast<int>(std::floor(c.xmax)); ++e) {
    if (wide ? (e % 10 != 0 && e % 10 != 3 && e % 10 != 6) : e % 2 != 0) continue;
    double x = c.X(std::ldexp(1.0, e));
    o << "<line x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << c.top << "\" y2=\"" << c.top + c.h
      << "\" stroke=\"#f0f0f0\"/>\n";
    o << "<text class=\"xtick\" x=\"" << num(x) << "\" y=\"" << c.top + c.h + 16
      << "\" text-anchor=\"middle\">" << size_label(std::ldexp(1.0, e)) << "</text>\n";
  }
}

void write_frame_and_labels(std::ostream& o, const Plot& p, const Canvas& c) {
  o << "<rect x=\"" << c.left << "\" y=\"" << c.top << "\" width=\"" << c.w << "\" height=\"" << c.h
    << "\" fill=\"none\" stroke=\"#555\"/>\n";
  o << "<text x=\"" << c.left + c.w / 2 << "\" y=\"" << p.height - 10 << "\" text-anchor=\"middle\">"
    << xml::escape(p.x_label) << "</text>\n";
  o << "<text transform=\"translate(14 " << c.top + c.h / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << xml::escape(p.y_label + (c.ylog.on ? ", log scale" : "")) << "</text>\n";
}

// The series' colours and the legend's rows, handed from one series to the next.
struct Legend {
  int color = 0, rows = 0;
  double next_row_y(const Canvas& c) { return c.top + 10 + rows++ * 16; }
};

// The points a series draws, in x order.
std::vector<std::pair<double, double>> drawn_points(const Series& s, const Canvas& c) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& xy : s.points)
    if (xy.first > 0 && c.plotted(xy.second)) pts.push_back(xy);
  std::sort(pts.begin(), pts.end());
  return pts;
}

// A floor at one size: a bar across it, not an empty line.
void write_floor_bar(std::ostream& o, std::pair<double, double> pt, const char* color, const Canvas& c) {
  const double x = c.X(pt.first), y = c.Y(pt.second);
  o << "<line class=\"floor\" x1=\"" << num(std::max(c.left, x - 14)) << "\" x2=\""
    << num(std::min(c.left + c.w, x + 14)) << "\" y1=\"" << num(y) << "\" y2=\"" << num(y) << "\" stroke=\""
    << color << "\" stroke-width=\"2.5\" stroke-dasharray=\"6 3\"/>\n";
}

void write_line(std::ostream& o, const std::vector<std::pair<double, double>>& pts, bool dashed,
                const char* color, const Canvas& c) {
  o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"" << (dashed ? 1.5 : 2) << "\""
    << (dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"";
  for (const auto& [x, y] : pts) o << num(c.X(x)) << ',' << num(c.Y(y)) << ' ';
  o << "\"/>\n";
  if (dashed) return;
  for (const auto& [x, y] : pts)
    o << "<circle cx=\"" << num(c.X(x)) << "\" cy=\"" << num(c.Y(y)) << "\" r=\"2\" fill=\"" << color
      << "\"/>\n";
}

void write_series_legend(std::ostream& o, const Series& s, const char* color, Legend& legend,
                         const Canvas& c) {
  const double ly = legend.next_row_y(c);
  o << "<line x1=\"" << c.legend_x() + 10 << "\" x2=\"" << c.legend_x() + 30 << "\" y1=\"" << ly << "\" y2=\""
    << ly << "\" stroke=\"" << color << "\" stroke-width=\"2\""
    << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n";
  o << "<text x=\"" << c.legend_x() + 34 << "\" y=\"" << ly + 4 << "\">" << xml::escape(s.name)
    << "</text>\n";
}

// A series keeps the colour of its place, so a run has one colour in every plot of a report; one
// with no point to draw takes no legend row.
void write_series(std::ostream& o, const Series& s, Legend& legend, const Canvas& c) {
  std::vector<std::pair<double, double>> pts = drawn_points(s, c);
  const char* color = s.dashed ? kThresholdColor : kColors[legend.color++ % 6];
  if (pts.empty()) return;
  if (s.dashed && pts.size() == 1) {
    write_floor_bar(o, pts[0], color, c);
    pts.clear();
  }
  write_line(o, pts, s.dashed, color, c);
  write_series_legend(o, s, color, legend, c);
}

void write_band_legend(std::ostream& o, const Plot& p, Legend& legend, const Canvas& c) {
  if (!p.band || p.band_label.empty()) return;
  const double ly = legend.next_row_y(c);
  o << "<rect x=\"" << c.legend_x() + 10 << "\" y=\"" << ly - 5
    << "\" width=\"20\" height=\"10\" fill=\"#c8e6c9\"/>\n";
  o << "<text x=\"" << c.legend_x() + 34 << "\" y=\"" << ly + 4 << "\">" << xml::escape(p.band_label)
    << "</text>\n";
}

// Every mark is ringed; its label goes below it, further down where another label is in the way
// (above it, further up, where that would leave the plot area), and is left out where the same
// words already stand there (neighbouring crossings).
void write_marks(std::ostream& o, const Plot& p, const Canvas& c) {
  struct Label {
    double x0, x1, y;
    std::string text;
  };
  std::vector<Label> placed;
  const double line = 13;
  for (const auto& m : p.marks) {
    if (m.x <= 0 || !c.plotted(m.y)) continue;
    const double x = c.X(m.x), y = c.Y(m.y);
    o << "<circle class=\"mark\" cx=\"" << num(x) << "\" cy=\"" << num(y)
      << "\" r=\"7\" fill=\"none\" stroke=\"" << kThresholdColor << "\" stroke-width=\"2\"/>\n";
    bool repeated = false;
    auto place = [&](double start, double step) {
      Label l{x - 10 - 7 * static_cast<double>(m.text.size()), x - 10, start, m.text};
      for (bool moved = true; moved && !repeated;) {
        moved = false;
        for (const auto& o2 : placed)
          if (l.x0 < o2.x1 && o2.x0 < l.x1 && std::fabs(l.y - o2.y) < line) {
            repeated |= o2.text == l.text;
            l.y = o2.y + step;
            moved = true;
          }
      }
      return l;
    };
    Label l = place(y + 20, line);
    if (!repeated && l.y > c.top + c.h - 3) l = place(y - 12, -line);
    if (repeated) continue;
    placed.push_back(l);
    o << "<text class=\"mark-label\" x=\"" << num(l.x1) << "\" y=\"" << num(l.y)
      << "\" text-anchor=\"end\" fill=\"" << kThresholdColor << "\" font-weight=\"bold\">"
      << xml::escape(m.text) << "</text>\n";
  }
}

}  // namespace

std::string render(const Plot& p) {
  const Canvas c = lay_out(p);
  std::ostringstream o;
  write_opening(o, p, c);
  if (!c.any) {
    write_no_data(o, c);
    return o.str();
  }
  write_band(o, p, c);
  write_y_grid(o, c);
  write_x_grid(o, c);
  write_frame_and_labels(o, p, c);
  Legend legend;
  for (const auto& s : p.series) write_series(o, s, legend, c);
  write_band_legend(o, p, legend, c);
  write_marks(o, p, c);
  o << "</svg>";
  return o.str();
}

}  // namespace cts::svg
