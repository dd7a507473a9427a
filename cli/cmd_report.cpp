// gpucts report: compares qualification bundles (see report_diff.hpp).
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "report/campaign.hpp"
#include "report/report_diff.hpp"
#include "report/summary.hpp"
#include "results/output_file.hpp"
#include "results/terminal_text.hpp"

namespace fs = std::filesystem;

namespace cts::cli {

// Markdown on standard output has no file beside it to show a plot: it says how to get them.
constexpr const char* kUnplotted = "plot written with --output DIR";

const CommandSpec kReportSpec = {
    {{"baseline", "DIR", "the bundle the candidates are compared against", Kind::dir},
     repeatable({"candidate", "DIR", "a bundle to compare (repeatable: a column each)", Kind::dir}),
     {"tolerance", "PCT", "bandwidth moves within PCT percent are no change (default 5)", Kind::number},
     {"output", "DIR",
      "write report.md, report.html, report.json and plots/ there (default: Markdown on standard output)"},
     {"render", "BUNDLE", "write a bundle's summary.md, summary.html and plots again", Kind::dir}},
    {{"json", "print the report as JSON on standard output"},
     {"campaign", "the candidates are the runs of one campaign, one column per NCCL release"}},
    "usage: gpucts report --baseline DIR --candidate DIR [--candidate DIR]... [--tolerance PCT]\n"
    "                     [--output DIR | --json]\n"
    "       gpucts report --render BUNDLE [--output DIR]\n"
    "       gpucts report --campaign --candidate DIR [--candidate DIR]... [--tolerance PCT]\n"
    "                     [--output DIR | --json]\n"
    "Compares qualification bundles: environment differences, cases newly failing/passing/skipped,\n"
    "bandwidth points that moved more than PCT percent (default 5). Several candidates give one table\n"
    "with a column per run. The report opens with what changed: floors crossed, then the moves of\n"
    "each candidate against the baseline in bands (collectives, sizes, metric, how much), one line\n"
    "each; plots follow, the details after. Bundles of another gpucts version are compared with a\n"
    "warning; runs of different levels or selections on what both ran (what was left out is said).\n"
    "--output DIR writes report.md, report.html, report.json and plots/ (the SVGs report.md links);\n"
    "otherwise\n"
    "Markdown (or with --json the JSON) goes to standard output.\n"
    "--render writes a bundle's summary.md, summary.html and plots again (into DIR, or the bundle).\n"
    "--campaign: the candidates are runs of one suite against several NCCL releases (gpucts campaign);\n"
    "one column per release in version order: a verdict per release (the expected header mismatch set\n"
    "aside), bandwidth points that moved between adjacent releases beyond PCT and both runs' spread,\n"
    "pass/fail/skip per collective x dtype x op, behaviour changes grouped per known defect and per\n"
    "collective x dtype x op with the first release where each changed, bandwidth at 1 GiB and 8 B\n"
    "latency, and the matrix claims against what the runs saw. --output DIR writes campaign.md, "
    "campaign.html,\n"
    "campaign.json and plots/; exit status 1 when a matrix claim disagrees with a run.\n"
    "Exit status: 0 no regression, 1 a candidate regresses, 2 bad usage or bad input."};

namespace {

// The folder an output goes to, made (with its parents) or refused in one line naming it.
void make_output_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError("cannot create " + dir + ": " + ec.message());
}

}  // namespace

int cmd_report(const Args& a) {
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional().front() + "'");
  if (auto dir = a.value("render")) {
    if (a.value("baseline") || !a.values("candidate").empty() || a.flag("json"))
      throw UsageError("--render takes only --output");
    // A BundleError (a bad bundle, an output that cannot be written) is one line, exit 2 (app.cpp).
    bundle::Bundle b = bundle::load(*dir);
    const std::string out = a.value("output").value_or(*dir);
    make_output_dir(out);
    summary::write(b, out);
    std::printf("%s\n", (fs::path(out) / "summary.html").c_str());
    return 0;
  }
  if (a.flag("campaign")) {
    if (a.value("baseline")) throw UsageError("--campaign compares releases among themselves: no --baseline");
    if (a.values("candidate").empty()) throw UsageError("--campaign needs at least one --candidate DIR");
    if (a.value("output") && a.flag("json")) throw UsageError("--output and --json exclude each other");
    std::vector<campaign::Release> rel;
    for (const auto& d : a.values("candidate")) rel.push_back(campaign::load_release(d));
    const double tol = a.number("tolerance", 5);
    if (tol < 0 || tol >= 100) throw UsageError("--tolerance must be a percentage in [0, 100)");
    campaign::Report r = campaign::build(std::move(rel), builtin_matrix(), tol);
    bool disagree = false;
    for (const auto& c : r.claims) disagree |= c.disagrees();
    if (auto out = a.value("output")) {
      make_output_dir(*out);
      campaign::write(r, *out);
      std::printf("%s: %zu release(s), %zu performance change(s), %zu behaviour change(s)\n",
                  (fs::path(*out) / "campaign.html").c_str(), r.releases.size(), r.perf.size(),
                  r.case_changes.size());
    } else if (a.flag("json")) {
      std::cout << campaign::to_json(r).dump(2) << "\n";
    } else {
      std::cout << doc::to_markdown(campaign::to_doc(r), kUnplotted);
    }
    return disagree ? 1 : 0;
  }
  auto base = a.value("baseline");
  auto cands = a.values("candidate");
  if (!base) throw UsageError("--baseline DIR is required");
  if (cands.empty()) throw UsageError("at least one --candidate DIR is required");
  double tol = a.number("tolerance", 5);
  if (tol < 0 || tol >= 100) throw UsageError("--tolerance must be a percentage in [0, 100)");
  if (a.value("output") && a.flag("json")) throw UsageError("--output and --json exclude each other");

  bundle::Bundle b = bundle::load(*base);
  std::vector<bundle::Bundle> cs;
  for (const auto& d : cands) cs.push_back(bundle::load(d));
  const report::Comparison c = report::compare(std::move(b), std::move(cs), tol);
  const auto out = a.value("output");
  doc::Doc d = report::to_doc(c, out.has_value());
  if (out) {
    make_output_dir(*out);
    make_output_dir((fs::path(*out) / "plots").string());
    // Every output is made first and then written all or none: never a report.md beside a
    // report.html that could not be written.
    std::vector<std::pair<std::string, std::string>> files = {
        {(fs::path(*out) / "report.md").string(), doc::to_markdown(d)},
        {(fs::path(*out) / "report.html").string(), doc::to_html(d)},
        {(fs::path(*out) / "report.json").string(), report::to_json(c).dump(2) + "\n"}};
    for (const auto& [file, svg] : doc::svg_files(d))
      files.emplace_back((fs::path(*out) / file).string(), svg);
    try {
      write_files_atomic(files);
    } catch (const OutputError& e) {
      std::fprintf(stderr, "gpucts report: %s\n", terminal_safe(e.what(), 4096).c_str());
      return 2;
    }
    std::printf("%s: %s\n", (fs::path(*out) / "report.html").c_str(),
                c.regressed() ? "REGRESSED" : "no regression");
  } else if (a.flag("json")) {
    std::cout << report::to_json(c).dump(2) << "\n";
  } else {
    std::cout << doc::to_markdown(d, kUnplotted);
  }
  return c.regressed() ? 1 : 0;
}

}  // namespace cts::cli
