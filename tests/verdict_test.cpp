// The one verdict function over every class of input it decides: each row builds a bundle that
// differs from a clean pass in one way and names the kind, the exit status and a reason it expects.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fixtures/probe/paths.hpp"
#include "matrix/matrix.hpp"
#include "report/bundle.hpp"
#include "report/campaign.hpp"
#include "report/report_diff.hpp"
#include "report/summary.hpp"
#include "report/verdict.hpp"

namespace cts {
namespace {

using bundle::SuiteStatus;
using junit::Status;

bundle::SuiteRun suite(const std::string& name, SuiteStatus status, int gpus = 0) {
  bundle::SuiteRun s;
  s.name = name;
  s.status = status;
  s.gpus = gpus;
  return s;
}

junit::Case one_case(const std::string& binary, Status status, const std::string& message = "") {
  junit::Case c;
  c.binary = binary;
  c.suite = "AllReduce";
  c.name = "f32_sum_1024_inplace";
  c.status = status;
  c.message = c.detail = message;
  return c;
}

nlohmann::json finding(const std::string& id, const std::string& severity, const std::string& source = "") {
  nlohmann::json f = {
      {"id", id}, {"severity", severity}, {"subject", "rank 0"}, {"message", "m"}, {"source", source}};
  if (id == "nccl-known-defect") f["defect"] = "nccl-1950";
  return f;
}

// A clean pass on a one-GPU machine: two suites ran, one case each, the check found nothing.
struct Fixture {
  bundle::Bundle b;
  std::vector<std::string> set_aside;
  Fixture() {
    b.manifest.gpus_visible = 1;
    b.manifest.suites = {suite("gpucts_collectives", SuiteStatus::passed, 1),
                         suite("gpucts_version", SuiteStatus::passed)};
    b.cases = {one_case("gpucts_collectives", Status::passed), one_case("gpucts_version", Status::passed)};
    b.check = {{"verdict", "pass"}, {"findings", nlohmann::json::array()}};
  }
};

const std::string kDefectSource = "nccl_defects.csv:nccl-1950 (NVIDIA/nccl#1950)";
// A check.json finding without its "defect" field: the id is read from the source.
const std::string kTorchDefectSource =
    "torch_defects.csv:torch-190745 (https://github.com/pytorch/pytorch/issues/190745)";

struct Row {
  const char* what;
  std::function<void(Fixture&)> change;
  verdict::Kind kind;
  int exit_code;
  const char* reason;  // a part of the first reason ("" for none)
};

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
      {"clean pass", [](Fixture&) {}, verdict::Kind::pass, 0, ""},
      {"a failed case",
       [](Fixture& f) {
         f.b.cases[0].status = Status::failed;
         f.b.manifest.suites[0].status = SuiteStatus::failed;
       },
       verdict::Kind::fail, 1, "gpucts_collectives failed: 1 failing case(s)"},
      {"an error case of a suite that passed", [](Fixture& f) { f.b.cases[1].status = Status::error; },
       verdict::Kind::fail, 1, "gpucts_version"},
      {"a crashed suite", [](Fixture& f) { f.b.manifest.suites[1].status = SuiteStatus::crashed; },
       verdict::Kind::fail, 1, "gpucts_version crashed"},
      {"a timed-out suite", [](Fixture& f) { f.b.manifest.suites[0].status = SuiteStatus::timeout; },
       verdict::Kind::fail, 1, "gpucts_collectives timeout"},
      {"an interrupted run",
       [](Fixture& f) {
         f.b.manifest.interrupted = true;
         f.b.manifest.suites[1].status = SuiteStatus::interrupted;
       },
       verdict::Kind::fail, 1, "interrupted"},
      {"a bandwidth point under its floor",
       [](Fixture& f) {
         bw::Run run;
         bw::Point p;
         p.collective = "AllReduce";
         p.verdict = "fail";
         run.points.push_back(p);
         f.b.bandwidth.emplace_back("gpucts_bandwidth", run);
       },
       verdict::Kind::fail, 1, "gpucts_bandwidth: 1 bandwidth point(s) below threshold"},
      {"a check error",
       [](Fixture& f) { f.b.check["findings"].push_back(finding("cross-host-mismatch", "error")); },
       verdict::Kind::fail, 1, "check error cross-host-mismatch"},
      {"a check warning",
       [](Fixture& f) { f.b.check["findings"].push_back(finding("nccl-env-unknown", "warning")); },
       verdict::Kind::pass, 0, ""},
      {"a known defect error (strict) where NCCL ran",
       [](Fixture& f) {
         f.b.check["findings"].push_back(finding("nccl-known-defect", "error", kDefectSource));
       },
       verdict::Kind::fail, 1, "check error nccl-known-defect nccl-1950"},
      // Only --strict-defects makes it an error: asked for, it fails whatever suites were selected
      // (check.json says fail too); a warning is never judged.
      {"a known defect error (strict) where no NCCL suite ran",
       [](Fixture& f) {
         f.b.manifest.nccl_selected = false;
         f.b.check["findings"].push_back(finding("nccl-known-defect", "error", kDefectSource));
       },
       verdict::Kind::fail, 1, "check error nccl-known-defect nccl-1950"},
      {"a known defect warning where no NCCL suite ran",
       [](Fixture& f) {
         f.b.manifest.nccl_selected = false;
         f.b.check["findings"].push_back(finding("nccl-known-defect", "warning", kDefectSource));
       },
       verdict::Kind::pass, 0, ""},
      {"a known defect accepted: its finding and its case waived",
       [](Fixture& f) {
         f.b.manifest.accepted_known = {"nccl-1950"};
         f.b.check["findings"].push_back(finding("nccl-known-defect", "error", kDefectSource));
         f.b.cases.push_back(one_case("gpucts_collectives", Status::failed, "wrong sum"));
         f.b.cases.back().properties["gpucts.known_defect"] = "nccl-1950";
       },
       verdict::Kind::waived, 0,
       "waived with --accept-known: nccl-1950 (1 failed case(s), 1 check finding(s))"},
      // torch's known defects (torch_defects.csv) are waived the same way, by their own ids.
      {"a torch defect accepted: its finding and its case waived",
       [](Fixture& f) {
         f.b.manifest.accepted_known = {"torch-190745"};
         f.b.check["findings"].push_back(finding("torch-known-defect", "error", kTorchDefectSource));
         f.b.cases.push_back(one_case("gpucts_py_torch_sim2", Status::error, "hung"));
         f.b.cases.back().properties["gpucts.known_defect"] = "torch-190745";
       },
       verdict::Kind::waived, 0,
       "waived with --accept-known: torch-190745 (1 failed case(s), 1 check finding(s))"},
      {"a torch defect error (strict) that no one accepted",
       [](Fixture& f) {
         f.b.manifest.accepted_known = {"nccl-1950"};
         f.b.check["findings"].push_back(finding("torch-known-defect", "error", kTorchDefectSource));
       },
       verdict::Kind::fail, 1, "check error torch-known-defect torch-190745"},
      {"a failed suite whose every failure was waived",
       [](Fixture& f) {
         f.b.manifest.accepted_known = {"nccl-1950"};
         f.b.manifest.suites[0].status = SuiteStatus::failed;
         f.b.cases[0].status = Status::failed;
         f.b.cases[0].properties["gpucts.known_defect"] = "nccl-1950";
       },
       verdict::Kind::waived, 0, "nccl-1950"},
      {"fewer GPUs than expected",
       [](Fixture& f) {
         f.b.manifest.gpus_expected = 8;
         f.b.manifest.no_gpu_detail = "";
       },
       verdict::Kind::fail, 1, "expected at least 8 GPU(s), 1 visible"},
      {"no GPU visible",
       [](Fixture& f) {
         f.b.manifest.gpus_visible = 0;
         f.b.manifest.no_gpu_detail = "no NVIDIA driver loaded";
         f.b.manifest.suites[0].status = SuiteStatus::not_run;
         f.b.cases.erase(f.b.cases.begin());
       },
       verdict::Kind::no_gpu, 3, "no GPU visible (no NVIDIA driver loaded): 1 GPU suite(s) not run"},
      {"no GPU, and a case failed: fail wins",
       [](Fixture& f) {
         f.b.manifest.gpus_visible = 0;
         f.b.manifest.suites[0].status = SuiteStatus::not_run;
         f.b.cases[0] = one_case("gpucts_version", Status::failed);
         f.b.manifest.suites[1].status = SuiteStatus::failed;
       },
       verdict::Kind::fail, 1, "gpucts_version failed"},
      {"a suite needing more GPUs than visible: not this machine's",
       [](Fixture& f) {
         f.b.manifest.suites.push_back(suite("gpucts_collectives_w8", SuiteStatus::not_run, 8));
       },
       verdict::Kind::pass, 0, ""},
      {"a suite that applies here did not run (library absent)",
       [](Fixture& f) {
         auto s = suite("gpucts_torch_c10d", SuiteStatus::not_run);
         s.missed = true;
         s.reason = "needs libtorch_cpu.so.1.13, absent here";
         f.b.manifest.suites.push_back(s);
       },
       verdict::Kind::not_run, 4, "gpucts_torch_c10d not run: needs libtorch_cpu.so.1.13"},
      {"nothing of the selection ran",
       [](Fixture& f) {
         f.b.manifest.suites = {suite("gpucts_py_torch_w1", SuiteStatus::skipped)};
         f.b.cases = {one_case("gpucts_py_torch_w1", Status::skipped, "torch is not installed")};
       },
       verdict::Kind::not_run, 4, "no selected suite ran a case (1 skipped, 0 not run)"},
      {"a campaign sets the header mismatch aside",
       [](Fixture& f) {
         f.b.check["findings"].push_back(finding("nccl-header-library-mismatch", "error"));
         f.set_aside = {"nccl-header-library-mismatch"};
       },
       verdict::Kind::pass, 0, ""},
      {"a bundle of an older gpucts that qualify called no_gpu",
       [](Fixture& f) {
         f.b.manifest.gpus_visible = -1;
         f.b.manifest.verdict = "no_gpu";
         f.b.manifest.suites[0].status = SuiteStatus::not_run;
       },
       verdict::Kind::no_gpu, 3, "no GPU visible"},
  };
  return r;
}

class Decide : public ::testing::TestWithParam<size_t> {};

TEST_P(Decide, KindExitCodeAndReason) {
  const Row& row = rows()[GetParam()];
  Fixture f;
  row.change(f);
  const verdict::Verdict v = verdict::decide(f.b, f.set_aside);
  EXPECT_STREQ(verdict::kind_name(v.kind), verdict::kind_name(row.kind)) << row.what;
  EXPECT_EQ(v.exit_code(), row.exit_code) << row.what;
  if (*row.reason) {
    ASSERT_FALSE(v.reasons.empty()) << row.what;
    std::string all;
    for (const auto& r : v.reasons) all += r + "\n";
    EXPECT_NE(all.find(row.reason), std::string::npos) << row.what << ": reasons were\n" << all;
  } else if (v.kind == verdict::Kind::pass) {
    EXPECT_TRUE(v.reasons.empty()) << row.what;
  }
}

INSTANTIATE_TEST_SUITE_P(Verdict, Decide, ::testing::Range<size_t>(0, rows().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                           std::string n = rows()[i.param].what;
                           for (auto& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(Verdict, KindNamesRoundTripAndUnknownIsRefused) {
  for (auto k : {verdict::Kind::pass, verdict::Kind::waived, verdict::Kind::fail, verdict::Kind::no_gpu,
                 verdict::Kind::not_run})
    EXPECT_EQ(verdict::parse_kind(verdict::kind_name(k)), k);
  EXPECT_FALSE(verdict::parse_kind("PASS").has_value());
}

TEST(Verdict, TextNamesTheWaivedDefects) {
  Fixture f;
  f.b.manifest.accepted_known = {"nccl-1950"};
  f.b.cases[0].status = Status::failed;
  f.b.cases[0].properties["gpucts.known_defect"] = "nccl-1950";
  EXPECT_EQ(verdict::decide(f.b).text(), "PASS (waived: nccl-1950)");
}

// The bundle records what ran; decide() alone says what a failure an accepted defect explains
// means: the case stays failed, the suite failed, and the verdict is a pass with waivers.
TEST(Verdict, AWaivedCaseKeepsTheStatusItRanWith) {
  Fixture f;
  f.b.manifest.accepted_known = {"nccl-1950"};
  f.b.manifest.suites[0].status = SuiteStatus::failed;
  f.b.cases[0].status = Status::failed;
  f.b.cases[0].properties["gpucts.known_defect"] = "nccl-1950";
  const verdict::Verdict v = verdict::decide(f.b);
  EXPECT_EQ(v.kind, verdict::Kind::waived);
  EXPECT_EQ(v.exit_code(), 0);
  EXPECT_EQ(v.text(), "PASS (waived: nccl-1950)");
  EXPECT_EQ(f.b.cases[0].status, Status::failed) << "the recorded status is what ran";
  EXPECT_EQ(f.b.cases[0].property("gpucts.waived"), "") << "the bundle's cases are not marked";
}

// decide() waives the failures an accepted defect explains, and those only (every defect a case
// names must be accepted); it counts the waivers from them; junit_cases shows them to CI servers as
// typed skips that keep the status they ran with.
TEST(Verdict, DecideWaivesOnlyWhatTheAcceptedDefectsExplain) {
  Fixture f;
  f.b.manifest.accepted_known = {"nccl-1950"};
  f.b.cases = {one_case("gpucts_collectives", Status::failed, "wrong sum"),
               one_case("gpucts_collectives", Status::error, "crashed"),
               one_case("gpucts_collectives", Status::failed, "two defects"),
               one_case("gpucts_collectives", Status::failed, "no defect named"),
               one_case("gpucts_collectives", Status::passed)};
  for (size_t i : {0, 1, 4}) f.b.cases[i].properties["gpucts.known_defect"] = "nccl-1950";
  f.b.cases[2].properties["gpucts.known_defect"] = "nccl-1950,nccl-788";  // nccl-788 is not accepted
  const verdict::Verdict v = verdict::decide(f.b);
  using verdict::Outcome;
  EXPECT_EQ(v.outcomes, (std::vector<Outcome>{Outcome::waived, Outcome::waived, Outcome::failed,
                                              Outcome::failed, Outcome::passed}));
  ASSERT_EQ(v.waivers.size(), 1u);
  EXPECT_EQ(v.waivers[0].id, "nccl-1950");
  EXPECT_EQ(v.waivers[0].cases, 2);
  EXPECT_EQ(v.kind, verdict::Kind::fail);  // the two failures no accepted defect explains
  const verdict::Tally t = v.tally();
  EXPECT_EQ(t.waived, 2);
  EXPECT_EQ(t.failed, 2);
  EXPECT_EQ(t.passed, 1);
  EXPECT_EQ(t.skipped, 0);

  const auto shown = verdict::junit_cases(f.b.cases, v);
  ASSERT_EQ(shown.size(), f.b.cases.size());
  EXPECT_EQ(shown[0].status, Status::skipped);
  EXPECT_EQ(shown[0].property("gpucts.waived"), "nccl-1950");
  EXPECT_EQ(shown[0].property("gpucts.waived_status"), "failed");
  EXPECT_NE(shown[0].message.find("waived (known NCCL defect nccl-1950"), std::string::npos)
      << shown[0].message;
  EXPECT_EQ(shown[1].property("gpucts.waived_status"), "error");
  EXPECT_EQ(shown[2].status, Status::failed);
  EXPECT_EQ(shown[3].status, Status::failed);
  EXPECT_EQ(shown[4].status, Status::passed);
  EXPECT_EQ(shown[4].property("gpucts.waived"), "");
  EXPECT_EQ(f.b.cases[0].status, Status::failed) << "the cases given are not changed";

  // A torch defect's failure: waived only by its own id, and the message says whose defect it is.
  Fixture torch;
  torch.b.cases[0].status = Status::failed;
  torch.b.cases[0].properties["gpucts.known_defect"] = "torch-190745";
  torch.b.manifest.accepted_known = {"nccl-1950"};
  EXPECT_EQ(verdict::decide(torch.b).outcomes[0], Outcome::failed)
      << "another defect's waiver covers nothing";
  torch.b.manifest.accepted_known = {"torch-190745"};
  const auto torch_v = verdict::decide(torch.b);
  EXPECT_EQ(torch_v.outcomes[0], Outcome::waived);
  const auto torch_shown = verdict::junit_cases(torch.b.cases, torch_v);
  EXPECT_EQ(torch_shown[0].property("gpucts.waived"), "torch-190745");
  EXPECT_NE(torch_shown[0].message.find("waived (known torch defect torch-190745"), std::string::npos)
      << torch_shown[0].message;
  EXPECT_EQ(torch_shown[0].message.find("NCCL"), std::string::npos) << torch_shown[0].message;

  Fixture none;  // nothing accepted: nothing waived
  none.b.cases[0].status = Status::failed;
  none.b.cases[0].properties["gpucts.known_defect"] = "nccl-1950";
  EXPECT_EQ(verdict::decide(none.b).outcomes[0], Outcome::failed);
  EXPECT_TRUE(verdict::decide(none.b).waivers.empty());
}

// A bundle folder holding `f`'s manifest and its cases as junit.xml (no other file).
std::string write_bundle(const std::string& dir, const Fixture& f) {
  std::filesystem::create_directories(dir);
  bundle::write_text(dir + "/manifest.json", bundle::to_json(f.b.manifest).dump(2));
  bundle::write_text(dir + "/junit.xml", junit::write(f.b.cases, "test"));
  return dir;
}

// One failure nccl-1950 explains, accepted: its suite failed.
Fixture waived_run() {
  Fixture f;
  f.b.manifest.host = "node1";
  f.b.manifest.verdict = "waived";
  f.b.manifest.accepted_known = {"nccl-1950"};
  f.b.manifest.suites[0].status = SuiteStatus::failed;
  f.b.cases[0] = one_case("gpucts_collectives", Status::failed, "wrong sum");
  f.b.cases[0].properties["gpucts.known_defect"] = "nccl-1950";
  return f;
}

// `gpucts report` compares what decide() says of each case, not the string a run recorded: one
// waived failure recorded two ways (the typed skip qualify writes into junit.xml for CI servers,
// and the failure as it ran) is the same, and one recorded failure waived in one run and not in
// the other is a change.
TEST(DecidedStatus, ReportDiffComparesWhatDecideSays) {
  ScratchDir tmp("decided-status");
  Fixture as_skip = waived_run();
  as_skip.b.cases[0].status = Status::skipped;
  as_skip.b.cases[0].properties["gpucts.waived"] = "nccl-1950";
  as_skip.b.cases[0].properties["gpucts.waived_status"] = "failed";
  const auto a = bundle::load(write_bundle(tmp.path() + "/a", as_skip));
  const auto b = bundle::load(write_bundle(tmp.path() + "/b", waived_run()));
  ASSERT_EQ(a.cases.size(), 2u);
  EXPECT_EQ(a.cases[0].status, Status::failed) << "the typed skip is read back as the failure it was";
  const report::Comparison same = report::compare(a, {b}, 5);
  EXPECT_TRUE(same.cases.empty()) << same.cases.front().key << ": " << same.cases.front().baseline << " -> "
                                  << same.cases.front().candidates[0];
  EXPECT_FALSE(same.regressed()) << same.regressions[0].front();

  Fixture not_accepted = waived_run();
  not_accepted.b.manifest.accepted_known.clear();
  const report::Comparison changed = report::compare(waived_run().b, {not_accepted.b}, 5);
  ASSERT_EQ(changed.cases.size(), 1u);
  EXPECT_EQ(changed.cases[0].baseline, "waived");
  EXPECT_EQ(changed.cases[0].candidates[0], "failed");
  EXPECT_EQ(changed.cases[0].change[0], "newly failing");
  EXPECT_TRUE(changed.regressed());
}

// The check-error rule lives in decide() alone: a finding the campaign sets aside neither fails
// the summary nor is listed among its failures, and the page says it was set aside.
TEST(DecidedStatus, ASetAsideCheckErrorDoesNotFailTheSummary) {
  Fixture f;
  f.b.check["findings"].push_back(finding("nccl-header-library-mismatch", "error"));
  const std::string judged = doc::to_markdown(summary::build(f.b));
  EXPECT_NE(judged.find("**FAIL**"), std::string::npos) << judged;
  EXPECT_NE(judged.find("- gpucts check: 1 failed"), std::string::npos) << judged;

  const std::vector<std::string> campaign = {"nccl-header-library-mismatch"};
  const std::string md = doc::to_markdown(summary::build(f.b, campaign));
  EXPECT_NE(md.find("**PASS**"), std::string::npos) << md;
  EXPECT_EQ(md.find("What failed"), std::string::npos) << md;
  EXPECT_NE(md.find("nothing failed"), std::string::npos) << md;
  EXPECT_NE(md.find("verdict: pass"), std::string::npos) << md;
  EXPECT_NE(md.find("set aside, not judged (every run of a campaign has them): nccl-header-library-mismatch"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| error, set aside | nccl-header-library-mismatch |"), std::string::npos) << md;
  EXPECT_TRUE(summary::failures_of(f.b, verdict::decide(f.b, campaign)).empty());
  // What decide() counts is what the pages list: an accepted defect's error is waived, not listed.
  f.b.check["findings"].push_back(finding("nccl-known-defect", "error", kDefectSource));
  f.b.manifest.accepted_known = {"nccl-1950"};
  const verdict::Verdict v = verdict::decide(f.b, campaign);
  EXPECT_TRUE(v.check_errors.empty());
  EXPECT_TRUE(summary::failures_of(f.b, v).empty());
  f.b.manifest.accepted_known.clear();
  const verdict::Verdict strict = verdict::decide(f.b, campaign);
  ASSERT_EQ(strict.check_errors.size(), 1u);
  EXPECT_EQ(strict.check_errors[0].id, "nccl-known-defect");
  EXPECT_EQ(strict.check_errors[0].defect, "nccl-1950");
  ASSERT_EQ(summary::failures_of(f.b, strict).size(), 1u);
  EXPECT_EQ(summary::failures_of(f.b, strict)[0].item, "nccl-known-defect");
}

// The cell of the campaign's Releases table in the row of release `v`, column `col` (0: NCCL).
std::string releases_cell(const std::string& md, const std::string& v, size_t col) {
  const auto at = md.find("\n| " + v + " | ");
  if (at == std::string::npos) return "(no row)";
  std::string row = md.substr(at + 3, md.find('\n', at + 1) - at - 3);
  for (size_t i = 0; i < col; ++i) row = row.substr(row.find(" | ") + 3);
  return row.substr(0, row.find(" | "));
}

// The campaign's Releases table lists the check errors each release's verdict counted, not its own
// reading of check.json: an accepted known defect's error is waived there, not listed.
TEST(DecidedStatus, TheCampaignListsTheCheckErrorsTheVerdictCounts) {
  std::vector<campaign::Release> releases(2);
  for (size_t i = 0; i < 2; ++i) {
    Fixture f;
    f.b.check["findings"].push_back(finding("nccl-known-defect", "error", kDefectSource));
    f.b.check["findings"].push_back(finding("nccl-header-library-mismatch", "error"));
    if (i == 1) f.b.manifest.accepted_known = {"nccl-1950"};
    releases[i].version = Version::parse(i == 0 ? "2.27.7" : "2.28.9");
    releases[i].bundle = f.b;
  }
  const campaign::Report r = campaign::build(releases, builtin_matrix());
  const std::string md = doc::to_markdown(campaign::to_doc(r));
  EXPECT_EQ(releases_cell(md, "2.27.7", 1), "fail") << md;
  EXPECT_EQ(releases_cell(md, "2.27.7", 3), "nccl-known-defect") << md;
  EXPECT_EQ(releases_cell(md, "2.27.7", 4), "nccl-header-library-mismatch") << md;
  EXPECT_EQ(releases_cell(md, "2.28.9", 1), "waived") << md;
  EXPECT_EQ(releases_cell(md, "2.28.9", 3), "-") << md;
}

}  // namespace
}  // namespace cts
