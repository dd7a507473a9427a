// The campaign report written out (campaign.hpp): the document (Markdown and HTML), campaign.json
// and the files of `write`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "report/campaign.hpp"
#include "report/campaign_parts.hpp"
#include "report/verdict.hpp"
#include "results/junit.hpp"
#include "results/text_format.hpp"

namespace fs = std::filesystem;

namespace cts::campaign {
namespace {

using parts::label;

constexpr std::size_t kMaxRows = 400;  // per table in Markdown/HTML; campaign.json has every row

std::string fmt(double v, const char* f = "%.1f") { return format_number(v, f); }
std::string cell_text(const Cell& c) {
  if (c.pass + c.fail + c.skip == 0) return "-";
  return std::to_string(c.pass) + "/" + std::to_string(c.fail) + "/" + std::to_string(c.skip);
}

// A time or a rate: "-" where absent, never a negative figure.
std::string opt_text(const std::optional<double>& v, const char* f) {
  return v && std::isfinite(*v) && *v >= 0 ? fmt(*v, f) : "-";
}

std::string axes_text(const std::string& coll, const std::string& dtype, const std::string& op) {
  std::string s = coll;
  if (!dtype.empty()) s += " " + dtype;
  if (!op.empty()) s += " " + op;
  return s;
}

// The releases' names: "2.21.5" for the columns, "NCCL 2.21.5" for the lines and plots.
struct Names {
  std::vector<std::string> versions, names;
  explicit Names(const Report& r) {
    for (const auto& rel : r.releases) {
      versions.push_back(label(rel));
      names.push_back("NCCL " + label(rel));
    }
  }
  // `first` followed by a column per release.
  std::vector<std::string> header(std::vector<std::string> first) const {
    first.insert(first.end(), versions.begin(), versions.end());
    return first;
  }
};

bool passes(const Release& rel) { return verdict::exit_code(*verdict::parse_kind(rel.verdict)) == 0; }

// The headline, the problems, and the first screen: each release against the oldest in lines.
void headline(doc::Doc& d, const Report& r, const Names& nm, std::size_t perf_changes) {
  const std::size_t n = r.releases.size();
  d.title = "gpucts NCCL campaign: " + join(nm.versions, ", ");
  int disagree = 0, passing = 0;
  for (const auto& c : r.claims) disagree += c.disagrees();
  for (const auto& rel : r.releases) passing += passes(rel);
  d.verdict(std::to_string(n) + " release(s), " + std::to_string(passing) + " passing; " +
                std::to_string(perf_changes) + " performance change(s); " +
                std::to_string(r.case_changes.size()) + " case(s) changed behaviour, in " +
                std::to_string(r.changes.size()) + " group(s); " + std::to_string(disagree) +
                " matrix disagreement(s)" +
                (r.problems.empty() ? "" : ", PROBLEMS: " + std::to_string(r.problems.size())),
            r.problems.empty() && disagree == 0 ? "pass" : "fail");
  if (!r.problems.empty()) {
    d.heading("Problems");
    d.list(r.problems);
  }
  d.heading(n < 2 ? "What changed" : "What changed against " + nm.names[0]);
  if (n < 2)
    d.paragraph("one release: nothing to compare");
  else if (r.story.lines().empty())
    d.paragraph("no bandwidth point moved beyond the tolerance and the spread, and no floor was crossed");
  else
    d.list(r.story.lines());
  if (n > 1)
    d.paragraph(
        "each release against the oldest: floors crossed first, then the points that moved beyond the "
        "tolerance and the spread either run recorded, in bands; latency under 64 KiB, busbw (algbw "
        "with one rank) at and above; every point in the tables below and in campaign.json");
}

// One row per release: its verdict, cases, check errors, and what the campaign spent on it.
void releases_table(doc::Doc& d, const Report& r) {
  d.heading("Releases");
  doc::Table runs{{"NCCL", "verdict", "cases pass/fail/err/skip", "check errors", "expected in a campaign",
                   "fetch s", "build s", "unpack s", "run s", "how", "library loaded"},
                  {},
                  {}};
  for (const auto& rel : r.releases) {
    const verdict::Tally k = rel.decision.tally();
    const Timing& t = rel.timing;
    std::vector<std::string> errors;  // the check errors the release's verdict counted
    for (const auto& e : rel.decision.check_errors)
      if (std::find(errors.begin(), errors.end(), e.id) == errors.end()) errors.push_back(e.id);
    runs.rows.push_back(
        {label(rel), rel.verdict,
         std::to_string(k.passed) + "/" + std::to_string(k.failed) + "/" + std::to_string(k.errors) + "/" +
             std::to_string(k.skipped + k.waived),
         errors.empty() ? "-" : join(errors, ", "), rel.expected.empty() ? "-" : join(rel.expected, ", "),
         opt_text(t.fetch, "%.1f"), opt_text(t.build, "%.1f"), opt_text(t.unpack, "%.1f"),
         opt_text(t.run ? t.run : std::optional<double>(rel.bundle.manifest.elapsed_s), "%.1f"), t.how,
         rel.library});
    runs.row_class.push_back(passes(rel) ? "pass" : "fail");
  }
  d.table(std::move(runs));
  d.paragraph(
      "verdict: the bundle's, with the findings every campaign has set aside (" +
      join(kExpectedInCampaign, ", ") +
      ": the suites are built against one NCCL header and run on every release); a release passes when "
      "nothing else failed.");
}

// The plots of each release against the oldest, then the 1 GiB bandwidth and 8 B latency table.
void bandwidth_sections(doc::Doc& d, const Report& r, const Names& nm) {
  std::vector<const bundle::Bundle*> seq;
  for (const auto& rel : r.releases) seq.push_back(&rel.bundle);
  auto plots = bands::plots(seq, nm.names, r.story, r.tolerance_pct);
  if (!plots.empty()) {
    d.heading("Bandwidth by release");
    d.paragraph(
        "first each release against the oldest (speed = its time over the release's, out of place; "
        "the shaded band is the tolerance), then the values with the threshold floors dashed and "
        "the crossings ringed");
    for (const auto& plot : plots) d.svg(plot.svg, plot.title, plot.file);
  }
  d.heading("Bandwidth at 1 GiB and latency at 8 B (out of place)");
  if (r.bandwidth.empty()) {
    d.paragraph("no bandwidth results in these bundles");
    return;
  }
  doc::Table t{{"suite", "collective"}, {}, {}};
  for (const auto& v : nm.versions) t.header.push_back(v + " GB/s");
  for (const auto& v : nm.versions) t.header.push_back(v + " 8 B latency us");
  for (const auto& b : r.bandwidth) {
    std::vector<std::string> row{b.test, b.collective + (b.metric.empty() ? "" : " (" + b.metric + ")")};
    for (const auto& v : b.gbps_1g) row.push_back(opt_text(v, "%.1f"));
    for (const auto& v : b.latency_8b) row.push_back(opt_text(v, "%.2f"));
    t.rows.push_back(std::move(row));
    t.row_class.push_back("");
  }
  d.table(std::move(t));
}

// The points that moved between adjacent releases: the default variant, then the others.
void performance_sections(doc::Doc& d, const Report& r, const Names& nm,
                          const std::vector<across::PerfChange>& perf,
                          const std::vector<across::PerfChange>& perf_variants) {
  char tol[32];
  std::snprintf(tol, sizeof tol, "%g%%", r.tolerance_pct);
  d.heading("Performance between adjacent releases (" + std::to_string(perf.size()) + " point(s))");
  d.paragraph("bandwidth points that moved from one release to the next by more than " + std::string(tol) +
              " and more than the spread either run recorded: latency in us under 64 KiB, GB/s at and above "
              "(busbw, or algbw with one rank)");
  if (r.releases.size() < 2)
    d.paragraph("one release: nothing to compare");
  else if (perf.empty())
    d.paragraph("no point moved beyond the tolerance and the spread");
  else {
    doc::Table t = across::change_table(perf, nm.names, kMaxRows);
    const bool cut = t.rows.size() == kMaxRows;
    d.table(std::move(t));
    if (cut)
      d.paragraph("the table stops at " + std::to_string(kMaxRows) +
                  " rows: every point is in campaign.json");
  }
  if (perf_variants.empty()) return;
  d.heading("Performance of the other variants between adjacent releases (" +
                std::to_string(perf_variants.size()) + " point(s))",
            3);
  d.paragraph(
      "a variant (e.g. nonblocking communicators, polled after every call) is a measurement of its "
      "own: compared only with itself, never with the default");
  d.table(across::change_table(perf_variants, nm.names, kMaxRows));
}

// Behaviour changes between adjacent releases, one row per group.
void changes_section(doc::Doc& d, const Report& r, const Names& nm) {
  d.heading("Behaviour changes between adjacent releases (" + std::to_string(r.case_changes.size()) +
            " case(s) in " + std::to_string(r.changes.size()) + " group(s))");
  if (r.changes.empty()) {
    d.paragraph(r.releases.size() < 2 ? "one release: nothing to compare"
                                      : "every case has the same status on every release");
    return;
  }
  d.paragraph(
      "one row per known defect, and one per collective x dtype x op and change; every case is under "
      "\"Every case that changed\" at the end and in campaign.json");
  doc::Table t{{"first changed in", "before", "known defect", "what", "change", "cases", "binary", "example",
                "message"},
               {},
               {}};
  for (const auto& c : r.changes) {
    if (t.rows.size() == kMaxRows) break;
    const std::string what = c.defect.empty()
                                 ? axes_text(c.collective, c.dtype, c.op)
                                 : join(c.collectives, ", ") + (c.dtype == "*" ? "" : " " + c.dtype) +
                                       (c.op == "*" || c.op.empty() ? "" : " " + c.op);
    t.rows.push_back({nm.versions[c.at], nm.versions[c.at - 1], c.defect.empty() ? "-" : c.defect, what,
                      c.from + " -> " + c.to, std::to_string(c.cases), c.binary, c.example, c.message});
    t.row_class.push_back(c.to == "fail" ? "fail" : c.to == "pass" ? "pass" : "skip");
  }
  d.table(std::move(t));
}

// Each matrix claim against what every release saw, disagreements first.
void claims_section(doc::Doc& d, const Report& r, const Names& nm) {
  int disagree = 0;
  for (const auto& c : r.claims) disagree += c.disagrees();
  d.heading("Observed against the matrix (" + std::to_string(disagree) + " disagreement(s) first)");
  if (r.claims.empty()) {
    d.paragraph("no matrix claim could be held against these runs");
    return;
  }
  doc::Table t{nm.header({"file", "claim"}), {}, {}};
  t.header.push_back("summary");
  for (const auto& c : r.claims) {
    std::vector<std::string> row{c.file, c.key};
    for (std::size_t i = 0; i < r.releases.size(); ++i) {
      std::string cell =
          (c.matrix[i].empty() ? "" : "matrix " + c.matrix[i]) +
          (c.observed[i].empty() ? ""
                                 : std::string(c.matrix[i].empty() ? "" : "; ") + "seen: " + c.observed[i]);
      if (c.agree[i] == 0) cell = "DISAGREE: " + cell;
      row.push_back(cell.empty() ? "-" : cell);
    }
    row.push_back(c.claim);
    t.rows.push_back(std::move(row));
    t.row_class.push_back(c.disagrees() ? "fail" : "pass");
  }
  d.table(std::move(t));
}

// Pass/fail/skip counts per collective, dtype and op; rows with a failure first.
void grid_section(doc::Doc& d, const Report& r, const Names& nm) {
  d.heading("Pass/fail/skip by collective, dtype and op");
  d.paragraph(
      "each cell: passed/failed/skipped cases of that release (every collective suite and world size "
      "together)");
  doc::Table t{nm.header({"collective", "dtype", "op"}), {}, {}};
  std::vector<GridRow> rows = r.grid;
  std::stable_sort(rows.begin(), rows.end(), [](const GridRow& a, const GridRow& b) {
    auto bad = [](const GridRow& g) {
      int f = 0;
      for (const auto& c : g.cells) f += c.fail;
      return f > 0;
    };
    return bad(a) > bad(b);
  });
  for (const auto& g : rows) {
    std::vector<std::string> row{g.collective, g.dtype, g.op.empty() ? "-" : g.op};
    bool fail = false, differs = false;
    for (std::size_t i = 0; i < r.releases.size(); ++i) {
      row.push_back(cell_text(g.cells[i]));
      fail |= g.cells[i].fail > 0;
      differs |= i > 0 && !(g.cells[i] == g.cells[i - 1]);
    }
    t.rows.push_back(std::move(row));
    t.row_class.push_back(fail ? "fail" : differs ? "skip" : "pass");
  }
  if (t.rows.empty())
    d.paragraph("no collective case in these bundles");
  else
    d.table(std::move(t));
}

// Every case that changed, one row each.
void case_changes_section(doc::Doc& d, const Report& r, const Names& nm) {
  if (r.case_changes.empty()) return;
  d.heading("Every case that changed (" + std::to_string(r.case_changes.size()) + ")");
  doc::Table t{{"first changed in", "before", "case", "change", "known defect", "message"}, {}, {}};
  for (const auto& c : r.case_changes) {
    if (t.rows.size() == kMaxRows) break;
    t.rows.push_back({nm.versions[c.at], nm.versions[c.at - 1], c.key, c.from + " -> " + c.to,
                      c.defect.empty() ? "-" : c.defect, c.message});
    t.row_class.push_back(c.to == "fail" ? "fail" : c.to == "pass" ? "pass" : "skip");
  }
  d.table(std::move(t));
  if (r.case_changes.size() > kMaxRows)
    d.paragraph("... and " + std::to_string(r.case_changes.size() - kMaxRows) +
                " more: every case is in campaign.json");
}

}  // namespace

doc::Doc to_doc(const Report& r) {
  doc::Doc d;
  const Names nm(r);
  std::vector<across::PerfChange> perf, perf_variants;
  for (const auto& p : r.perf) (p.before.variant.empty() ? perf : perf_variants).push_back(p);
  headline(d, r, nm, perf.size());
  releases_table(d, r);
  bandwidth_sections(d, r, nm);
  performance_sections(d, r, nm, perf, perf_variants);
  changes_section(d, r, nm);
  claims_section(d, r, nm);
  grid_section(d, r, nm);
  case_changes_section(d, r, nm);
  return d;
}

namespace {

nlohmann::json number_or_null(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// A JSON array of one object per element (an empty vector gives [], not null).
template <class T, class ToJson>
nlohmann::json array_of(const std::vector<T>& items, ToJson to) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& item : items) a.push_back(to(item));
  return a;
}

// The run's time falls back to the bundle's own where the campaign did not time it.
nlohmann::json timing_json(const Release& rel) {
  const Timing& t = rel.timing;
  return {{"fetch_s", number_or_null(t.fetch)},
          {"unpack_s", number_or_null(t.unpack)},
          {"build_s", number_or_null(t.build)},
          {"run_s", number_or_null(t.run ? t.run : std::optional<double>(rel.bundle.manifest.elapsed_s))},
          {"how", t.how}};
}

nlohmann::json release_json(const Release& rel) {
  const verdict::Tally k = rel.decision.tally();  // a waived failure counts as skipped, as junit.xml shows it
  return {{"nccl", rel.version.release_str()},
          {"requested", rel.requested},
          {"library", rel.library},
          {"bundle", rel.bundle.dir},
          {"verdict", rel.verdict},
          {"bundle_verdict", rel.bundle.manifest.verdict},
          {"expected_findings", rel.expected},
          {"passed", k.passed},
          {"failed", k.failed},
          {"errors", k.errors},
          {"skipped", k.skipped + k.waived},
          {"timing", timing_json(rel)}};
}

nlohmann::json change_json(const Change& c, const std::vector<Release>& rels) {
  return {{"first_changed_in", label(rels[c.at])},
          {"before", label(rels[c.at - 1])},
          {"binary", c.binary},
          {"defect", c.defect},
          {"collectives", c.collectives},
          {"collective", c.collective},
          {"dtype", c.dtype},
          {"op", c.op},
          {"from", c.from},
          {"to", c.to},
          {"cases", c.cases},
          {"example", c.example},
          {"message", c.message},
          {"defects", c.defects}};
}

nlohmann::json case_change_json(const CaseChange& c, const std::vector<Release>& rels) {
  return {{"case", c.key},
          {"first_changed_in", label(rels[c.at])},
          {"before", label(rels[c.at - 1])},
          {"from", c.from},
          {"to", c.to},
          {"defect", c.defect},
          {"message", c.message}};
}

nlohmann::json perf_change_json(const across::PerfChange& p, const std::vector<Release>& rels) {
  return {{"first_changed_in", label(rels[p.from + 1])},
          {"before", label(rels[p.from])},
          {"suite", p.before.test},
          {"collective", p.before.collective},
          {"dtype", p.before.dtype},
          {"bytes", p.before.bytes},
          {"placement", p.before.placement},
          {"graph", p.before.graph},
          {"variant", p.before.variant.empty() ? bw::kBlocking : p.before.variant},
          {"metric", p.before.metric},
          {"before_value", p.before.value},
          {"after_value", p.after.value},
          {"before_spread_pct", p.before.spread_pct},
          {"after_spread_pct", p.after.spread_pct},
          {"change_pct", p.move.change_pct},
          {"change", p.move.change}};
}

nlohmann::json claim_json(const Claim& c) {
  return {{"file", c.file},         {"key", c.key},     {"claim", c.claim},           {"matrix", c.matrix},
          {"observed", c.observed}, {"agree", c.agree}, {"disagrees", c.disagrees()}, {"source", c.source}};
}

nlohmann::json grid_row_json(const GridRow& g) {
  nlohmann::json cells = array_of(g.cells, [](const Cell& c) -> nlohmann::json {
    return {{"pass", c.pass}, {"fail", c.fail}, {"skip", c.skip}};
  });
  return {{"collective", g.collective}, {"dtype", g.dtype}, {"op", g.op}, {"cells", cells}};
}

// The story names each release as its plots do.
nlohmann::json story_json(const Report& r) {
  std::vector<std::string> names;
  for (const auto& rel : r.releases) names.push_back("NCCL " + label(rel));
  nlohmann::json s = bands::to_json(r.story, names);
  s["lines"] = r.story.lines();
  return s;
}

nlohmann::json bandwidth_json(const BandwidthRow& b) {
  return {{"test", b.test},
          {"collective", b.collective},
          {"metric", b.metric},
          {"gbps_1gib", array_of(b.gbps_1g, number_or_null)},
          {"latency_8b_us", array_of(b.latency_8b, number_or_null)}};
}

}  // namespace

nlohmann::json to_json(const Report& r) {
  const auto& rels = r.releases;
  nlohmann::json j;
  j["schema"] = "gpucts.campaign/1";
  j["releases"] = array_of(rels, release_json);
  j["problems"] = r.problems;
  j["changes"] = array_of(r.changes, [&](const Change& c) { return change_json(c, rels); });
  j["case_changes"] =
      array_of(r.case_changes, [&](const CaseChange& c) { return case_change_json(c, rels); });
  j["tolerance_pct"] = r.tolerance_pct;
  j["performance"] = array_of(r.perf, [&](const across::PerfChange& p) { return perf_change_json(p, rels); });
  j["claims"] = array_of(r.claims, claim_json);
  j["grid"] = array_of(r.grid, grid_row_json);
  j["story"] = story_json(r);
  j["bandwidth"] = array_of(r.bandwidth, bandwidth_json);
  return j;
}

void write(const Report& r, const std::string& dir) {
  doc::Doc d = to_doc(r);
  fs::create_directories(fs::path(dir) / "plots");
  for (const auto& [file, svg] : doc::svg_files(d)) bundle::write_text((fs::path(dir) / file).string(), svg);
  bundle::write_text((fs::path(dir) / "campaign.md").string(), doc::to_markdown(d));
  bundle::write_text((fs::path(dir) / "campaign.html").string(), doc::to_html(d));
  bundle::write_text((fs::path(dir) / "campaign.json").string(), to_json(r).dump(2) + "\n");
}

}  // namespace cts::campaign
