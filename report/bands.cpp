#include "report/bands.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
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

Story tell(const std::vector<const bundle::Bundle*>& runs, const std::vector<std::string>& names,
           double tolerance_pct) {
  Story s;
  if (runs.size() < 2) return s;
  auto name = [&](std::size_t i) { return i < names.size() ? names[i] : "run " + std::to_string(i); };
  const std::vector<across::PerfPoint> ref = across::perf_points(*runs[0]);
  std::set<std::string> tests;
  for (const auto& p : ref) tests.insert(p.test);
  // Each series of the reference (one collective, dtype, placement, launch, variant, metric), in order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const across::PerfPoint*>> series;
  for (const auto& p : ref) {
    auto& v = series[series_of(p)];
    if (v.empty()) order.push_back(series_of(p));
    v.push_back(&p);
  }
  std::vector<Band> found;
  std::vector<std::set<std::string>> placements;  // per band of `found`, then of s.bands
  for (std::size_t i = 1; i < runs.size(); ++i) {
    std::map<std::string, across::PerfPoint> pts;
    for (auto& p : across::perf_points(*runs[i])) pts.emplace(p.key, std::move(p));
    for (const auto& key : order) {
      const auto& sv = series.at(key);
      for (std::size_t k = 0; k < sv.size();) {
        auto move_at = [&](std::size_t j) {
          auto it = pts.find(sv[j]->key);
          return it == pts.end() ? across::Move{NAN, NAN, ""}
                                 : across::judge_move(*sv[j], it->second, tolerance_pct);
        };
        const across::Move first = move_at(k);
        if (first.change.empty()) {
          ++k;
          continue;
        }
        Band b;
        b.run = i;
        b.direction = first.change;
        b.metric = across::metric_text(sv[k]->metric);
        b.collectives = {sv[k]->collective};
        b.qualifier = qualifier_of(*sv[k]);
        if (tests.size() > 1) b.qualifier = sv[k]->test + (b.qualifier.empty() ? "" : ", " + b.qualifier);
        b.lo = sv[k]->bytes;
        b.min_pct = b.max_pct = std::fabs(first.change_pct);
        // A point that moved the same way beyond the tolerance but not beyond its own spread is
        // not judged: it neither counts nor splits the band, where a judged point follows it.
        auto unjudged_same_way = [&](const across::Move& m) {
          const double worse = b.direction == "slower" ? m.worse_pct : -m.worse_pct;
          return m.change.empty() && std::isfinite(worse) && worse > tolerance_pct;
        };
        std::size_t end = k;  // one past the band's last judged point
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
        found.push_back(std::move(b));
        placements.push_back({sv[k]->placement});
        k = end;
      }
    }
  }
  // Bands of one run, direction, metric, qualifier and size range are one line over their
  // collectives and placements, where they moved by about as much: magnitudes that overlap or lie
  // within the tolerance of each other (10% and 40% over the same sizes are two changes). The
  // magnitudes are those of the line's first band, so that 10%, 14%, 18% ... cannot chain into one.
  std::vector<std::set<std::string>> merged_placements;
  std::vector<std::pair<double, double>> first_pct;  // per line: its first band's min and max
  for (std::size_t f = 0; f < found.size(); ++f) {
    const Band& b = found[f];
    auto it = s.bands.begin();
    for (; it != s.bands.end(); ++it) {
      const auto& [lo_pct, hi_pct] = first_pct[it - s.bands.begin()];
      const double gap = std::max(lo_pct, b.min_pct) - std::min(hi_pct, b.max_pct);
      if (std::tie(it->run, it->direction, it->metric, it->qualifier, it->lo, it->hi, it->to_end) ==
              std::tie(b.run, b.direction, b.metric, b.qualifier, b.lo, b.hi, b.to_end) &&
          gap <= tolerance_pct)
        break;
    }
    if (it == s.bands.end()) {
      s.bands.push_back(b);
      merged_placements.push_back(placements[f]);
      first_pct.emplace_back(b.min_pct, b.max_pct);
      continue;
    }
    merged_placements[it - s.bands.begin()].insert(placements[f].begin(), placements[f].end());
    if (std::find(it->collectives.begin(), it->collectives.end(), b.collectives[0]) == it->collectives.end())
      it->collectives.push_back(b.collectives[0]);
    it->min_pct = std::min(it->min_pct, b.min_pct);
    it->max_pct = std::max(it->max_pct, b.max_pct);
    it->points += b.points;
  }
  for (std::size_t k = 0; k < s.bands.size(); ++k)
    if (merged_placements[k] == std::set<std::string>{"in place"})
      s.bands[k].qualifier = s.bands[k].qualifier.empty() ? "in place" : s.bands[k].qualifier + ", in place";
  std::stable_sort(s.bands.begin(), s.bands.end(), [](const Band& a, const Band& b) {
    // Slower first; the default measurement before its variants; then by run and size.
    return std::make_tuple(a.direction != "slower", !a.qualifier.empty(), a.run, a.lo) <
           std::make_tuple(b.direction != "slower", !b.qualifier.empty(), b.run, b.lo);
  });
  for (auto& b : s.bands) b.text = band_text(b, name(b.run));

  // Floors crossed: a point judged against a threshold that failed where the reference's passed
  // (or that passes where the reference's failed).
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
        c.text = name(i) + ": " + c.collective + " " + c.metric + " " + bw::format_bytes(c.bytes) +
                 (c.qualifier.empty() ? "" : " " + c.qualifier) + ": " + gbps(c.value) + " GB/s, " +
                 (c.under ? "under" : "back over") + " its floor " + floor_text(c.floor) + " (was " +
                 (c.was ? gbps(*c.was) : std::string("not measured")) + ")";
        s.crossings.push_back(std::move(c));
      }
  std::stable_sort(s.crossings.begin(), s.crossings.end(),
                   [](const Crossing& a, const Crossing& b) { return a.under > b.under; });
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

std::vector<Plot> plots(const std::vector<const bundle::Bundle*>& runs, const std::vector<std::string>& names,
                        const Story& story, double tolerance_pct) {
  std::vector<Plot> ratio, absolute;
  if (runs.empty()) return ratio;
  auto name = [&](std::size_t i) { return i < names.size() ? names[i] : "run " + std::to_string(i); };
  auto file = [](std::string f) {
    for (auto& ch : f)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '/' && ch != '.' && ch != '_' && ch != '-')
        ch = '_';
    return f;
  };
  for (const auto& named_run : runs[0]->bandwidth) {
    // Not a structured binding: clang (the asan preset) cannot capture one in the lambdas below.
    const std::string& test = named_run.first;
    std::vector<std::string> colls;
    for (const auto& p : named_run.second.points)
      if (plotted_point(test, p) && std::find(colls.begin(), colls.end(), p.collective) == colls.end())
        colls.push_back(p.collective);
    const bool bus = named_run.second.ctx.world_size > 1;
    for (const auto& coll : colls) {
      // Each run's points of this collective, by size.
      std::vector<std::map<std::uint64_t, const bw::Point*>> by(runs.size());
      for (std::size_t i = 0; i < runs.size(); ++i)
        for (const auto& [t2, r2] : runs[i]->bandwidth)
          if (t2 == test)
            for (const auto& p : r2.points)
              if (p.collective == coll && plotted_point(test, p)) by[i][p.bytes] = &p;
      auto value = [](const bw::Point& p) { return p.busbw_gbps ? *p.busbw_gbps : p.algbw_gbps; };
      std::vector<svg::Mark> ratio_marks, abs_marks;
      for (const auto& c : story.crossings)
        if (c.test == test && c.collective == coll && c.qualifier.empty() && c.run < runs.size()) {
          auto it = by[c.run].find(c.bytes);
          if (it == by[c.run].end()) continue;
          const std::string t = c.under ? "under floor" : "over floor";
          abs_marks.push_back({static_cast<double>(c.bytes), value(*it->second), t});
          auto ref = by[0].find(c.bytes);
          if (ref != by[0].end())
            ratio_marks.push_back(
                {static_cast<double>(c.bytes), ref->second->time_us.median / it->second->time_us.median, t});
        }

      svg::Plot rp;
      rp.title = coll + ": each run against " + name(0) + " (" + test + ")";
      // A run that did not measure this collective is named in the caption (the plot's own title
      // has no room for it), not just left out of the legend.
      std::vector<std::string> lacking;
      for (std::size_t i = 1; i < runs.size(); ++i)
        if (by[i].empty()) lacking.push_back(name(i));
      const std::string caption =
          rp.title + (lacking.empty() ? "" : "; not measured by " + join(lacking, ", "));
      rp.x_label = "message size";
      rp.y_label = "speed vs reference (its time / time)";
      const double tol = tolerance_pct / 100;
      double lo = 1 - 2 * tol, hi = 1 + 2 * tol;
      for (std::size_t i = 0; i < runs.size(); ++i) {
        svg::Series s{name(i) + (i == 0 ? " (reference)" : ""), {}, false};
        for (const auto& [bytes, p] : by[i]) {
          auto ref = by[0].find(bytes);
          if (ref == by[0].end()) continue;
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
      rp.marks = ratio_marks;
      ratio.push_back({caption, svg::render(rp), file("plots/ratio_" + test + "_" + coll + ".svg")});

      svg::Plot ap;
      ap.title = coll + " (" + test + ")";
      ap.x_label = "message size";
      ap.y_label = bus ? "busbw (GB/s)" : "algbw (GB/s); busbw n/a for 1 rank";
      svg::Series floor{"floor (thresholds)", {}, true};
      for (std::size_t i = 0; i < runs.size(); ++i) {
        svg::Series s{name(i), {}, false};
        for (const auto& [bytes, p] : by[i]) {
          s.points.emplace_back(static_cast<double>(bytes), value(*p));
          const bool same_metric = (p->threshold_metric == "busbw_gbps") == bus;
          const double x = static_cast<double>(bytes);  // a structured binding is not captured (C++17)
          if (p->threshold_gbps && same_metric &&
              std::none_of(floor.points.begin(), floor.points.end(),
                           [x](const std::pair<double, double>& f) { return f.first == x; }))
            floor.points.emplace_back(static_cast<double>(bytes), *p->threshold_gbps);
        }
        ap.series.push_back(std::move(s));
      }
      if (!floor.points.empty()) ap.series.push_back(std::move(floor));
      ap.marks = abs_marks;
      absolute.push_back({ap.title, svg::render(ap), file("plots/" + test + "_" + coll + ".svg")});
    }
  }
  if (runs.size() < 2) return absolute;  // one run: nothing to divide by
  ratio.insert(ratio.end(), absolute.begin(), absolute.end());
  return ratio;
}

}  // namespace cts::bands
