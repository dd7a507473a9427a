#include "report/bands.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "report/svg_plot.hpp"
#include "results/text_format.hpp"

namespace cts::bands {

namespace {

// What sets a point apart from the default measurement, for people ("bf16, graph"); the placement
// is added where only in-place points moved.
std::string qualifier_of(const across::PerfPoint& p) {
  std::vector<std::string> q;
  if (p.dtype != "f32") q.push_back(p.dtype);
  if (p.graph) q.push_back("graph");
  if (!p.variant.empty()) q.push_back(p.variant);
  return join(q, ", ");
}

std::string series_of(const across::PerfPoint& p) {
  return p.test + "|" + p.collective + "|" + p.dtype + "|" + p.placement + "|" + (p.graph ? "g" : "") + "|" +
         p.variant + "|" + p.metric;
}

std::string pct_range(double lo, double hi) {
  char buf[48];
  if (std::lround(lo) == std::lround(hi))
    std::snprintf(buf, sizeof buf, "%ld%%", std::lround(hi));
  else
    std::snprintf(buf, sizeof buf, "%ld-%ld%%", std::lround(lo), std::lround(hi));
  return buf;
}

std::string band_text(const Band& b, const std::string& name) {
  std::string where = b.lo == b.hi ? "at " + bw::format_bytes(b.lo)
                      : b.to_end   ? "from " + bw::format_bytes(b.lo) + " up"
                                   : "from " + bw::format_bytes(b.lo) + " to " + bw::format_bytes(b.hi);
  return name + ": " + join(b.collectives, ", ") + " " + b.metric + " " + pct_range(b.min_pct, b.max_pct) +
         " " + b.direction + " " + where + (b.qualifier.empty() ? "" : " (" + b.qualifier + ")");
}

std::string gbps(double v) { return format_number(v, "%.1f"); }

std::string floor_text(double v) { return format_number(v, "%.4g"); }

// The value a point is judged by against its floor: busbw for a busbw threshold, algbw otherwise.
double judged_value(const bw::Point& p) {
  return p.threshold_metric == "busbw_gbps" && p.busbw_gbps ? *p.busbw_gbps : p.algbw_gbps;
}

}  // namespace

std::vector<std::string> Story::lines() const {
  std::vector<std::string> out;
  for (const auto& c : crossings) out.push_back(c.text);
  for (const auto& b : bands) out.push_back(b.text);
  return out;
}

namespace {

// A band before it is merged with the others: the placement its points were measured in.
struct Found {
  Band band;
  std::string placement;
};

// The reference's series (one collective, dtype, placement, launch, variant, metric), in the order
// it measured them.
struct Series {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const across::PerfPoint*>> points;
  std::size_t tests = 0;  // how many tests the reference measured (more than one: each band names its test)
};

Series series_of_reference(const std::vector<across::PerfPoint>& ref) {
  Series s;
  std::set<std::string> tests;
  for (const auto& p : ref) {
    tests.insert(p.test);
    auto& v = s.points[series_of(p)];
    if (v.empty()) s.order.push_back(series_of(p));
    v.push_back(&p);
  }
  s.tests = tests.size();
  return s;
}

// The band of run i that starts at point k of series `sv`: the points from k on that moved the same
// way; `end` is set one past its last judged point.
Band band_from(const std::vector<const across::PerfPoint*>& sv, std::size_t k, std::size_t i,
               const std::function<across::Move(std::size_t)>& move_at, bool name_test, double tolerance_pct,
               std::size_t& end) {
  const across::Move first = move_at(k);
  Band b;
  b.run = i;
  b.direction = first.change;
  b.metric = across::metric_text(sv[k]->metric);
  b.collectives = {sv[k]->collective};
  b.qualifier = qualifier_of(*sv[k]);
  if (name_test) b.qualifier = sv[k]->test + (b.qualifier.empty() ? "" : ", " + b.qualifier);
  b.lo = sv[k]->bytes;
  b.min_pct = b.max_pct = std::fabs(first.change_pct);
  // A point that moved the same way beyond the tolerance but not beyond its own spread is
  // not judged: it neither counts nor splits the band, where a judged point follows it.
  auto unjudged_same_way = [&](const across::Move& m) {
    const double worse = b.direction == "slower" ? m.worse_pct : -m.worse_pct;
    return m.change.empty() && std::isfinite(worse) && worse > tolerance_pct;
  };
  end = k;
  for (std::size_t j = k; j < sv.size(); ++j) {
    const across::Move m = move_at(j);
    if (m.change == b.direction) {
      b.hi = sv[j]->bytes;
      b.min_pct = std::min(b.min_pct, std::fabs(m.change_pct));
      b.max_pct = std::max(b.max_pct, std::fabs(m.change_pct));
      ++b.points;
      end = j + 1;
    } else if (!unjudged_same_way(m)) {
      break;
    }
  }
  b.to_end = end == sv.size() && b.lo != b.hi;
  return b;
}

// Every band of every run against the reference, series by series.
std::vector<Found> find_bands(const std::vector<const bundle::Bundle*>& runs, double tolerance_pct) {
  const std::vector<across::PerfPoint> ref = across::perf_points(*runs[0]);
  const Series series = series_of_reference(ref);
  std::vector<Found> found;
  for (std::size_t i = 1; i < runs.size(); ++i) {
    std::map<std::string, across::PerfPoint> pts;
    for (auto& p : across::perf_points(*runs[i])) pts.emplace(p.key, std::move(p));
    for (const auto& key : series.order) {
      const auto& sv = series.points.at(key);
      auto move_at = [&](std::size_t j) {
        auto it = pts.find(sv[j]->key);
        return it == pts.end() ? across::Move{NAN, NAN, ""}
                               : across::judge_move(*sv[j], it->second, tolerance_pct);
      };
      for (std::size_t k = 0; k < sv.size();) {
        if (move_at(k).change.empty()) {
          ++k;
          continue;
        }
        std::size_t end = k;
        Band b = band_from(sv, k, i, move_at, series.tests > 1, tolerance_pct, end);
        found.push_back({std::move(b), sv[k]->placement});
        k = end;
      }
    }
  }
  return found;
}

// Bands of one run, direction, metric, qualifier and size range are one line over their
// collectives and placements, where they moved by about as much: magnitudes that overlap or lie
// within the tolerance of each other (10% and 40% over the same sizes are two changes). The
// magnitudes are those of the line's first band, so that 10%, 14%, 18% ... cannot chain into one.
std::vector<Band> merge_bands(const std::vector<Found>& found, double tolerance_pct) {
  std::vector<Band> out;
  std::vector<std::set<std::string>> placements;     // per line
  std::vector<std::pair<double, double>> first_pct;  // per line: its first band's min and max
  for (const auto& [b, placement] : found) {
    auto it = out.begin();
    for (; it != out.end(); ++it) {
      const auto& [lo_pct, hi_pct] = first_pct[it - out.begin()];
      const double gap = std::max(lo_pct, b.min_pct) - std::min(hi_pct, b.max_pct);
      if (std::tie(it->run, it->direction, it->metric, it->qualifier, it->lo, it->hi, it->to_end) ==
              std::tie(b.run, b.direction, b.metric, b.qualifier, b.lo, b.hi, b.to_end) &&
          gap <= tolerance_pct)
        break;
    }
    if (it == out.end()) {
      out.push_back(b);
      placements.push_back({placement});
      first_pct.emplace_back(b.min_pct, b.max_pct);
      continue;
    }
    placements[it - out.begin()].insert(placement);
    if (std::find(it->collectives.begin(), it->collectives.end(), b.collectives[0]) == it->collectives.end())
      it->collectives.push_back(b.collectives[0]);
    it->min_pct = std::min(it->min_pct, b.min_pct);
    it->max_pct = std::max(it->max_pct, b.max_pct);
    it->points += b.points;
  }
  for (std::size_t k = 0; k < out.size(); ++k)
    if (placements[k] == std::set<std::string>{"in place"})
      out[k].qualifier = out[k].qualifier.empty() ? "in place" : out[k].qualifier + ", in place";
  std::stable_sort(out.begin(), out.end(), [](const Band& a, const Band& b) {
    // Slower first; the default measurement before its variants; then by run and size.
    return std::make_tuple(a.direction != "slower", !a.qualifier.empty(), a.run, a.lo) <
           std::make_tuple(b.direction != "slower", !b.qualifier.empty(), b.run, b.lo);
  });
  return out;
}

// Point p of run i against the reference's point `before` (nullptr: none), on opposite sides of its floor.
Crossing crossing_of(std::size_t i, const std::string& test, const bw::Point& p, const bw::Point* before,
                     const std::string& run_name) {
  Crossing c;
  c.run = i;
  c.key = test + ": " + p.key();
  c.test = test;
  c.collective = p.collective;
  c.metric = p.threshold_metric == "busbw_gbps" ? "busbw" : "algbw";
  c.bytes = p.bytes;
  c.value = judged_value(p);
  c.floor = *p.threshold_gbps;
  if (before) c.was = judged_value(*before);
  c.under = p.verdict == "fail";
  std::vector<std::string> q;
  if (p.in_place) q.push_back("in place");
  if (p.graph) q.push_back("graph");
  if (p.comm != bw::kBlocking) q.push_back(p.comm);
  c.qualifier = join(q, ", ");
  c.text = run_name + ": " + c.collective + " " + c.metric + " " + bw::format_bytes(c.bytes) +
           (c.qualifier.empty() ? "" : " " + c.qualifier) + ": " + gbps(c.value) + " GB/s, " +
           (c.under ? "under" : "back over") + " its floor " + floor_text(c.floor) + " (was " +
           (c.was ? gbps(*c.was) : std::string("not measured")) + ")";
  return c;
}

// Floors crossed: a point judged against a threshold that failed where the reference's passed
// (or that passes where the reference's failed). Points back under their floor first.
std::vector<Crossing> find_crossings(const std::vector<const bundle::Bundle*>& runs,
                                     const std::function<std::string(std::size_t)>& name) {
  std::vector<Crossing> out;
  std::map<std::string, const bw::Point*> ref_points;
  for (const auto& [test, run] : runs[0]->bandwidth)
    for (const auto& p : run.points) ref_points[test + ": " + p.key()] = &p;
  for (std::size_t i = 1; i < runs.size(); ++i)
    for (const auto& [test, run] : runs[i]->bandwidth)
      for (const auto& p : run.points) {
        if (!p.threshold_gbps || p.verdict == "unjudged" || !bw::no_data_moves(p).empty()) continue;
        auto it = ref_points.find(test + ": " + p.key());
        const bw::Point* before = it == ref_points.end() ? nullptr : it->second;
        const bool failed_before = before && before->verdict == "fail";
        if ((p.verdict == "fail") == failed_before) continue;
        out.push_back(crossing_of(i, test, p, before, name(i)));
      }
  std::stable_sort(out.begin(), out.end(),
                   [](const Crossing& a, const Crossing& b) { return a.under > b.under; });
  return out;
}

}  // namespace

Story tell(const std::vector<const bundle::Bundle*>& runs, const std::vector<std::string>& names,
           double tolerance_pct) {
  Story s;
  if (runs.size() < 2) return s;
  auto name = [&](std::size_t i) { return i < names.size() ? names[i] : "run " + std::to_string(i); };
  s.bands = merge_bands(find_bands(runs, tolerance_pct), tolerance_pct);
  for (auto& b : s.bands) b.text = band_text(b, name(b.run));
  s.crossings = find_crossings(runs, name);
  return s;
}

nlohmann::json to_json(const Story& s, const std::vector<std::string>& names) {
  auto name = [&](std::size_t i) { return i < names.size() ? names[i] : std::string(); };
  nlohmann::json j = {{"crossings", nlohmann::json::array()}, {"bands", nlohmann::json::array()}};
  for (const auto& c : s.crossings)
    j["crossings"].push_back({{"run", c.run},
                              {"name", name(c.run)},
                              {"point", c.key},
                              {"collective", c.collective},
                              {"metric", c.metric},
                              {"bytes", c.bytes},
                              {"qualifier", c.qualifier},
                              {"value_gbps", c.value},
                              {"floor_gbps", c.floor},
                              {"was_gbps", c.was ? nlohmann::json(*c.was) : nlohmann::json(nullptr)},
                              {"direction", c.under ? "under" : "over"},
                              {"text", c.text}});
  for (const auto& b : s.bands)
    j["bands"].push_back({{"run", b.run},
                          {"name", name(b.run)},
                          {"direction", b.direction},
                          {"metric", b.metric},
                          {"collectives", b.collectives},
                          {"qualifier", b.qualifier},
                          {"from_bytes", b.lo},
                          {"to_bytes", b.hi},
                          {"to_largest", b.to_end},
                          {"min_change_pct", b.min_pct},
                          {"max_change_pct", b.max_pct},
                          {"points", b.points},
                          {"text", b.text}});
  return j;
}

bool plotted_point(const std::string& test, const bw::Point& p) {
  return !p.in_place && p.comm == bw::kBlocking && p.graph == (test.find("graph") != std::string::npos) &&
         bw::no_data_moves(p).empty();
}

namespace {

// One (test, collective) of the plots: each run's plotted points by size, the runs' names.
struct PlotInput {
  std::string test, coll;
  bool bus = false;  // busbw (more than one rank), else algbw
  std::vector<std::map<std::uint64_t, const bw::Point*>> by;
  std::function<std::string(std::size_t)> name;
};

double plotted_value(const bw::Point& p) { return p.busbw_gbps ? *p.busbw_gbps : p.algbw_gbps; }

std::string plot_file(std::string f) {
  for (auto& ch : f)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '/' && ch != '.' && ch != '_' && ch != '-')
      ch = '_';
  return f;
}

// The crossings of the story ringed: on the ratio plot (ratio = true) or the absolute plot.
std::vector<svg::Mark> crossing_marks(const PlotInput& in, const Story& story, bool ratio) {
  std::vector<svg::Mark> marks;
  for (const auto& c : story.crossings)
    if (c.test == in.test && c.collective == in.coll && c.qualifier.empty() && c.run < in.by.size()) {
      auto it = in.by[c.run].find(c.bytes);
      if (it == in.by[c.run].end()) continue;
      const std::string t = c.under ? "under floor" : "over floor";
      auto ref = in.by[0].find(c.bytes);
      if (!ratio)
        marks.push_back({static_cast<double>(c.bytes), plotted_value(*it->second), t});
      else if (ref != in.by[0].end())
        marks.push_back(
            {static_cast<double>(c.bytes), ref->second->time_us.median / it->second->time_us.median, t});
    }
  return marks;
}

// Each run against the reference: its speed (the reference's time over its own) by size.
Plot ratio_plot(const PlotInput& in, const Story& story, double tolerance_pct) {
  svg::Plot rp;
  rp.title = in.coll + ": each run against " + in.name(0) + " (" + in.test + ")";
  // A run that did not measure this collective is named in the caption (the plot's own title
  // has no room for it), not just left out of the legend.
  std::vector<std::string> lacking;
  for (std::size_t i = 1; i < in.by.size(); ++i)
    if (in.by[i].empty()) lacking.push_back(in.name(i));
  const std::string caption = rp.title + (lacking.empty() ? "" : "; not measured by " + join(lacking, ", "));
  rp.x_label = "message size";
  rp.y_label = "speed vs reference (its time / time)";
  const double tol = tolerance_pct / 100;
  double lo = 1 - 2 * tol, hi = 1 + 2 * tol;
  for (std::size_t i = 0; i < in.by.size(); ++i) {
    svg::Series s{in.name(i) + (i == 0 ? " (reference)" : ""), {}, false};
    for (const auto& [bytes, p] : in.by[i]) {
      auto ref = in.by[0].find(bytes);
      if (ref == in.by[0].end()) continue;
      const double r = ref->second->time_us.median / p->time_us.median;
      s.points.emplace_back(static_cast<double>(bytes), r);
      lo = std::min(lo, r - 0.02);
      hi = std::max(hi, r + 0.02);
    }
    rp.series.push_back(std::move(s));
  }
  rp.y_scale = svg::Scale::linear;
  rp.y_min = std::max(0.0, std::floor(lo * 20) / 20);
  rp.y_max = std::ceil(hi * 20) / 20;
  rp.band = std::make_pair(1 - tol, 1 + tol);
  char band[48];
  std::snprintf(band, sizeof band, "within %g%%", tolerance_pct);
  rp.band_label = band;
  rp.marks = crossing_marks(in, story, true);
  return {caption, svg::render(rp), plot_file("plots/ratio_" + in.test + "_" + in.coll + ".svg")};
}

// The values of every run, the threshold floors dashed.
Plot absolute_plot(const PlotInput& in, const Story& story) {
  svg::Plot ap;
  ap.title = in.coll + " (" + in.test + ")";
  ap.x_label = "message size";
  ap.y_label = in.bus ? "busbw (GB/s)" : "algbw (GB/s); busbw n/a for 1 rank";
  svg::Series floor{"floor (thresholds)", {}, true};
  for (std::size_t i = 0; i < in.by.size(); ++i) {
    svg::Series s{in.name(i), {}, false};
    for (const auto& [bytes, p] : in.by[i]) {
      s.points.emplace_back(static_cast<double>(bytes), plotted_value(*p));
      const bool same_metric = (p->threshold_metric == "busbw_gbps") == in.bus;
      const double x = static_cast<double>(bytes);  // a structured binding is not captured (C++17)
      if (p->threshold_gbps && same_metric &&
          std::none_of(floor.points.begin(), floor.points.end(),
                       [x](const std::pair<double, double>& f) { return f.first == x; }))
        floor.points.emplace_back(static_cast<double>(bytes), *p->threshold_gbps);
    }
    ap.series.push_back(std::move(s));
  }
  if (!floor.points.empty()) ap.series.push_back(std::move(floor));
  ap.marks = crossing_marks(in, story, false);
  return {ap.title, svg::render(ap), plot_file("plots/" + in.test + "_" + in.coll + ".svg")};
}

}  // namespace

std::vector<Plot> plots(const std::vector<const bundle::Bundle*>& runs, const std::vector<std::string>& names,
                        const Story& story, double tolerance_pct) {
  std::vector<Plot> ratio, absolute;
  if (runs.empty()) return ratio;
  auto name = [&](std::size_t i) { return i < names.size() ? names[i] : "run " + std::to_string(i); };
  for (const auto& [test, run] : runs[0]->bandwidth) {
    std::vector<std::string> colls;
    for (const auto& p : run.points)
      if (plotted_point(test, p) && std::find(colls.begin(), colls.end(), p.collective) == colls.end())
        colls.push_back(p.collective);
    for (const auto& coll : colls) {
      PlotInput in{test, coll, run.ctx.world_size > 1, {}, name};
      // Each run's points of this collective, by size.
      in.by.resize(runs.size());
      for (std::size_t i = 0; i < runs.size(); ++i)
        for (const auto& [t2, r2] : runs[i]->bandwidth)
          if (t2 == test)
            for (const auto& p : r2.points)
              if (p.collective == coll && plotted_point(in.test, p)) in.by[i][p.bytes] = &p;
      ratio.push_back(ratio_plot(in, story, tolerance_pct));
      absolute.push_back(absolute_plot(in, story));
    }
  }
  if (runs.size() < 2) return absolute;  // one run: nothing to divide by
  ratio.insert(ratio.end(), absolute.begin(), absolute.end());
  return ratio;
}

}  // namespace cts::bands
