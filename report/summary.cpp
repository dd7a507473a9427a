#include "report/summary.hpp"

#include <sstream>

#include "matrix/matrix.hpp"
#include "matrix/nccl_defects.hpp"

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "report/run_notes.hpp"
#include "report/verdict.hpp"
#include "results/file_names.hpp"
#include "results/run_settings.hpp"
#include "results/text_format.hpp"

namespace fs = std::filesystem;

namespace cts::summary {

namespace {

constexpr size_t kMaxRows = 300;

bool is_torch_defect(const std::string& id) { return id.rfind("torch-", 0) == 0; }

// "Known NCCL defects", "Known torch defects" or "Known NCCL and torch defects", by the ids shown.
std::string defects_heading(const std::vector<std::string>& ids) {
  const bool torch = std::any_of(ids.begin(), ids.end(), is_torch_defect);
  const bool nccl =
      std::any_of(ids.begin(), ids.end(), [](const std::string& i) { return !is_torch_defect(i); });
  return std::string("Known ") + (nccl && torch ? "NCCL and torch" : torch ? "torch" : "NCCL") + " defects";
}

std::string fmt(double v, const char* f = "%.1f") { return format_number(v, f); }

std::string duration(double s) {
  // A manifest's duration from outside: clamped before the cast (1.4e10 s into an int is undefined).
  int t = static_cast<int>(std::min(std::max(s, 0.0), 2147483000.0) + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  return buf;
}

std::string safe_name(const std::string& s) { return file_name_for(s); }

std::vector<std::string> collectives_of(const bw::Run& r) {
  std::vector<std::string> out;
  for (const auto& p : r.points)
    if (std::find(out.begin(), out.end(), p.collective) == out.end()) out.push_back(p.collective);
  return out;
}

void check_section(doc::Doc& d, const bundle::Bundle& b, const verdict::Verdict& v) {
  const nlohmann::json& check = b.check;
  d.heading("Compatibility check (gpucts check)");
  if (!check.is_object() || check.value("available", true) == false || !check.contains("verdict")) {
    d.paragraph(check.is_object() ? check.value("reason", std::string("check not available"))
                                  : "check not available");
    return;
  }
  // The check's part of the verdict, as decide() counted it.
  const int errors = static_cast<int>(v.check_errors.size());
  std::string waived;
  for (const auto& w : v.waivers)
    if (w.findings) waived += (waived.empty() ? "" : ", ") + w.id;
  d.paragraph("verdict: " + (errors           ? "fail (" + std::to_string(errors) + " error finding(s))"
                             : waived.empty() ? std::string("pass")
                                              : "pass (waived: " + waived + ")"));
  if (!v.set_aside.empty())
    d.paragraph("set aside, not judged (every run of a campaign has them): " + join(v.set_aside, ", "));
  doc::Table t{{"severity", "id", "subject", "message", "source"}, {}, {}};
  if (check.contains("findings") && check["findings"].is_array())
    for (const auto& f : check["findings"]) {
      std::string sev = f.value("severity", "");
      const std::string defect = bundle::defect_of_finding(f);
      std::string msg = f.value("message", "");
      if (!defect.empty()) {  // its text is in "Known ... defects" above
        msg = defect + ": see " + defects_heading(bundle::split_ids(defect));
        if (sev == "error" && std::any_of(v.waivers.begin(), v.waivers.end(), [&](const bundle::Waiver& w) {
              return w.id == defect && w.findings;
            }))
          sev = "error, waived";
      }
      if (sev == "error" && std::count(v.set_aside.begin(), v.set_aside.end(), f.value("id", "")))
        sev = "error, set aside";
      t.rows.push_back({sev, f.value("id", ""), f.value("subject", ""), msg, f.value("source", "")});
      t.row_class.push_back(sev == "error" ? "fail" : sev == "info" ? "" : "skip");
    }
  if (t.rows.empty())
    d.paragraph("no findings");
  else
    d.table(std::move(t));
  // Two reasons a rule could not judge, as `gpucts check` tells them: its inputs were not recorded, or
  // they lie outside the data (not_evaluated_outside_data, a part of not_evaluated).
  const auto ids = [&](const char* key) {
    std::vector<std::string> out;
    if (check.contains(key) && check[key].is_array())
      for (const auto& x : check[key])
        if (x.is_string()) out.push_back(x.get<std::string>());
    return out;
  };
  const std::vector<std::string> outside = ids("not_evaluated_outside_data");
  std::string absent, beyond;
  for (const auto& id : ids("not_evaluated")) {
    std::string& list = std::count(outside.begin(), outside.end(), id) ? beyond : absent;
    list += (list.empty() ? "" : ", ") + id;
  }
  if (!absent.empty()) d.paragraph("not evaluated (inputs absent): " + absent);
  if (!beyond.empty()) d.paragraph("not evaluated (inputs outside the data): " + beyond);
}

void bandwidth_section(doc::Doc& d, const bundle::Bundle& b) {
  d.heading("Bandwidth");
  if (b.bandwidth.empty()) {
    d.paragraph("no bandwidth results (the perf suite did not run or was skipped)");
    return;
  }
  for (const auto& [name, run] : b.bandwidth) {
    d.heading(name + ": " + run.ctx.gpu + ", " + std::to_string(run.ctx.world_size) + " rank(s), link " +
                  run.ctx.link + ", NVLS " + run.ctx.nvls,
              3);
    std::string copy = run.ctx.copy_gbps ? fmt(*run.ctx.copy_gbps) + " GB/s" : "not measured";
    int pass = 0, fail = 0, unj = 0;
    for (const auto& p : run.points) (p.verdict == "pass" ? pass : p.verdict == "fail" ? fail : unj)++;
    d.paragraph(
        "NCCL " + run.nccl_version + "; device-to-device copy (cudaMemcpyAsync, bytes/time): " + copy + "; " +
        std::to_string(run.points.size()) + " points: " + std::to_string(pass) + " pass, " +
        std::to_string(fail) + " below threshold, " + std::to_string(unj) + " recorded without threshold" +
        (run.ctx.world_size == 1 ? "; " + std::string(bw::kNoBusbwOneRank) + ": algbw shown" : ""));
    // Judged points (the ones with a threshold), failures first.
    doc::Table judged{
        {"collective", "size", "placement", "measured GB/s", "floor GB/s", "verdict", "why"}, {}, {}};
    for (const char* want : {"fail", "pass"})
      for (const auto& p : run.points) {
        if (p.verdict != want) continue;
        double m = p.threshold_metric == "busbw_gbps" && p.busbw_gbps ? *p.busbw_gbps : p.algbw_gbps;
        judged.rows.push_back({p.collective, bw::format_bytes(p.bytes),
                               p.placement() + (p.graph ? " graph" : ""), fmt(m),
                               p.threshold_gbps ? fmt(*p.threshold_gbps) : "", p.verdict, p.message});
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
            if (p.collective == c && p.bytes == s && !p.graph && !p.in_place)
              cell = fmt(p.time_us.median, "%.2f");
          row.push_back(cell);
        }
        lat.rows.push_back(std::move(row));
      }
      d.table(std::move(lat));
    }
  }
}

// The plots of every bandwidth run, ahead of the long tables (the numbers follow at the end).
void plots_section(doc::Doc& d, const bundle::Bundle& b) {
  if (b.bandwidth.empty()) return;
  d.heading("Bandwidth plots");
  for (const auto& [name, run] : b.bandwidth)
    for (const auto& c : collectives_of(run)) {
      svg::Plot plot = bandwidth_plot(run, c, name);
      d.svg(svg::render(plot), plot.title, "plots/" + safe_name(name + "_" + c) + ".svg");
    }
}

}  // namespace

svg::Plot bandwidth_plot(const bw::Run& run, const std::string& collective, const std::string& run_name) {
  bool bus = run.ctx.world_size > 1;
  svg::Plot p;
  p.title = collective + " (" + run_name + ", " + std::to_string(run.ctx.world_size) + " rank" +
            (run.ctx.world_size > 1 ? "s" : "") + ")";
  p.x_label = "message size";
  p.y_label = bus ? "busbw (GB/s)" : "algbw (GB/s); busbw n/a for 1 rank";
  if (!bus) p.title += ", out of place";
  std::map<std::string, svg::Series> by_mode;
  svg::Series threshold{"threshold floor", {}, true};
  for (const auto& pt : run.points) {
    if (pt.collective != collective) continue;
    // With one rank NCCL skips an in-place call (nothing to move): its "bandwidth" is not a rate
    // and would flatten every other line, so it stays in the tables and out of the plot.
    if (!bus && pt.in_place) continue;
    std::string mode = std::string(pt.in_place ? "in place" : "out of place") + (pt.graph ? ", graph" : "") +
                       (pt.comm == bw::kBlocking ? "" : ", " + pt.comm);
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

namespace {

// Adds one message to the groups of its key (keeping first-seen order for a stable sort later).
void add_to_groups(std::vector<MessageGroup>& groups, std::map<std::string, size_t>& index,
                   const std::string& cleaned, const std::string& item) {
  std::string key = junit::message_key(cleaned);
  auto [it, fresh] = index.emplace(key, groups.size());
  if (fresh) groups.push_back(MessageGroup{key, 0, cleaned, true, {}});
  auto& g = groups[it->second];
  ++g.count;
  g.uniform = g.uniform && g.example == cleaned;
  if (g.items.size() < kExamples) g.items.push_back(item);
}

void by_count(std::vector<MessageGroup>& groups) {
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.count > b.count; });
}

std::string examples(const MessageGroup& g) {
  std::string ex;
  for (const auto& e : g.items) ex += (ex.empty() ? "" : ", ") + e;
  if (g.count > static_cast<int>(g.items.size())) ex += ", ...";
  return ex;
}

// The reason as a person reads it: the real text when every case of the group gave it, otherwise
// the key (numbers as '#') with one real example.
std::string group_text(const MessageGroup& g) {
  return g.uniform ? g.example : g.key + " (e.g. " + g.example + ")";
}

constexpr size_t kMaxGroupsPerSuite = 20;

// Every known NCCL defect this bundle touches, its text once: what the check found for this NCCL
// and what this run's cases showed of it (reproduced, waived, met and passed, or not tested here).
void known_defects_section(doc::Doc& d, const bundle::Bundle& b, const verdict::Verdict& v) {
  auto groups = group_known_defects(b, v);
  std::map<std::string, std::string> check_severity;  // id -> "warning" | "error"
  if (b.check.is_object() && b.check.contains("findings") && b.check["findings"].is_array())
    for (const auto& f : b.check["findings"])
      if (const std::string id = bundle::defect_of_finding(f); !id.empty()) {
        std::string& sev = check_severity[id];
        if (sev != "error") sev = f.value("severity", std::string("warning"));
        if (std::none_of(groups.begin(), groups.end(), [&](const DefectGroup& g) { return g.id == id; })) {
          DefectGroup g;
          g.id = id;
          if (const NcclDefect* x = find_defect(builtin_matrix(), id))
            g.title = x->title, g.link = x->link, g.fix = x->fix_hint();
          groups.push_back(std::move(g));
        }
      }
  if (groups.empty()) return;
  auto n = [](int x) { return std::to_string(x); };
  std::vector<std::string> ids;
  for (const auto& g : groups) ids.push_back(g.id);
  d.heading(defects_heading(ids));
  doc::Table t{{"defect", "hits only", "gpucts check", "this run", "fix", "for example"}, {}, {}};
  for (const auto& g : groups) {
    std::string ex, run;
    for (const auto& e : g.examples) ex += (ex.empty() ? "" : ", ") + e;
    if (g.failed) run = "reproduced by " + n(g.failed) + " failed case(s)";
    if (g.waived) run += (run.empty() ? "" : "; ") + n(g.waived) + " failed case(s) waived (--accept-known)";
    if (g.passed) run += (run.empty() ? "" : "; ") + n(g.passed) + " case(s) met its condition and passed";
    if (run.empty()) run = "not judged: no case of this run meets its condition";
    const NcclDefect* x = find_defect(builtin_matrix(), g.id);
    const auto sev = check_severity.find(g.id);
    t.rows.push_back({g.id + ": " + g.title + " (" + g.link + ")", x ? defect_condition_text(*x) : "",
                      sev == check_severity.end()
                          ? (is_torch_defect(g.id) ? "not for this torch" : "not for this NCCL")
                          : sev->second,
                      run, g.fix, ex});
    t.row_class.push_back(g.failed ? "fail" : g.waived ? "skip" : "");
  }
  d.table(std::move(t));
}

// The failures --accept-known waived, each with its one-line cause (junit.xml keeps the full text).
void waived_section(doc::Doc& d, const bundle::Bundle& b, const verdict::Verdict& v) {
  doc::Table t{{"case", "defect", "cause"}, {}, {}};
  int total = 0;
  for (size_t i = 0; i < b.cases.size(); ++i) {
    if (v.outcomes[i] != verdict::Outcome::waived) continue;
    if (++total > static_cast<int>(kMaxRows)) continue;
    const auto& c = b.cases[i];
    t.rows.push_back(
        {c.key(), c.property("gpucts.known_defect"), junit::cause(c.detail.empty() ? c.message : c.detail)});
    t.row_class.push_back("skip");
  }
  if (!total) return;
  d.heading("Waived failures (" + std::to_string(total) + ", --accept-known)");
  d.table(std::move(t));
  if (total > static_cast<int>(kMaxRows))
    d.paragraph("... and " + std::to_string(total - static_cast<int>(kMaxRows)) +
                " more: every case is in junit.xml");
}

}  // namespace

std::vector<Failure> failures_of(const bundle::Bundle& b) { return failures_of(b, verdict::decide(b)); }

std::vector<Failure> failures_of(const bundle::Bundle& b, const verdict::Verdict& v) {
  std::vector<Failure> out;
  for (size_t i = 0; i < b.cases.size(); ++i)
    if (const auto& c = b.cases[i]; verdict::failing(v.outcomes[i]))
      out.push_back({c.binary, c.suite + "." + c.name, c.detail.empty() ? c.message : c.detail,
                     c.property("gpucts.known_defect")});
  for (const auto& s : b.manifest.suites)
    if (bundle::ended_early(s.status) && !s.synthesized)
      out.push_back(
          {s.name, "(suite)", std::string(bundle::suite_status_name(s.status)) + ": " + s.reason, ""});
  for (const auto& e : v.check_errors)  // the findings decide() counted
    out.push_back({"gpucts check", e.id, e.subject + ": " + e.message, e.defect});
  return out;
}

std::vector<DefectGroup> group_known_defects(const bundle::Bundle& b) {
  return group_known_defects(b, verdict::decide(b));
}

std::vector<DefectGroup> group_known_defects(const bundle::Bundle& b, const verdict::Verdict& v) {
  std::vector<DefectGroup> out;
  auto group = [&](const std::string& id) -> DefectGroup& {
    for (auto& g : out)
      if (g.id == id) return g;
    DefectGroup g;
    g.id = id;
    if (const NcclDefect* d = find_defect(builtin_matrix(), id)) {
      g.title = d->title;
      g.link = d->link;
      g.fix = d->fix_hint();
    }
    for (const auto& w : b.manifest.waivers)  // the bundle's own record wins over this build's data
      if (w.id == id && !w.link.empty()) g.title = w.title, g.link = w.link, g.fix = w.fix;
    out.push_back(std::move(g));
    return out.back();
  };
  for (size_t i = 0; i < b.cases.size(); ++i) {
    const auto& c = b.cases[i];
    if (verdict::failing(v.outcomes[i]) || v.outcomes[i] == verdict::Outcome::waived)
      for (const auto& id : bundle::split_ids(c.property("gpucts.known_defect"))) {
        auto& g = group(id);
        ++(v.outcomes[i] == verdict::Outcome::waived ? g.waived : g.failed);
        if (g.examples.size() < 5) g.examples.push_back(c.key());
      }
    for (const auto& id : bundle::split_ids(c.property("gpucts.known_defect_not_seen"))) ++group(id).passed;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.failed + x.waived > y.failed + y.waived; });
  return out;
}

std::vector<SuiteFailures> group_failures(const std::vector<Failure>& failures) {
  std::vector<SuiteFailures> out;
  std::map<std::string, size_t> suite_index;
  std::map<std::string, std::map<std::string, size_t>> group_index;
  for (const auto& f : failures) {
    auto [it, fresh] = suite_index.emplace(f.suite, out.size());
    if (fresh) out.push_back(SuiteFailures{f.suite, 0, {}});
    auto& s = out[it->second];
    ++s.count;
    add_to_groups(s.groups, group_index[f.suite], junit::clean_message(f.text), f.item);
  }
  for (auto& s : out) by_count(s.groups);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  return out;
}

Skips group_skips(const bundle::Bundle& b) { return group_skips(b, verdict::decide(b)); }

Skips group_skips(const bundle::Bundle& b, const verdict::Verdict& v) {
  Skips out;
  // Per binary: how many cases, how many skipped, and the skip reasons.
  struct Tally {
    int total = 0, skipped = 0;
    std::map<std::string, int> reasons;  // cleaned reason -> cases
  };
  std::map<std::string, Tally> tally;
  std::vector<std::string> order;
  for (size_t i = 0; i < b.cases.size(); ++i) {
    const auto& c = b.cases[i];
    if (v.outcomes[i] == verdict::Outcome::waived) continue;  // listed under "Waived failures"
    auto [it, fresh] = tally.try_emplace(c.binary);
    if (fresh) order.push_back(c.binary);
    ++it->second.total;
    if (c.status == junit::Status::skipped) {
      ++it->second.skipped;
      ++it->second.reasons[junit::clean_message(c.message)];
    }
  }
  // A suite that skipped every case is one line, whatever its reasons (the most frequent named).
  std::set<std::string> whole;
  for (const auto& bin : order) {
    const auto& t = tally[bin];
    if (t.skipped != t.total) continue;
    std::vector<std::pair<std::string, int>> rs(t.reasons.begin(), t.reasons.end());
    std::stable_sort(rs.begin(), rs.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
    std::string why = rs.front().first;
    if (rs.size() > 1)
      why += " (and " + std::to_string(rs.size() - 1) + " other reason" + (rs.size() > 2 ? "s" : "") + ")";
    out.whole.push_back({bin, t.total, why});
    whole.insert(bin);
  }
  for (const auto& s : b.manifest.suites)
    if ((s.status == bundle::SuiteStatus::not_run || s.status == bundle::SuiteStatus::skipped) &&
        !tally.count(s.name))
      out.whole.push_back(
          {s.name, 0, (s.status == bundle::SuiteStatus::not_run ? "not run: " : "skipped: ") + s.reason});
  std::stable_sort(out.whole.begin(), out.whole.end(),
                   [](const auto& x, const auto& y) { return x.cases > y.cases; });
  std::map<std::string, size_t> index;
  for (const auto& c : b.cases)
    if (c.status == junit::Status::skipped && !whole.count(c.binary)) {
      add_to_groups(out.cases, index, junit::clean_message(c.message), c.key());
      ++out.case_count;
    }
  by_count(out.cases);
  return out;
}

namespace {

std::string n(int x) { return std::to_string(x); }

// The verdict, what it rests on, then the known defects matched by version alone and the notes.
void verdict_section(doc::Doc& d, const bundle::Bundle& b, const verdict::Verdict& v) {
  std::string headline = v.text();
  if (b.manifest.interrupted) headline += " (interrupted: incomplete run)";
  d.verdict(headline, verdict::kind_name(v.kind));
  if (!v.reasons.empty()) d.list(v.reasons);
  if (auto warnings = defect_warnings(b, true); !warnings.empty()) {
    for (auto& w : warnings) w = "warning: " + w;
    d.list(std::move(warnings));
  }
  if (const std::string nvls = nvls_note(b.manifest.settings); !nvls.empty()) d.list({"note: " + nvls});
  if (auto notes = run_mode_notes(b); !notes.empty()) {
    for (auto& x : notes) x = "note: " + x;
    d.list(std::move(notes));
  }
}

// The headline counts: suites, then cases, each split by outcome. A suite that failed only
// through waived cases passed with waivers.
void counts_section(doc::Doc& d, const bundle::Bundle& b, const verdict::Verdict& v) {
  const auto& m = b.manifest;
  const verdict::Tally counts = v.tally();
  int s_pass = 0, s_fail = 0, s_waived = 0, s_skip = 0, s_run = 0;
  for (const auto& s : m.suites) {
    s_run += s.status != bundle::SuiteStatus::not_run;
    if (s.status == bundle::SuiteStatus::passed)
      ++s_pass;
    else if (s.status == bundle::SuiteStatus::skipped || s.status == bundle::SuiteStatus::not_run)
      ++s_skip;
    else if (v.suite_passed_with_waivers(s.name))
      ++s_waived;
    else
      ++s_fail;
  }
  d.paragraph(n(static_cast<int>(m.suites.size())) + " suites: " + n(s_pass) + " passed, " + n(s_fail) +
              " failed, " + (s_waived ? n(s_waived) + " passed with waivers, " : std::string()) + n(s_skip) +
              " skipped whole; " + n(counts.total()) + " cases: " + n(counts.passed) + " passed, " +
              n(counts.failed) + " failed, " + n(counts.errors) + " errors, " + n(counts.skipped) +
              " skipped" + (counts.waived ? ", " + n(counts.waived) + " waived" : std::string()));
  d.paragraph(n(s_run) + " of " + n(static_cast<int>(m.suites.size())) + " suites run in " +
              duration(m.elapsed_s) + " on " + m.host + "; gpucts " + m.gpucts_version + " from " + m.tree);
}

// What failed: per suite, the failures grouped by their message with the numbers taken out.
void what_failed_section(doc::Doc& d, const std::vector<Failure>& failures) {
  auto grouped = group_failures(failures);
  if (grouped.empty()) return;
  d.heading("What failed, unexplained (" + n(static_cast<int>(failures.size())) + " in " +
            n(static_cast<int>(grouped.size())) + " suite" + (grouped.size() > 1 ? "s" : "") + ")");
  std::vector<std::string> lines;
  for (const auto& s : grouped) {
    std::string line = s.suite + ": " + n(s.count) + " failed";
    for (size_t i = 0; i < s.groups.size() && i < 3; ++i)
      line += std::string(i ? "; " : " \u2014 ") + n(s.groups[i].count) + " \u00d7 '" + s.groups[i].key + "'";
    if (s.groups.size() > 3) line += "; " + n(static_cast<int>(s.groups.size() - 3)) + " more kinds";
    lines.push_back(std::move(line));
  }
  d.list(std::move(lines));
  for (const auto& s : grouped) {
    d.heading(s.suite + ": " + n(s.count) + " failed, " + n(static_cast<int>(s.groups.size())) + " kind" +
                  (s.groups.size() > 1 ? "s" : ""),
              3);
    doc::Table t{{"count", "failure (numbers as #)", "one of them", "for example"}, {}, {}};
    for (size_t i = 0; i < s.groups.size() && i < kMaxGroupsPerSuite; ++i) {
      const auto& g = s.groups[i];
      t.rows.push_back({n(g.count), g.key, g.example, examples(g)});
      t.row_class.push_back("fail");
    }
    d.table(std::move(t));
    if (s.groups.size() > kMaxGroupsPerSuite)
      d.paragraph("... and " + n(static_cast<int>(s.groups.size() - kMaxGroupsPerSuite)) + " more kinds");
  }
}

// Every failure, its message cleaned of gtest's boilerplate (junit.xml keeps the raw text).
void failed_section(doc::Doc& d, const std::vector<Failure>& failures) {
  doc::Table fails{{"case", "message"}, {}, {}};
  for (const auto& f : failures) {
    if (fails.rows.size() == kMaxRows) break;  // a page a person can open; junit.xml has every case
    fails.rows.push_back({f.suite + "/" + f.item, junit::clean_message(f.text)});
    fails.row_class.push_back("fail");
  }
  d.heading("Failed, unexplained (" + n(static_cast<int>(failures.size())) + ")");
  if (fails.rows.empty())
    d.paragraph("nothing failed");
  else
    d.table(std::move(fails));
  if (failures.size() > kMaxRows)
    d.paragraph("... and " + n(static_cast<int>(failures.size() - kMaxRows)) +
                " more: every case is in junit.xml");
}

// What was skipped and why: whole suites on one line each, then the cases grouped by reason.
void skipped_section(doc::Doc& d, const bundle::Bundle& b, const verdict::Verdict& v) {
  auto skips = group_skips(b, v);
  d.heading("Skipped (" + n(v.tally().skipped) + " cases; " + n(static_cast<int>(skips.whole.size())) +
            " suites whole, " + n(static_cast<int>(skips.cases.size())) + " reasons for the other " +
            n(skips.case_count) + ")");
  if (skips.whole.empty() && skips.cases.empty()) d.paragraph("nothing skipped");
  if (!skips.whole.empty()) {
    d.heading("Suites skipped whole (" + n(static_cast<int>(skips.whole.size())) + ")", 3);
    std::vector<std::string> lines;
    for (const auto& w : skips.whole)
      lines.push_back(w.suite + ": " + (w.cases ? "all " + n(w.cases) + " cases" : std::string("no cases")) +
                      " \u2014 " + w.reason);
    d.list(std::move(lines));
  }
  if (!skips.cases.empty()) {
    d.heading("Skipped cases by reason (" + n(skips.case_count) + ")", 3);
    doc::Table t{{"reason", "count", "for example"}, {}, {}};
    for (const auto& g : skips.cases) {
      t.rows.push_back({group_text(g), n(g.count), examples(g)});
      t.row_class.push_back("skip");
    }
    d.table(std::move(t));
  }
}

void suites_section(doc::Doc& d, const bundle::Bundle& b, const verdict::Verdict& v) {
  d.heading("Suites");
  doc::Table st{{"suite", "labels", "status", "cases", "time", "note"}, {}, {}};
  for (const auto& s : b.manifest.suites) {
    std::string labels;
    for (const auto& l : s.labels) labels += (labels.empty() ? "" : " ") + l;
    std::string cases =
        std::to_string(s.cases_done) + (s.cases_total ? "/" + std::to_string(s.cases_total) : "");
    const bool waived = v.suite_passed_with_waivers(s.name);
    st.rows.push_back({s.name, labels, waived ? "passed with waivers" : bundle::suite_status_name(s.status),
                       cases, duration(s.duration_s), s.reason});
    st.row_class.push_back(
        s.status == bundle::SuiteStatus::passed || waived                                        ? "pass"
        : (s.status == bundle::SuiteStatus::skipped || s.status == bundle::SuiteStatus::not_run) ? "skip"
                                                                                                 : "fail");
  }
  d.table(std::move(st));
}

// The path NCCL took, where a suite read it from NCCL's own log (its gpucts.transport case).
void transport_section(doc::Doc& d, const bundle::Bundle& b, const verdict::Verdict& v) {
  doc::Table paths{{"suite", "transport NCCL took"}, {}, {}};
  for (size_t i = 0; i < b.cases.size(); ++i)
    if (const std::string t = b.cases[i].property("gpucts.transport"); !t.empty()) {
      paths.rows.push_back({b.cases[i].binary, t});
      paths.row_class.push_back(verdict::failing(v.outcomes[i]) ? "fail" : "pass");
    }
  if (paths.rows.empty()) return;
  d.heading("Transport");
  d.table(std::move(paths));
}

void environment_section(doc::Doc& d, const bundle::Bundle& b) {
  d.heading("Environment");
  doc::Table env{{"what", "value"}, {}, {}};
  for (auto& [k, val] : bundle::environment(b)) env.rows.push_back({k, val});
  d.table(std::move(env));
}

}  // namespace

doc::Doc build(const bundle::Bundle& b, const std::vector<std::string>& set_aside_findings) {
  doc::Doc d;
  d.title = "gpucts qualification: " + b.manifest.host + ", " + b.manifest.created;
  const verdict::Verdict v = verdict::decide(b, set_aside_findings);
  verdict_section(d, b, v);
  counts_section(d, b, v);
  // Failures a known NCCL defect explains, by defect, ahead of the unexplained ones.
  std::vector<Failure> failures;
  for (auto& f : failures_of(b, v))
    if (f.known_defect.empty()) failures.push_back(std::move(f));
  known_defects_section(d, b, v);
  waived_section(d, b, v);
  what_failed_section(d, failures);
  plots_section(d, b);
  failed_section(d, failures);
  skipped_section(d, b, v);
  suites_section(d, b, v);
  transport_section(d, b, v);
  environment_section(d, b);
  check_section(d, b, v);
  bandwidth_section(d, b);
  return d;
}

void write(const bundle::Bundle& b) { write(b, b.dir); }

void write(const bundle::Bundle& b, const std::string& out_dir) {
  doc::Doc d = build(b);
  fs::create_directories(fs::path(out_dir) / "plots");
  for (const auto& [file, svg] : doc::svg_files(d))
    bundle::write_text((fs::path(out_dir) / file).string(), svg);
  bundle::write_text((fs::path(out_dir) / "summary.md").string(), doc::to_markdown(d));
  bundle::write_text((fs::path(out_dir) / "summary.html").string(), doc::to_html(d));
}

}  // namespace cts::summary
