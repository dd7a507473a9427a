// The qualification bundle and the regression report, end to end on this machine: real
// `gpucts qualify` runs over real gtest binaries (gpucts_version, and this binary's own
// DISABLED_Fixture cases, switched by environment variables into passing, failing, skipping,
// crashing, hanging and writing synthetic bandwidth JSON), then `gpucts report` over the bundles,
// including the bad inputs that must give exit status 2. Plus the strict XML reader.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/spawn.hpp"
#include "matrix/matrix.hpp"
#include "matrix/version.hpp"
#include "report/across_runs.hpp"
#include "report/bands.hpp"
#include "report/bundle.hpp"
#include "report/campaign.hpp"
#include "report/report_diff.hpp"
#include "report/run_notes.hpp"
#include "report/summary.hpp"
#include "report/svg_plot.hpp"
#include "report/verdict.hpp"
#include "results/bandwidth.hpp"
#include "results/junit.hpp"
#include "results/xml.hpp"

namespace fs = std::filesystem;

namespace cts {
namespace {

// ---------------------------------------------------------------------------------------------
// Cases the bundle tests run in child processes (never in a plain run: they are disabled).
bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && std::string(v) == "1";
}

TEST(DISABLED_Fixture, Toggle) {
  EXPECT_FALSE(env_on("GPUCTS_FIXTURE_FAIL")) << "fixture failure requested by GPUCTS_FIXTURE_FAIL";
}
TEST(DISABLED_Fixture, SkipToggle) {
  if (env_on("GPUCTS_FIXTURE_SKIP")) GTEST_SKIP() << "fixture skip requested by GPUCTS_FIXTURE_SKIP";
  SUCCEED();
}
// A failure that a known NCCL defect explains carries the property the collective runner records.
TEST(DISABLED_Fixture, KnownDefect) {
  if (!env_on("GPUCTS_FIXTURE_DEFECT")) return SUCCEED();
  ::testing::Test::RecordProperty("gpucts.known_defect", "nccl-1950");
  ADD_FAILURE() << "fixture failure explained by nccl-1950";
}
TEST(DISABLED_Fixture, Crash) {
  if (env_on("GPUCTS_FIXTURE_CRASH")) std::abort();
  SUCCEED();
}
TEST(DISABLED_Fixture, Hang) {
  if (env_on("GPUCTS_FIXTURE_HANG")) std::this_thread::sleep_for(std::chrono::seconds(60));
  SUCCEED();
}
// Writes a synthetic bandwidth run where qualify asks for it (GPUCTS_BW_OUTPUT), scaled by
// GPUCTS_FIXTURE_BW_SCALE, judged against the built-in thresholds like the perf suite does.
TEST(DISABLED_Fixture, Bandwidth) {
  const char* out = std::getenv("GPUCTS_BW_OUTPUT");
  ASSERT_NE(out, nullptr) << "GPUCTS_BW_OUTPUT not set";
  const char* sc = std::getenv("GPUCTS_FIXTURE_BW_SCALE");
  double scale = sc ? std::atof(sc) : 1.0;
  bw::Run run;
  run.host = "fixture";
  run.nccl_version = "2.28.3";
  run.ctx = {"NVIDIA H200", "NVLink4", "off", 8, std::nullopt};
  for (std::uint64_t bytes : bw::parse_sweep("1M:1G:4")) {
    bw::Point p;
    p.collective = "AllReduce";
    p.dtype = "f32";
    p.bytes = bytes;
    p.ranks = 8;
    p.iterations = 20;
    // 400 GB/s busbw at large sizes (above the 370 GB/s row's floor), less at small ones.
    double busbw = 400.0 * scale * (bytes >= (64u << 20) ? 1.0 : 0.5);
    double t_us = static_cast<double>(bytes) / (busbw / 1.75 * 1e9) * 1e6;
    p.time_us = bw::summarize({t_us, t_us * 1.01, t_us * 0.99});
    bw::compute_rates(p, BusFactor::all_reduce);  // AllReduce's family
    bw::judge(p, run.ctx, bw::builtin_thresholds());
    run.points.push_back(p);
  }
  std::ofstream(std::string(out) + ".json") << bw::to_json(run).dump(2);
  std::ofstream(std::string(out) + ".csv") << bw::to_csv(run);
  for (const auto& p : run.points) EXPECT_NE(p.verdict, "fail") << p.key() << ": " << p.message;
}

// ---------------------------------------------------------------------------------------------
struct Result {
  int rc = -1;
  std::string out;
};

// Runs a command line, capturing stdout and stderr together. No shell: words are split at blanks,
// '...' keeps blanks inside one word (the commands here are this test's own, over its own paths).
Result sh(const std::string& cmd) {
  std::vector<std::string> argv;
  std::string word;
  bool in_word = false, quoted = false;
  for (char c : cmd) {
    if (c == '\'') {
      quoted = !quoted;
      in_word = true;
    } else if (!quoted && (c == ' ' || c == '\t')) {
      if (in_word) argv.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) argv.push_back(word);
  proc::Options o;
  // Children are not this suite: they must not append to its journal or take its test name.
  o.unset_env = {"GPUCTS_TEST_NAME", "GPUCTS_JOURNAL_DIR", "GPUCTS_BW_OUTPUT"};
  o.err = proc::Output::Capture;
  o.timeout_s = 300;
  proc::Result p = proc::run(argv, o);
  Result r;
  r.out = p.output;
  r.rc = p.exit_code.value_or(-1);
  return r;
}

std::string self_path() { return self_exe(); }

// The binaries under test sit beside this one (fixtures/probe/paths.hpp): build tree <build>/suites and
// <build>/cli/gpucts, install tree libexec/gpucts and bin/gpucts.
std::string version_binary() { return find_beside("gpucts_version").value_or(""); }
std::string cli_binary() { return find_beside("gpucts").value_or(""); }

#define REQUIRE_BINARIES()                                                         \
  do {                                                                             \
    if (version_binary().empty() || cli_binary().empty())                          \
      GTEST_SKIP() << "gpucts or gpucts_version not found beside " << self_path(); \
  } while (0)

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// One entry of a CTest json-v1 suite list.
nlohmann::json entry(const std::string& name, std::vector<std::string> cmd, std::vector<std::string> env,
                     double timeout) {
  return nlohmann::json{{"name", name},
                        {"command", cmd},
                        {"properties",
                         {{{"name", "LABELS"}, {"value", {"cpu"}}},
                          {{"name", "ENVIRONMENT"}, {"value", env}},
                          {{"name", "TIMEOUT"}, {"value", timeout}},
                          {{"name", "SKIP_RETURN_CODE"}, {"value", 77}}}}};
}

// A CTest json-v1 suite list: gpucts_version (a real suite) and this binary's fixture cases.
std::string tests_json(const std::string& fixture_env, bool with_crash_and_hang) {
  nlohmann::json tests = nlohmann::json::array();
  tests.push_back(entry("gpucts_version", {version_binary(), "--gtest_filter=*Parse*"}, {}, 60));
  std::vector<std::string> env;
  std::stringstream ss(fixture_env);
  for (std::string kv; std::getline(ss, kv, ' ');)
    if (!kv.empty()) env.push_back(kv);
  tests.push_back(
      entry("gpucts_fixture",
            {self_path(), "--gtest_also_run_disabled_tests",
             "--gtest_filter=DISABLED_Fixture.Toggle:DISABLED_Fixture.SkipToggle:DISABLED_Fixture.Bandwidth"},
            env, 60));
  if (with_crash_and_hang) {
    tests.push_back(
        entry("gpucts_fixture_crash",
              {self_path(), "--gtest_also_run_disabled_tests", "--gtest_filter=DISABLED_Fixture.Crash"},
              {"GPUCTS_FIXTURE_CRASH=1"}, 60));
    tests.push_back(
        entry("gpucts_fixture_hang",
              {self_path(), "--gtest_also_run_disabled_tests", "--gtest_filter=DISABLED_Fixture.Hang"},
              {"GPUCTS_FIXTURE_HANG=1"}, 1));
  }
  return nlohmann::json{{"kind", "ctestInfo"}, {"tests", tests}}.dump(2);
}

class BundleTest : public ::testing::Test {
 protected:
  static inline fs::path root_;
  static inline Result base_run_, cand_run_;
  static fs::path base() { return root_ / "base"; }
  static fs::path cand() { return root_ / "cand"; }
  static std::string gpucts() { return cli_binary(); }

  static void SetUpTestSuite() {
    if (version_binary().empty() || cli_binary().empty()) return;
    root_ = fs::temp_directory_path() / ("gpucts-report-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ / "base.json") << tests_json("GPUCTS_FIXTURE_BW_SCALE=1.0", false);
    // What the build linked, beside the suite list as an install tree has it.
    std::ofstream(root_ / "gpucts_built_against.txt")
        << "libstdc++=GNU's libstdc++\nlibtorch=libtorch 9.9.0\n";
    std::ofstream(root_ / "cand.json")
        << tests_json("GPUCTS_FIXTURE_FAIL=1 GPUCTS_FIXTURE_SKIP=1 GPUCTS_FIXTURE_BW_SCALE=0.8", true);
    base_run_ = sh(gpucts() + " qualify --no-python --tests-json " + (root_ / "base.json").string() +
                   " --output " + base().string());
    cand_run_ = sh(gpucts() + " qualify --no-python --grace 1 --tests-json " +
                   (root_ / "cand.json").string() + " --output " + cand().string());
  }
  static void TearDownTestSuite() {
    if (!root_.empty() && !std::getenv("GPUCTS_KEEP_TEST_BUNDLES")) fs::remove_all(root_);
  }
  void SetUp() override { REQUIRE_BINARIES(); }
  static bundle::Bundle load(const fs::path& p) { return bundle::load(p.string()); }
};

TEST_F(BundleTest, PassingRunIsAValidBundleWithVerdictPass) {
  ASSERT_EQ(base_run_.rc, 0) << base_run_.out;
  auto b = load(base());
  EXPECT_EQ(b.manifest.schema, bundle::kBundleSchema);
  EXPECT_EQ(b.manifest.verdict, "pass");
  ASSERT_EQ(b.manifest.suites.size(), 2u);
  auto n = junit::count(b.cases);
  EXPECT_GT(n.passed, 10);  // gpucts_version's parse cases plus the fixture's
  EXPECT_EQ(n.failed + n.errors, 0);
  EXPECT_TRUE(fs::exists(base() / "gtest" / "gpucts_version.xml"));
  EXPECT_TRUE(fs::exists(base() / "bandwidth" / "gpucts_fixture.csv"));
  ASSERT_EQ(b.bandwidth.size(), 1u);
  EXPECT_EQ(b.fingerprints.size(), 1u);
  EXPECT_EQ(b.manifest.built_against["libtorch"], "libtorch 9.9.0") << "what the build linked is recorded";
  EXPECT_TRUE(b.check.value("available", false)) << b.check.dump();
  EXPECT_TRUE(b.check.contains("findings")) << b.check.dump();
}

TEST_F(BundleTest, SummaryPutsVerdictFirstAndHtmlIsWellFormed) {
  std::string md = read(cand() / "summary.md");
  auto verdict = md.find("**FAIL**"), failed = md.find("## Failed"), skipped = md.find("## Skipped");
  ASSERT_NE(verdict, std::string::npos) << md.substr(0, 400);
  EXPECT_LT(verdict, failed);
  EXPECT_LT(failed, skipped);
  EXPECT_NE(md.find("fixture failure requested"), std::string::npos) << "failure message missing";
  EXPECT_NE(md.find("| fixture skip requested by GPUCTS_FIXTURE_SKIP | 1 |"), std::string::npos)
      << "skip reason grouped, without gtest's file:line prefix";
  for (const auto* dir : {"base", "cand"}) {
    std::string html = read(root_ / dir / "summary.html");
    EXPECT_NO_THROW(xml::parse(html, std::string(dir) + "/summary.html"));
    EXPECT_NE(html.find("<svg"), std::string::npos) << "no inline plot";
    EXPECT_NE(html.find("threshold floor"), std::string::npos) << "no threshold line";
  }
}

TEST_F(BundleTest, FailingCrashingAndHangingSuitesAreRecorded) {
  ASSERT_EQ(cand_run_.rc, 1) << cand_run_.out;
  auto b = load(cand());
  EXPECT_EQ(b.manifest.verdict, "fail");
  std::map<std::string, bundle::SuiteRun> by;
  for (const auto& s : b.manifest.suites) by[s.name] = s;
  EXPECT_STREQ(bundle::suite_status_name(by["gpucts_fixture"].status), "failed");
  EXPECT_STREQ(bundle::suite_status_name(by["gpucts_fixture_crash"].status), "crashed");
  EXPECT_EQ(by["gpucts_fixture_crash"].signal.value_or(0), SIGABRT);
  EXPECT_TRUE(by["gpucts_fixture_crash"].synthesized);
  EXPECT_STREQ(bundle::suite_status_name(by["gpucts_fixture_hang"].status), "timeout");
  std::map<std::string, junit::Case> cases;
  for (const auto& c : b.cases) cases[c.key()] = c;
  // The case that was running when the process died comes from the journal, as an error.
  auto crash = cases["gpucts_fixture_crash/DISABLED_Fixture.Crash"];
  EXPECT_STREQ(junit::status_name(crash.status), "error");
  EXPECT_NE(crash.message.find("killed by signal 6"), std::string::npos) << crash.message;
  auto hang = cases["gpucts_fixture_hang/DISABLED_Fixture.Hang"];
  EXPECT_STREQ(junit::status_name(hang.status), "error");
  EXPECT_NE(hang.message.find("timed out after 1 s"), std::string::npos) << hang.message;
  EXPECT_STREQ(junit::status_name(cases["gpucts_fixture/DISABLED_Fixture.Toggle"].status), "failed");
  EXPECT_STREQ(junit::status_name(cases["gpucts_fixture/DISABLED_Fixture.SkipToggle"].status), "skipped");
}

TEST_F(BundleTest, RenderWritesTheSummaryAgainElsewhere) {
  fs::path out = root_ / "rendered";
  auto r = sh(gpucts() + " report --render " + cand().string() + " --output " + out.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(read(out / "summary.md"), read(cand() / "summary.md"))
      << "the same bundle renders the same summary";
  EXPECT_NO_THROW(xml::parse(read(out / "summary.html"), "rendered/summary.html"));
  EXPECT_EQ(sh(gpucts() + " report --render " + cand().string() + " --baseline " + base().string()).rc, 2);
  EXPECT_EQ(sh(gpucts() + " report --render " + (root_ / "absent").string()).rc, 2);
}

// An image gate on a GPU node: with --expect-gpus a run that sees fewer GPUs fails, and says why,
// instead of passing on skips alone.
TEST_F(BundleTest, ExpectGpusFailsTheVerdictWhenFewerAreVisible) {
  fs::path out = root_ / "expect";
  Result r = sh(gpucts() + " qualify --no-python --expect-gpus 4096 --tests-json " +
                (root_ / "base.json").string() + " --output " + out.string());
  EXPECT_EQ(r.rc, 1) << r.out;
  auto b = load(out);
  EXPECT_EQ(b.manifest.verdict, "fail");
  // The verdict's own reason, decided from the GPU counts the manifest records (no case is made up).
  EXPECT_EQ(b.manifest.gpus_expected, 4096);
  EXPECT_NE(b.manifest.verdict_reason.find("expected at least 4096 GPU(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("because: expected at least 4096 GPU(s)"), std::string::npos) << r.out;
  Result bad = sh(gpucts() + " qualify --expect-gpus many --output " + (root_ / "expect-bad").string());
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_FALSE(fs::exists(root_ / "expect-bad"));
}

// mpirun that fails before any rank runs leaves no results: the suite's failure names the cause
// the launcher printed and its fix, not only an exit status.
TEST_F(BundleTest, ALauncherThatFailsBeforeAnyRankNamesItsCause) {
  const fs::path script = root_ / "fake_mpirun.sh";
  std::ofstream(script) << "printf 'The value of the MCA parameter \"plm_rsh_agent\" was set to a path\\n"
                           "  plm_rsh_agent: ssh : rsh\\n' >&2\nexit 243\n";
  nlohmann::json tests = nlohmann::json::array();
  tests.push_back(
      entry("gpucts_fake_mpi", {"/bin/sh", script.string(), "--gtest_output=xml:unused"}, {}, 60));
  std::ofstream(root_ / "launcher.json") << nlohmann::json{{"kind", "ctestInfo"}, {"tests", tests}}.dump();
  const fs::path out = root_ / "launcher";
  Result r = sh(gpucts() + " qualify --no-python --tests-json " + (root_ / "launcher.json").string() +
                " --output " + out.string());
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("wants ssh or rsh on PATH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OMPI_MCA_plm=isolated"), std::string::npos) << r.out;
  EXPECT_NE(read(out / "junit.xml").find("wants ssh or rsh on PATH"), std::string::npos);
}

TEST_F(BundleTest, QualifyRefusesANonEmptyOutputFolder) {
  auto r = sh(gpucts() + " qualify --no-python --tests-json " + (root_ / "base.json").string() +
              " --output " + base().string());
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("not an empty folder"), std::string::npos) << r.out;
}

TEST_F(BundleTest, ReportOfABundleAgainstItselfHasNoRegression) {
  auto r = sh(gpucts() + " report --baseline " + base().string() + " --candidate " + base().string());
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("NO REGRESSION"), std::string::npos) << r.out;
}

TEST_F(BundleTest, ReportFindsNewFailuresSkipsAndSlowerPoints) {
  fs::path out = root_ / "report";
  auto r = sh(gpucts() + " report --baseline " + base().string() + " --candidate " + cand().string() +
              " --candidate " + base().string() + " --output " + out.string());
  EXPECT_EQ(r.rc, 1) << r.out;
  auto j = nlohmann::json::parse(read(out / "report.json"));
  EXPECT_TRUE(j["regressed"].get<bool>());
  ASSERT_EQ(j["candidates"].size(), 2u);
  EXPECT_FALSE(j["candidates"][0]["regressions"].empty());
  EXPECT_TRUE(j["candidates"][1]["regressions"].empty())
      << "the baseline itself as candidate 2 must not regress";
  std::map<std::string, std::string> change;
  for (const auto& c : j["cases"]) change[c["case"]] = c["change"][0];
  EXPECT_EQ(change["gpucts_fixture/DISABLED_Fixture.Toggle"], "newly failing");
  EXPECT_EQ(change["gpucts_fixture/DISABLED_Fixture.SkipToggle"], "newly skipped");
  ASSERT_FALSE(j["bandwidth"].empty()) << "a 20% drop must be reported at 5% tolerance";
  EXPECT_EQ(j["bandwidth"][0]["change"][0], "slower");
  EXPECT_NEAR(j["bandwidth"][0]["change_pct"][0].get<double>(), -20.0, 0.5);
  EXPECT_NO_THROW(xml::parse(read(out / "report.html"), "report.html"));
  EXPECT_NE(read(out / "report.html").find("<svg"), std::string::npos) << "no per-run bandwidth plot";
  std::string md = read(out / "report.md");
  // report.md links its plots, written beside it.
  const auto link = md.find("](plots/");
  ASSERT_NE(link, std::string::npos) << md;
  const std::string file = md.substr(link + 2, md.find(')', link) - link - 2);
  EXPECT_NO_THROW(xml::parse(read(out / file), file)) << file;
  EXPECT_NE(md.find("| candidate 1: "), std::string::npos) << "one column per run";
  EXPECT_NE(md.find(" | candidate 2: "), std::string::npos) << "one column per run";
  // On standard output no plot file exists: the Markdown says how to get it, not "the HTML summary".
  auto printed = sh(gpucts() + " report --baseline " + base().string() + " --candidate " + cand().string());
  EXPECT_NE(printed.out.find("(plot written with --output DIR)"), std::string::npos) << printed.out;
  EXPECT_EQ(printed.out.find("HTML summary"), std::string::npos) << printed.out;
  // With a tolerance above the drop, the bandwidth rows disappear (the case regressions stay).
  auto wide = sh(gpucts() + " report --json --tolerance 25 --baseline " + base().string() + " --candidate " +
                 cand().string());
  auto w = nlohmann::json::parse(wide.out.substr(wide.out.find('{')));
  EXPECT_TRUE(w["bandwidth"].empty());
}

// `gpucts report` never follows a link out of a bundle: a junit.xml or a gtest/ folder that leads
// elsewhere is refused in one line naming it (exit 2), and what the outside file holds is not quoted.
TEST_F(BundleTest, ReportRefusesALinkOutOfTheBundle) {
  const fs::path outside = root_ / "outside-the-bundle";
  fs::create_directories(outside / "gtest");
  std::ofstream(outside / "junit.xml") << "root:x:0:0:SECRET-LINE:/root:/bin/bash\n";
  for (const auto& e : fs::directory_iterator(cand() / "gtest"))
    std::ofstream(outside / "gtest" / e.path().filename()) << "<testsuites name=\"SECRET-LINE\"/>\n";
  for (const std::string what : {"junit.xml", "gtest"}) {
    const fs::path linked = root_ / ("linked-" + what);
    fs::remove_all(linked);
    fs::copy(cand(), linked, fs::copy_options::recursive);
    fs::remove_all(linked / what);
    fs::create_symlink(outside / what, linked / what);
    for (const std::string& cmd :
         {" report --render " + linked.string() + " --output " + (linked / "out").string(),
          " report --baseline " + base().string() + " --candidate " + linked.string()}) {
      const Result r = sh(gpucts() + cmd);
      EXPECT_EQ(r.rc, 2) << cmd << ": " << r.out;
      EXPECT_NE(r.out.find("refused, not read: a symbolic link: " + what), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("SECRET-LINE"), std::string::npos) << "the outside file was read: " << r.out;
      EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one line: " << r.out;
    }
  }
}

// report.md, report.html and report.json are made in memory and written all or none: an output
// that cannot take report.html gets no report.md either.
TEST_F(BundleTest, ReportWritesNoFileWhenOneOfItsOutputsCannotBeWritten) {
  fs::path out = root_ / "report-blocked";
  fs::create_directories(out / "report.html");
  auto r = sh(gpucts() + " report --baseline " + base().string() + " --candidate " + base().string() +
              " --output " + out.string());
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("report.html: is a directory"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out / "report.md"));
  EXPECT_FALSE(fs::exists(out / "report.json"));
}

// SIGINT during a suite: forwarded to its process group, the suite is marked interrupted, later
// suites not run, and the bundle is still complete and readable.
TEST_F(BundleTest, InterruptStillWritesACompleteBundle) {
  nlohmann::json list = nlohmann::json::parse(tests_json("GPUCTS_FIXTURE_HANG=1", true));
  nlohmann::json tests = nlohmann::json::array();
  for (const auto& t : list["tests"])
    if (t["name"] == "gpucts_fixture_hang") {
      auto h = t;
      h["properties"][2]["value"] = 60;  // TIMEOUT: the interrupt, not the deadline, must end it
      tests.push_back(h);
    }
  tests.push_back(list["tests"][0]);  // gpucts_version, after the hang: must be "not_run"
  list["tests"] = tests;
  std::ofstream(root_ / "int.json") << list.dump();
  fs::path out = root_ / "int";
  pid_t pid = fork();
  if (pid == 0) {
    unsetenv("GPUCTS_TEST_NAME");
    unsetenv("GPUCTS_JOURNAL_DIR");
    std::string cli = cli_binary(), json = (root_ / "int.json").string(), o = out.string();
    execl(cli.c_str(), cli.c_str(), "qualify", "--no-python", "--grace", "2", "--tests-json", json.c_str(),
          "--output", o.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until the hanging case has started (its journal line, in the suite's staging folder
  // beside the bundle until the suite is gone), then interrupt.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto started = [&] {
    for (const auto& d : fs::directory_iterator(root_))
      if (d.path().filename().string().rfind(".int.suite-", 0) == 0 &&
          read(d.path() / "journal" / "gpucts_fixture_hang.jsonl").find("\"start\"") != std::string::npos)
        return true;
    return false;
  };
  while (std::chrono::steady_clock::now() < deadline && !started())
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(started()) << "the hanging case never started";
  fs::path journal = out / "journal" / "gpucts_fixture_hang.jsonl";
  kill(pid, SIGINT);
  int status = 0;
  pid_t done = 0;
  while (std::chrono::steady_clock::now() < deadline + std::chrono::seconds(10) &&
         (done = waitpid(pid, &status, WNOHANG)) == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "qualify did not finish after SIGINT";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  auto b = load(out);
  EXPECT_TRUE(b.manifest.interrupted);
  EXPECT_EQ(b.manifest.verdict, "fail");
  ASSERT_EQ(b.manifest.suites.size(), 2u);
  EXPECT_STREQ(bundle::suite_status_name(b.manifest.suites[0].status), "interrupted");
  EXPECT_STREQ(bundle::suite_status_name(b.manifest.suites[1].status), "not_run");
  EXPECT_TRUE(fs::exists(out / "summary.html"));
  EXPECT_NE(read(out / "summary.md").find("interrupted"), std::string::npos);
}

TEST_F(BundleTest, MpiRanksGiveOneFingerprintEachCheckedTogether) {
  if (sh("sh -c 'command -v mpiexec'").rc != 0) GTEST_SKIP() << "mpiexec not on PATH";
  fs::path out = root_ / "mpi";
  auto r =
      sh(gpucts() + " qualify --no-python --tests-json " + (root_ / "base.json").string() +
         " --tests '^gpucts_version$' --mpi-ranks 2 --mpiexec-args --oversubscribe --output " + out.string());
  EXPECT_EQ(r.rc, 0) << r.out;
  auto b = load(out);
  int ranks = 0;
  for (const auto& [name, j] : b.fingerprints) ranks += name.find(".rank") != std::string::npos;
  EXPECT_EQ(ranks, 2) << "one fingerprint per rank";
  EXPECT_NE(read(out / "check.txt").find("3 fingerprints"), std::string::npos) << read(out / "check.txt");
}

// CTest's verdict properties decide an entry as ctest would: WILL_FAIL and PASS_REGULAR_EXPRESSION
// turn an expected failure into a pass, a regex that does not match into a failure.
TEST_F(BundleTest, CtestVerdictPropertiesAreHonoured) {
  auto failing = [&](const std::string& name, const char* prop, nlohmann::json value) {
    auto e = entry(name,
                   {self_path(), "--gtest_also_run_disabled_tests", "--gtest_filter=DISABLED_Fixture.Toggle"},
                   {"GPUCTS_FIXTURE_FAIL=1"}, 60);
    e["properties"].push_back({{"name", prop}, {"value", value}});
    return e;
  };
  nlohmann::json tests = nlohmann::json::array({
      failing("will_fail", "WILL_FAIL", true),
      failing("pass_regex", "PASS_REGULAR_EXPRESSION",
              {"fixture failure requested by GPUCTS_FIXTURE_[A-Z]+"}),
      failing("pass_regex_no_match", "PASS_REGULAR_EXPRESSION", {"text that is not in the output"}),
  });
  std::ofstream(root_ / "rules.json") << nlohmann::json{{"kind", "ctestInfo"}, {"tests", tests}}.dump();
  fs::path out = root_ / "rules";
  auto r = sh(gpucts() + " qualify --no-python --tests-json " + (root_ / "rules.json").string() +
              " --output " + out.string());
  EXPECT_EQ(r.rc, 1) << r.out;
  std::map<std::string, std::string> status;
  for (const auto& s : load(out).manifest.suites) status[s.name] = bundle::suite_status_name(s.status);
  EXPECT_EQ(status["will_fail"], "passed");
  EXPECT_EQ(status["pass_regex"], "passed");
  EXPECT_EQ(status["pass_regex_no_match"], "failed");
}

// Verdicts a gate can trust: waivers of known defects, entries judged by their exit status, and
// a run with no GPU that is not a pass.
TEST_F(BundleTest, AcceptKnownWaivesOnlyTheNamedDefect) {
  auto defect_entry = [&](const std::string& name, const std::string& filter, std::vector<std::string> env) {
    return entry(name, {self_path(), "--gtest_also_run_disabled_tests", "--gtest_filter=" + filter},
                 std::move(env), 60);
  };
  auto run = [&](const std::string& name, nlohmann::json tests, const std::string& extra) {
    std::ofstream(root_ / (name + ".json")) << nlohmann::json{{"kind", "ctestInfo"}, {"tests", tests}}.dump();
    return sh(gpucts() + " qualify --no-python " + extra + " --tests-json " +
              (root_ / (name + ".json")).string() + " --output " + (root_ / name).string());
  };
  nlohmann::json only_defect = nlohmann::json::array(
      {defect_entry("gpucts_defect", "DISABLED_Fixture.KnownDefect", {"GPUCTS_FIXTURE_DEFECT=1"})});
  // Without the waiver the known defect fails the run, and the summary names it.
  Result plain = run("defect-plain", only_defect, "");
  EXPECT_EQ(plain.rc, 1) << plain.out;
  // The reason sits right under the verdict, in the CLI and the summary: the failed suite.
  EXPECT_NE(plain.out.find("FAIL  ("), std::string::npos) << plain.out;
  EXPECT_NE(
      plain.out.find("because: gpucts_defect failed: 1 failing case(s), first DISABLED_Fixture.KnownDefect"),
      std::string::npos)
      << plain.out;
  std::string md = read(root_ / "defect-plain" / "summary.md");
  EXPECT_NE(md.find("nccl-1950"), std::string::npos) << md.substr(0, 2000);
  EXPECT_NE(md.find("https://github.com/NVIDIA/nccl/issues/1950"), std::string::npos);
  ASSERT_NE(md.find("- gpucts_defect failed: 1 failing case(s)"), std::string::npos) << md.substr(0, 2000);
  EXPECT_LT(md.find("- gpucts_defect failed: 1 failing case(s)"), md.find(" suites: ")) << md.substr(0, 2000);
  // With it: exit 0, verdict waived, the waiver first in the summary and in the manifest.
  Result waived = run("defect-waived", only_defect, "--accept-known nccl-1950");
  EXPECT_EQ(waived.rc, 0) << waived.out;
  EXPECT_NE(waived.out.find("PASS (waived: nccl-1950)"), std::string::npos) << waived.out;
  auto b = load(root_ / "defect-waived");
  EXPECT_EQ(b.manifest.verdict, "waived");
  ASSERT_EQ(b.manifest.waivers.size(), 1u);
  EXPECT_EQ(b.manifest.waivers[0].cases, 1);
  EXPECT_NE(waived.out.find("because: waived with --accept-known: nccl-1950 (1 failed case(s)"),
            std::string::npos)
      << waived.out;
  std::string wmd = read(root_ / "defect-waived" / "summary.md");
  // The waiver right under the verdict; the page agrees with itself: the suite passed with
  // waivers, the defect's text once, the waived failure in its own section with its cause only.
  ASSERT_NE(wmd.find("- waived with --accept-known: nccl-1950"), std::string::npos) << wmd.substr(0, 1500);
  EXPECT_LT(wmd.find("- waived with --accept-known: nccl-1950"), wmd.find(" suites: "))
      << wmd.substr(0, 1500);
  EXPECT_NE(wmd.find("1 passed with waivers"), std::string::npos) << wmd.substr(0, 1500);
  EXPECT_NE(wmd.find("| gpucts_defect | cpu | passed with waivers |"), std::string::npos) << wmd;
  EXPECT_NE(wmd.find(", 1 waived"), std::string::npos) << wmd.substr(0, 1500);
  const std::string title = builtin_matrix().nccl_defects.front().title;
  EXPECT_EQ(wmd.find(title), wmd.rfind(title)) << "the defect's text more than once: " << wmd;
  ASSERT_NE(wmd.find("## Waived failures (1, --accept-known)"), std::string::npos) << wmd;
  const std::string waived_rows = wmd.substr(wmd.find("## Waived failures"));
  EXPECT_NE(waived_rows.find("| fixture failure explained by nccl-1950 |"), std::string::npos) << waived_rows;
  EXPECT_EQ(waived_rows.substr(0, waived_rows.find("\n## ", 3)).find("report_test.cpp"), std::string::npos)
      << waived_rows;
  EXPECT_EQ(wmd.find("verdict: fail"), std::string::npos) << wmd;
  for (const auto& c : b.cases) {
    if (c.name == "KnownDefect") {
      EXPECT_EQ(c.property("gpucts.waived"), "nccl-1950");
    }
  }
  // An unexplained failure beside it is never waived.
  nlohmann::json both = only_defect;
  both.push_back(defect_entry("gpucts_plain_failure", "DISABLED_Fixture.Toggle", {"GPUCTS_FIXTURE_FAIL=1"}));
  Result mixed = run("defect-mixed", both, "--accept-known nccl-1950");
  EXPECT_EQ(mixed.rc, 1) << mixed.out;
  // An id that is not a row is bad usage, not a waiver of nothing.
  Result typo = run("defect-typo", only_defect, "--accept-known nccl-195");
  EXPECT_EQ(typo.rc, 2) << typo.out;
  EXPECT_NE(typo.out.find("no such defect"), std::string::npos) << typo.out;
}

TEST_F(BundleTest, NonGtestEntriesAreJudgedByTheirExitStatus) {
  nlohmann::json tests = nlohmann::json::array({entry("script_ok", {"/bin/true"}, {}, 30)});
  std::ofstream(root_ / "script.json") << nlohmann::json{{"kind", "ctestInfo"}, {"tests", tests}}.dump();
  Result ok = sh(gpucts() + " qualify --no-python --label cpu --tests-json " +
                 (root_ / "script.json").string() + " --output " + (root_ / "script-ok").string());
  EXPECT_EQ(ok.rc, 0) << ok.out;
  EXPECT_EQ(load(root_ / "script-ok").manifest.verdict, "pass");
  tests = nlohmann::json::array({entry("script_bad", {"/bin/false"}, {}, 30)});
  std::ofstream(root_ / "script.json", std::ios::trunc)
      << nlohmann::json{{"kind", "ctestInfo"}, {"tests", tests}}.dump();
  Result bad = sh(gpucts() + " qualify --no-python --tests-json " + (root_ / "script.json").string() +
                  " --output " + (root_ / "script-bad").string());
  EXPECT_EQ(bad.rc, 1) << bad.out;
}

TEST_F(BundleTest, NoGpuVisibleIsNotAPass) {
  if (visible_gpu_count() > 0)
    GTEST_SKIP() << "this machine has a GPU: the no-GPU verdict cannot be seen here";
  fs::path dir = root_ / "nogpu-list";
  fs::create_directories(dir);
  nlohmann::json tests = nlohmann::json::array(
      {entry("gpucts_version", {version_binary(), "--gtest_filter=*Parse*"}, {}, 60),
       entry("gpucts_needs_gpu", {version_binary(), "--gtest_filter=*Parse*"}, {}, 60)});
  std::ofstream(dir / "tests.json") << nlohmann::json{{"kind", "ctestInfo"}, {"tests", tests}}.dump();
  std::ofstream(dir / "gpucts_gpu_needs.txt") << "gpucts_needs_gpu=1\n";
  // Known defects of this machine's NCCL matched by version alone only warn: the verdict is the
  // missing GPU, with its reason and the warnings under it.
  Result r = sh(gpucts() + " qualify --no-python --tests-json " + (dir / "tests.json").string() +
                " --output " + (root_ / "nogpu").string());
  EXPECT_EQ(r.rc, 3) << r.out;
  EXPECT_NE(r.out.find("NO GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("because: no GPU visible"), std::string::npos) << r.out;
  auto b = load(root_ / "nogpu");
  EXPECT_EQ(b.manifest.verdict, "no_gpu");
  std::string md = read(root_ / "nogpu" / "summary.md");
  EXPECT_NE(md.find("- no GPU visible"), std::string::npos) << md.substr(0, 1500);
  for (const auto& f : b.check.value("findings", nlohmann::json::array()))
    if (f.value("id", "") == "nccl-known-defect") {
      EXPECT_EQ(f.value("severity", ""), "warning") << f.dump();
      const std::string id = bundle::defect_of_finding(f);
      EXPECT_NE(r.out.find("warning: " + id + " in "), std::string::npos) << r.out;
      EXPECT_NE(md.find("- warning: " + id + " in "), std::string::npos) << md.substr(0, 3000);
    }
  // --strict-defects makes them errors: then the run fails on them, naming each by id.
  if (r.out.find("warning: ") != std::string::npos) {
    Result strict = sh(gpucts() + " qualify --no-python --strict-defects --tests-json " +
                       (dir / "tests.json").string() + " --output " + (root_ / "nogpu-strict").string());
    EXPECT_EQ(strict.rc, 1) << strict.out;
    EXPECT_NE(strict.out.find("because: check error nccl-known-defect "), std::string::npos) << strict.out;
  }
}

// --strict-defects asks for a known defect to be an error: the verdict fails on it whatever suites
// were selected (only CPU ones here), as check.json says, and names it.
TEST_F(BundleTest, StrictDefectsFailTheRunWhateverSuitesRan) {
  const std::string fp = (fs::path(test_data_dir()) / "check" / "h200_system_nccl.json").string();
  Result r = sh(gpucts() + " qualify --no-python --strict-defects --fingerprint " + fp + " --tests-json " +
                (root_ / "base.json").string() + " --output " + (root_ / "strict-cpu").string());
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("because: check error nccl-known-defect "), std::string::npos) << r.out;
  auto b = load(root_ / "strict-cpu");
  EXPECT_FALSE(b.manifest.nccl_selected);
  EXPECT_EQ(b.check.value("verdict", ""), "fail");
  EXPECT_EQ(b.manifest.verdict, "fail");
  EXPECT_EQ(verdict::decide(b).kind, verdict::Kind::fail);
}

// --mpi-ranks N: an N-rank probe that never started, or whose ranks wrote no fingerprint, fails the
// run naming it (a cross-host check that never ran is no pass).
TEST_F(BundleTest, AnMpiRankProbeThatDidNotRunFailsTheRun) {
  for (const std::string launcher : {"/nonexistent/mpiexec", "/bin/true"}) {
    const fs::path out = root_ / ("ranks-" + std::to_string(launcher.size()));
    Result r = sh("/usr/bin/env GPUCTS_MPIEXEC=" + launcher + " " + gpucts() +
                  " qualify --no-python --mpi-ranks 2 --tests-json " + (root_ / "base.json").string() +
                  " --output " + out.string());
    EXPECT_EQ(r.rc, 1) << launcher << ": " << r.out;
    EXPECT_NE(r.out.find("because: gpucts_mpi_ranks_probe failed"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("0 of 2 ranks wrote a fingerprint"), std::string::npos) << r.out;
    auto b = load(out);
    EXPECT_EQ(b.manifest.verdict, "fail");
    ASSERT_FALSE(b.manifest.suites.empty());
    EXPECT_EQ(b.manifest.suites.front().name, "gpucts_mpi_ranks_probe");
    EXPECT_EQ(junit::count(b.cases).errors, 1) << "one error case carries it into junit.xml";
  }
}

// The merged JUnit names each case's binary in its classname (CI servers group by classname),
// reads back to the same keys, and is well-formed for a real XML parser.
TEST_F(BundleTest, MergedJunitQualifiesClassnamesAndParsesWithXmllint) {
  std::string x = read(base() / "junit.xml");
  EXPECT_NE(x.find("classname=\"gpucts_version."), std::string::npos) << x.substr(0, 600);
  auto again = junit::read_file((base() / "junit.xml").string(), "");
  auto b = load(base());
  ASSERT_EQ(again.size(), b.cases.size());
  for (size_t i = 0; i < again.size(); ++i) EXPECT_EQ(again[i].key(), b.cases[i].key());
  // Counts of the merged file against the binaries' own files.
  int per_binary = 0;
  for (const auto& s : b.manifest.suites)
    for (const auto& f : s.xml)
      per_binary += static_cast<int>(junit::read_file((base() / f).string(), s.name).size());
  EXPECT_EQ(per_binary, static_cast<int>(b.cases.size()));
  if (!fs::exists("/usr/bin/xmllint")) GTEST_SKIP() << "xmllint (libxml2-utils) not installed";
  for (const auto& e : fs::recursive_directory_iterator(base()))
    if (e.path().extension() == ".xml" || e.path().extension() == ".html" || e.path().extension() == ".svg") {
      Result v = sh("xmllint --noout '" + e.path().string() + "'");
      EXPECT_EQ(v.rc, 0) << e.path() << ": " << v.out;
    }
}

// xmllint from PATH, "" where it is not installed (it is optional: only this check needs it).
std::string xmllint() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((fs::path(d) / "xmllint").c_str(), X_OK) == 0)
      return (fs::path(d) / "xmllint").string();
  return "";
}

// junit.xml as CI servers take it: the shape of Jenkins' xunit junit-10.xsd (no properties inside a
// testcase, no testsuites@skipped), the cause as message, waived cases as typed skips with their
// text, the stack's versions per testsuite; and no other *.xml in the bundle that is not a result.
TEST_F(BundleTest, JunitHasTheXunitSchemaShape) {
  nlohmann::json tests = nlohmann::json::array(
      {entry("gpucts_defect",
             {self_path(), "--gtest_also_run_disabled_tests", "--gtest_filter=DISABLED_Fixture.KnownDefect"},
             {"GPUCTS_FIXTURE_DEFECT=1"}, 60)});
  std::ofstream(root_ / "schema.json") << nlohmann::json{{"kind", "ctestInfo"}, {"tests", tests}}.dump();
  Result w = sh(gpucts() + " qualify --no-python --accept-known nccl-1950 --tests-json " +
                (root_ / "schema.json").string() + " --output " + (root_ / "schema-waived").string());
  ASSERT_EQ(w.rc, 0) << w.out;
  const std::string x = read(root_ / "schema-waived" / "junit.xml");
  EXPECT_NE(
      x.find(
          "<skipped type=\"gpucts.waived\" message=\"waived (known NCCL defect nccl-1950, --accept-known): "
          "fixture failure explained by nccl-1950\">"),
      std::string::npos)
      << x;
  EXPECT_NE(x.find("report_test.cpp"), std::string::npos) << "the full text stays in the body: " << x;
  for (const char* p :
       {"gpucts.driver", "gpucts.cuda_runtime", "gpucts.nccl_runtime", "gpucts.nccl_header", "gpucts.torch"})
    EXPECT_NE(x.find("<property name=\"" + std::string(p) + "\""), std::string::npos) << p << ": " << x;
  // A case's properties come back from its system-out.
  auto cases = junit::read_file((root_ / "schema-waived" / "junit.xml").string(), "");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].property("gpucts.known_defect"), "nccl-1950");
  EXPECT_EQ(cases[0].property("gpucts.waived"), "nccl-1950");
  for (const fs::path& bundle : {base(), cand(), root_ / "schema-waived"}) {
    const std::string text = read(bundle / "junit.xml");
    EXPECT_EQ(text.substr(0, text.find("<testsuite ")).find(" skipped="), std::string::npos) << bundle;
    const xml::Element root = xml::parse_file((bundle / "junit.xml").string());
    for (const auto* suite : root.children_named("testsuite"))
      for (const auto* tc : suite->children_named("testcase"))
        EXPECT_EQ(tc->child("properties"), nullptr) << bundle << ": " << tc->attr_or("name", "");
    for (const auto& e : fs::recursive_directory_iterator(bundle)) {
      if (e.path().extension() != ".xml") continue;
      EXPECT_TRUE(e.path() == bundle / "junit.xml" || e.path().parent_path() == bundle / "gtest")
          << e.path() << " is not a result";
    }
  }
  // Cases that passed in under a millisecond keep the journal's time, not gtest's rounded 0.
  auto base_cases = load(base()).cases;
  EXPECT_TRUE(std::any_of(base_cases.begin(), base_cases.end(),
                          [](const junit::Case& c) { return c.time_s > 0 && c.time_s < 0.001; }));
  const std::string lint = xmllint();
  if (lint.empty()) GTEST_SKIP() << "xmllint not on PATH: the schema itself is not checked here";
  const std::string xsd = (fs::path(test_data_dir()) / "junit" / "junit-10.xsd").string();
  ASSERT_TRUE(fs::exists(xsd)) << xsd;
  for (const fs::path& bundle : {base(), cand(), root_ / "schema-waived"}) {
    Result v = sh(lint + " --noout --schema " + xsd + " " + (bundle / "junit.xml").string());
    EXPECT_EQ(v.rc, 0) << bundle << ": " << v.out;
  }
  // And the schema refuses what CI servers refuse: properties inside a testcase.
  std::ofstream(root_ / "bad-junit.xml")
      << "<testsuites skipped=\"1\"><testsuite name=\"s\" tests=\"1\"><testcase name=\"c\"><properties>"
         "<property name=\"a\" value=\"b\"/></properties></testcase></testsuite></testsuites>\n";
  Result bad = sh(lint + " --noout --schema " + xsd + " " + (root_ / "bad-junit.xml").string());
  EXPECT_NE(bad.rc, 0) << bad.out;
}

struct BadInput {
  const char* name;
  // Prepares a broken copy of the base bundle in `dir`.
  void (*spoil)(const fs::path& dir);
  const char* message;  // expected in the one-line error
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

void truncate_file(const fs::path& p, double keep) {
  std::string t = read(p);
  std::ofstream(p, std::ios::trunc) << t.substr(0, static_cast<size_t>(static_cast<double>(t.size()) * keep));
}

fs::path first_bandwidth_file(const fs::path& bundle) {
  for (const auto& e : fs::directory_iterator(bundle / "bandwidth"))
    if (e.path().extension() == ".json") return e.path();
  return {};
}

// Sets one field of the first point of the bundle's bandwidth file.
void spoil_first_point(const fs::path& bundle, const char* field, double value) {
  const fs::path f = first_bandwidth_file(bundle);
  auto j = nlohmann::json::parse(read(f));
  j["points"][0][field] = value;
  std::ofstream(f, std::ios::trunc) << j.dump(2);
}

// Sets one value (a JSON pointer) of a bundle's JSON file.
void edit_json(const fs::path& file, const char* pointer, const nlohmann::json& value) {
  auto j = nlohmann::json::parse(read(file));
  j[nlohmann::json::json_pointer(pointer)] = value;
  std::ofstream(file, std::ios::trunc) << j.dump(2);
}

const BadInput kBadInputs[] = {
    {"not_a_bundle", [](const fs::path& d) { fs::remove(d / "manifest.json"); }, "not a gpucts bundle"},
    {"truncated_junit", [](const fs::path& d) { truncate_file(d / "junit.xml", 0.5); }, "junit.xml:"},
    {"truncated_gtest_xml", [](const fs::path& d) { truncate_file(d / "gtest" / "gpucts_version.xml", 0.7); },
     "gpucts_version.xml:"},
    {"truncated_manifest", [](const fs::path& d) { truncate_file(d / "manifest.json", 0.6); },
     "malformed JSON"},
    {"negative_spread", [](const fs::path& d) { spoil_first_point(d, "spread_pct", -5.0); },
     "field 'spread_pct'"},
    {"huge_busbw", [](const fs::path& d) { spoil_first_point(d, "busbw_gbps", 1e300); },
     "field 'busbw_gbps'"},
    {"zero_time", [](const fs::path& d) { spoil_first_point(d, "time_us", 0.0); }, "field 'time_us'"},
    {"algbw_not_from_the_time", [](const fs::path& d) { spoil_first_point(d, "algbw_gbps", 3.5); },
     "field 'algbw_gbps'"},
    {"duplicate_point",
     [](const fs::path& d) {
       const fs::path f = first_bandwidth_file(d);
       auto j = nlohmann::json::parse(read(f));
       j["points"].push_back(j["points"][0]);
       std::ofstream(f, std::ios::trunc) << j.dump(2);
     },
     "a second point for AllReduce/f32/1048576/out_of_place"},
    {"wrong_schema",
     [](const fs::path& d) {
       auto j = nlohmann::json::parse(read(d / "manifest.json"));
       j["schema"] = "gpucts.bundle/0";
       std::ofstream(d / "manifest.json", std::ios::trunc) << j.dump(2);
     },
     "is not gpucts.bundle/1"},
    {"cases_done_above_total",
     [](const fs::path& d) { edit_json(d / "manifest.json", "/suites/0/cases_done", 1000000); },
     "manifest.json: suites[0]: field 'cases_done': 1000000 is outside 0..21"},
    {"negative_duration",
     [](const fs::path& d) { edit_json(d / "manifest.json", "/suites/0/duration_s", -1.5); },
     "field 'duration_s': -1.5 is outside"},
    {"unknown_severity",
     [](const fs::path& d) {
       edit_json(d / "check.json", "/findings",
                 nlohmann::json::array({{{"id", "x"}, {"severity", "fatal"}, {"subject", "s"}}}));
     },
     "check.json: findings[0].severity: 'fatal' is not error, warning or info"},
    {"junit_time_not_a_number",
     [](const fs::path& d) {
       std::string x = read(d / "junit.xml");
       const auto at = x.find("time=\"", x.find("<testcase"));
       x.replace(at, x.find('"', at + 6) + 1 - at, "time=\"abc\"");
       std::ofstream(d / "junit.xml", std::ios::trunc) << x;
     },
     "time 'abc' is not a number of seconds"},
};

// A rule that could not judge is told with its reason, as `gpucts check` tells it: inputs not
// recorded, or inputs beyond what the data knows.
TEST_F(BundleTest, NotEvaluatedRulesAreToldByTheirReason) {
  const fs::path copy = root_ / "not-evaluated", out = root_ / "not-evaluated-rendered";
  fs::remove_all(copy);
  fs::copy(cand(), copy, fs::copy_options::recursive);
  edit_json(copy / "check.json", "/not_evaluated", {"rule-a", "rule-b"});
  edit_json(copy / "check.json", "/not_evaluated_outside_data", {"rule-b"});
  const auto r = sh(gpucts() + " report --render " + copy.string() + " --output " + out.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string md = read(out / "summary.md");
  EXPECT_NE(md.find("not evaluated (inputs absent): rule-a\n"), std::string::npos) << md;
  EXPECT_NE(md.find("not evaluated (inputs outside the data): rule-b\n"), std::string::npos) << md;
}

// Results that vanish are regressions: every passing case turned skipped (each suite then
// skipped), or a candidate marked interrupted though its recorded verdict says pass. The run
// table shows the verdict decide() gives, not the one recorded.
TEST_F(BundleTest, EverythingSkippedOrAnInterruptedPassIsARegression) {
  auto skipped = load(base());
  for (auto& c : skipped.cases) c.status = junit::Status::skipped, c.message = "nothing to run on";
  for (auto& s : skipped.manifest.suites) s.status = bundle::SuiteStatus::skipped;
  auto interrupted = load(base());
  interrupted.manifest.interrupted = true;
  ASSERT_EQ(interrupted.manifest.verdict, "pass");
  const auto c = report::compare(load(base()), {skipped, interrupted}, 5);
  ASSERT_EQ(c.regressions.size(), 2u);
  auto has = [](const std::vector<std::string>& v, const std::string& start) {
    return std::any_of(v.begin(), v.end(), [&](const std::string& r) { return r.rfind(start, 0) == 0; });
  };
  EXPECT_TRUE(has(c.regressions[0], "newly skipped: 21 case(s) of gpucts_version"))
      << c.regressions[0].size();
  EXPECT_TRUE(has(c.regressions[0], "verdict: pass -> not_run"));
  EXPECT_TRUE(has(c.regressions[1], "interrupted: "));
  EXPECT_TRUE(has(c.regressions[1], "verdict: pass -> fail"));
  const auto j = report::to_json(c);
  EXPECT_EQ(j["candidates"][1]["verdict"], "fail") << "the decided verdict, not the recorded pass";
}

class ReportBadInput : public BundleTest, public ::testing::WithParamInterface<BadInput> {};

TEST_P(ReportBadInput, ExitsTwoWithOneLineError) {
  const auto& c = GetParam();
  fs::path bad = root_ / (std::string("bad-") + c.name);
  fs::remove_all(bad);
  fs::copy(base(), bad, fs::copy_options::recursive);
  c.spoil(bad);
  auto r = sh(gpucts() + " report --baseline " + base().string() + " --candidate " + bad.string());
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find(c.message), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one line: " << r.out;
}

INSTANTIATE_TEST_SUITE_P(Bundles, ReportBadInput, ::testing::ValuesIn(kBadInputs),
                         [](const auto& i) { return std::string(i.param.name); });

TEST_F(BundleTest, AnotherGpuctsVersionIsComparedWithAWarning) {
  fs::path other = root_ / "other-version";
  fs::remove_all(other);
  fs::copy(base(), other, fs::copy_options::recursive);
  auto j = nlohmann::json::parse(read(other / "manifest.json"));
  j["gpucts_version"] = "99.0.0";
  std::ofstream(other / "manifest.json", std::ios::trunc) << j.dump(2);
  auto r = sh(gpucts() + " report --baseline " + base().string() + " --candidate " + other.string());
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("comes from gpucts 99.0.0"), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("comes from gpucts 99.0.0"), r.out.find("## What changed")) << r.out;
}

TEST(ReportUsage, MissingOrBadOptionsExitTwo) {
  REQUIRE_BINARIES();
  for (const char* args : {"report", "report --baseline /nonexistent --candidate /nonexistent",
                           "report --baseline a --candidate b --tolerance x",
                           "qualify --tests-json /nonexistent", "qualify --output"}) {
    auto r = sh(cli_binary() + " " + args);
    EXPECT_EQ(r.rc, 2) << args << ": " << r.out;
  }
}

// ---------------------------------------------------------------------------------------------
// The strict XML reader.
TEST(XmlReader, ParsesElementsAttributesEntitiesCdataAndComments) {
  auto e = xml::parse(
      "<?xml version=\"1.0\"?>\n<!-- c -->\n<a x=\"1 &amp; 2\" "
      "y='&#x41;&#66;'>t&lt;<b/><![CDATA[<raw>&]]><!--x--></a>\n",
      "doc");
  EXPECT_EQ(e.name, "a");
  EXPECT_EQ(e.attr_or("x", ""), "1 & 2");
  EXPECT_EQ(e.attr_or("y", ""), "AB");
  EXPECT_EQ(e.text, "t<<raw>&");
  ASSERT_EQ(e.children.size(), 1u);
  EXPECT_EQ(e.children[0].name, "b");
  EXPECT_EQ(e.children[0].line, 3);
}

struct Malformed {
  const char* name;
  const char* text;
  const char* where;  // "origin:line:col" prefix expected
  const char* what;
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const Malformed& c, std::ostream* os) { *os << c.name; }

const Malformed kMalformed[] = {
    {"empty", "", "m:1:1", "no root element"},
    {"truncated_in_element", "<a>\n<b>\n", "m:3:1", "<b> opened at line 2"},
    {"truncated_in_tag", "<a><b x=\"1", "m:1:", "unterminated attribute value"},
    {"mismatched_end", "<a>\n  <b></c></a>", "m:2:", "does not match <b>"},
    {"unknown_entity", "<a>&nbsp;</a>", "m:1:4", "unknown entity &nbsp;"},
    {"bare_ampersand", "<a>fish & chips</a>", "m:1:", "'&'"},
    {"duplicate_attribute", "<a x=\"1\" x=\"2\"/>", "m:1:", "duplicate attribute 'x'"},
    {"unquoted_attribute", "<a x=1/>", "m:1:", "must be quoted"},
    {"lt_in_attribute", "<a x=\"<\"/>", "m:1:", "'<' inside an attribute"},
    {"two_roots", "<a/><b/>", "m:1:5", "content after the root"},
    {"text_after_root", "<a/>\nx", "m:2:1", "content after the root"},
    {"unterminated_cdata", "<a><![CDATA[x</a>", "m:1:", "unterminated CDATA"},
    {"unterminated_comment", "<a><!-- x</a>", "m:1:", "unterminated comment"},
    {"bad_char_ref", "<a>&#xZZ;</a>", "m:1:", "bad character reference"},
    {"missing_space_between_attributes", "<a x=\"1\"y=\"2\"/>", "m:1:", "expected whitespace"},
};

class XmlMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(XmlMalformed, FailsWithLineAndColumn) {
  const auto& c = GetParam();
  try {
    xml::parse(c.text, "m");
    FAIL() << "accepted malformed XML: " << c.text;
  } catch (const xml::XmlError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind(c.where, 0), 0u) << m;
    EXPECT_NE(m.find(c.what), std::string::npos) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Xml, XmlMalformed, ::testing::ValuesIn(kMalformed),
                         [](const auto& i) { return std::string(i.param.name); });

TEST(XmlWriter, EscapedTextReadsBackUnchanged) {
  std::string nasty = "a<b>&\"'\x01z \xC3\xA9";
  auto e = xml::parse("<r v=\"" + xml::escape(nasty) + "\">" + xml::escape(nasty) + "</r>", "w");
  EXPECT_EQ(e.attr_or("v", ""), "a<b>&\"'z \xC3\xA9");  // the control character is dropped
  EXPECT_EQ(e.text, "a<b>&\"'z \xC3\xA9");
}

TEST(Junit, ReadsARealGtestFileAndWritesItBack) {
  REQUIRE_BINARIES();
  fs::path x = fs::temp_directory_path() / ("gpucts-junit-" + std::to_string(::getpid()) + ".xml");
  auto r = sh(std::string(version_binary()) + " --gtest_output=xml:" + x.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  auto root = xml::parse_file(x.string());
  auto cases = junit::read(root, x.string(), "gpucts_version");
  fs::remove(x);
  ASSERT_GT(cases.size(), 20u);
  EXPECT_EQ(junit::count(cases).passed, static_cast<int>(cases.size()));
  EXPECT_EQ(junit::properties(root).count("gpucts.nccl_header"), 1u) << "stack properties missing";
  auto again = junit::read(xml::parse(junit::write(cases, "t"), "merged"), "merged", "");
  ASSERT_EQ(again.size(), cases.size());
  EXPECT_EQ(again[0].key(), cases[0].key()) << "binary must survive the merged file";
}

// ---------------------------------------------------------------------------------------------
// Failure and skip texts as gtest writes them, and how the summary cleans and groups them.
constexpr const char* kEqualityFailure =
    "/work/main/fixtures/nccl/collective_runner.cpp:345\n"
    "Expected equality of these values:\n"
    "  all_bad\n"
    "    Which is: 1\n"
    "  0\n"
    "wrong elements over all ranks (1 rank(s) on GPU(s) 0 (nonblocking))\n"
    "  rank 0: 1 element(s) wrong, first at index 1048576: expected 10 got -1\n";

TEST(MessageCleaning, EqualityBoilerplateAndLocationGoTheSentencesStay) {
  EXPECT_EQ(
      junit::clean_message(kEqualityFailure),
      "wrong elements over all ranks (1 rank(s) on GPU(s) 0 (nonblocking)) rank 0: 1 element(s) wrong, first "
      "at index 1048576: expected 10 got -1");
}

TEST(MessageCleaning, ValueOfActualExpectedAndFailedGo) {
  EXPECT_EQ(junit::clean_message("suites/a_test.cpp:12\nValue of: ok\n  Actual: false\nExpected: true\n"
                                 "the store did not answer within 5 s\n"),
            "the store did not answer within 5 s");
  EXPECT_EQ(
      junit::clean_message("/src/suites/collectives_test.cpp:77\nFailed\ncannot create the world w1_split: "
                           "ncclCommSplit: child has 0 ranks, expected 1\n"),
      "cannot create the world w1_split: ncclCommSplit: child has 0 ranks, expected 1");
}

TEST(MessageCleaning, OneLineSkipReasonLosesItsLocationOnly) {
  EXPECT_EQ(junit::clean_message("/work/main/suites/collectives_test.cpp:28 needs 8 GPU(s), 1 visible"),
            "needs 8 GPU(s), 1 visible");
  EXPECT_EQ(junit::clean_message("/work/main/suites/collectives_test.cpp:28\nneeds 8 GPU(s), 1 visible\n"),
            "needs 8 GPU(s), 1 visible");
  // "rank 0:" and "index 7:" are sentences, not locations.
  EXPECT_EQ(junit::clean_message("rank 0: 3 wrong"), "rank 0: 3 wrong");
  EXPECT_EQ(junit::clean_message("index 7: expected 1"), "index 7: expected 1");
}

TEST(MessageCleaning, OnlyBoilerplateFallsBackToItWithoutTheLocation) {
  std::string c = junit::clean_message("x/y.cpp:9\nExpected: (a) != (b), actual: 1 vs 1\n");
  EXPECT_EQ(c, "Expected: (a) != (b), actual: 1 vs 1");
}

TEST(MessageKey, NumbersNanAndInfBecomeHash) {
  std::string k = "rank #: # element(s) wrong, first at index #: expected # got #";
  EXPECT_EQ(junit::message_key("rank 0: 1 element(s) wrong, first at index 1048576: expected 10 got -1"), k);
  EXPECT_EQ(junit::message_key("rank 0: 3 element(s) wrong, first at index 8190: expected -315 got -nan"), k);
  EXPECT_EQ(junit::message_key(
                "rank 0: 1 element(s) wrong, first at index 7: expected 1.5 got 1.8446744073709552e+19"),
            k);
  EXPECT_EQ(junit::message_key("rank 2: 1 element(s) wrong, first at index 7: expected 4 got inf"), k);
  // Digits inside a name are part of it: dtypes, architectures, worlds, sizes stay readable.
  EXPECT_EQ(junit::message_key("cannot create the world w1_split"), "cannot create the world w1_split");
  EXPECT_EQ(junit::message_key("torch 2.11.0+cu130 (CUDA 13.0)"), "torch #+cu130 (CUDA #)");
  EXPECT_EQ(junit::message_key("f8e4m3 needs sm_90 and NCCL 2.24, 64M x 2 ranks"),
            "f8e4m3 needs sm_90 and NCCL #, 64M x # ranks");
  EXPECT_EQ(junit::message_key("bf16 and f8e5m2 on 8 GPUs"), "bf16 and f8e5m2 on # GPUs");
  EXPECT_EQ(junit::message_key("nano infinite"), "nano infinite") << "words that start like nan/inf stay";
}

// One gtest XML document; each case is (suite, name, kind, text) with kind failure/skipped/"".
struct XCase {
  std::string suite, name, kind, text;
};
std::string gtest_xml(const std::vector<XCase>& cases) {
  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"AllTests\">\n";
  std::string open;
  for (const auto& c : cases) {
    if (c.suite != open) {
      if (!open.empty()) o += "</testsuite>\n";
      o += "<testsuite name=\"" + c.suite + "\">\n";
      open = c.suite;
    }
    o += "<testcase name=\"" + c.name + "\" classname=\"" + c.suite + "\" status=\"run\" result=\"" +
         (c.kind == "skipped" ? "skipped" : "completed") + "\" time=\"0\">";
    // gtest writes the text twice: in the message attribute and as CDATA.
    if (!c.kind.empty())
      o += "<" + c.kind + " message=\"" + xml::escape(c.text) + "\"><![CDATA[" + c.text + "]]></" + c.kind +
           ">";
    o += "</testcase>\n";
  }
  return o + "</testsuite>\n</testsuites>\n";
}

// A bundle held in memory: three binaries, their cases read from synthetic gtest XML.
bundle::Bundle synthetic_bundle() {
  bundle::Bundle b;
  b.dir = "/nonexistent";
  b.manifest.host = "h";
  b.manifest.created = "2026-12-02T00:00:00Z";
  b.manifest.verdict = "fail";
  b.check = nlohmann::json{{"available", false}, {"reason", "not run in this test"}};
  auto wrong = [](int index, const std::string& expected, const std::string& got) {
    return "/work/main/fixtures/nccl/collective_runner.cpp:345\nExpected equality of these values:\n  "
           "all_bad\n"
           "    Which is: 1\n  0\nwrong elements over all ranks (1 rank(s) on GPU(s) 0 (nonblocking))\n"
           "  rank 0: 1 element(s) wrong, first at index " +
           std::to_string(index) + ": expected " + expected + " got " + got + "\n";
  };
  std::vector<XCase> coll = {
      {"AllReduce", "i8_premulsum_1048577_outofplace_w1", "failure", wrong(1048576, "10", "-1")},
      {"AllReduce", "u32_premulsum_262145_outofplace_w1", "failure", wrong(262144, "1422", "4294967295")},
      {"AllReduce", "f16_avg_524289_outofplace_w1", "failure", wrong(524288, "-315", "nan")},
      {"AllReduce", "bf16_avg_524289_outofplace_w1", "failure", wrong(524288, "41", "-nan")},
      {"AllReduce", "f32_sum_1021_outofplace_split_w1", "failure",
       "/work/main/suites/collectives_test.cpp:120\nFailed\ncannot create the world w1_split: ncclCommSplit: "
       "child "
       "has 0 ranks, expected 1\n"},
      {"AllReduce", "f32_sum_0_inplace_w1", "", ""},
      // The same reason from two places in the code: one group.
      {"AllReduce", "f8e4m3_sum_0_inplace_w1", "skipped",
       "/work/main/fixtures/nccl/collective_runner.cpp:106\nno fp8 on one rank\n"},
      {"AllReduce", "f8e5m2_sum_0_inplace_w1", "skipped",
       "/work/main/suites/collectives_test.cpp:61\nno fp8 on one rank\n"},
  };
  std::vector<XCase> w8;
  for (int i = 0; i < 5; ++i)
    w8.push_back({"AllReduce", "i8_sum_" + std::to_string(i) + "_inplace_w8", "skipped",
                  "/work/main/suites/collectives_test.cpp:28\nneeds 8 GPU(s), 1 visible\n"});
  std::vector<XCase> ok = {{"Version", "Parses", "", ""}};
  for (const auto& [bin, xcases, status] :
       std::vector<std::tuple<std::string, std::vector<XCase>, std::string>>{
           {"gpucts_collectives", coll, "failed"},
           {"gpucts_collectives_w8", w8, "skipped"},
           {"gpucts_version", ok, "passed"}}) {
    auto cs = junit::read(xml::parse(gtest_xml(xcases), bin + ".xml"), bin + ".xml", bin);
    b.cases.insert(b.cases.end(), cs.begin(), cs.end());
    bundle::SuiteRun s;
    s.name = bin;
    s.status = *bundle::parse_suite_status(status);
    b.manifest.suites.push_back(s);
  }
  return b;
}

TEST(SummaryGrouping, FailuresGroupPerSuiteByMessageWithoutNumbers) {
  auto b = synthetic_bundle();
  auto g = summary::group_failures(summary::failures_of(b));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].suite, "gpucts_collectives");
  EXPECT_EQ(g[0].count, 5);
  ASSERT_EQ(g[0].groups.size(), 2u);
  const auto& big = g[0].groups[0];
  EXPECT_EQ(big.count, 4);
  EXPECT_EQ(big.key,
            "wrong elements over all ranks (# rank(s) on GPU(s) # (nonblocking)) rank #: # element(s) wrong, "
            "first at "
            "index #: expected # got #");
  EXPECT_EQ(big.example,
            "wrong elements over all ranks (1 rank(s) on GPU(s) 0 (nonblocking)) rank 0: 1 element(s) wrong, "
            "first at "
            "index 1048576: expected 10 got -1");
  EXPECT_FALSE(big.uniform);
  ASSERT_EQ(big.items.size(), summary::kExamples);
  EXPECT_EQ(big.items[0], "AllReduce.i8_premulsum_1048577_outofplace_w1");
  EXPECT_EQ(g[0].groups[1].count, 1);
  EXPECT_EQ(g[0].groups[1].example,
            "cannot create the world w1_split: ncclCommSplit: child has 0 ranks, expected 1");
}

TEST(SummaryGrouping, WholeSuiteSkipsAreOneLineAndLocationsDoNotSplitReasons) {
  auto b = synthetic_bundle();
  auto s = summary::group_skips(b);
  ASSERT_EQ(s.whole.size(), 1u);
  EXPECT_EQ(s.whole[0].suite, "gpucts_collectives_w8");
  EXPECT_EQ(s.whole[0].cases, 5);
  EXPECT_EQ(s.whole[0].reason, "needs 8 GPU(s), 1 visible");
  ASSERT_EQ(s.cases.size(), 1u) << "the whole-suite skips must not be among the case reasons";
  EXPECT_EQ(s.cases[0].example, "no fp8 on one rank");
  EXPECT_EQ(s.cases[0].count, 2);
  EXPECT_EQ(s.case_count, 2);
}

TEST(SummaryGrouping, MarkdownAndHtmlShowTheSameOverview) {
  auto d = summary::build(synthetic_bundle());
  std::string md = doc::to_markdown(d), html = doc::to_html(d);
  ASSERT_NO_THROW(xml::parse(html, "summary.html"));
  const std::string headline =
      "3 suites: 1 passed, 1 failed, 1 skipped whole; 14 cases: 2 passed, 5 failed, 0 errors, 7 skipped";
  const std::string overview =
      "gpucts_collectives: 5 failed \u2014 4 \u00d7 'wrong elements over all ranks (# rank(s) on GPU(s) # "
      "(nonblocking)) rank #: # element(s) wrong, first at index #: expected # got #'; 1 \u00d7 'cannot "
      "create the "
      "world w1_split: ncclCommSplit: child has # ranks, expected #'";
  const std::string whole = "gpucts_collectives_w8: all 5 cases \u2014 needs 8 GPU(s), 1 visible";
  for (const auto* text : {&md, &html}) {
    // The HTML holds the same text, escaped.
    auto as = [&](const std::string& t) { return text == &html ? xml::escape(t) : t; };
    EXPECT_NE(text->find(as(headline)), std::string::npos) << *text;
    EXPECT_NE(text->find(as(overview)), std::string::npos) << *text;
    EXPECT_NE(text->find(as(whole)), std::string::npos) << *text;
    EXPECT_EQ(text->find("Expected equality"), std::string::npos) << "gtest boilerplate left in the summary";
    EXPECT_EQ(text->find("Which is:"), std::string::npos);
    EXPECT_EQ(text->find("collective_runner.cpp:345"), std::string::npos) << "file:line left in the summary";
  }
  auto what = md.find("## What failed"), failed = md.find("## Failed"), skipped = md.find("## Skipped");
  ASSERT_NE(what, std::string::npos);
  EXPECT_LT(what, failed);
  EXPECT_LT(failed, skipped);
  EXPECT_NE(
      md.find(
          "| gpucts_collectives/AllReduce.u32_premulsum_262145_outofplace_w1 | wrong elements over all ranks "
          "(1 rank(s) on GPU(s) 0 (nonblocking)) rank 0: 1 element(s) wrong, first at index 262144: expected "
          "1422 got 4294967295 |"),
      std::string::npos)
      << "the detailed table shows the cleaned message";
  EXPECT_NE(md.find("| no fp8 on one rank | 2 |"), std::string::npos) << md;
}

TEST(SummaryGrouping, RawTextStaysInTheMergedJunit) {
  auto b = synthetic_bundle();
  auto again = junit::read(xml::parse(junit::write(b.cases, "t"), "merged"), "merged", "");
  ASSERT_EQ(again.size(), b.cases.size());
  EXPECT_NE(again[0].detail.find("Expected equality of these values:"), std::string::npos) << again[0].detail;
}

// A simulated-hosts suite reads the path NCCL took from NCCL's log and records it on its
// Transport case; the merged JUnit keeps it and the summary shows it per suite.
TEST(SummaryTransport, TheCasesTransportSurvivesTheMergeAndIsShown) {
  auto b = synthetic_bundle();
  junit::Case t;
  t.binary = "gpucts_mp_collectives_sim2";
  t.suite = "Transport";
  t.name = "ChannelsMatchTheWorld";
  t.properties["gpucts.transport"] = "network Socket; 2 channel(s), every one via NET/Socket";
  b.cases.push_back(t);
  auto again = junit::read(xml::parse(junit::write(b.cases, "t"), "merged"), "merged", "");
  ASSERT_EQ(again.size(), b.cases.size());
  EXPECT_EQ(again.back().property("gpucts.transport"), t.properties["gpucts.transport"]);
  const std::string md = doc::to_markdown(summary::build(b));
  const auto at = md.find("## Transport");
  ASSERT_NE(at, std::string::npos) << md;
  EXPECT_NE(md.find("every one via NET/Socket", at), std::string::npos) << md;
  EXPECT_EQ(doc::to_markdown(summary::build(synthetic_bundle())).find("## Transport"), std::string::npos)
      << "no section where no suite recorded a transport";
}

// Two torches may serve one run: the python's (the fingerprint) and the libtorch the C++ suites
// were linked against (the manifest, from the build). The environment table names both.
TEST(SummaryEnvironment, NamesThePythonTorchAndTheLinkedLibtorch) {
  auto b = synthetic_bundle();
  b.fingerprints = {{"host.json", nlohmann::json{{"schema", "gpucts.fingerprint/1"}, {"host", "h"}}}};
  auto row = [](const bundle::Bundle& x, const std::string& what) {
    const auto rows = bundle::environment(x);
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].first == what) return std::make_pair(i, rows[i].second);
    return std::make_pair(rows.size(), std::string("no row"));
  };
  EXPECT_EQ(row(b, "libtorch (C++ suites)").second, "not recorded") << "a bundle of an older gpucts";
  b.manifest.built_against = {{"libstdc++", "GNU 12's libstdc++"}, {"libtorch", "libtorch 2.11.0"}};
  b.manifest = bundle::manifest_from_json(bundle::to_json(b.manifest), "manifest.json");
  EXPECT_EQ(row(b, "torch (python)").second, "absent");
  EXPECT_EQ(row(b, "libtorch (C++ suites)").second, "libtorch 2.11.0");
  EXPECT_EQ(row(b, "libtorch (C++ suites)").first, row(b, "torch NCCL").first + 1);
  EXPECT_NE(doc::to_markdown(summary::build(b)).find("libtorch 2.11.0"), std::string::npos);
  b.manifest.built_against.erase("libtorch");
  EXPECT_EQ(row(b, "libtorch (C++ suites)").second, "none (built without libtorch)");
}

TEST(SummaryGrouping, SimulatedHostsRunsSayWhatTheyProveInSummaryAndJunit) {
  auto b = synthetic_bundle();
  const std::string note =
      "2 simulated hosts on one GPU over NCCL's socket transport: proves the multi-rank cases and the "
      "harness, not NVLink, P2P or SHM transports, nor bandwidth";
  b.manifest.suites[0].mode = note;
  b.manifest.suites[1].mode = note;
  auto back = bundle::manifest_from_json(bundle::to_json(b.manifest), "manifest.json");
  EXPECT_EQ(back.suites[0].mode, note) << "the mode must survive manifest.json";
  EXPECT_EQ(back.suites[2].mode, "");
  ASSERT_EQ(summary::run_mode_notes(b),
            std::vector<std::string>{note + " (gpucts_collectives, gpucts_collectives_w8)"});
  const std::string md = doc::to_markdown(summary::build(b));
  const auto at = md.find("note: " + note);
  ASSERT_NE(at, std::string::npos) << md;
  EXPECT_LT(at, md.find("## Suites")) << "the note belongs right under the verdict";
  // In the merged JUnit only the simulated binaries' testsuites carry the note, in their system-out
  // (a property repeated in several testsuites stops readers such as xunitparser).
  const auto root = xml::parse(
      junit::write(b.cases, "t", {}, {{"gpucts_collectives", {{"gpucts.simulated_hosts", note}}}}), "merged");
  int with = 0, without = 0;
  for (const auto& ts : root.children) {
    bool has = false;
    if (const auto* out = ts.child("system-out"))
      has = out->text.find("gpucts.simulated_hosts=" + note) != std::string::npos;
    const bool simulated = ts.attr_or("name", "").rfind("gpucts_collectives.", 0) == 0;
    EXPECT_EQ(has, simulated) << ts.attr_or("name", "");
    (has ? with : without)++;
  }
  EXPECT_GT(with, 0);
  EXPECT_GT(without, 0);
}

// ---------------------------------------------------------------------------------------------
// The comparison itself, on bundles built in memory.
bundle::Bundle synthetic(const std::string& dir, std::vector<junit::Case> cases,
                         std::vector<bw::Point> points = {}) {
  bundle::Bundle b;
  b.dir = dir;
  b.manifest.gpucts_version = "1.0";
  b.manifest.host = "h";
  b.manifest.verdict = "pass";
  b.cases = std::move(cases);
  if (!points.empty()) {
    bw::Run r;
    r.ctx.world_size = 8;
    r.points = std::move(points);
    b.bandwidth.emplace_back("gpucts_bandwidth", r);
  }
  return b;
}

junit::Case tc(const std::string& binary, const std::string& name, const std::string& status) {
  junit::Case c;
  c.binary = binary;
  c.suite = "AllReduce";
  c.name = name;
  c.status = *junit::parse_status(status);
  return c;
}

bw::Point bp(std::uint64_t bytes, double t_us, double spread_pct) {
  bw::Point p;
  p.collective = "AllReduce";
  p.dtype = "f32";
  p.bytes = bytes;
  p.ranks = 8;
  p.time_us = bw::summarize({t_us * (1 - spread_pct / 200), t_us, t_us * (1 + spread_pct / 200)});
  bw::compute_rates(p, BusFactor::all_reduce);  // AllReduce's family
  return p;
}

TEST(ReportCompare, AMissingPassingCaseIsARegressionCountedPerSuite) {
  auto base = synthetic(
      "base", {tc("gpucts_collectives", "a", "passed"), tc("gpucts_collectives", "b", "passed"),
               tc("gpucts_collectives", "c", "skipped"), tc("gpucts_mp_collectives_w2", "a", "passed")});
  auto cand = synthetic(
      "cand", {tc("gpucts_collectives", "a", "passed"), tc("gpucts_mp_collectives_w2", "a", "passed"),
               tc("gpucts_mp_collectives_w2", "z", "passed")});
  auto c = report::compare(base, {cand}, 5);
  ASSERT_TRUE(c.regressed());
  ASSERT_EQ(c.regressions[0].size(), 1u) << "one line per binary, and the skipped case is not a loss";
  EXPECT_NE(c.regressions[0][0].find("missing: 1 case(s) of gpucts_collectives"), std::string::npos)
      << c.regressions[0][0];
  std::map<std::string, report::SuiteDelta> by;
  for (const auto& d : c.suites) by[d.binary] = d;
  EXPECT_EQ(by["gpucts_collectives"].baseline, 3);
  EXPECT_EQ(by["gpucts_collectives"].candidates[0], 1);
  EXPECT_EQ(by["gpucts_collectives"].missing[0], 2);
  EXPECT_EQ(by["gpucts_mp_collectives_w2"].added[0], 1);
  EXPECT_FALSE(report::compare(base, {base}, 5).regressed());
}

TEST(ReportCompare, SlowerOnlyBeyondToleranceAndRecordedSpread) {
  const std::uint64_t gib = 1ull << 30;
  // 8% slower: beyond 5% tolerance, but within the 12% its repetitions ranged: not a regression.
  auto noisy =
      report::compare(synthetic("b", {}, {bp(gib, 1000, 12)}), {synthetic("c", {}, {bp(gib, 1080, 12)})}, 5);
  EXPECT_FALSE(noisy.regressed());
  // The same 8% with tight repetitions is.
  auto tight =
      report::compare(synthetic("b", {}, {bp(gib, 1000, 1)}), {synthetic("c", {}, {bp(gib, 1080, 1)})}, 5);
  ASSERT_TRUE(tight.regressed());
  ASSERT_EQ(tight.bandwidth.size(), 1u);
  EXPECT_EQ(tight.bandwidth[0].label, "gpucts_bandwidth: AllReduce f32 1 GiB out of place");
  EXPECT_NE(tight.regressions[0][0].find("GB/s"), std::string::npos) << tight.regressions[0][0];
  // Small messages compare their latency in us (lower is better).
  auto lat = report::compare(synthetic("b", {}, {bp(8, 20, 1)}), {synthetic("c", {}, {bp(8, 30, 1)})}, 5);
  ASSERT_EQ(lat.bandwidth.size(), 1u);
  EXPECT_EQ(lat.bandwidth[0].metric, "time_us");
  EXPECT_EQ(lat.bandwidth[0].change[0], "slower");
  EXPECT_NE(lat.regressions[0][0].find("20.00 us -> 30.00 us"), std::string::npos) << lat.regressions[0][0];
  auto faster = report::compare(synthetic("b", {}, {bp(8, 30, 1)}), {synthetic("c", {}, {bp(8, 20, 1)})}, 5);
  EXPECT_FALSE(faster.regressed());
}

// A bundle of one NCCL release: its fingerprint names the release, its bandwidth the points.
bundle::Bundle release_bundle(const std::string& nccl, std::vector<junit::Case> cases,
                              std::vector<bw::Point> points) {
  auto b = synthetic("nccl-" + nccl, std::move(cases), std::move(points));
  b.fingerprints.emplace_back("h.json", nlohmann::json{{"schema", "gpucts.fingerprint/1"},
                                                       {"host", "h"},
                                                       {"nccl", {{"header", "2.28.9"}, {"runtime", nccl}}}});
  return b;
}

TEST(ReportCompare, SeveralCandidatesNameRunsListAdjacentMovesAndGroupCases) {
  const std::uint64_t gib = 1ull << 30;
  auto cases = [](const std::string& status) {
    std::vector<junit::Case> v;
    for (const char* n : {"f32_sum_13_w1", "f32_sum_1021_w1", "bf16_max_13_w1"})
      v.push_back(tc("gpucts_collectives", n, status));
    return v;
  };
  auto base = release_bundle("2.18.3", cases("passed"), {bp(gib, 1000, 1), bp(8, 20, 1)});
  auto c1 = release_bundle("2.21.5", cases("failed"), {bp(gib, 1000, 1), bp(8, 20.5, 1)});
  auto c2 = release_bundle("2.26.2", cases("failed"), {bp(gib, 650, 1), bp(8, 20.2, 1)});
  auto c = report::compare(base, {c1, c2}, 5);
  EXPECT_EQ(c.names, (std::vector<std::string>{"NCCL 2.18.3", "NCCL 2.21.5", "NCCL 2.26.2"}));
  // Between neighbours only the 1 GiB point moved, from candidate 1 to candidate 2.
  ASSERT_EQ(c.adjacent.size(), 1u);
  EXPECT_EQ(c.adjacent[0].from, 1u);
  EXPECT_EQ(c.adjacent[0].move.change, "faster") << "a shorter time at 1 GiB is more bandwidth";
  const std::string md = doc::to_markdown(report::to_doc(c));
  EXPECT_NE(md.find("| NCCL 2.21.5 -> NCCL 2.26.2 | gpucts_bandwidth | AllReduce | f32 | 1 GiB |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| baseline: NCCL 2.18.3 | candidate 1: NCCL 2.21.5 | candidate 2: NCCL 2.26.2 |"),
            std::string::npos)
      << md;
  // Legends say the release, not "candidate 1".
  const std::string html = doc::to_html(report::to_doc(c));
  EXPECT_NE(html.find(">NCCL 2.21.5</text>"), std::string::npos);
  EXPECT_EQ(html.find(">candidate 1</text>"), std::string::npos);
  // The three changed cases are one row of their suite and collective (the same change in each run).
  EXPECT_NE(md.find("| gpucts_collectives | AllReduce | passed | failed (newly failing) | failed (newly "
                    "failing) | 3 |"),
            std::string::npos)
      << md;
  // Plots come before the case tables; every case is listed after them.
  const auto plot = md.find("*AllReduce (gpucts_bandwidth)*"), grouped = md.find("## Cases that changed (3)");
  const auto every = md.find("## Every changed case (3)");
  ASSERT_NE(plot, std::string::npos) << md;
  ASSERT_NE(grouped, std::string::npos) << md;
  EXPECT_LT(plot, grouped);
  EXPECT_LT(grouped, every);
  EXPECT_EQ(report::to_json(c)["adjacent"].size(), 1u);
}

// Two runs of the same stack in folders of the same name ("bundle") are still told apart: the
// first screen never says "bundle: ... slower" against "bundle".
TEST(ReportCompare, RunsOfTheSameStackInLikeNamedFoldersHaveDistinctNames) {
  const std::uint64_t gib = 1ull << 30;
  auto a = release_bundle("2.26.2", {}, {bp(gib, 1000, 1)});
  auto b = release_bundle("2.26.2", {}, {bp(gib, 1200, 1)});
  a.dir = "/runs/monday/bundle";
  b.dir = "/runs/tuesday/bundle/";
  auto c = report::compare(a, {b}, 5);
  EXPECT_EQ(c.names, (std::vector<std::string>{"monday/bundle", "tuesday/bundle"}));
  ASSERT_EQ(c.story.lines().size(), 1u);
  EXPECT_EQ(c.story.lines()[0].rfind("tuesday/bundle: AllReduce busbw 17% slower", 0), 0u)
      << c.story.lines()[0];
  // The same folder given twice: its place in the order.
  const auto same = across::run_names({&a, &a});
  EXPECT_NE(same[0], same[1]);
  // "." and ".." name the folders they stand for, never a blank column.
  const std::string here = std::filesystem::current_path().filename().string();
  const std::string up = std::filesystem::current_path().parent_path().filename().string();
  a.dir = ".";
  b.dir = "..";
  EXPECT_EQ(across::run_names({&a, &b}), (std::vector<std::string>{here, up}));
}

TEST(ReportCompare, NonblockingPointsAreNeverComparedWithBlockingOnes) {
  const std::uint64_t gib = 1ull << 30;
  auto nb = [](bw::Point p) {
    p.comm = bw::kNonblocking;
    return p;
  };
  auto base = release_bundle("2.21.5", {}, {bp(8, 9, 1), nb(bp(8, 9, 1)), bp(gib, 1000, 1)});
  auto cand = release_bundle("2.26.2", {}, {bp(8, 9.2, 1), nb(bp(8, 65, 1)), bp(gib, 1000, 1)});
  auto c = report::compare(base, {cand}, 5);
  // The nonblocking point moved against its own kind only; the default 8 B stayed.
  ASSERT_EQ(c.bandwidth.size(), 1u);
  EXPECT_NE(c.bandwidth[0].label.find("(nonblocking)"), std::string::npos) << c.bandwidth[0].label;
  EXPECT_NEAR(c.bandwidth[0].baseline, 9, 1e-6);
  EXPECT_NEAR(c.bandwidth[0].candidates[0], 65, 1e-6);
  EXPECT_EQ(c.bandwidth[0].change[0], "slower");
  EXPECT_FALSE(c.regressed()) << "a variant is shown, it does not gate";
  // A nonblocking point with no nonblocking counterpart is compared with nothing.
  auto only_default = release_bundle("2.26.2", {}, {bp(8, 65, 1)});
  auto d = report::compare(release_bundle("2.21.5", {}, {nb(bp(8, 9, 1))}), {only_default}, 5);
  EXPECT_TRUE(d.bandwidth.empty());
  EXPECT_FALSE(d.regressed());
}

TEST(ReportCompare, NextSizesThatMovedTogetherAreOneRow) {
  // 1, 2 and 4 MiB faster together, 8 MiB not, 16 MiB faster again: two rows.
  std::vector<bw::Point> before, after;
  for (int k = 0; k < 5; ++k) {
    const std::uint64_t bytes = (1ull << 20) << k;
    before.push_back(bp(bytes, 100.0 * (1 << k), 1));
    after.push_back(bp(bytes, (k == 3 ? 100.0 : 60.0) * (1 << k), 1));
  }
  auto a = release_bundle("2.21.5", {}, before), b = release_bundle("2.26.2", {}, after);
  const auto changes = across::adjacent_changes({&a, &b}, 5);
  ASSERT_EQ(changes.size(), 4u);
  const auto t = across::change_table(changes, {"NCCL 2.21.5", "NCCL 2.26.2"}, 100);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][4], "1 MiB - 4 MiB (3 sizes)");
  EXPECT_EQ(t.rows[0][9], "+66.7% .. +66.7% faster");
  EXPECT_EQ(t.rows[1][4], "16 MiB");
  EXPECT_EQ(t.rows[0][0], "NCCL 2.21.5 -> NCCL 2.26.2");
}

// The tick labels of one axis ("ytick" / "xtick") with their positions (y for ytick, x for xtick).
std::vector<std::pair<std::string, double>> ticks(const std::string& svg, const std::string& cls) {
  std::vector<std::pair<std::string, double>> out;
  const std::string open = "<text class=\"" + cls + "\" x=\"";
  for (auto at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const auto x = std::stod(svg.substr(at + open.size()));
    const auto yq = svg.find("y=\"", at) + 3;
    const auto y = std::stod(svg.substr(yq));
    const auto gt = svg.find('>', at) + 1;
    out.emplace_back(svg.substr(gt, svg.find('<', gt) - gt), cls == "ytick" ? y : x);
  }
  return out;
}

TEST(SvgPlot, ValuesSpanningDecadesGetALogAxisWithDecadeTicks) {
  svg::Plot p;
  p.title = "AllReduce";
  p.y_label = "algbw (GB/s)";
  svg::Series s{"NCCL 2.21.5", {}, false};
  for (int e = 3; e <= 30; ++e)
    s.points.emplace_back(std::ldexp(1.0, e), 0.0015 * std::pow(2.0, e - 3) / (1 + std::pow(2.0, e - 22)));
  p.series.push_back(s);
  const std::string svg = svg::render(p);
  auto y = ticks(svg, "ytick");
  std::vector<std::string> labels;
  for (const auto& t : y) labels.push_back(t.first);
  for (const char* want : {"0.001", "0.01", "0.1", "1", "10", "100", "1000"})
    EXPECT_NE(std::find(labels.begin(), labels.end(), want), labels.end()) << want << " in " << svg;
  // Decades are equally spaced, upwards.
  std::vector<double> decade_y;
  for (const auto& t : y)
    if (t.first == "0.001" || t.first == "0.01" || t.first == "0.1" || t.first == "1" || t.first == "10" ||
        t.first == "100" || t.first == "1000")
      decade_y.push_back(t.second);
  ASSERT_EQ(decade_y.size(), 7u);
  for (size_t i = 1; i < decade_y.size(); ++i) {
    EXPECT_LT(decade_y[i], decade_y[i - 1]) << "larger values higher up";
    EXPECT_NEAR(decade_y[i - 1] - decade_y[i], decade_y[0] - decade_y[1], 0.15) << "log-spaced";
  }
  EXPECT_NE(svg.find("algbw (GB/s), log scale"), std::string::npos);
  // x ticks are sizes.
  auto x = ticks(svg, "xtick");
  ASSERT_FALSE(x.empty());
  EXPECT_EQ(x.back().first, "1G");
  EXPECT_NO_THROW(xml::parse(svg, "plot.svg"));
  // Values within a decade keep a linear axis from 0.
  svg::Plot lin = p;
  lin.series[0].points = {{1 << 20, 1800}, {1 << 30, 2100}};
  auto ly = ticks(svg::render(lin), "ytick");
  ASSERT_FALSE(ly.empty());
  EXPECT_EQ(ly.front().first, "0");
  EXPECT_EQ(svg::render(lin).find("log scale"), std::string::npos);
}

TEST(ReportCompare, AVerdictThatStopsPassingIsARegression) {
  auto base = synthetic("b", {});
  auto nogpu = synthetic("c", {});
  nogpu.manifest.verdict = "no_gpu";
  EXPECT_TRUE(report::compare(base, {nogpu}, 5).regressed());
  auto waived = synthetic("c", {});
  waived.manifest.verdict = "waived";
  EXPECT_FALSE(report::compare(base, {waived}, 5).regressed());
}

// ---------------------------------------------------------------------------------------------
// The change told on the first screen: three 8-rank releases, one 10-12% slower from 64 KiB to
// 1 MiB on AllReduce, AllGather and ReduceScatter, one 5-16% slower from 2 MiB up and under the
// 431 GB/s floor at 1 GiB.
const std::uint64_t kGiB = std::uint64_t(1) << 30;

// busbw of the reference at a size: a latency-bound curve up to 482.9 GB/s for AllReduce at 1 GiB.
double reference_busbw(const std::string& coll, std::uint64_t bytes) {
  const double peak = coll == "AllReduce" ? 482.9 : 360.0;
  const double b = static_cast<double>(bytes), half = 4.0 * (1 << 20);
  return peak * (b / (b + half)) / (static_cast<double>(kGiB) / (static_cast<double>(kGiB) + half));
}

// One release: busbw of each point is the reference's times (1 - slower(bytes)).
std::vector<bw::Point> release_points(const std::function<double(std::uint64_t)>& slower, bool judged_fail) {
  std::vector<bw::Point> out;
  for (const auto& [coll, family] : {std::pair<const char*, BusFactor>{"AllReduce", BusFactor::all_reduce},
                                     {"AllGather", BusFactor::n_minus_one_over_n},
                                     {"ReduceScatter", BusFactor::n_minus_one_over_n}})
    for (bool in_place : {false, true})
      for (std::uint64_t bytes = 8; bytes <= kGiB; bytes *= 2) {
        bw::Point p;
        p.collective = coll;
        p.dtype = "f32";
        p.bytes = bytes;
        p.in_place = in_place;
        p.ranks = 8;
        p.iterations = 20;
        const double busbw = reference_busbw(coll, bytes) * (1 - slower(bytes));
        const double factor = *bw::bus_factor(family, 8);
        const double t = static_cast<double>(bytes) / (busbw / factor * 1e3);
        p.time_us = bw::summarize({t * 0.995, t, t * 1.005});
        bw::compute_rates(p, family);
        if (std::string(coll) == "AllReduce" && bytes == kGiB && !in_place) {
          p.threshold_gbps = 431;
          p.threshold_metric = "busbw_gbps";
          p.verdict = *p.busbw_gbps < 431 ? "fail" : "pass";
          EXPECT_EQ(p.verdict == "fail", judged_fail) << *p.busbw_gbps;
        }
        out.push_back(p);
      }
  return out;
}

struct ThreeReleases {
  bundle::Bundle reference, small_slower, large_slower;
};

ThreeReleases three_releases() {
  ThreeReleases r;
  const std::uint64_t k64 = 64 << 10, m1 = 1 << 20, m2 = 2 << 20;
  r.reference = release_bundle("2.26.2", {}, release_points([](std::uint64_t) { return 0.0; }, false));
  // 10% at 64 KiB to 12% at 1 MiB.
  r.small_slower = release_bundle("2.27.7", {},
                                  release_points(
                                      [&](std::uint64_t b) {
                                        if (b < k64 || b > m1) return 0.0;
                                        return 0.10 + 0.02 * std::log2(double(b) / k64) / 4;
                                      },
                                      false));
  // 5.2% at 2 MiB to 15.94% at 1 GiB: 482.9 -> 405.9 GB/s.
  r.large_slower =
      release_bundle("2.28.9", {},
                     release_points(
                         [&](std::uint64_t b) {
                           if (b < m2) return 0.0;
                           return 0.052 + (1 - 405.9 / 482.9 - 0.052) * std::log2(double(b) / m2) / 9;
                         },
                         true));
  r.large_slower.manifest.verdict = "fail";
  return r;
}

TEST(ReportStory, TwoBandsAndTheFloorCrossedComeFirst) {
  auto r = three_releases();
  auto c = report::compare(r.reference, {r.small_slower, r.large_slower}, 5);
  ASSERT_EQ(c.names, (std::vector<std::string>{"NCCL 2.26.2", "NCCL 2.27.7", "NCCL 2.28.9"}));
  const std::vector<std::string> want = {
      "NCCL 2.28.9: AllReduce busbw 1 GiB: 405.9 GB/s, under its floor 431 (was 482.9)",
      "NCCL 2.27.7: AllReduce, AllGather, ReduceScatter busbw 10-12% slower from 64 KiB to 1 MiB",
      "NCCL 2.28.9: AllReduce, AllGather, ReduceScatter busbw 5-16% slower from 2 MiB up"};
  ASSERT_EQ(c.story.lines(), want);
  const std::string md = doc::to_markdown(report::to_doc(c));
  // The first screen: the verdict, the heading, then those three lines before anything else.
  const auto head = md.find("## What changed against NCCL 2.26.2\n\n");
  ASSERT_NE(head, std::string::npos) << md;
  EXPECT_EQ(md.substr(0, head).find("## "), std::string::npos) << "no section before the story";
  std::string lines;
  for (const auto& w : want) lines += "- " + w + "\n";
  EXPECT_EQ(md.find(lines), head + std::string("## What changed against NCCL 2.26.2\n\n").size()) << md;
  EXPECT_LT(std::count(md.begin(), md.begin() + static_cast<long>(head), '\n'), 8) << "on the first screen";
  // Ratio plots first, absolute ones after, every plot before the environment and the details.
  const auto ratio = md.find("*AllReduce: each run against NCCL 2.26.2 (gpucts_bandwidth)*");
  const auto absolute = md.find("*AllReduce (gpucts_bandwidth)*");
  ASSERT_NE(ratio, std::string::npos) << md;
  ASSERT_NE(absolute, std::string::npos) << md;
  EXPECT_LT(ratio, absolute);
  EXPECT_LT(md.find("*ReduceScatter: each run against"), absolute) << "every ratio plot first";
  EXPECT_LT(absolute, md.find("## Environment"));
  EXPECT_LT(absolute, md.find("## Details"));
  // Every regression line names its metric.
  for (const auto& line : c.regressions[1]) {
    if (line.rfind("slower", 0) == 0) {
      EXPECT_NE(line.find(", busbw "), std::string::npos) << line;
    }
  }
  // The HTML: the ratio plot has its tolerance band, the absolute one the floor of one point and
  // the crossing ringed.
  const std::string html = doc::to_html(report::to_doc(c));
  EXPECT_NO_THROW(xml::parse(html, "report.html"));
  const auto ar = html.find("AllReduce: each run against"), aa = html.find(">AllReduce (gpucts_bandwidth)<");
  ASSERT_NE(aa, std::string::npos);
  EXPECT_NE(html.find("class=\"band\"", ar), std::string::npos);
  const auto abs_end = html.find("</svg>", aa);
  const auto floor = html.find("class=\"floor\"", aa), mark = html.find("class=\"mark\"", aa);
  EXPECT_LT(floor, abs_end) << "a floor of one size is drawn";
  EXPECT_LT(mark, abs_end) << "the point under the floor is ringed";
  EXPECT_NE(html.find(">under floor</text>", aa), std::string::npos);
  if (const char* keep = std::getenv("GPUCTS_KEEP_REPORT_HTML")) bundle::write_text(keep, html);
  // The JSON has the story, the bands and the crossing; the points stay where they were.
  const auto j = report::to_json(c);
  EXPECT_EQ(j["story"]["lines"].get<std::vector<std::string>>(), want);
  // Written with its plots (gpucts report --output), Markdown links each of them.
  const doc::Doc linked = report::to_doc(c, true);
  EXPECT_NE(doc::to_markdown(linked).find("![AllReduce: each run against NCCL 2.26.2 "
                                          "(gpucts_bandwidth)](plots/ratio_gpucts_bandwidth_AllReduce.svg)"),
            std::string::npos);
  EXPECT_EQ(doc::svg_files(linked).size(), 6u);
  ASSERT_EQ(j["story"]["bands"].size(), 2u);
  EXPECT_EQ(j["story"]["bands"][0]["from_bytes"], 64u << 10);
  EXPECT_EQ(j["story"]["bands"][0]["points"], 30) << "5 sizes, 3 collectives, 2 placements";
  EXPECT_EQ(j["story"]["crossings"][0]["floor_gbps"], 431);
  EXPECT_FALSE(j["bandwidth"].empty());
  EXPECT_TRUE(c.regressed());
}

// One change is one line: a point inside the change whose own spread is too wide to judge it
// (it moved the same way beyond the tolerance) does not split the band around it.
TEST(ReportStory, ANoisyPointInsideAChangeDoesNotSplitItsBand) {
  const std::uint64_t k64 = 64 << 10, m1 = 1 << 20;
  auto ref_points = release_points([](std::uint64_t) { return 0.0; }, false);
  for (auto& p : ref_points)
    if (p.collective == "AllGather" && !p.in_place && p.bytes == (256u << 10)) {
      const double t = p.time_us.median;
      p.time_us = bw::summarize({t * 0.925, t, t * 1.075});  // 15% apart: a 10% move is not judged
    }
  auto ref = release_bundle("2.26.2", {}, ref_points);
  auto run = release_bundle(
      "2.27.7", {}, release_points([&](std::uint64_t b) { return b >= k64 && b <= m1 ? 0.10 : 0.0; }, false));
  auto c = report::compare(ref, {run}, 5);
  EXPECT_EQ(c.story.lines(),
            (std::vector<std::string>{
                "NCCL 2.27.7: AllReduce, AllGather, ReduceScatter busbw 10% slower from 64 KiB to 1 MiB"}));
  ASSERT_EQ(c.story.bands.size(), 1u);
  EXPECT_EQ(c.story.bands[0].points, 29) << "the noisy point is bridged, not counted";
}

// Collectives that moved over the same sizes by clearly different amounts are lines of their own:
// "10-40% slower" would hide which one lost 40%.
TEST(ReportStory, DifferentMagnitudesOverTheSameSizesAreSeparateBands) {
  const std::uint64_t k64 = 64 << 10, m1 = 1 << 20;
  auto ref = release_bundle("2.26.2", {}, release_points([](std::uint64_t) { return 0.0; }, false));
  auto pts = release_points([&](std::uint64_t b) { return b >= k64 && b <= m1 ? 0.40 : 0.0; }, false);
  const auto ar = release_points([&](std::uint64_t b) { return b >= k64 && b <= m1 ? 0.10 : 0.0; }, false);
  for (std::size_t k = 0; k < pts.size(); ++k)
    if (pts[k].collective == "AllReduce") pts[k] = ar[k];
  auto c = report::compare(ref, {release_bundle("2.27.7", {}, pts)}, 5);
  EXPECT_EQ(c.story.lines(),
            (std::vector<std::string>{
                "NCCL 2.27.7: AllReduce busbw 10% slower from 64 KiB to 1 MiB",
                "NCCL 2.27.7: AllGather, ReduceScatter busbw 40% slower from 64 KiB to 1 MiB"}));
}

// Magnitudes a tolerance apart step by step (10%, 14%, 18% at 5%) do not chain into one line.
TEST(ReportStory, StepByStepMagnitudesDoNotChainIntoOneBand) {
  const std::uint64_t k64 = 64 << 10, m1 = 1 << 20;
  auto ref = release_bundle("2.26.2", {}, release_points([](std::uint64_t) { return 0.0; }, false));
  auto moved = [&](double by) {
    return release_points([&](std::uint64_t b) { return b >= k64 && b <= m1 ? by : 0.0; }, false);
  };
  auto pts = moved(0.10);
  const auto ag = moved(0.14), rs = moved(0.18);
  for (std::size_t k = 0; k < pts.size(); ++k) {
    if (pts[k].collective == "AllGather") pts[k] = ag[k];
    if (pts[k].collective == "ReduceScatter") pts[k] = rs[k];
  }
  auto c = report::compare(ref, {release_bundle("2.27.7", {}, pts)}, 5);
  EXPECT_EQ(c.story.lines(), (std::vector<std::string>{
                                 "NCCL 2.27.7: AllReduce, AllGather busbw 10-14% slower from 64 KiB to 1 MiB",
                                 "NCCL 2.27.7: ReduceScatter busbw 18% slower from 64 KiB to 1 MiB"}));
}

TEST(ReportStory, CampaignOfTheSameReleasesTellsTheSame) {
  auto r = three_releases();
  campaign::Report rep;
  for (auto* b : {&r.large_slower, &r.reference, &r.small_slower}) {  // built in version order
    campaign::Release rel;
    rel.version = *Version::try_parse(b->fingerprints[0].second["nccl"]["runtime"].get<std::string>(),
                                      VersionKind::Nccl);
    rel.bundle = *b;
    rep.releases.push_back(rel);
  }
  rep = campaign::build(rep.releases, builtin_matrix());
  ASSERT_EQ(rep.story.lines().size(), 3u);
  EXPECT_EQ(rep.story.lines()[0],
            "NCCL 2.28.9: AllReduce busbw 1 GiB: 405.9 GB/s, under its floor 431 (was 482.9)");
  const std::string md = doc::to_markdown(campaign::to_doc(rep));
  const auto story = md.find("- NCCL 2.27.7: AllReduce, AllGather, ReduceScatter busbw 10-12% slower");
  ASSERT_NE(story, std::string::npos) << md;
  EXPECT_LT(story, md.find("## Releases"));
  EXPECT_LT(md.find("![AllReduce: each run against NCCL 2.26.2"), md.find("## Performance between"));
  EXPECT_LT(md.find("## Bandwidth at 1 GiB"), md.find("## Performance between")) << "the summary first";
  EXPECT_EQ(campaign::to_json(rep)["story"]["lines"].size(), 3u);
}

// Bundles whose manifest records the run's level and selection, as `gpucts qualify` writes them.
bundle::Bundle scoped(const fs::path& dir, const std::string& level, std::vector<junit::Case> cases,
                      std::vector<bw::Point> points = {}) {
  auto b = synthetic(dir.string(), std::move(cases), std::move(points));
  b.manifest.level = level;
  b.manifest.selection = {{"labels", nlohmann::json::array()}, {"tests", "gpucts_collectives"}};
  b.manifest.gpucts_revision = "abc123";
  return b;
}

TEST(ReportCompare, DifferentLevelsAreComparedOnWhatBothRan) {
  const fs::path root = fs::temp_directory_path() / ("gpucts-scope-" + std::to_string(::getpid()));
  std::vector<junit::Case> standard, quick;
  for (int k = 0; k < 29; ++k)
    standard.push_back(tc("gpucts_collectives", "c" + std::to_string(k), "passed"));
  quick = {standard[0], tc("gpucts_collectives", "c0_failing", "failed")};
  standard.push_back(tc("gpucts_collectives", "c0_failing", "passed"));
  auto c = report::compare(scoped(root / "std", "standard", standard),
                           {scoped(root / "quick", "quick", quick)}, 5);
  // Only the case both ran and that now fails, and the verdict it turns to fail.
  ASSERT_EQ(c.regressions[0].size(), 2u);
  EXPECT_EQ(c.regressions[0][0], "verdict: pass -> fail");
  EXPECT_NE(c.regressions[0][1].find("newly failing: gpucts_collectives/AllReduce.c0_failing"),
            std::string::npos);
  ASSERT_EQ(c.left_out[0].size(), 1u);
  EXPECT_EQ(c.left_out[0][0], "gpucts_collectives: 28 case(s) only the baseline ran");
  EXPECT_EQ(c.scopes[1].level, "quick");
  EXPECT_EQ(c.scopes[1].selection, "--tests gpucts_collectives");
  const std::string md = doc::to_markdown(report::to_doc(c));
  EXPECT_NE(
      md.find("compared on what both ran: quick (level quick, selection --tests gpucts_collectives) and "
              "the baseline (level standard, selection --tests gpucts_collectives) ran different "
              "selections; left out: gpucts_collectives: 28 case(s) only the baseline ran"),
      std::string::npos)
      << md;
  // The same level: the 28 cases are missing, a regression as before (with the verdict and the failure).
  auto same = report::compare(scoped(root / "std", "standard", standard),
                              {scoped(root / "q2", "standard", quick)}, 5);
  EXPECT_EQ(same.regressions[0].size(), 3u);  // the verdict, the failing case, the missing ones
  // A bad key is one line naming the file and the field.
  nlohmann::json bad = bundle::to_json(synthetic("b", {}).manifest);
  bad["level"] = 3;
  try {
    bundle::manifest_from_json(bad, "bad/manifest.json");
    ADD_FAILURE() << "a level that is a number was read";
  } catch (const bundle::BundleError& e) {
    EXPECT_NE(std::string(e.what()).find("manifest.json: field 'level'"), std::string::npos) << e.what();
  }
}

// The selection qualify records (an object) reads as the options were given, and runs of different
// levels or selections say so, and what ran them, even where nothing was left out.
TEST(ReportCompare, LevelSelectionAndRevisionAreShownAsGiven) {
  auto base = release_bundle("2.26.2", {tc("gpucts_collectives", "a", "passed")}, {bp(kGiB, 1000, 1)});
  auto cand = release_bundle("2.27.7", base.cases, {bp(kGiB, 1000, 1)});
  base.manifest.level = "standard";
  base.manifest.selection = {{"labels", {"single-gpu|perf"}}, {"exclude_label", "torch|self-test"}};
  base.manifest.gpucts_revision = "v1.0-3-gabc123";
  cand.manifest.level = "quick";
  cand.manifest.selection = {{"labels", {"perf"}}};
  cand.manifest.gpucts_revision = "v1.0-5-gdef456";
  // As a bundle on disk holds it: written and read back.
  for (auto* b : {&base, &cand}) b->manifest = bundle::manifest_from_json(bundle::to_json(b->manifest), "m");
  auto c = report::compare(base, {cand}, 5);
  EXPECT_EQ(c.scopes[0].selection, "--label single-gpu|perf, --exclude-label torch|self-test");
  EXPECT_EQ(c.scopes[1].selection, "--label perf");
  const std::string md = doc::to_markdown(report::to_doc(c));
  EXPECT_EQ(md.find("{\""), std::string::npos) << "no JSON for people: " << md;
  EXPECT_NE(md.find("compared on what both ran: NCCL 2.27.7 (level quick, selection --label perf) and the "
                    "baseline (level standard, selection --label single-gpu|perf, --exclude-label "
                    "torch|self-test) ran different selections; left out: nothing"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| level (changed) | standard | quick |"), std::string::npos) << md;
  EXPECT_NE(md.find("| gpucts (changed) | 1.0 (v1.0-3-gabc123) | 1.0 (v1.0-5-gdef456) |"), std::string::npos)
      << md;
  EXPECT_EQ(report::to_json(c)["scopes"][1]["selection"], "--label perf");
}

TEST(ReportCompare, LostCoverageIsARegression) {
  auto base =
      synthetic("b", {tc("gpucts_collectives", "a", "passed"), tc("gpucts_collectives", "b", "passed")},
                {bp(8, 20, 1), bp(kGiB, 1000, 1)});
  // Passing cases turned skipped: one line per binary.
  auto skipped =
      synthetic("c", {tc("gpucts_collectives", "a", "skipped"), tc("gpucts_collectives", "b", "skipped")},
                {bp(8, 20, 1), bp(kGiB, 1000, 1)});
  auto c = report::compare(base, {skipped}, 5);
  ASSERT_EQ(c.regressions[0].size(), 1u);
  EXPECT_EQ(c.regressions[0][0].rfind("newly skipped: 2 case(s) of gpucts_collectives", 0), 0u)
      << c.regressions[0][0];
  // An interrupted run.
  auto interrupted = synthetic("c", base.cases, {bp(8, 20, 1), bp(kGiB, 1000, 1)});
  interrupted.manifest.interrupted = true;
  EXPECT_TRUE(report::compare(base, {interrupted}, 5).regressed());
  // The 1 GiB point dropped, re-tagged nonblocking, graph or in place, or the whole file gone.
  auto one_gib = [](bw::Point p, int how) {
    if (how == 1) p.comm = bw::kNonblocking;
    if (how == 2) p.graph = true;
    if (how == 3) p.in_place = true;
    return p;
  };
  for (int how = 0; how < 4; ++how) {
    std::vector<bw::Point> pts = {bp(8, 20, 1)};
    if (how > 0) pts.push_back(one_gib(bp(kGiB, 1000, 1), how));
    auto cand = synthetic("c", base.cases, pts);
    auto d = report::compare(base, {cand}, 5);
    ASSERT_EQ(d.regressions[0].size(), 1u) << how;
    EXPECT_NE(d.regressions[0][0].find("missing bandwidth: 1 point(s) of gpucts_bandwidth absent (first: "
                                       "gpucts_bandwidth: AllReduce f32 1 GiB out of place)"),
              std::string::npos)
        << d.regressions[0][0];
  }
  auto no_file = synthetic("c", base.cases);
  auto e = report::compare(base, {no_file}, 5);
  ASSERT_EQ(e.regressions[0].size(), 1u);
  EXPECT_NE(e.regressions[0][0].find("gpucts_bandwidth has no results in this run (2 point(s)"),
            std::string::npos)
      << e.regressions[0][0];
}

TEST(ReportCompare, PointsWhereNoDataMovesShowNoBandwidth) {
  bw::Point self = bp(kGiB, 4.2, 1);  // a self-send of one buffer: "253,014 GB/s"
  self.collective = "SendRecv";
  self.ranks = 1;
  self.in_place = true;
  self.busbw_gbps.reset();
  EXPECT_NE(bw::no_data_moves(self), "");
  bw::Point moved = self;
  moved.in_place = false;
  EXPECT_EQ(bw::no_data_moves(moved), "");
  auto base = synthetic("b", {}, {self, moved});
  self.time_us = bw::summarize({2.1, 2.1, 2.1});
  auto cand = synthetic("c", {}, {self, moved});
  auto c = report::compare(base, {cand}, 5);
  EXPECT_FALSE(c.regressed()) << "nothing moved, so nothing got faster or slower";
  EXPECT_TRUE(c.story.lines().empty());
  ASSERT_EQ(c.no_data.size(), 1u);
  EXPECT_NE(c.no_data[0].find("SendRecv f32 1 GiB in place, 1 rank(s): one rank in place"),
            std::string::npos);
  const std::string md = doc::to_markdown(report::to_doc(c));
  EXPECT_EQ(md.find("253"), std::string::npos) << "no figure for it: " << md;
  // A one-rank sweep: one line per collective, not one per size.
  std::vector<bw::Point> sweep;
  for (std::uint64_t bytes = 8; bytes <= kGiB; bytes *= 2) {
    bw::Point p = bp(bytes, 10 + static_cast<double>(bytes) / 1e5, 1);
    p.ranks = 1;
    p.in_place = true;
    p.busbw_gbps.reset();
    sweep.push_back(p);
  }
  auto one = report::compare(synthetic("b", {}, sweep), {synthetic("c", {}, sweep)}, 5);
  ASSERT_EQ(one.no_data.size(), 1u);
  EXPECT_NE(
      one.no_data[0].find("AllReduce f32 8 B - 1 GiB (28 sizes) in place, 1 rank(s): one rank in place"),
      std::string::npos)
      << one.no_data[0];
}

// A collective only one of the two measured: the baseline's is missing from the candidate (a
// regression) and its ratio plot names the run that lacks it; the candidate's own is said on the
// first screen, not dropped.
TEST(ReportCompare, ACollectiveInOneBundleOnlyIsSaidEitherWay) {
  auto coll = [](const char* name, bw::Point p) {
    p.collective = name;
    return p;
  };
  auto base = release_bundle("2.26.2", {}, {bp(kGiB, 1000, 1), coll("SendRecv", bp(kGiB, 1000, 1))});
  auto cand = release_bundle("2.27.7", {}, {bp(kGiB, 1000, 1), coll("AllGather", bp(kGiB, 900, 1))});
  auto c = report::compare(base, {cand}, 5);
  ASSERT_EQ(c.only_in_candidate[0].size(), 1u);
  EXPECT_EQ(c.only_in_candidate[0][0].rfind("gpucts_bandwidth: AllGather: 1 point(s) only in this run", 0),
            0u)
      << c.only_in_candidate[0][0];
  const std::string md = doc::to_markdown(report::to_doc(c));
  const auto first = md.find("## What changed"), table = md.find("| run |");
  const auto said = md.find("- NCCL 2.27.7: gpucts_bandwidth: AllGather: 1 point(s) only in this run");
  EXPECT_LT(first, said);
  EXPECT_LT(said, table) << md;
  EXPECT_NE(
      md.find("*SendRecv: each run against NCCL 2.26.2 (gpucts_bandwidth); not measured by NCCL 2.27.7*"),
      std::string::npos)
      << md;
  const std::string html = doc::to_html(report::to_doc(c));
  EXPECT_NE(html.find(">SendRecv: each run against NCCL 2.26.2 (gpucts_bandwidth)</text>"), std::string::npos)
      << "the plot's own title stays short enough to fit";
  EXPECT_EQ(report::to_json(c)["only_in_candidate"][0].size(), 1u);
}

// A run keeps its colour in every plot, also where the run before it has no point to draw.
TEST(SvgPlot, ASeriesKeepsTheColourOfItsPlace) {
  auto colour_of_c = [](bool b_has_points) {
    svg::Plot p;
    p.series.push_back({"a", {{8, 1.0}, {16, 1.0}}, false});
    svg::Series b{"b", {}, false};
    if (b_has_points) b.points = {{8, 0.9}};
    p.series.push_back(b);
    p.series.push_back({"c", {{8, 0.8}, {16, 0.8}}, false});
    const std::string out = svg::render(p);
    const auto label = out.find(">c</text>");
    const auto line = out.rfind("stroke=\"", label);
    return out.substr(line + 8, 7);
  };
  EXPECT_EQ(colour_of_c(false), colour_of_c(true));
  svg::Plot p;
  p.series.push_back({"a", {{8, 1.0}}, false});
  p.series.push_back({"b", {}, false});
  EXPECT_EQ(svg::render(p).find(">b</text>"), std::string::npos) << "no legend row for what is not drawn";
}

TEST(SvgPlot, AFloorOfOnePointIsDrawnAndMarksAreRinged) {
  svg::Plot p;
  p.series.push_back({"run", {{1 << 20, 300}, {kGiB, 405.9}}, false});
  p.series.push_back({"floor", {{kGiB, 431}}, true});
  p.marks.push_back({static_cast<double>(kGiB), 405.9, "under floor"});
  const std::string out = svg::render(p);
  EXPECT_NE(out.find("class=\"floor\""), std::string::npos);
  EXPECT_NE(out.find("class=\"mark\""), std::string::npos);
  EXPECT_NE(out.find(">floor</text>"), std::string::npos);
  // A ratio axis around 1.0 with a shaded band, linear.
  svg::Plot r;
  r.series.push_back({"run", {{8, 1.0}, {kGiB, 0.84}}, false});
  r.y_min = 0.8;
  r.y_max = 1.1;
  r.band = std::make_pair(0.95, 1.05);
  const std::string rs = svg::render(r);
  EXPECT_NE(rs.find("class=\"band\""), std::string::npos);
  auto y = ticks(rs, "ytick");
  ASSERT_GE(y.size(), 3u);
  EXPECT_EQ(y.front().first, "0.8");
  EXPECT_EQ(rs.find("log scale"), std::string::npos);
  EXPECT_NO_THROW(xml::parse(rs, "ratio.svg"));
}

// The crossing labels of a plot: each one's box (about 6.5 px a character, anchored at its end)
// and baseline.
struct LabelBox {
  double x0, x1, y;
};
std::vector<LabelBox> mark_labels(const std::string& svg) {
  std::vector<LabelBox> boxes;
  const std::string open = "<text class=\"mark-label\" x=\"";
  for (auto at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const double x = std::stod(svg.substr(at + open.size()));
    const double y = std::stod(svg.substr(svg.find("y=\"", at) + 3));
    const auto gt = svg.find('>', at) + 1;
    const double w = 6.5 * static_cast<double>(svg.find('<', gt) - gt);
    boxes.push_back({x - w, x, y});
  }
  return boxes;
}

// Crossings at neighbouring sizes: every one ringed, their labels never drawn over each other.
TEST(SvgPlot, MarksAtNeighbouringSizesDoNotOverprintTheirLabels) {
  svg::Plot p;
  p.series.push_back({"run", {{8, 0.001}, {256 << 20, 439}, {512 << 20, 442}, {kGiB, 444}}, false});
  p.marks.push_back({256 << 20, 439, "under floor"});
  p.marks.push_back({512 << 20, 442, "under floor"});
  p.marks.push_back({static_cast<double>(kGiB), 444, "back over floor"});
  const std::string out = svg::render(p);
  std::size_t rings = 0;
  for (auto at = out.find("class=\"mark\""); at != std::string::npos; at = out.find("class=\"mark\"", at + 1))
    ++rings;
  EXPECT_EQ(rings, 3u);
  // Each label's box (11 px high) is apart from the others.
  const auto boxes = mark_labels(out);
  ASSERT_GE(boxes.size(), 2u) << out;
  for (std::size_t i = 0; i < boxes.size(); ++i)
    for (std::size_t j = i + 1; j < boxes.size(); ++j)
      EXPECT_FALSE(boxes[i].x0 < boxes[j].x1 && boxes[j].x0 < boxes[i].x1 &&
                   std::fabs(boxes[i].y - boxes[j].y) < 12)
          << "labels " << i << " and " << j << " overlap:\n"
          << out;
  // Crossings at the bottom of the plot: their labels stay inside it (above the x axis).
  svg::Plot low;
  low.series.push_back({"run", {{8, 500}, {256 << 20, 100}, {512 << 20, 100}, {kGiB, 100}}, false});
  low.marks.push_back({256 << 20, 100, "under floor"});
  low.marks.push_back({512 << 20, 100, "back over floor"});
  low.marks.push_back({static_cast<double>(kGiB), 100, "under floor again"});
  const std::string bottom = svg::render(low);
  const double height = std::stod(bottom.substr(bottom.find("height=\"") + 8));
  const auto low_labels = mark_labels(bottom);
  for (const auto& l : low_labels) EXPECT_LT(l.y, height - 40) << bottom;
  EXPECT_EQ(low_labels.size(), 3u) << bottom;
}

// With one run there is nothing to divide by: no ratio plot, only the values.
TEST(ReportStory, OneRunHasNoRatioPlot) {
  auto one = release_bundle("2.27.7", {}, release_points([](std::uint64_t) { return 0.0; }, false));
  const auto plots = bands::plots({&one}, {"NCCL 2.27.7"}, {}, 5);
  ASSERT_EQ(plots.size(), 3u) << "one absolute plot per collective";
  for (const auto& p : plots) EXPECT_EQ(p.title.find("each run against"), std::string::npos) << p.title;
}

// Characters XML 1.0 forbids, and UTF-8 that is not shortest form, never reach the JUnit.
TEST(XmlWriter, NonCharactersAndOverlongUtf8AreReplaced) {
  const std::string bad[] = {"\xEF\xBF\xBE", "\xEF\xBF\xBF",     "\xC0\xAF", "\xE0\x80\xAF",
                             "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xC3"};
  for (const auto& b : bad) {
    std::string escaped = xml::escape("a" + b + "z");
    EXPECT_EQ(escaped, "a?z") << "bytes of " << b.size();
    EXPECT_NO_THROW(xml::parse("<r v=\"" + escaped + "\"/>", "w"));
  }
  EXPECT_EQ(xml::escape("\xF0\x9F\x98\x80 \xE2\x82\xAC"), "\xF0\x9F\x98\x80 \xE2\x82\xAC")
      << "real characters stay";
}

}  // namespace
}  // namespace cts
