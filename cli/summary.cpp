#include "summary.hpp"

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

namespace fs = std::filesystem;

namespace cts::summary {

namespace {

constexpr size_t kMaxRows = 300;

std::string fmt(double v, const char* f = "%.1f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string duration(double s) {
  int t = static_cast<int>(s + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  return buf;
}

std::string safe_name(std::string s) {
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return s;
}

std::vector<std::string> collectives_of(const bw::Run& r) {
  std::vector<std::string> out;
  for (const auto& p : r.points)
    if (std::find(out.begin(), out.end(), p.collective) == out.end()) out.push_back(p.collective);
  return out;
}

void check_section(doc::Doc& d, const nlohmann::json& check) {
  d.heading("Compatibility check (gpucts check)");
  if (!check.is_object() || check.value("available", true) == false || !check.contains("verdict")) {
    d.paragraph(check.is_object() ? check.value("reason", std::string("check not available")) : "check not available");
    return;
  }
  d.paragraph("verdict: " + check.value("verdict", std::string("?")));
  doc::Table t{{"severity", "id", "subject", "message", "source"}, {}, {}};
  if (check.contains("findings") && check["findings"].is_array())
    for (const auto& f : check["findings"]) {
      std::string sev = f.value("severity", "");
      t.rows.push_back({sev, f.value("id", ""), f.value("subject", ""), f.value("message", ""), f.value("source", "")});
      t.row_class.push_back(sev == "error" ? "fail" : sev == "warning" ? "skip" : "");
    }
  if (t.rows.empty()) d.paragraph("no findings");
  else d.table(std::move(t));
  if (check.contains("not_evaluated") && check["not_evaluated"].is_array() && !check["not_evaluated"].empty()) {
    std::string ne;
    for (const auto& x : check["not_evaluated"]) ne += (ne.empty() ? "" : ", ") + x.get<std::string>();
    d.paragraph("not evaluated (inputs absent): " + ne);
  }
}

void bandwidth_section(doc::Doc& d, const bundle::Bundle& b) {
  d.heading("Bandwidth");
  if (b.bandwidth.empty()) {
    d.paragraph("no bandwidth results (the perf suite did not run or was skipped)");
    return;
  }
  for (const auto& [name, run] : b.bandwidth) {
    d.heading(name + ": " + run.ctx.gpu + ", " + std::to_string(run.ctx.world_size) + " rank(s), link " + run.ctx.link +
                  ", NVLS " + run.ctx.nvls,
              3);
    std::string copy = run.ctx.copy_gbps ? fmt(*run.ctx.copy_gbps) + " GB/s" : "not measured";
    int pass = 0, fail = 0, unj = 0;
    for (const auto& p : run.points) (p.verdict == "pass" ? pass : p.verdict == "fail" ? fail : unj)++;
    d.paragraph("NCCL " + run.nccl_version + "; device-to-device copy (cudaMemcpyAsync, bytes/time): " + copy + "; " +
                std::to_string(run.points.size()) + " points: " + std::to_string(pass) + " pass, " +
                std::to_string(fail) + " below threshold, " + std::to_string(unj) + " recorded without threshold" +
                (run.ctx.world_size == 1 ? "; " + std::string(bw::kNoBusbwOneRank) + ": algbw shown" : ""));
    // Judged points (the ones with a threshold), failures first.
    doc::Table judged{{"collective", "size", "placement", "measured GB/s", "floor GB/s", "verdict", "why"}, {}, {}};
    for (const char* want : {"fail", "pass"})
      for (const auto& p : run.points) {
        if (p.verdict != want) continue;
        double m = p.threshold_metric == "busbw_gbps" && p.busbw_gbps ? *p.busbw_gbps : p.algbw_gbps;
        judged.rows.push_back({p.collective, bw::format_bytes(p.bytes), p.placement() + (p.graph ? " graph" : ""),
                               fmt(m), p.threshold_gbps ? fmt(*p.threshold_gbps) : "", p.verdict, p.message});
        judged.row_class.push_back(p.verdict);
      }
    if (!judged.rows.empty()) d.table(std::move(judged));
    // Small-message latency (8 B .. 64 KiB), microseconds per call, out-of-place.
    std::set<std::uint64_t> sizes;
    for (const auto& p : run.points)
      if (p.bytes <= 65536 && !p.graph && !p.in_place) sizes.insert(p.bytes);
    if (!sizes.empty()) {
      doc::Table lat{{"latency (us), out-of-place"}, {}, {}};
      for (auto s : sizes) lat.header.push_back(bw::format_bytes(s));
      for (const auto& c : collectives_of(run)) {
        std::vector<std::string> row{c};
        for (auto s : sizes) {
          std::string cell = "";
          for (const auto& p : run.points)
            if (p.collective == c && p.bytes == s && !p.graph && !p.in_place) cell = fmt(p.time_us.median, "%.2f");
          row.push_back(cell);
        }
        lat.rows.push_back(std::move(row));
      }
      d.table(std::move(lat));
    }
    for (const auto& c : collectives_of(run)) {
      svg::Plot plot = bandwidth_plot(run, c, name);
      d.svg(svg::render(plot), plot.title, "plots/" + safe_name(name + "_" + c) + ".svg");
    }
  }
}

}  // namespace

svg::Plot bandwidth_plot(const bw::Run& run, const std::string& collective, const std::string& run_name) {
  bool bus = run.ctx.world_size > 1;
  svg::Plot p;
  p.title = collective + " (" + run_name + ", " + std::to_string(run.ctx.world_size) + " rank" +
            (run.ctx.world_size > 1 ? "s" : "") + ")";
  p.x_label = "message size (log scale)";
  p.y_label = bus ? "busbw (GB/s)" : "algbw (GB/s); busbw n/a for 1 rank";
  if (!bus) p.title += ", out of place";
  std::map<std::string, svg::Series> by_mode;
  svg::Series threshold{"threshold floor", {}, true};
  for (const auto& pt : run.points) {
    if (pt.collective != collective) continue;
    // With one rank NCCL skips an in-place call (nothing to move): its "bandwidth" is not a rate
    // and would flatten every other line, so it stays in the tables and out of the plot.
    if (!bus && pt.in_place) continue;
    std::string mode = pt.placement() + (pt.graph ? " graph" : "");
    auto& s = by_mode[mode];
    s.name = mode;
    double y = bus && pt.busbw_gbps ? *pt.busbw_gbps : pt.algbw_gbps;
    s.points.emplace_back(static_cast<double>(pt.bytes), y);
    if (pt.threshold_gbps) threshold.points.emplace_back(static_cast<double>(pt.bytes), *pt.threshold_gbps);
  }
  for (auto& [m, s] : by_mode) p.series.push_back(std::move(s));
  if (!threshold.points.empty()) {
    // One floor value per size; keep the lowest where placements share a size.
    std::map<double, double> floor;
    for (const auto& [x, y] : threshold.points) floor[x] = floor.count(x) ? std::min(floor[x], y) : y;
    threshold.points.assign(floor.begin(), floor.end());
    p.series.push_back(std::move(threshold));
  }
  return p;
}

doc::Doc build(const bundle::Bundle& b) {
  const auto& m = b.manifest;
  doc::Doc d;
  d.title = "gpucts qualification: " + m.host + ", " + m.created;
  auto counts = junit::count(b.cases);
  std::string v = m.verdict == "pass" ? "PASS" : "FAIL";
  if (m.interrupted) v += " (interrupted: incomplete run)";
  d.verdict(v, m.verdict);
  int suites_run = 0;
  for (const auto& s : m.suites) suites_run += s.status != "not_run";
  d.paragraph(std::to_string(counts.total()) + " cases: " + std::to_string(counts.passed) + " passed, " +
              std::to_string(counts.failed) + " failed, " + std::to_string(counts.errors) + " errors, " +
              std::to_string(counts.skipped) + " skipped; " + std::to_string(suites_run) + " of " +
              std::to_string(m.suites.size()) + " suites run in " + duration(m.elapsed_s) + "; gpucts " +
              m.gpucts_version + " from " + m.tree);

  // What failed and why.
  doc::Table fails{{"case", "message"}, {}, {}};
  for (const auto& c : b.cases)
    if (c.status == "failed" || c.status == "error") {
      fails.rows.push_back({c.key(), c.message});
      fails.row_class.push_back("fail");
    }
  for (const auto& s : m.suites)
    if ((s.status == "timeout" || s.status == "crashed" || s.status == "interrupted") && !s.synthesized) {
      fails.rows.push_back({s.name, s.status + ": " + s.reason});
      fails.row_class.push_back("fail");
    }
  if (b.check.is_object() && b.check.contains("findings") && b.check["findings"].is_array())
    for (const auto& f : b.check["findings"])
      if (f.value("severity", "") == "error") {
        fails.rows.push_back({"check: " + f.value("id", ""), f.value("subject", "") + ": " + f.value("message", "")});
        fails.row_class.push_back("fail");
      }
  d.heading("Failed (" + std::to_string(fails.rows.size()) + ")");
  const size_t total_fails = fails.rows.size();
  if (total_fails > kMaxRows) {  // a page a person can open; junit.xml has every case
    fails.rows.resize(kMaxRows);
    fails.row_class.resize(kMaxRows);
  }
  if (fails.rows.empty()) d.paragraph("nothing failed");
  else d.table(std::move(fails));
  if (total_fails > kMaxRows)
    d.paragraph("... and " + std::to_string(total_fails - kMaxRows) + " more: every case is in junit.xml");

  // What was skipped and why, grouped by reason.
  std::map<std::string, std::pair<int, std::vector<std::string>>> reasons;
  for (const auto& c : b.cases)
    if (c.status == "skipped") {
      auto& r = reasons[c.message];
      ++r.first;
      if (r.second.size() < 3) r.second.push_back(c.key());
    }
  for (const auto& s : m.suites)
    if (s.status == "not_run") {
      auto& r = reasons["suite not run: " + s.reason];
      ++r.first;
      if (r.second.size() < 3) r.second.push_back(s.name);
    }
  std::vector<std::pair<std::string, std::pair<int, std::vector<std::string>>>> sorted(reasons.begin(), reasons.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b2) { return a.second.first > b2.second.first; });
  int total_skips = 0;
  doc::Table skips{{"reason", "count", "for example"}, {}, {}};
  for (const auto& [why, r] : sorted) {
    total_skips += r.first;
    std::string ex;
    for (const auto& e : r.second) ex += (ex.empty() ? "" : ", ") + e;
    if (r.first > static_cast<int>(r.second.size())) ex += ", ...";
    skips.rows.push_back({why, std::to_string(r.first), ex});
    skips.row_class.push_back("skip");
  }
  d.heading("Skipped (" + std::to_string(total_skips) + ", " + std::to_string(sorted.size()) + " reasons)");
  if (skips.rows.empty()) d.paragraph("nothing skipped");
  else d.table(std::move(skips));

  // Suites.
  d.heading("Suites");
  doc::Table st{{"suite", "labels", "status", "cases", "time", "note"}, {}, {}};
  for (const auto& s : m.suites) {
    std::string labels;
    for (const auto& l : s.labels) labels += (labels.empty() ? "" : " ") + l;
    std::string cases = std::to_string(s.cases_done) + (s.cases_total ? "/" + std::to_string(s.cases_total) : "");
    st.rows.push_back({s.name, labels, s.status, cases, duration(s.duration_s), s.reason});
    st.row_class.push_back(s.status == "passed" ? "pass" : (s.status == "skipped" || s.status == "not_run") ? "skip" : "fail");
  }
  d.table(std::move(st));

  d.heading("Environment");
  doc::Table env{{"what", "value"}, {}, {}};
  for (auto& [k, val] : bundle::environment(b)) env.rows.push_back({k, val});
  d.table(std::move(env));

  check_section(d, b.check);
  bandwidth_section(d, b);
  return d;
}

void write(const bundle::Bundle& b) {
  doc::Doc d = build(b);
  fs::create_directories(fs::path(b.dir) / "plots");
  for (const auto& blk : d.blocks)
    if (blk.kind == doc::Block::Kind::Svg && !blk.svg_file.empty())
      bundle::write_text((fs::path(b.dir) / blk.svg_file).string(),
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + blk.svg + "\n");
  bundle::write_text((fs::path(b.dir) / "summary.md").string(), doc::to_markdown(d));
  bundle::write_text((fs::path(b.dir) / "summary.html").string(), doc::to_html(d));
}

}  // namespace cts::summary
