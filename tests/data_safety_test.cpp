// The user's data and gpucts's own outputs, end to end: `gpucts campaign` never deletes or reuses
// what it did not write at OUT/nccl-<version>; a sealed qualify bundle does not change once qualify
// has exited, whatever a suite's processes do (interrupted or not, some of them outside its process
// group); a file is copied whole and never through a link; JUnit messages are cut so that every
// reader takes the file. Runs gpucts beside this binary.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"
#include "results/junit.hpp"
#include "results/output_file.hpp"
#include "results/xml.hpp"
#include "results/xml_escape.hpp"
#include "tests/process_wait.hpp"

namespace fs = std::filesystem;

namespace cts {
namespace {

std::string gpucts() { return find_beside("gpucts").value_or(""); }

#define REQUIRE_CLI() \
  if (gpucts().empty()) GTEST_SKIP() << "gpucts not found beside " << self_exe()

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// Every entry under `root` with what it holds (a link as "-> target"): what must not change.
std::map<std::string, std::string> files_under(const fs::path& root) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), root).string();
    if (it->is_symlink())
      out[rel] = "-> " + fs::read_symlink(it->path()).string();
    else
      out[rel] = it->is_regular_file() ? slurp(it->path()) : "(folder)";
  }
  return out;
}

// gpucts with `args`: its exit status, its output and error in *out.
int run_gpucts(std::vector<std::string> args, std::string* out, double timeout_s = 120) {
  args.insert(args.begin(), gpucts());
  int rc = -1;
  *out = proc::output_of(args, &rc, {}, timeout_s);
  return rc;
}

nlohmann::json suite_list(const std::string& name, const std::vector<std::string>& command,
                          const std::vector<std::string>& env = {}) {
  nlohmann::json entry = {
      {"name", name},
      {"command", command},
      {"properties", {{{"name", "TIMEOUT"}, {"value", 60}}, {{"name", "LABELS"}, {"value", {"cpu"}}}}}};
  if (!env.empty()) entry["properties"].push_back({{"name", "ENVIRONMENT"}, {"value", env}});
  return {{"kind", "ctestInfo"}, {"tests", {entry}}};
}

// ---------------------------------------------------------------------------------------------
// gpucts campaign: OUT/nccl-<version> is deleted or reused only where gpucts qualify wrote it.

TEST(Campaign, NeverDeletesOrReusesWhatItDidNotWriteAtAReleaseFolder) {
  REQUIRE_CLI();
  ScratchDir tmp("data-safety");
  const fs::path root = tmp.path(), store = root / "store", out = root / "out", at = out / "nccl-2.19.3";
  // The release's library in the store (any whole shared object will do), so that only the folder
  // stands between the campaign and a run.
  fs::create_directories(store / "2.19.3" / "lib");
  fs::create_symlink(self_exe(), store / "2.19.3" / "lib" / "libnccl.so.2");
  put(root / "elsewhere" / "keep.txt", "not the campaign's\n");
  const std::vector<std::pair<std::string, std::function<void()>>> planted = {
      {"a file", [&] { put(at, "the user's notes\n"); }},
      {"a folder", [&] { put(at / "notes.txt", "the user's notes\n"); }},
      {"another manifest", [&] { put(at / "manifest.json", R"({"schema": "someone.else/1"})"); }},
      {"a link", [&] { fs::create_symlink(root / "elsewhere", at); }}};
  for (const auto& [what, plant] : planted)
    for (bool resume : {false, true}) {
      fs::remove_all(out);
      fs::create_directories(out);
      plant();
      const auto before = files_under(root);
      std::vector<std::string> args = {"campaign", "--nccl",     "2.19.3",  "--store",        store.string(),
                                       "--output", out.string(), "--tests", "^no_such_entry$"};
      if (resume) args.push_back("--resume");
      std::string text;
      const std::string label = what + (resume ? " with --resume" : "");
      EXPECT_EQ(run_gpucts(args, &text), 2) << label << "\n" << text;
      EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << label << "\n" << text;
      EXPECT_NE(text.find(at.string()), std::string::npos) << label << "\n" << text;
      EXPECT_EQ(files_under(root), before) << label << ": something changed\n" << text;
    }
  // A bundle gpucts qualify wrote is the campaign's: --resume reads it back and leaves it as it was.
  fs::remove_all(out);
  fs::create_directories(out);
  put(root / "tests.json", suite_list("true", {"/bin/true"}).dump());
  std::string text;
  ASSERT_EQ(run_gpucts({"qualify", "--no-python", "--tests-json", (root / "tests.json").string(), "--output",
                        at.string()},
                       &text),
            0)
      << text;
  const auto bundle = files_under(at);
  // (Read back, it loaded no NCCL 2.19.3: none on a CPU machine, or the machine's own release, which
  // is not this old one. A problem of the report, exit 1, not a refusal.)
  EXPECT_EQ(run_gpucts({"campaign", "--nccl", "2.19.3", "--store", store.string(), "--output", out.string(),
                        "--resume"},
                       &text),
            1)
      << text;
  EXPECT_NE(text.find("NCCL 2.19.3"), std::string::npos) << text;
  EXPECT_EQ(files_under(at), bundle) << text;
}

// ---------------------------------------------------------------------------------------------
// gpucts qualify: once it has exited, its bundle does not change.

// A suite whose process keeps writing into its journal folder and onto its output from outside
// the suite's process group (setsid), and whose leader keeps writing too (or exits at once).
const char* kStraySuite =
    "setsid sh -c 'echo $$ > \"$STRAY_PID_FILE\"; "
    "while :; do echo stray >> \"$GPUCTS_JOURNAL_DIR/stray.txt\"; echo stray; sleep 0.05; done' & "
    "while [ ! -s \"$STRAY_PID_FILE\" ]; do sleep 0.05; done; "
    "[ \"$LEADER_EXITS\" = 1 ] && exit 0; "
    "while :; do echo leader >> \"$GPUCTS_JOURNAL_DIR/leader.txt\"; sleep 0.05; done";

// The wait status of `pid` within `s` seconds, or nullopt (then it is killed).
std::optional<int> wait_within(pid_t pid, double s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  int st = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid, &st, WNOHANG) == pid) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &st, 0);
  return std::nullopt;
}

class SealedBundle : public ::testing::TestWithParam<int> {};  // the signal sent to qualify, 0: none

TEST_P(SealedBundle, NothingTheSuiteStartedWritesIntoItAfterQualifyExits) {
  REQUIRE_CLI();
  const int sig = GetParam();
  ScratchDir tmp("data-safety");
  const fs::path root = tmp.path(), out = root / "bundle", pid_file = root / "stray.pid";
  put(root / "tests.json",
      suite_list("stray", {"/bin/sh", "-c", kStraySuite},
                 {"STRAY_PID_FILE=" + pid_file.string(), "LEADER_EXITS=" + std::string(sig == 0 ? "1" : "0")})
          .dump());
  proc::Options o;
  o.out = o.err = proc::Output::File;
  o.output_file = (root / "qualify.log").string();
  std::string error;
  const pid_t qualify = proc::start({gpucts(), "qualify", "--no-python", "--grace", "1", "--tests-json",
                                     (root / "tests.json").string(), "--output", out.string()},
                                    o, &error);
  ASSERT_GT(qualify, 0) << error;
  const pid_t stray = test::read_pid(pid_file, 60);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // both are writing now
  if (sig) ::kill(qualify, sig);
  const auto status = wait_within(qualify, 60);
  const auto sealed = files_under(out);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto a_second_later = files_under(out);
  if (stray > 0 && !test::gone_within(stray, 0)) {
    ADD_FAILURE() << "the suite's process outside its group outlived qualify";
    ::kill(stray, SIGKILL);
  }
  ASSERT_GT(stray, 0) << slurp(root / "qualify.log");
  ASSERT_TRUE(status && WIFEXITED(*status)) << slurp(root / "qualify.log");
  EXPECT_EQ(WEXITSTATUS(*status), sig ? 1 : 0) << slurp(root / "qualify.log");
  ASSERT_TRUE(fs::exists(out / "manifest.json")) << slurp(root / "qualify.log");
  EXPECT_TRUE(a_second_later == sealed) << "the bundle changed after qualify exited";
  // What the suite wrote before it ended is in the bundle; its staging folder is gone.
  EXPECT_NE(slurp(out / "journal" / "stray.txt").find("stray\n"), std::string::npos);
  EXPECT_NE(slurp(out / "logs" / "stray.log").find("stray\n"), std::string::npos);
  for (const auto& e : fs::directory_iterator(root))
    EXPECT_EQ(e.path().filename().string().find(".suite-"), std::string::npos) << e.path();
}

INSTANTIATE_TEST_SUITE_P(
    Signals, SealedBundle, ::testing::Values(SIGTERM, SIGINT, 0), [](const ::testing::TestParamInfo<int>& i) {
      return std::string(i.param == SIGTERM ? "Sigterm" : i.param == SIGINT ? "Sigint" : "LeaderExits");
    });

// ---------------------------------------------------------------------------------------------
// copy_file_atomic: how qualify moves a suite's files into the bundle.

TEST(CopyFile, CopiesWholeAndRefusesLinksAndFifos) {
  ScratchDir tmp("data-safety");
  const fs::path root = tmp.path();
  const std::string big(3 << 20, 'b');
  put(root / "from", big);
  copy_file_atomic((root / "from").string(), (root / "to").string());
  EXPECT_EQ(slurp(root / "to"), big);
  put(root / "victim", "keep\n");
  fs::create_symlink(root / "victim", root / "link");
  EXPECT_THROW(copy_file_atomic((root / "link").string(), (root / "to2").string()), OutputError);
  EXPECT_THROW(copy_file_atomic((root / "from").string(), (root / "link").string()), OutputError);
  ASSERT_EQ(::mkfifo((root / "fifo").c_str(), 0644), 0);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    copy_file_atomic((root / "fifo").string(), (root / "to3").string());
    ADD_FAILURE() << "a FIFO was copied";
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5);
  EXPECT_EQ(slurp(root / "victim"), "keep\n");
  EXPECT_FALSE(fs::exists(root / "to2"));
  EXPECT_FALSE(fs::exists(root / "to3"));
}

// ---------------------------------------------------------------------------------------------
// JUnit: a message of any size leaves a file every reader takes.

TEST(Junit, AHugeJournalMessageIsCutAtACharacterAndEveryReaderTakesTheFile) {
  REQUIRE_CLI();
  ScratchDir tmp("data-safety");
  const fs::path journals = fs::path(tmp.path()) / "journal", xml = fs::path(tmp.path()) / "junit.xml";
  // 20 MB of two-byte characters after one ASCII byte: the limit falls inside a character.
  std::string huge = "a";
  while (huge.size() < (std::size_t{20} << 20)) huge += "\xc3\xa9";
  put(journals / "big.jsonl",
      "{\"event\":\"program_start\",\"cases\":1,\"time_ms\":1000}\n"
      "{\"event\":\"start\",\"case\":\"S.big\",\"time_ms\":1001}\n"
      "{\"event\":\"end\",\"case\":\"S.big\",\"result\":\"failed\",\"message\":\"" +
          huge +
          "\",\"time_ms\":1002}\n"
          "{\"event\":\"program_end\",\"time_ms\":1003}\n");
  std::string text;
  ASSERT_EQ(
      run_gpucts({"journal-to-junit", "--journal-dir", journals.string(), "--output", xml.string()}, &text),
      0)
      << text;
  EXPECT_LT(fs::file_size(xml), std::size_t{1} << 20) << "each text is cut to 64 KiB";
  if (const auto xmllint = find_program("xmllint")) {
    int rc = -1;
    const std::string said = proc::output_of({*xmllint, "--noout", xml.string()}, &rc);
    EXPECT_EQ(rc, 0) << "libxml2 refuses the file: " << said.substr(0, 2000);
  }
  const auto cases = junit::read_file(xml.string(), "big");
  ASSERT_EQ(cases.size(), 1u);
  for (const std::string& t : {cases[0].detail, cases[0].property("gpucts.result")}) {
    EXPECT_NE(t.find("[gpucts: message cut, "), std::string::npos) << t.substr(0, 100);
    EXPECT_LE(t.size(), kMaxReportText + 64);
    // Cut between characters: no byte of a split character became '?'.
    EXPECT_EQ(t.find('?'), std::string::npos) << t.substr(t.size() - 100);
  }
  EXPECT_EQ(cap_report_text(huge).substr(65535),
            "\n[gpucts: message cut, " + std::to_string(huge.size()) + " bytes in all]");
}

}  // namespace
}  // namespace cts
