// summary.md and summary.html of a bundle: the verdict first, then what failed and why, then what
// was skipped and why (grouped by reason, with counts), the suites, the environment, the
// compatibility check, and the bandwidth tables and plots.
#pragma once
#include <string>

#include "report/bundle.hpp"
#include "report/doc.hpp"
#include "report/svg_plot.hpp"
#include "report/verdict.hpp"

namespace cts::summary {

// Busbw (or algbw for one rank, where busbw is not defined) against size for one collective of a
// run, one line per placement/graph mode and a dashed line for the threshold where there is one.
svg::Plot bandwidth_plot(const bw::Run& run, const std::string& collective, const std::string& run_name);

// The model behind "What failed" and "Skipped": messages grouped by junit::message_key of their
// junit::clean_message, so that 108 cases that differ only in indices and values are one line.
struct Failure {
  std::string suite;         // binary (gpucts_collectives), or "gpucts check"
  std::string item;          // case (AllReduce.i8_sum_0_inplace_w1) or what else failed
  std::string text;          // raw text: gtest's failure with its file:line and boilerplate
  std::string known_defect;  // nccl_defects.csv id(s) that explain it, "" when unexplained
};

// The failures (and waived failures) a known NCCL defect explains, one entry per defect id.
struct DefectGroup {
  std::string id, title, link, fix;
  int failed = 0, waived = 0, passed = 0;  // passed: matched its condition and came out right
  std::vector<std::string> examples;
};
// Each function that reads the cases has a form that takes the bundle's verdict::decide() (what
// each case means) and one that decides it.
std::vector<DefectGroup> group_known_defects(const bundle::Bundle& b);
std::vector<DefectGroup> group_known_defects(const bundle::Bundle& b, const verdict::Verdict& v);
struct MessageGroup {
  std::string key;  // cleaned message, numbers as '#'
  int count = 0;
  std::string example;             // the first cleaned message of the group, as it was
  bool uniform = true;             // every message of the group is exactly `example`
  std::vector<std::string> items;  // up to kExamples cases
};
struct SuiteFailures {
  std::string suite;
  int count = 0;
  std::vector<MessageGroup> groups;  // most frequent first
};
inline constexpr size_t kExamples = 3;
std::vector<SuiteFailures> group_failures(const std::vector<Failure>& failures);
std::vector<Failure> failures_of(const bundle::Bundle& b);
std::vector<Failure> failures_of(const bundle::Bundle& b, const verdict::Verdict& v);

struct WholeSkip {
  std::string suite;
  int cases = 0;  // 0: the suite was not run at all
  std::string reason;
};
struct Skips {
  std::vector<WholeSkip> whole;     // suites that skipped every case, or did not run
  std::vector<MessageGroup> cases;  // the other skipped cases by reason, most frequent first
  int case_count = 0;               // skipped cases in `cases`
};
Skips group_skips(const bundle::Bundle& b);
Skips group_skips(const bundle::Bundle& b, const verdict::Verdict& v);

// `set_aside_findings`: check finding ids not judged (a campaign's, verdict::Inputs); the page says so.
doc::Doc build(const bundle::Bundle& b, const std::vector<std::string>& set_aside_findings = {});
// Writes summary.md, summary.html and plots/*.svg into the bundle directory (or into `out_dir`).
void write(const bundle::Bundle& b);
void write(const bundle::Bundle& b, const std::string& out_dir);

}  // namespace cts::summary
