#include "report/across_runs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace cts::across {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

std::vector<PerfPoint> perf_points(const bundle::Bundle& b) {
  std::vector<PerfPoint> out;
  for (const auto& [name, run] : b.bandwidth)
    for (const auto& p : run.points) {
      if (!bw::no_data_moves(p).empty()) continue;
      PerfPoint q;
      q.test = name;
      q.collective = p.collective;
      q.dtype = p.dtype;
      q.placement = p.in_place ? "in place" : "out of place";
      q.variant = p.comm == bw::kBlocking ? "" : p.comm;
      q.bytes = p.bytes;
      q.graph = p.graph;
      q.key = name + ": " + p.key() + (q.variant.empty() ? "" : "|" + q.variant);
      q.label = name + ": " + p.collective + " " + p.dtype + " " + bw::format_bytes(p.bytes) + " " +
                q.placement + (p.graph ? " (graph)" : "") + (q.variant.empty() ? "" : " (" + q.variant + ")");
      q.spread_pct = p.time_us.spread_pct;
      if (p.bytes < kLatencyBelowBytes) {
        q.metric = "time_us";
        q.value = p.time_us.median;
      } else {
        q.metric = p.busbw_gbps ? "busbw_gbps" : "algbw_gbps";
        q.value = p.busbw_gbps ? *p.busbw_gbps : p.algbw_gbps;
      }
      out.push_back(std::move(q));
    }
  return out;
}

Move judge_move(const PerfPoint& before, const PerfPoint& after, double tolerance_pct) {
  Move m{kNaN, kNaN, ""};
  if (before.metric != after.metric || before.value <= 0 || !std::isfinite(after.value)) return m;
  m.change_pct = (after.value / before.value - 1) * 100;
  m.worse_pct = before.metric == "time_us" ? m.change_pct : -m.change_pct;
  const double noise = std::max(tolerance_pct, std::max(before.spread_pct, after.spread_pct));
  m.change = m.worse_pct > noise ? "slower" : m.worse_pct < -noise ? "faster" : "";
  return m;
}

std::vector<PerfChange> adjacent_changes(const std::vector<const bundle::Bundle*>& runs,
                                         double tolerance_pct) {
  std::vector<PerfChange> out;
  for (std::size_t i = 0; i + 1 < runs.size(); ++i) {
    std::map<std::string, PerfPoint> next;
    for (auto& p : perf_points(*runs[i + 1])) next.emplace(p.key, std::move(p));
    std::map<std::string, std::size_t> in_series;  // points seen so far of each series
    for (const auto& p : perf_points(*runs[i])) {
      const std::size_t k = in_series[p.test + "|" + p.collective + "|" + p.dtype + "|" + p.placement + "|" +
                                      (p.graph ? "graph" : "") + "|" + p.variant]++;
      auto it = next.find(p.key);
      if (it == next.end()) continue;
      Move m = judge_move(p, it->second, tolerance_pct);
      if (!m.change.empty()) out.push_back({i, k, p, it->second, m});
    }
  }
  return out;
}

std::string value_text(double v, const std::string& metric) {
  if (std::isnan(v)) return "absent";
  if (!std::isfinite(v) || v < 0) return "invalid";  // never a negative rate or time
  char buf[32];
  std::snprintf(buf, sizeof buf, metric == "time_us" ? "%.2f us" : "%.1f GB/s", v);
  return buf;
}

std::string metric_text(const std::string& metric) {
  return metric == "time_us" ? "latency" : metric.substr(0, metric.find('_'));
}

std::string percent_text(double v) {
  if (std::isnan(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v);
  return buf;
}

doc::Table change_table(const std::vector<PerfChange>& changes, const std::vector<std::string>& names,
                        std::size_t max_rows) {
  doc::Table t{{"between", "suite", "collective", "dtype", "size", "placement", "metric", "before", "after",
                "change", "spread before/after"},
               {},
               {}};
  // The same series, the next point, the same run pair and direction: one row.
  auto continues = [](const PerfChange& a, const PerfChange& b) {
    return a.from == b.from && b.index == a.index + 1 && a.move.change == b.move.change &&
           std::tie(a.before.test, a.before.collective, a.before.dtype, a.before.placement, a.before.graph,
                    a.before.variant, a.before.metric) ==
               std::tie(b.before.test, b.before.collective, b.before.dtype, b.before.placement,
                        b.before.graph, b.before.variant, b.before.metric);
  };
  for (std::size_t i = 0; i < changes.size() && t.rows.size() < max_rows;) {
    std::size_t j = i;
    while (j + 1 < changes.size() && continues(changes[j], changes[j + 1])) ++j;
    const PerfChange &a = changes[i], &z = changes[j];
    auto span = [&](const std::string& x, const std::string& y) { return i == j ? x : x + " .. " + y; };
    const std::string between = a.from + 1 < names.size() ? names[a.from] + " -> " + names[a.from + 1] : "";
    char spread[48];
    std::snprintf(spread, sizeof spread, "%.1f%% / %.1f%%", a.before.spread_pct, a.after.spread_pct);
    const std::string metric = metric_text(a.before.metric);
    std::string size = bw::format_bytes(a.before.bytes);
    if (i != j)
      size += " - " + bw::format_bytes(z.before.bytes) + " (" + std::to_string(j - i + 1) + " sizes)";
    t.rows.push_back(
        {between, a.before.test, a.before.collective, a.before.dtype, size,
         a.before.placement + (a.before.graph ? " graph" : "") +
             (a.before.variant.empty() ? "" : " " + a.before.variant),
         metric,
         span(value_text(a.before.value, a.before.metric), value_text(z.before.value, z.before.metric)),
         span(value_text(a.after.value, a.after.metric), value_text(z.after.value, z.after.metric)),
         span(percent_text(a.move.change_pct), percent_text(z.move.change_pct)) + " " + a.move.change,
         spread});
    t.row_class.push_back(a.move.change == "slower" ? "fail" : "pass");
    i = j + 1;
  }
  return t;
}

std::vector<std::string> run_names(const std::vector<const bundle::Bundle*>& runs) {
  // The fields a person tells runs apart by, in the order they are named, with a short name.
  static const std::vector<std::pair<std::string, std::string>> fields = {{"NCCL runtime", "NCCL"},
                                                                          {"driver", "driver"},
                                                                          {"CUDA runtime", "CUDA"},
                                                                          {"torch", "torch"},
                                                                          {"torch NCCL", "torch NCCL"},
                                                                          {"cuDNN", "cuDNN"},
                                                                          {"lightning", "lightning"},
                                                                          {"GPUs", "GPUs"},
                                                                          {"host", "host"}};
  std::vector<std::map<std::string, std::string>> env;
  for (const auto* b : runs) {
    std::map<std::string, std::string> m;
    for (auto& [k, v] : bundle::environment(*b)) m[k] = v;
    env.push_back(std::move(m));
  }
  std::vector<std::string> names(runs.size());
  std::size_t named = 0;
  for (const auto& [field, shown] : fields) {
    if (named == 2) break;  // two differing fields name a run; the environment table has the rest
    std::set<std::string> values;
    for (const auto& e : env) values.insert(e.count(field) ? e.at(field) : "absent");
    if (values.size() < 2) continue;
    ++named;
    for (std::size_t i = 0; i < runs.size(); ++i)
      names[i] +=
          (names[i].empty() ? "" : ", ") + shown + " " + (env[i].count(field) ? env[i].at(field) : "absent");
  }
  // The folder's last `parts` path components ("d2/bundle"), of its absolute path: "." and ".."
  // name the folder they stand for.
  auto folder = [&](std::size_t i, int parts) {
    std::vector<std::string> tail;
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::absolute(runs[i]->dir, ec);
    if (ec) dir = runs[i]->dir;
    for (const auto& c : dir.lexically_normal())
      if (!c.empty() && c != "/" && c != ".") tail.push_back(c.string());
    std::string out;
    for (std::size_t k = tail.size() > std::size_t(parts) ? tail.size() - parts : 0; k < tail.size(); ++k)
      out += (out.empty() ? "" : "/") + tail[k];
    return out;
  };
  std::map<std::string, int> uses;
  for (auto& n : names) ++uses[n];
  // As few of the folder's components as tell the runs apart; a run given twice gets its place.
  std::vector<std::string> out;
  for (int parts = 1; parts <= 16; ++parts) {
    out = names;
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (names[i].empty())
        out[i] = folder(i, parts);
      else if (uses[names[i]] > 1)
        out[i] += " (" + folder(i, parts) + ")";
    if (std::set<std::string>(out.begin(), out.end()).size() == out.size()) return out;
  }
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (seen[out[i]]++) out[i] += " (run " + std::to_string(i + 1) + ")";
  return out;
}

}  // namespace cts::across
