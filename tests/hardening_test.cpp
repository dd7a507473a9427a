// Bad input and hostile names, end to end: child processes start from an argument vector (no
// shell), names from outside never reach a path outside the output folder, every output file is
// written whole and never through a symbolic link, every reader refuses deep nesting, endless
// files, duplicate keys and out-of-range numbers with one line naming the file and line or field,
// and the HTML summary escapes everything that came from outside. Runs gpucts, gpucts_version and
// this binary's own DISABLED_Fixture cases as children.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/spawn.hpp"
#include "matrix/csv.hpp"
#include "matrix/fingerprint.hpp"
#include "matrix/input.hpp"
#include "matrix/matrix.hpp"
#include "matrix/rules.hpp"
#include "matrix/version.hpp"
#include "report/bundle.hpp"
#include "report/doc.hpp"
#include "report/summary.hpp"
#include "results/bandwidth.hpp"
#include "results/file_names.hpp"
#include "results/journal_report.hpp"
#include "results/junit.hpp"
#include "results/output_file.hpp"
#include "results/xml.hpp"

namespace fs = std::filesystem;

namespace cts {
namespace {

// ---------------------------------------------------------------------------------------------
// Cases run only as children of the tests below (disabled in a plain run).
TEST(DISABLED_Fixture, FailsWithScript) { ADD_FAILURE() << "<script>alert('message')</script> failed here"; }
TEST(DISABLED_Fixture, Passes) { SUCCEED(); }
TEST(DISABLED_Fixture, Spins) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// ---------------------------------------------------------------------------------------------
std::string gpucts() { return find_beside("gpucts").value_or(""); }
std::string version_binary() { return find_beside("gpucts_version").value_or(""); }

#define REQUIRE_CLI()                                                             \
  do {                                                                            \
    if (gpucts().empty() || version_binary().empty())                             \
      GTEST_SKIP() << "gpucts or gpucts_version not found beside " << self_exe(); \
  } while (0)

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
// The JSON document in a child's output (stderr lines may come before or after it).
nlohmann::json json_in(const std::string& out) {
  auto b = out.find('{'), e = out.rfind('}');
  if (b == std::string::npos || e == std::string::npos || e < b) return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(out.substr(b, e - b + 1), nullptr, false);
}

// Children of this suite must not take its journal or test name.
proc::Result run(const std::vector<std::string>& argv, std::vector<std::string> env = {},
                 const std::string& cwd = "", double timeout_s = 120) {
  proc::Options o;
  o.set_env = std::move(env);
  o.unset_env = {"GPUCTS_TEST_NAME", "GPUCTS_JOURNAL_DIR", "GPUCTS_BW_OUTPUT", "GPUCTS_LOG_DIR",
                 "TEST_PREMATURE_EXIT_FILE"};
  o.working_dir = cwd;
  o.err = proc::Output::Capture;
  o.timeout_s = timeout_s;
  return proc::run(argv, o);
}

// Every path under `root` (not following links) with its type, size and content hash; `skip` is
// left out (the output folder a run may write).
std::map<std::string, std::string> tree(const fs::path& root, const fs::path& skip = {}) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    if (!skip.empty() && it->path() == skip) {
      it.disable_recursion_pending();
      continue;
    }
    auto st = it->symlink_status();
    std::string what = fs::is_symlink(st) ? "link:" + fs::read_symlink(it->path()).string()
                       : fs::is_directory(st)
                           ? "dir"
                           : "file:" + std::to_string(std::hash<std::string>{}(slurp(it->path())));
    out[fs::relative(it->path(), root).string()] = what;
  }
  return out;
}

class Scratch : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<ScratchDir>("hardening"); }
  fs::path dir() const { return dir_->path(); }
  std::unique_ptr<ScratchDir> dir_;
};

// ---------------------------------------------------------------------------------------------
// Child processes

using SpawnTest = Scratch;

TEST_F(SpawnTest, AnArgumentWithSpacesQuotesAndSemicolonIsOneArgumentAndNothingElseRuns) {
  const std::string arg = "a b 'c' \"d\" ; touch MARKER # $(touch MARKER2) `touch MARKER3`";
  proc::Options o;
  o.working_dir = dir().string();
  auto r = proc::run({"printf", "%s|", arg, "second"}, o);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output, arg + "|second|");
  for (const char* m : {"MARKER", "MARKER2", "MARKER3"}) EXPECT_FALSE(fs::exists(dir() / m)) << m;
}

TEST_F(SpawnTest, ExitStatusSignalAndMissingProgramAreRecorded) {
  auto three = proc::run({"sh", "-c", "exit 3"});
  ASSERT_TRUE(three.started);
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_EQ(three.describe(), "exited with status 3");
  auto killed = proc::run({"sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed.signal, 9);
  EXPECT_FALSE(killed.exit_code);
  auto missing = proc::run({(dir() / "no such program").string()});
  EXPECT_FALSE(missing.started);
  EXPECT_NE(missing.describe().find("No such file"), std::string::npos) << missing.describe();
}

TEST_F(SpawnTest, TheDeadlineEndsTheChildAndEveryDescendantInItsGroup) {
  proc::Options o;
  o.timeout_s = 0.5;
  o.grace_s = 0.5;
  o.working_dir = dir().string();
  // The grandchild would write LATE after 3 s if it outlived the deadline.
  auto t0 = std::chrono::steady_clock::now();
  auto r = proc::run({"sh", "-c", "(sleep 3; touch LATE) & sleep 30"}, o);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(took, 5.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  EXPECT_FALSE(fs::exists(dir() / "LATE")) << "a descendant outlived the deadline";
}

TEST_F(SpawnTest, CapturedOutputIsBounded) {
  proc::Options o;
  o.max_capture = 1000;
  auto r = proc::run({"head", "-c", "100000", "/dev/zero"}, o);
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output.size(), 1000u);
  EXPECT_TRUE(r.output_truncated);
}

// A python3 that answers the probe: it ignores its arguments and prints what torch would.

// ---------------------------------------------------------------------------------------------
// File names from outside

TEST(FileNames, EveryOutsideStringBecomesOneSafeDistinctFileName) {
  const std::vector<std::string> names = {"gpucts_collectives_w2",
                                          "..",
                                          ".",
                                          "../../etc/passwd",
                                          "/etc/passwd",
                                          "a/b",
                                          "a_b",
                                          "a%2Fb",
                                          std::string("nul\0byte", 8),
                                          std::string(1000, 'x'),
                                          std::string(1000, 'x') + "y",
                                          std::string(300, '/'),
                                          "\xff\xfe not utf-8",
                                          "node-a.rank3",
                                          ".hidden",
                                          "a b",
                                          "<script>",
                                          "~",
                                          std::string(199, 'z') + "/"};
  std::set<std::string> seen;
  for (const auto& n : names) {
    std::string f = file_name_for(n);
    EXPECT_FALSE(f.empty());
    EXPECT_EQ(f.find('/'), std::string::npos) << f;
    EXPECT_EQ(f.find('\0'), std::string::npos) << f;
    EXPECT_NE(f, ".");
    EXPECT_NE(f, "..");
    EXPECT_NE(f[0], '.') << f;
    EXPECT_LE(f.size(), kMaxFileNameStem) << f;
    for (unsigned char c : f)
      EXPECT_TRUE(std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '%' || c == '~') << f;
    EXPECT_TRUE(seen.insert(f).second) << "two names share the file " << f;
    if (n.size() < 60) {
      EXPECT_EQ(name_of_file(f), n);
    }
  }
  EXPECT_EQ(file_name_for("gpucts_collectives_w2"), "gpucts_collectives_w2");
  EXPECT_THROW(file_name_for(""), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Output files

using OutputTest = Scratch;

TEST_F(OutputTest, AFileIsReplacedWholeAndNoTemporaryIsLeft) {
  fs::path f = dir() / "out.json";
  put(f, "old");
  write_file_atomic(f.string(), "new content");
  EXPECT_EQ(slurp(f), "new content");
  for (const auto& e : fs::directory_iterator(dir())) EXPECT_EQ(e.path().filename(), "out.json");
}

// Files that belong together (report.md, .html, .json) are written all or none: a target that
// cannot be written leaves every other one as it was, and no temporary file behind.
TEST_F(OutputTest, FilesWrittenTogetherAreAllOrNone) {
  put(dir() / "a.md", "old a");
  fs::create_directory(dir() / "b.html");  // a directory where a file should go
  EXPECT_THROW(write_files_atomic({{(dir() / "a.md").string(), "new a"},
                                   {(dir() / "b.html").string(), "new b"},
                                   {(dir() / "c.json").string(), "new c"}}),
               OutputError);
  EXPECT_EQ(slurp(dir() / "a.md"), "old a");
  EXPECT_FALSE(fs::exists(dir() / "c.json"));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir())) ++entries;
  EXPECT_EQ(entries, 2u) << "a temporary file was left behind";
  fs::remove(dir() / "b.html");
  write_files_atomic({{(dir() / "a.md").string(), "new a"}, {(dir() / "b.html").string(), "new b"}});
  EXPECT_EQ(slurp(dir() / "a.md"), "new a");
  EXPECT_EQ(slurp(dir() / "b.html"), "new b");
}

TEST_F(OutputTest, NothingIsWrittenThroughASymbolicLink) {
  fs::path victim = dir() / "victim";
  put(victim, "precious");
  fs::create_symlink(victim, dir() / "link.xml");
  EXPECT_THROW(write_file_atomic((dir() / "link.xml").string(), "x"), OutputError);
  // The predictable "<path>.tmp" of old: a link there is neither followed nor replaced.
  fs::create_symlink(victim, dir() / "out.xml.tmp");
  write_file_atomic((dir() / "out.xml").string(), "report");
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_EQ(slurp(dir() / "out.xml"), "report");
  EXPECT_TRUE(fs::is_symlink(dir() / "out.xml.tmp"));
  EXPECT_THROW(write_file_atomic(dir().string(), "x"), OutputError);
  EXPECT_THROW(write_file_atomic("/dev/null", "x"), OutputError);  // never replaced by a file
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_EQ(open_output_stream((dir() / "link.xml").string(), O_APPEND), -1);
  EXPECT_EQ(slurp(victim), "precious");
}

// ---------------------------------------------------------------------------------------------
// Reading input

using InputTest = Scratch;

TEST_F(InputTest, AFifoWithoutWriterEndsAtTheDeadlineAndOneWithAWriterIsRead) {
  fs::path fifo = dir() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  try {
    read_input_file(fifo.string(), 1 << 20, 0.3);
    ADD_FAILURE() << "read a FIFO that has no writer";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(fifo.string()), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0);
  std::thread writer([&] { std::ofstream(fifo) << "{\"a\": 1}"; });
  EXPECT_EQ(read_input_file(fifo.string(), 1 << 20, 10), "{\"a\": 1}");
  writer.join();
}

TEST_F(InputTest, DevicesDirectoriesAndOversizedFilesAreRefusedNamingThem) {
  for (const std::string& p : std::vector<std::string>{"/dev/zero", "/dev/urandom", dir().string()}) {
    try {
      read_input_file(p);
      ADD_FAILURE() << "read " << p;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(p + ":", 0), 0u) << e.what();
    }
  }
  put(dir() / "big", std::string(5000, ' '));
  EXPECT_THROW(read_input_file((dir() / "big").string(), 4096), InputError);
  EXPECT_EQ(read_input_file((dir() / "big").string(), 5000).size(), 5000u);
}

struct BadJson {
  const char* name;
  std::string text;
  const char* where;  // "line:column"
  const char* what;
};

void PrintTo(const BadJson& c, std::ostream* os) { *os << c.name; }
class JsonRefused : public ::testing::TestWithParam<BadJson> {};

TEST_P(JsonRefused, OneLineNamingTheOriginLineAndColumn) {
  const auto& c = GetParam();
  try {
    parse_json(c.text, "in.json");
    FAIL() << "accepted " << c.name;
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind(std::string("in.json:") + c.where + ": malformed JSON: ", 0), 0u) << m;
    EXPECT_NE(m.find(c.what), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_LT(m.size(), 300u) << "a message that echoes the input";
  }
}

const BadJson kBadJson[] = {
    {"duplicate_key", "{\"host\": \"a\",\n \"host\": \"b\"}", "2:2", "duplicate key \"host\""},
    {"nested_duplicate", "{\"a\": {\"x\": 1, \"x\": 1}}", "1:16", "duplicate key"},
    {"too_deep", std::string(300, '[') + std::string(300, ']'), "1:257", "nested deeper than 256"},
    {"very_deep", std::string(200000, '{'), "1:2", "expected a quoted object key"},
    {"very_deep_arrays", std::string(200000, '['), "1:257", "nested deeper"},
    {"newlines_then_bad_token", std::string(3000000, '\n') + "x", "3000001:1",
     "expected a JSON value, found 'x'"},
    {"truncated", "{\"a\": [1, 2", "1:12", "not closed (truncated?)"},
    {"trailing", "{} {}", "1:4", "content after the JSON value"},
    {"empty", "", "1:1", "empty input"},
    {"huge_number", "[1e999]", "1:2", "out of range"},
    {"leading_zero", "[07]", "1:3", "must not start with 0"},
    {"bad_utf8", "[\"\xff\"]", "1:3", "invalid UTF-8"},
    {"lone_surrogate", "[\"\\udc00\"]", "1:9", "low surrogate"},
    {"control_char", "[\"a\tb\"]", "1:4", "control character"},
    {"nan", "[NaN]", "1:2", "expected a JSON value"},
    {"single_quotes", "{'a': 1}", "1:2", "expected a quoted object key"},
};
INSTANTIATE_TEST_SUITE_P(Inputs, JsonRefused, ::testing::ValuesIn(kBadJson),
                         [](const auto& i) { return std::string(i.param.name); });

TEST(JsonReader, ReadsWhatNlohmannReadsForEveryValidDocument) {
  const std::vector<std::string> docs = {
      "{\"a\": [1, -2, 3.5, 1e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"], \"b\": {}}",
      "\xEF\xBB\xBF[18446744073709551615, -9223372036854775808, 18446744073709551616, 0, -0]",
      "  \"just a string\"  ", "[[[[[]]]]]", "{\"\": \"empty key\"}"};
  for (const auto& d : docs) {
    auto mine = parse_json(d, "doc");
    auto theirs = nlohmann::json::parse(d);
    EXPECT_EQ(mine, theirs) << d;
    EXPECT_EQ(mine.dump(), theirs.dump()) << d;
  }
  // Integers keep nlohmann's types: unsigned when non-negative, signed when negative.
  EXPECT_TRUE(parse_json("[5]", "d")[0].is_number_unsigned());
  EXPECT_TRUE(parse_json("[-5]", "d")[0].is_number_integer());
  EXPECT_NO_THROW(parse_json(std::string(256, '[') + std::string(256, ']'), "d"));
}

// ---------------------------------------------------------------------------------------------
// No shell: the probe's interpreters

fs::path fake_python(const fs::path& dir) {
  fs::create_directories(dir);
  fs::path py = dir / "python3";
  put(py, "#!/bin/sh\necho '{\"torch\": {\"version\": \"2.9.1\", \"cuda\": \"12.8\"}}'\n");
  fs::permissions(py, fs::perms::owner_all);
  return py;
}

TEST_F(SpawnTest, ThePythonProbeWorksFromAPathWithSpacesQuotesAndSemicolonAndRunsNothingElse) {
  REQUIRE_CLI();
  fs::path venv = dir() / "my venv 'q' \"dq\" ; touch MARKER #" / "bin";
  fs::path py = fake_python(venv);
  auto r = run({gpucts(), "fingerprint", "--python", py.string()}, {}, dir().string());
  ASSERT_TRUE(r.ok()) << r.describe() << "\n" << r.output;
  auto j = json_in(r.output);
  ASSERT_TRUE(j.is_object() && j.contains("torch")) << r.output;
  EXPECT_EQ(j["torch"]["version"], "2.9.1");
  EXPECT_FALSE(fs::exists(dir() / "MARKER"));
}

TEST_F(SpawnTest, AShellCommandGivenAsPythonOrCudaHomeRunsNothing) {
  REQUIRE_CLI();
  auto r = run({gpucts(), "fingerprint", "--python", "true; touch MARKER #"},
               {"CUDA_HOME=x'; touch MARKER2; '", "PATH=/usr/bin:/bin"}, dir().string());
  ASSERT_TRUE(r.ok()) << r.describe() << "\n" << r.output;
  EXPECT_FALSE(fs::exists(dir() / "MARKER"));
  EXPECT_FALSE(fs::exists(dir() / "MARKER2"));
  // The interpreter the user named did not run: said on one line, naming it.
  EXPECT_NE(r.output.find("--python 'true; touch MARKER #' did not start"), std::string::npos) << r.output;
}

// One python for the probe and the Python suites: --python, else $GPUCTS_PYTHON, else python3.
// A bundle whose fingerprint read another interpreter's torch than its suites ran names the wrong
// torch, and the torch rules judge a stack nobody ran.

TEST_F(SpawnTest, GpuctsPythonPicksTheProbesInterpreterAsItPicksTheSuites) {
  REQUIRE_CLI();
  fs::path py = fake_python(dir() / "venv" / "bin");
  auto fp = run({gpucts(), "fingerprint"}, {"GPUCTS_PYTHON=" + py.string()}, dir().string());
  ASSERT_TRUE(fp.ok()) << fp.describe() << "\n" << fp.output;
  auto j = json_in(fp.output);
  ASSERT_TRUE(j.is_object() && j.contains("torch")) << fp.output;
  EXPECT_EQ(j["torch"]["version"], "2.9.1");
  auto check = run({gpucts(), "check"}, {"GPUCTS_PYTHON=" + py.string()}, dir().string());
  EXPECT_NE(check.output.find("torch 2.9.1"), std::string::npos) << check.output;
  // --python wins over the variable; a variable naming nothing that starts is said, naming it.
  auto named = run({gpucts(), "check", "--python", py.string()}, {"GPUCTS_PYTHON=/nonexistent/python"},
                   dir().string());
  EXPECT_NE(named.output.find("torch 2.9.1"), std::string::npos) << named.output;
  auto missing = run({gpucts(), "check"}, {"GPUCTS_PYTHON=/nonexistent/python"}, dir().string());
  EXPECT_NE(missing.output.find("GPUCTS_PYTHON '/nonexistent/python' did not start"), std::string::npos)
      << missing.output;
  EXPECT_NE(missing.output.find("torch not seen"), std::string::npos) << missing.output;
}

TEST_F(SpawnTest, QualifyRunsItsSuitesWithThePythonThatProbedTorch) {
  REQUIRE_CLI();
  fake_python(dir() / "venv" / "bin");
  const fs::path abs = dir() / "venv" / "bin" / "python3";
  // The suite passes only where it is handed that interpreter, by absolute path (it runs elsewhere).
  put(dir() / "tests.json",
      nlohmann::json{{"kind", "ctestInfo"},
                     {"tests",
                      {{{"name", "py"},
                        {"command", {"/bin/sh", "-c", "test \"$GPUCTS_PYTHON\" = '" + abs.string() + "'"}}}}}}
          .dump());
  auto r = run({gpucts(), "qualify", "--python", "venv/bin/python3", "--tests-json", "tests.json", "--output",
                "bundle"},
               {"GPUCTS_PYTHON=/nonexistent/python"}, dir().string());
  EXPECT_EQ(r.exit_code.value_or(-1), 0) << r.describe() << "\n" << r.output;
  bool torch_seen = false;
  for (const auto& f : fs::directory_iterator(dir() / "bundle" / "fingerprints")) {
    auto j = nlohmann::json::parse(slurp(f.path()), nullptr, false);
    torch_seen = torch_seen || (j.is_object() && j.contains("torch") && j["torch"]["version"] == "2.9.1");
  }
  EXPECT_TRUE(torch_seen) << "the bundle's fingerprint does not name the torch of --python";
  // A relative GPUCTS_PYTHON reaches the suites made absolute too.
  auto by_env = run({gpucts(), "qualify", "--tests-json", "tests.json", "--output", "bundle2"},
                    {"GPUCTS_PYTHON=venv/bin/python3"}, dir().string());
  EXPECT_EQ(by_env.exit_code.value_or(-1), 0) << by_env.describe() << "\n" << by_env.output;
}

// ---------------------------------------------------------------------------------------------
// Names from outside in file names: suites, gpucts qualify, report and journal-to-junit

TEST(FileNames, ASuiteWritesItsJournalInsideTheFolderWhateverItsName) {
  ScratchDir d("hardening-journal");
  fs::path jdir = fs::path(d.path()) / "journal";
  fs::create_directories(jdir);
  for (const std::string name : {"../escaped", "/tmp/gpucts-absolute-escape", "a/b"}) {
    auto r = run({self_exe(), "--gtest_also_run_disabled_tests", "--gtest_filter=DISABLED_Fixture.Passes"},
                 {"GPUCTS_TEST_NAME=" + name, "GPUCTS_JOURNAL_DIR=" + jdir.string()});
    EXPECT_TRUE(r.ok()) << name << ": " << r.describe() << "\n" << r.output;
    EXPECT_TRUE(fs::exists(jdir / (file_name_for(name) + ".jsonl"))) << name;
  }
  EXPECT_FALSE(fs::exists(fs::path(d.path()) / "escaped.jsonl"));
  EXPECT_FALSE(fs::exists("/tmp/gpucts-absolute-escape.jsonl"));
  auto runs = read_journal_dir(jdir.string());
  std::set<std::string> tests;
  for (const auto& r : runs) tests.insert(r.test);
  EXPECT_TRUE(tests.count("../escaped")) << "the journal reader gives the name back";
}

nlohmann::json entry(const std::string& name, std::vector<std::string> cmd,
                     std::vector<std::string> env = {}) {
  return {{"name", name},
          {"command", cmd},
          {"properties",
           {{{"name", "LABELS"}, {"value", {"cpu"}}},
            {{"name", "ENVIRONMENT"}, {"value", env}},
            {{"name", "TIMEOUT"}, {"value", 60}}}}};
}

std::string tests_json(const std::vector<nlohmann::json>& entries) {
  return nlohmann::json{{"kind", "ctestInfo"}, {"tests", entries}}.dump(2);
}

class QualifyTest : public Scratch {
 protected:
  proc::Result qualify(const std::vector<nlohmann::json>& entries, const std::string& out,
                       std::vector<std::string> extra = {}) {
    put(dir() / "tests.json", tests_json(entries));
    std::vector<std::string> argv{gpucts(),
                                  "qualify",
                                  "--no-python",
                                  "--tests-json",
                                  (dir() / "tests.json").string(),
                                  "--output",
                                  (dir() / out).string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv, {}, dir().string(), 300);
  }
  std::vector<std::string> version_cmd() { return {version_binary(), "--gtest_filter=*Parse*"}; }
};

TEST_F(QualifyTest, HostileNamesWriteNothingOutsideTheOutputFolder) {
  REQUIRE_CLI();
  fs::create_directories(dir() / "sub");
  put(dir() / "sub" / "keep.txt", "untouched");
  const std::string abs = "/tmp/gpucts-hardening-escape-" + std::to_string(::getpid());
  auto before = tree(dir());
  auto r =
      qualify({entry("../../escape", version_cmd()), entry(abs, version_cmd()), entry("a/b", version_cmd()),
               entry(std::string(300, 'n'), version_cmd()), entry("..", version_cmd())},
              "out");
  ASSERT_EQ(r.exit_code, 0) << r.describe() << "\n" << r.output;
  auto after_qualify = tree(dir(), dir() / "out");
  after_qualify.erase("out");
  auto expected = before;
  expected["tests.json"] = after_qualify["tests.json"];  // written by this test just before the run
  EXPECT_EQ(after_qualify, expected);
  for (const char* suffix : {"", ".jsonl", ".log", ".xml", ".premature"})
    EXPECT_FALSE(fs::exists(abs + suffix)) << abs << suffix;
  auto b = bundle::load((dir() / "out").string());
  EXPECT_EQ(b.manifest.suites.size(), 5u);
  for (const auto& s : b.manifest.suites)
    EXPECT_STREQ(bundle::suite_status_name(s.status), "passed") << s.name << ": " << s.reason;

  // report --render and report --output, journal-to-junit: again nothing outside their outputs.
  auto before_report = tree(dir(), dir() / "rendered");
  auto render = run(
      {gpucts(), "report", "--render", (dir() / "out").string(), "--output", (dir() / "rendered").string()});
  EXPECT_EQ(render.exit_code, 0) << render.output;
  auto diff = run({gpucts(), "report", "--baseline", (dir() / "out").string(), "--candidate",
                   (dir() / "out").string(), "--output", (dir() / "rendered" / "diff").string()});
  EXPECT_EQ(diff.exit_code, 0) << diff.output;
  auto junit = run({gpucts(), "journal-to-junit", "--journal-dir", (dir() / "out" / "journal").string(),
                    "--output", (dir() / "rendered" / "journals.xml").string()});
  EXPECT_EQ(junit.exit_code, 0) << junit.output;
  auto after_report = tree(dir(), dir() / "rendered");
  after_report.erase("rendered");
  before_report.erase("rendered");
  EXPECT_EQ(after_report, before_report);
}

TEST_F(QualifyTest, TheHtmlSummaryEscapesEverythingThatCameFromOutside) {
  REQUIRE_CLI();
  const std::string script = "<script>alert(1)</script>";
  nlohmann::json fp = {{"schema", "gpucts.fingerprint/1"},
                       {"host", "host" + script},
                       {"env", {{"NCCL_SOCKET_IFNAME", "eth" + script}}},
                       {"compiler", {{"gcc", script}}}};
  put(dir() / "other.json", fp.dump());
  auto r = qualify({entry("name" + script, {self_exe(), "--gtest_also_run_disabled_tests",
                                            "--gtest_filter=DISABLED_Fixture.FailsWithScript"})},
                   "out", {"--fingerprint", (dir() / "other.json").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::string html = slurp(dir() / "out" / "summary.html");
  ASSERT_FALSE(html.empty());
  std::string lower = html;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  EXPECT_EQ(lower.find("<script"), std::string::npos) << "unescaped <script> in summary.html";
  for (const char* escaped : {"name&lt;script&gt;alert(1)&lt;/script&gt;", "host&lt;script&gt;",
                              "&lt;script&gt;alert(&apos;message&apos;)&lt;/script&gt;"})
    EXPECT_NE(html.find(escaped), std::string::npos) << escaped;
  // The Markdown summary and the bundle's JSON carry the same text, and read back.
  EXPECT_NO_THROW(bundle::load((dir() / "out").string()));
}

// ---------------------------------------------------------------------------------------------
// Output files of the command line

TEST_F(OutputTest, TheCliRefusesAnOutputThatIsASymbolicLink) {
  REQUIRE_CLI();
  fs::path victim = dir() / "victim";
  put(victim, "precious");
  fs::create_symlink(victim, dir() / "junit.xml");
  fs::create_symlink(victim, dir() / "fp.json");
  fs::create_directories(dir() / "journal");
  auto j = run({gpucts(), "journal-to-junit", "--journal-dir", (dir() / "journal").string(), "--output",
                (dir() / "junit.xml").string()});
  EXPECT_EQ(j.exit_code, 2) << j.output;
  EXPECT_NE(j.output.find("symbolic link"), std::string::npos) << j.output;
  auto f = run({gpucts(), "fingerprint", "--no-python", "--output", (dir() / "fp.json").string()});
  EXPECT_EQ(f.exit_code, 2) << f.output;
  EXPECT_EQ(slurp(victim), "precious");
}

// ---------------------------------------------------------------------------------------------
// Fingerprints, versions, CSV tables, options

TEST(Fingerprint, OutOfRangeNumbersAndOverlongVersionsAreRefusedNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"schema":"gpucts.fingerprint/1","rank":4294967296})", "field 'rank'"},
      {R"({"schema":"gpucts.fingerprint/1","rank":-1})", "field 'rank'"},
      {R"({"schema":"gpucts.fingerprint/1","gpus":[{"index":4294967296}]})", "field 'gpus[0].index'"},
      {R"({"schema":"gpucts.fingerprint/1","shm_bytes":18446744073709551615})", "field 'shm_bytes'"},
      {R"({"schema":"gpucts.fingerprint/1","nccl":{"runtime":"2.28.3.4.5"}})", "field 'nccl.runtime'"},
      {R"({"schema":"gpucts.fingerprint/1","cuda_runtime":"13.0.1.2"})", "field 'cuda_runtime'"},
      {R"({"schema":"gpucts.fingerprint/1","driver":{"version":"580.1.2.3.4"}})", "field 'driver.version'"},
      {R"({"schema":"gpucts.fingerprint/1","host":"a","host":"b"})", "duplicate key"},
      // Integer codes whose major has more than two digits (printed as "NCCL 922337203685477.58.7").
      {R"({"schema":"gpucts.fingerprint/1","nccl":{"runtime":9223372036854775807}})", "field 'nccl.runtime'"},
      {R"({"schema":"gpucts.fingerprint/1","nccl":{"runtime":2147483647}})", "field 'nccl.runtime'"},
      {R"({"schema":"gpucts.fingerprint/1","nccl":{"header":"2147483647"}})", "field 'nccl.header'"},
      {R"({"schema":"gpucts.fingerprint/1","cuda_runtime":1000000})", "field 'cuda_runtime'"},
      {R"({"schema":"gpucts.fingerprint/1","gpus":[{"memory_mib":-1}]})", "field 'gpus[0].memory_mib'"},
      // An overlong version is quoted cut, so the line stays readable.
      {R"({"schema":"gpucts.fingerprint/1","torch":{"version":"2.)" + std::string(5000, '1') + R"("}})",
       "field 'torch.version'"},
  };
  for (const auto& [text, what] : bad) {
    try {
      parse_fingerprint(text, "fp.json");
      ADD_FAILURE() << "accepted " << text;
    } catch (const FingerprintError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("fp.json:", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_LT(std::string(e.what()).size(), 300u) << e.what();
    }
  }
  EXPECT_EQ(parse_fingerprint(R"({"schema":"gpucts.fingerprint/1","rank":2147483647})", "x").rank,
            2147483647);
  EXPECT_NO_THROW(Version::parse("9.1.0.70"));  // cuDNN has four parts
  EXPECT_EQ(Version::from_code(22809, VersionKind::Nccl).release_str(3), "2.28.9");
  EXPECT_EQ(Version::from_code(999999, VersionKind::Nccl).release_str(3), "99.99.99");
  EXPECT_THROW(Version::from_code(1000000, VersionKind::Nccl), VersionError);
  EXPECT_THROW(Version::from_code(100LL << 32, VersionKind::TorchNccl), VersionError);
  EXPECT_THROW(Version::parse("2.28.3.4", VersionKind::Nccl), VersionError);
}

TEST(CheckCli, DeepEndlessAndMissingFingerprintsExitTwoWithOneLine) {
  REQUIRE_CLI();
  ScratchDir d("hardening-check");
  fs::path deep = fs::path(d.path()) / "deep.json";
  put(deep, "{\"schema\":\"gpucts.fingerprint/1\",\"x\":" + std::string(200000, '[') +
                std::string(200000, ']') + "}");
  fs::path fifo = fs::path(d.path()) / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::path code = fs::path(d.path()) / "code.json";
  put(code, R"({"schema":"gpucts.fingerprint/1","nccl":{"runtime":9223372036854775807}})");
  for (const std::string& f : {deep.string(), std::string("/dev/zero"), code.string()}) {
    auto r = run({gpucts(), "check", "--fingerprint", f});
    EXPECT_EQ(r.exit_code, 2) << f << ": " << r.describe() << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_NE(r.output.find(f + ":"), std::string::npos) << r.output;
  }
}

TEST(CheckCli, ANonUtf8NcclValueIsNamedAndTheJsonStaysValid) {
  REQUIRE_CLI();
  for (const std::vector<std::string>& args : {std::vector<std::string>{"fingerprint", "--no-python"},
                                               std::vector<std::string>{"check", "--json"}}) {
    std::vector<std::string> argv{gpucts()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(argv, {"NCCL_HARDENING_TEST=ab\xff"
                        "cd"});
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.describe() << "\n" << r.output;
    EXPECT_NE(r.output.find("NCCL_HARDENING_TEST: not valid UTF-8"), std::string::npos) << r.output;
    EXPECT_FALSE(json_in(r.output).is_discarded()) << r.output;
  }
}

TEST(MatrixCsv, AHeaderWithoutRowsIsRefusedNamingTheFile) {
  try {
    parse_csv("# only a comment\nkey,source\n\n", "torch.csv", {"key", "source"}, {});
    FAIL() << "accepted a table without rows";
  } catch (const MatrixError& e) {
    EXPECT_STREQ(e.what(), "torch.csv:2: a header and no data rows (truncated file?)");
  }
}

TEST(Thresholds, EveryCorruptFileIsRefusedNamingTheFileAndLine) {
  ScratchDir d("hardening-bw");
  const std::string head =
      "gpu,link,nvls,world_size,collective,placement,min_bytes,metric,expected,tolerance_pct,source\n";
  const std::vector<std::pair<std::string, int>> bad = {
      {head + "any,none,any,1e300,AllReduce,any,1G,busbw_gbps,1,3,src\n", 2},
      {head + "any,none,any,2.5,AllReduce,any,1G,busbw_gbps,1,3,src\n", 2},
      {head + "any,none,any,1,AllReduce,any,1G,busbw_gbps,nan,3,src\n", 2},
      {head + "any,none,any,1,AllReduce,any,1G,busbw_gbps,1,3\n", 2},
      {head + "any,none,any,1,AllReduce,any,99999999999999999999G,busbw_gbps,1,3,src\n", 2},
      {head + "any,none,\"any,1,AllReduce\n", 2},
      {head + "any,none,any,1,AllReduce,any,1G,busbw_gbps,1e-300,3,src\n", 2},
      {head + "any,none,any,1,AllReduce,any,1G,algbw_vs_copy,0.9,99.9999,src\n", 2},
      {head + "any,none,any,1,AllReduce,any,1G,busbw_gbps,100,3,a\nany,none,any,1,AllReduce,any,1G,busbw_"
              "gbps,1,3,b\n",
       3},
      {head + "any,none,any,any,AllReduce,any,1024M,busbw_gbps,100,3,a\nany,none,any,any,AllReduce,any,1G,"
              "busbw_gbps,1,3,b\n",
       3},
      {head, 1},
      {"gpu,link\n", 1},
      {std::string("\0\0\0", 3), 1},
  };
  int k = 0;
  for (const auto& [text, line] : bad) {
    fs::path f = fs::path(d.path()) / ("t" + std::to_string(k++) + ".csv");
    put(f, text);
    try {
      bw::load_thresholds_file(f.string());
      ADD_FAILURE() << "accepted " << text;
    } catch (const bw::BandwidthError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(f.string() + ":" + std::to_string(line) + ": ", 0), 0u)
          << e.what();
    }
  }
  try {
    bw::load_thresholds_file(d.path());
    ADD_FAILURE() << "read a directory";
  } catch (const bw::BandwidthError& e) {
    EXPECT_NE(std::string(e.what()).find(d.path() + ": is a directory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("GPUCTS_BW_THRESHOLDS"), std::string::npos) << e.what();
  }
}

// A suite list from outside (tests.json)
TEST_F(QualifyTest, ABadSuiteListExitsTwoNamingTheEntryAndWritesNothing) {
  REQUIRE_CLI();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"tests":[{"name":"a","command":[1,2]}]})", "tests[0].command: expected an array of strings"},
      {R"({"tests":[{"name":"a","command":["x"],"properties":[{"name":"LABELS","value":[3]}]}]})",
       "tests[0].properties[0] (LABELS): expected an array of strings"},
      {R"({"tests":[{"name":"a","command":["x"],"properties":[{"name":"TIMEOUT","value":"soon"}]}]})",
       "tests[0].properties[0] (TIMEOUT)"},
      {R"({"tests":[{"name":"a\u001b[2Jb","command":["x"]}]})", "control characters"},
      {R"({"tests":[],"tests":[]})", "duplicate key"},
      {"{\"tests\":" + std::string(100000, '[') + "}", "nested deeper"},
  };
  int k = 0;
  for (const auto& [text, what] : bad) {
    fs::path tj = dir() / ("bad" + std::to_string(k) + ".json");
    put(tj, text);
    fs::path out = dir() / ("out" + std::to_string(k++));
    auto r = run({gpucts(), "qualify", "--no-python", "--tests-json", tj.string(), "--output", out.string()});
    EXPECT_EQ(r.exit_code, 2) << text.substr(0, 100) << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_NE(r.output.find(tj.string()), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out));
  }
}

// ---------------------------------------------------------------------------------------------
// XML and JUnit

TEST(Xml, DeepNestingIsMalformedNotACrash) {
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += "<a>";
  try {
    xml::parse(deep, "deep.xml");
    FAIL() << "accepted 20000 levels";
  } catch (const xml::XmlError& e) {
    EXPECT_NE(std::string(e.what()).find("deep.xml:1:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nested deeper than 256"), std::string::npos) << e.what();
  }
}

TEST(Junit, AHugeMessageIsCutSoTheFileStaysReadable) {
  junit::Case c{"gpucts_x", "S", "n", junit::Status::failed, "short", std::string(20 << 20, 'x'), 0};
  std::string text = junit::write({c}, "run");
  EXPECT_LT(text.size(), std::size_t{2} << 20);
  auto cases = junit::read(xml::parse(text, "w"), "w", "");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_NE(cases[0].detail.find("[gpucts: message cut, "), std::string::npos);
}

// A 20 MB case or suite name (libxml2 refuses such an attribute) is cut too; two long names that
// differ only past the cut stay two cases.
TEST(Junit, AHugeCaseNameIsCutAndStaysDistinct) {
  const std::string head(20 << 20, 'n');
  junit::Case a{"gpucts_x", std::string(10 << 20, 's'), head + "a", junit::Status::passed, "", "", 0};
  junit::Case b{"gpucts_x", std::string(10 << 20, 's'), head + "b", junit::Status::passed, "", "", 0};
  std::string text = junit::write({a, b}, "run");
  EXPECT_LT(text.size(), std::size_t{64} << 10);
  auto cases = junit::read(xml::parse(text, "w"), "w", "");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_LE(cases[0].name.size(), kMaxReportName);
  EXPECT_NE(cases[0].name.find(" more bytes, #"), std::string::npos) << cases[0].name.substr(4000);
  EXPECT_NE(cases[0].name, cases[1].name);
  EXPECT_EQ(cap_report_name("AllReduce/f32_sum_1048576"), "AllReduce/f32_sum_1048576");
}

// ---------------------------------------------------------------------------------------------
// Options

TEST(Options, NanAndInfinityAreNotNumbers) {
  REQUIRE_CLI();
  for (const char* v : {"nan", "NaN", "inf", "-inf", "1e999"}) {
    auto r = run({gpucts(), "report", "--baseline", "/", "--candidate", "/", "--tolerance", v});
    EXPECT_EQ(r.exit_code, 2) << v << ": " << r.output;
    EXPECT_NE(r.output.find("--tolerance"), std::string::npos) << r.output;
  }
}

// ---------------------------------------------------------------------------------------------
// Runs that did not end normally are never a pass

// Journals of a process killed between cases and after its last case.
std::string journal_lines(bool end_program, int planned, const std::vector<std::string>& finished) {
  std::string s =
      "{\"event\":\"program_start\",\"cases\":" + std::to_string(planned) + ",\"time_ms\":1000}\n";
  double t = 1001;
  for (const auto& c : finished) {
    s += "{\"event\":\"start\",\"case\":\"" + c + "\",\"time_ms\":" + std::to_string(t++) + "}\n";
    s += "{\"event\":\"end\",\"case\":\"" + c +
         "\",\"result\":\"passed\",\"time_ms\":" + std::to_string(t++) + "}\n";
  }
  if (end_program) s += "{\"event\":\"program_end\",\"time_ms\":" + std::to_string(t) + "}\n";
  return s;
}

TEST(JournalToJunit, AProcessKilledBetweenCasesOrAfterItsLastIsAnError) {
  REQUIRE_CLI();
  ScratchDir d("hardening-journal");
  fs::path j = fs::path(d.path()) / "journal";
  fs::create_directories(j);
  put(j / "between.jsonl", journal_lines(false, 3, {"S.a"}));
  put(j / "after_last.jsonl", journal_lines(false, 2, {"S.a", "S.b"}));
  put(j / "fine.jsonl", journal_lines(true, 1, {"S.a"}));
  put(j / "odd.rank99999999999.jsonl", journal_lines(true, 1, {"S.a"}));  // no rank a launcher gives
  put(j / "deep.jsonl", std::string(100000, '[') + "\n" + journal_lines(true, 1, {"S.a"}));
  fs::path out = fs::path(d.path()) / "junit.xml";
  auto r = run({gpucts(), "journal-to-junit", "--journal-dir", j.string(), "--output", out.string()});
  // The JUnit is written; the journal with a rank beyond any rank makes it incomplete: exit 1.
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("odd.rank99999999999.jsonl: rank number 99999999999 is beyond any rank"),
            std::string::npos)
      << r.output;
  auto cases = junit::read_file(out.string(), "");
  std::map<std::string, std::string> status;
  for (const auto& c : cases)
    status[c.suite + "." + c.name] = std::string(junit::status_name(c.status)) + ": " + c.message;
  EXPECT_EQ(status["odd.journal"].rfind("error: ", 0), 0u) << status["odd.journal"];
  EXPECT_EQ(status["between.process_end"].rfind("error: did not end normally", 0), 0u)
      << status["between.process_end"];
  EXPECT_NE(status["between.process_end"].find("after case S.a (2 planned case(s) did not run)"),
            std::string::npos)
      << status["between.process_end"];
  EXPECT_EQ(status["after_last.process_end"].rfind("error:", 0), 0u) << status["after_last.process_end"];
  EXPECT_FALSE(status.count("fine.process_end"));
  EXPECT_FALSE(status.count("deep.process_end"));  // the deep line is a torn line, not the end
  auto root = xml::parse_file(out.string());
  EXPECT_NE(root.attr_or("errors", "0"), "0");
}

TEST_F(QualifyTest, AMissingBinaryOrASuiteOfZeroCasesIsNotAPass) {
  REQUIRE_CLI();
  // Writes a gtest XML with no case where --gtest_output says, and exits 0.
  const std::string zero =
      "p=${1#--gtest_output=xml:}; printf '<?xml version=\"1.0\"?>\\n<testsuites "
      "tests=\"0\"></testsuites>\\n' > \"$p\"";
  auto r = qualify(
      {entry("gpucts_version", version_cmd()), entry("missing", {(dir() / "no-such-binary").string()}),
       entry("zero", {"/bin/sh", "-c", zero, "sh", "--gtest_output=xml:x.xml"})},
      "out");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto b = bundle::load((dir() / "out").string());
  EXPECT_EQ(b.manifest.verdict, "fail");
  std::map<std::string, bundle::SuiteRun> by;
  for (const auto& s : b.manifest.suites) by[s.name] = s;
  EXPECT_STREQ(bundle::suite_status_name(by["gpucts_version"].status), "passed");
  EXPECT_STREQ(bundle::suite_status_name(by["missing"].status), "failed");
  EXPECT_NE(by["missing"].reason.find("not found"), std::string::npos) << by["missing"].reason;
  EXPECT_STREQ(bundle::suite_status_name(by["zero"].status), "failed");
  EXPECT_NE(by["zero"].reason.find("ran no case"), std::string::npos) << by["zero"].reason;
}

TEST_F(QualifyTest, DeepXmlFromASuiteIsRecordedAndTheBundleSurvives) {
  REQUIRE_CLI();
  const std::string deep =
      "p=${1#--gtest_output=xml:}; i=0; : > \"$p\"; while [ $i -lt 20000 ]; do printf '<a>'; "
      "i=$((i+1)); done > \"$p\"";
  auto r = qualify({entry("gpucts_version", version_cmd()),
                    entry("deep", {"/bin/sh", "-c", deep, "sh", "--gtest_output=xml:x.xml"})},
                   "out");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto b = bundle::load((dir() / "out").string());  // the bundle reads back
  for (const auto& s : b.manifest.suites)
    if (s.name == "deep") {
      EXPECT_STREQ(bundle::suite_status_name(s.status), "failed");
      EXPECT_NE(s.reason.find("nested deeper"), std::string::npos) << s.reason;
    }
  EXPECT_TRUE(fs::exists(dir() / "out" / "summary.html"));
}

// ---------------------------------------------------------------------------------------------
// Deadlines of a single-process suite

TEST(SingleProcessDeadlines, TheWatchdogEndsACaseThatRunsPastItAndNamesIt) {
  ScratchDir d("hardening-watchdog");
  auto t0 = std::chrono::steady_clock::now();
  auto r =
      run({self_exe(), "--gtest_also_run_disabled_tests", "--gtest_filter=DISABLED_Fixture.Spins"},
          {"GPUCTS_CTEST_TIMEOUT_S=3", "GPUCTS_JOURNAL_DIR=" + d.path(), "GPUCTS_TEST_NAME=spin"}, "", 60);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 124) << r.describe() << "\n" << r.output;
  EXPECT_LT(took, 10.0);
  std::string journal = slurp(fs::path(d.path()) / "spin.jsonl");
  EXPECT_NE(journal.find("\"event\":\"watchdog\""), std::string::npos) << journal;
  EXPECT_NE(journal.find("DISABLED_Fixture.Spins"), std::string::npos) << journal;
  auto runs = read_journal_dir(d.path());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(first_cause(runs[0]).what, "watchdog");
}

TEST(SingleProcessDeadlines, AMalformedDeadlineVariableExitsTwoNamingIt) {
  auto r = run({self_exe(), "--gtest_also_run_disabled_tests", "--gtest_filter=DISABLED_Fixture.Passes"},
               {"GPUCTS_WATCHDOG_S=soon"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("GPUCTS_WATCHDOG_S='soon'"), std::string::npos) << r.output;
}

// ---------------------------------------------------------------------------------------------
// Found by fuzzing (tests/fuzz; each input is also in its target's seed corpus)

TEST(FoundByFuzzing, AVersionNumberThatOverflowsIsRefused) {
  // The digit loop checked for overflow after multiplying (undefined, and the revision wrapped).
  EXPECT_THROW(Version::parse("13.0.88-9223372036854775809"), VersionError);
  EXPECT_THROW(Version::parse("9223372036854775808.1"), VersionError);
  EXPECT_EQ(*Version::parse("13.0.88-922337203685477580").package_revision, 922337203685477580L);
}

TEST(FoundByFuzzing, AnIntegerFieldHoldingAFloatOrTooLargeIsRefused) {
  bw::Run r;
  r.host = "h";
  r.nccl_version = "2.28.3";
  r.ctx = {"g", "l", "off", 1, std::nullopt};
  bw::Point p;
  p.collective = "AllReduce";
  p.bytes = 1024;
  p.time_us = bw::summarize({1.0});
  bw::compute_rates(p, BusFactor::all_reduce);
  r.points = {p};
  const nlohmann::json run = bw::to_json(r);
  ASSERT_NO_THROW(bw::run_from_json(run, "bw.json"));
  for (const nlohmann::json& bad :
       {nlohmann::json(2.01845e21), nlohmann::json(1.5), nlohmann::json(4294967296LL)}) {
    nlohmann::json j = run;
    j["points"][0]["iterations"] = bad;
    EXPECT_THROW(bw::run_from_json(j, "bw.json"), bw::BandwidthError) << bad;
  }
  nlohmann::json j = run;
  j["points"][0]["message"] = 5;  // was a library type_error, not the format's own error
  EXPECT_THROW(bw::run_from_json(j, "bw.json"), bw::BandwidthError);
}

// The smallest manifest that reads back: one suite with `total` cases, `done` of them run.
bundle::Manifest one_suite_manifest(int total, int done) {
  bundle::Manifest m;
  m.gpucts_version = "0";
  m.created = "now";
  m.verdict = "pass";
  m.suites.push_back(bundle::SuiteRun{
      "s", {"x"}, {}, bundle::SuiteStatus::passed, 0, std::nullopt, 1.0, {}, "", "", false, total, done, ""});
  return m;
}

TEST(FoundByFuzzing, FieldsOfTheWrongTypeAreTheFormatsOwnErrors) {
  try {
    parse_fingerprint(R"({"schema":"gpucts.fingerprint/1","interfaces":[{"name":"x","up":"yes"}]})",
                      "fp.json");
    ADD_FAILURE() << "accepted up: \"yes\"";
  } catch (const FingerprintError& e) {
    EXPECT_NE(std::string(e.what()).find("interfaces.x.up"), std::string::npos) << e.what();
  }
  const bundle::Manifest m = one_suite_manifest(1, 1);
  nlohmann::json j = bundle::to_json(m);
  j["suites"][0]["cases_total"] = "x";
  EXPECT_THROW(bundle::manifest_from_json(j, "manifest.json"), bundle::BundleError);
  j = bundle::to_json(m);
  j["tree"] = 3;
  EXPECT_THROW(bundle::manifest_from_json(j, "manifest.json"), bundle::BundleError);
  EXPECT_THROW(bundle::check_from_json({{"verdict", 1}}, "check.json"), bundle::BundleError);
  EXPECT_THROW(bundle::check_from_json({{"findings", {{{"severity", nullptr}}}}}, "check.json"),
               bundle::BundleError);
}

// Numbers a report reads and a gate may rest on are range-checked, each refusal naming the field:
// cases done above the total or negative, negative or absurd times, a time that is no number, a
// finding of a severity nothing counts, a check verdict other than pass or fail.
TEST(BundleFields, OutOfRangeCountsTimesAndSeveritiesAreRefusedNamingTheField) {
  const nlohmann::json good = bundle::to_json(one_suite_manifest(3, 2));
  EXPECT_NO_THROW(bundle::manifest_from_json(good, "manifest.json"));
  const std::vector<std::tuple<std::string, nlohmann::json, std::string>> bad = {
      {"/suites/0/cases_done", 4, "cases_done"},
      {"/suites/0/cases_done", -1, "cases_done"},
      {"/suites/0/cases_total", -3, "cases_total"},
      {"/suites/0/duration_s", -5.0, "duration_s"},
      {"/suites/0/duration_s", 1e300, "duration_s"},
      {"/suites/0/duration_s", "nan", "duration_s"},
      {"/elapsed_s", "abc", "elapsed_s"},
      {"/elapsed_s", -1.0, "elapsed_s"},
      {"/gpus_visible", -2, "gpus_visible"},
      {"/gpus_expected", -1, "gpus_expected"},
      {"/suites/0/gpus", -1, "gpus"},
  };
  for (const auto& [pointer, value, field] : bad) {
    nlohmann::json j = good;
    j[nlohmann::json::json_pointer(pointer)] = value;
    try {
      bundle::manifest_from_json(j, "manifest.json");
      ADD_FAILURE() << "accepted " << pointer << " = " << value;
    } catch (const bundle::BundleError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("manifest.json: ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("'" + field + "'"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  const nlohmann::json finding = {{"id", "x"},      {"severity", "error"}, {"subject", "s"},
                                  {"message", "m"}, {"source", "src"},     {"fix", "f"}};
  EXPECT_NO_THROW(bundle::check_from_json({{"verdict", "fail"}, {"findings", {finding}}}, "check.json"));
  for (const char* severity : {"fatal", "ERROR", ""}) {
    nlohmann::json f = finding;
    f["severity"] = severity;
    try {
      bundle::check_from_json({{"findings", {f}}}, "check.json");
      ADD_FAILURE() << "accepted severity '" << severity << "'";
    } catch (const bundle::BundleError& e) {
      EXPECT_NE(std::string(e.what()).find("check.json: findings[0].severity"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(bundle::check_from_json({{"verdict", "maybe"}}, "check.json"), bundle::BundleError);
  // A JUnit time that is no number of seconds makes the file unreadable, naming file and line.
  for (const char* time : {"nan", "abc", "-1", "inf", "1e300"}) {
    const std::string x = std::string("<testsuites><testsuite name=\"s\">\n<testcase name=\"c\" time=\"") +
                          time + "\"/></testsuite></testsuites>";
    try {
      junit::read(xml::parse(x, "g.xml"), "g.xml", "bin");
      ADD_FAILURE() << "accepted time " << time;
    } catch (const xml::XmlError& e) {
      EXPECT_NE(std::string(e.what()).find("g.xml:2: time '"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(
      junit::read(xml::parse(R"(<testsuite name="s"><testcase name="c" time="0.25"/></testsuite>)", "g.xml"),
                  "g.xml", "bin")
          .front()
          .time_s,
      0.25);
}

TEST(FoundByFuzzing, AnArchListEntryTooLargeForAVersionIsNotAnArchitecture) {
  // arch_cc threw VersionError out of the rules ("compute_1208888...8"): check exited 2 with a
  // message naming no file. Now it is not an architecture, like any other unknown entry.
  EXPECT_FALSE(arch_cc("compute_" + std::string(80, '8')));
  EXPECT_FALSE(arch_list_covers({"sm_" + std::string(40, '9')}, Version::parse("9.0")));
  Fingerprint fp = parse_fingerprint(
      R"({"schema":"gpucts.fingerprint/1","torch":{"version":"2.7.0+cu128","arch_list":["compute_1208888888888888888888888.8"]},
          "gpus":[{"index":0,"name":"g","cc":"9.0"}]})",
      "fp.json");
  EXPECT_NO_THROW(check_fingerprints(builtin_matrix(), {fp}));
}

TEST(FoundByFuzzing, AJournalTimeOutOfRangeIsShownNotCast) {
  // iso_time_ms cast 1.8e29 ms to time_t (undefined); counts and ranks were cast from doubles too.
  EXPECT_EQ(iso_time_ms(1.79628603345018e32).rfind("(time ", 0), 0u);
  EXPECT_EQ(iso_time_ms(-5).rfind("(time ", 0), 0u);
  EXPECT_EQ(iso_time_ms(0), "1970-01-01T00:00:00.000Z");
  RankJournal r = parse_journal(
      "j", 0,
      "{\"event\":\"program_start\",\"cases\":1e30,\"time_ms\":1e40}\n"
      "{\"event\":\"rank_info\",\"world_size\":-3e20}\n"
      "{\"event\":\"peer_lost\",\"blamed\":[4294967296,-1,2],\"exit_code\":1e3,\"time_ms\":2}\n");
  EXPECT_EQ(r.planned_cases, -1);
  EXPECT_EQ(r.world_size, 0);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].blamed, std::vector<int>{2});
  EXPECT_EQ(r.events[0].exit_code, -1);
  TestRun run;
  run.test = "t";
  run.ranks.push_back(r);
  EXPECT_NO_THROW(journals_to_junit({run}));
}

TEST(FoundByFuzzing, ATorchCudaTagTooLongIsNoTag) {
  // std::stol threw out_of_range for "+cu1233...38" out of the rules: check exited 2 saying "stol".
  EXPECT_FALSE(Version::parse("1.7.0+cu" + std::string(50, '3')).torch_cuda_tag());
  EXPECT_EQ(Version::parse("2.11.0+cu130").torch_cuda_tag()->str(), "13.0");
  Fingerprint fp = parse_fingerprint(
      R"({"schema":"gpucts.fingerprint/1","torch":{"version":"1.7.0+cu12333333333333333333333333333338"}})",
      "fp.json");
  EXPECT_NO_THROW(check_fingerprints(builtin_matrix(), {fp}));
}

TEST(FoundByFuzzing, AHugeDurationInAManifestRenders) {
  // The summary cast a suite's duration_s of 1.4e10 to int (undefined) to print h:mm:ss.
  bundle::Bundle b;
  b.manifest.gpucts_version = "0";
  b.manifest.verdict = "pass";
  b.manifest.elapsed_s = 1.40865e10;
  b.manifest.suites.push_back(bundle::SuiteRun{
      "s", {"x"}, {}, bundle::SuiteStatus::passed, 0, std::nullopt, 1e300, {}, "", "", false, 0, 0, ""});
  b.check = nlohmann::json{{"available", false}, {"reason", "none"}};
  std::string md;
  ASSERT_NO_THROW(md = doc::to_markdown(summary::build(b)));
  EXPECT_NE(md.find("596523:"), std::string::npos) << "clamped to the largest int of seconds";
  if (gpucts().empty()) return;
  auto q = run({gpucts(), "qualify", "--grace", "1e300", "--output", "/nonexistent/x"});  // cast to int too
  EXPECT_EQ(q.exit_code, 2) << q.output;
  EXPECT_NE(q.output.find("--timeout and --grace must be from 0 to"), std::string::npos) << q.output;
}

// ---------------------------------------------------------------------------------------------
// Bytes that are not UTF-8 where the bundle's JSON records them

TEST_F(QualifyTest, InvalidUtf8InASuitesXmlOrAnOutputPathNeverLosesTheBundle) {
  REQUIRE_CLI();
  // The suite's XML has a mismatched end tag whose name is not UTF-8; the reader's message quotes it.
  const std::string bad_xml =
      "p=${1#--gtest_output=xml:}; printf '<testsuites><a></\\377></testsuites>' > \"$p\"";
  auto r = qualify({entry("gpucts_version", version_cmd()),
                    entry("latin1", {"/bin/sh", "-c", bad_xml, "sh", "--gtest_output=xml:x"})},
                   "out");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto b = bundle::load((dir() / "out").string());
  bool seen = false;
  for (const auto& s : b.manifest.suites)
    if (s.name == "latin1") {
      seen = true;
      EXPECT_STREQ(bundle::suite_status_name(s.status), "failed");
      EXPECT_NE(s.reason.find("does not match"), std::string::npos) << s.reason;
    }
  EXPECT_TRUE(seen);
  auto refused = run({gpucts(), "qualify", "--no-python", "--tests-json", (dir() / "tests.json").string(),
                      "--output", (dir() / "out\xff").string()});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("not valid UTF-8"), std::string::npos) << refused.output;
  EXPECT_FALSE(fs::exists(dir() / "out\xff"));
}

}  // namespace
}  // namespace cts
