#include "report/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

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

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tick(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string render(const Plot& p) {
  // The legend's column grows with its longest name (about 6.5 px a character at 11 px), the plot
  // area keeps its size.
  std::size_t longest = 0;
  for (const auto& s : p.series) longest = std::max(longest, s.name.size());
  const double right = std::max(150.0, 44 + 6.5 * static_cast<double>(longest));
  const double left = 64, top = 30, bottom = 48;
  const int width = p.width + static_cast<int>(right - 150);
  const double w = width - left - right, h = p.height - top - bottom;
  double xmin = 0, xmax = 0, ymax = 0, ymin_pos = 0;
  bool any = false;
  for (const auto& s : p.series)
    for (const auto& [x, y] : s.points) {
      if (x <= 0 || !std::isfinite(y)) continue;
      double lx = std::log2(x);
      if (!any) xmin = xmax = lx;
      xmin = std::min(xmin, lx);
      xmax = std::max(xmax, lx);
      ymax = std::max(ymax, y);
      if (y > 0) ymin_pos = ymin_pos > 0 ? std::min(ymin_pos, y) : y;
      any = true;
    }
  if (xmax - xmin < 1) {  // one size: centred
    xmin -= 0.5;
    xmax = xmin + 1;
  }
  const bool ranged = p.y_min && p.y_max && *p.y_max > *p.y_min;
  const LogAxis ylog = ranged ? LogAxis{} : log_axis(p.y_scale, ymin_pos, ymax);
  // Not a structured binding: clang (the asan preset) cannot capture one in the lambda below.
  const std::pair<double, double> axis = ranged ? nice_step(*p.y_min, *p.y_max) : nice_axis(ymax);
  const double ybottom = ranged ? *p.y_min : 0;
  const double ytop = ranged ? *p.y_max : axis.first, ystep = axis.second;
  auto X = [&](double x) { return left + (std::log2(x) - xmin) / (xmax - xmin) * w; };
  auto Y = [&](double y) {
    if (ranged) y = std::clamp(y, ybottom, ytop);
    if (!ylog.on) return top + h - (y - ybottom) / (ytop - ybottom) * h;
    const double l = std::log10(std::max(y, std::pow(10.0, ylog.lo)));
    return top + h - (l - ylog.lo) / (ylog.hi - ylog.lo) * h;
  };
  auto plotted = [&](double y) { return std::isfinite(y) && (!ylog.on || y > 0); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << p.height
    << "\" viewBox=\"0 0 " << width << ' ' << p.height << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << p.height << "\" fill=\"#fff\"/>\n";
  o << "<text x=\"" << left << "\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" << xml::escape(p.title)
    << "</text>\n";
  if (!any) {
    o << "<text x=\"" << left + w / 2 << "\" y=\"" << top + h / 2
      << "\" text-anchor=\"middle\">no data</text>\n</svg>";
    return o.str();
  }
  // Grid and y ticks: on a log axis every decade (1, 10, 100), with 2 and 5 between where the
  // axis spans few decades.
  std::vector<double> yticks;
  if (ylog.on) {
    const bool minor = ylog.hi - ylog.lo <= 3;
    for (int e = ylog.lo; e <= ylog.hi; ++e)
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1.0 && !minor) continue;
        const double v = m * std::pow(10.0, e);
        if (std::log10(v) <= ylog.hi + 1e-9) yticks.push_back(v);
      }
  } else {
    for (double y = std::ceil(ybottom / ystep - 1e-9) * ystep; y <= ytop + 1e-9; y += ystep)
      yticks.push_back(std::fabs(y) < 1e-12 ? 0 : y);
  }
  if (p.band) {
    const double y0 = Y(std::max(p.band->first, ybottom)), y1 = Y(std::min(p.band->second, ytop));
    o << "<rect class=\"band\" x=\"" << left << "\" y=\"" << num(y1) << "\" width=\"" << w << "\" height=\""
      << num(y0 - y1) << "\" fill=\"#c8e6c9\" fill-opacity=\"0.6\"/>\n";
  }
  for (double y : yticks) {
    o << "<line x1=\"" << left << "\" x2=\"" << left + w << "\" y1=\"" << num(Y(y)) << "\" y2=\"" << num(Y(y))
      << "\" stroke=\"#e0e0e0\"/>\n";
    o << "<text class=\"ytick\" x=\"" << left - 6 << "\" y=\"" << num(Y(y) + 4) << "\" text-anchor=\"end\">"
      << tick(y) << "</text>\n";
  }
  // x ticks every other power of 2, or over a wide sweep at 1, 8 and 64 of each unit (8B 64B 1K 8K
  // 64K 1M ... 1G), so labels do not collide.
  const bool wide = (xmax - xmin) > 16;
  for (int e = static_cast<int>(std::ceil(xmin)); e <= static_cast<int>(std::floor(xmax)); ++e) {
    if (wide ? (e % 10 != 0 && e % 10 != 3 && e % 10 != 6) : e % 2 != 0) continue;
    double x = X(std::ldexp(1.0, e));
    o << "<line x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << top << "\" y2=\"" << top + h
      << "\" stroke=\"#f0f0f0\"/>\n";
    o << "<text class=\"xtick\" x=\"" << num(x) << "\" y=\"" << top + h + 16 << "\" text-anchor=\"middle\">"
      << size_label(std::ldexp(1.0, e)) << "</text>\n";
  }
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << w << "\" height=\"" << h
    << "\" fill=\"none\" stroke=\"#555\"/>\n";
  o << "<text x=\"" << left + w / 2 << "\" y=\"" << p.height - 10 << "\" text-anchor=\"middle\">"
    << xml::escape(p.x_label) << "</text>\n";
  o << "<text transform=\"translate(14 " << top + h / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << xml::escape(p.y_label + (ylog.on ? ", log scale" : "")) << "</text>\n";
  // Series and legend.
  int color = 0, legend = 0;
  for (const auto& s : p.series) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& xy : s.points)
      if (xy.first > 0 && plotted(xy.second)) pts.push_back(xy);
    if (pts.empty()) continue;
    std::sort(pts.begin(), pts.end());
    const char* c = s.dashed ? kThresholdColor : kColors[color++ % 6];
    if (s.dashed && pts.size() == 1) {  // a floor at one size: a bar across it, not an empty line
      const double x = X(pts[0].first), y = Y(pts[0].second);
      o << "<line class=\"floor\" x1=\"" << num(std::max(left, x - 14)) << "\" x2=\""
        << num(std::min(left + w, x + 14)) << "\" y1=\"" << num(y) << "\" y2=\"" << num(y) << "\" stroke=\""
        << c << "\" stroke-width=\"2.5\" stroke-dasharray=\"6 3\"/>\n";
      pts.clear();
    }
    o << "<polyline fill=\"none\" stroke=\"" << c << "\" stroke-width=\"" << (s.dashed ? 1.5 : 2) << "\""
      << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"";
    for (const auto& [x, y] : pts) o << num(X(x)) << ',' << num(Y(y)) << ' ';
    o << "\"/>\n";
    if (!s.dashed)
      for (const auto& [x, y] : pts)
        o << "<circle cx=\"" << num(X(x)) << "\" cy=\"" << num(Y(y)) << "\" r=\"2\" fill=\"" << c << "\"/>\n";
    double ly = top + 10 + legend++ * 16;
    o << "<line x1=\"" << left + w + 10 << "\" x2=\"" << left + w + 30 << "\" y1=\"" << ly << "\" y2=\"" << ly
      << "\" stroke=\"" << c << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6 4\"" : "")
      << "/>\n";
    o << "<text x=\"" << left + w + 34 << "\" y=\"" << ly + 4 << "\">" << xml::escape(s.name) << "</text>\n";
  }
  if (p.band && !p.band_label.empty()) {
    double ly = top + 10 + legend++ * 16;
    o << "<rect x=\"" << left + w + 10 << "\" y=\"" << ly - 5
      << "\" width=\"20\" height=\"10\" fill=\"#c8e6c9\"/>\n";
    o << "<text x=\"" << left + w + 34 << "\" y=\"" << ly + 4 << "\">" << xml::escape(p.band_label)
      << "</text>\n";
  }
  for (const auto& m : p.marks) {
    if (m.x <= 0 || !plotted(m.y)) continue;
    const double x = X(m.x), y = Y(m.y);
    o << "<circle class=\"mark\" cx=\"" << num(x) << "\" cy=\"" << num(y)
      << "\" r=\"7\" fill=\"none\" stroke=\"" << kThresholdColor << "\" stroke-width=\"2\"/>\n";
    o << "<text x=\"" << num(x - 10) << "\" y=\"" << num(y + 20) << "\" text-anchor=\"end\" fill=\""
      << kThresholdColor << "\" font-weight=\"bold\">" << xml::escape(m.text) << "</text>\n";
  }
  o << "</svg>";
  return o.str();
}

}  // namespace cts::svg
