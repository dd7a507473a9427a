// The `gpucts` command line as CLI11 declares it: every option and switch described, every valued
// option checked by its kind (a bad value refused naming the option, exit 2, nothing written), the
// command list and each --help within 80 columns, `gpus --resource-spec` with no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"

namespace cts::cli {
namespace {

namespace fs = std::filesystem;
const ScratchDir kScratch("cli_options");
const std::string kBin = find_beside("gpucts").value_or("");

struct CliRun {
  int rc = -1;
  std::string out, err;
};

CliRun gpucts(const std::vector<std::string>& args) {
  std::vector<std::string> argv{kBin};
  argv.insert(argv.end(), args.begin(), args.end());
  proc::Options o;
  o.err = proc::Output::File;
  o.error_file = kScratch.path() + "/err";
  o.timeout_s = 60;
  proc::Result p = proc::run(argv, o);
  std::ifstream in(o.error_file);
  std::ostringstream err;
  err << in.rdbuf();
  return {p.exit_code.value_or(-1), p.output, err.str()};
}

#define REQUIRE_CLI()  \
  if (!kBin.empty()) { \
  } else               \
    GTEST_FAIL() << "gpucts not found beside this test binary"

// What CLI11 holds, not only the tables: every option a command declares has a description.
TEST(CliOptions, EveryOptionAndSwitchIsDescribed) {
  Cli cli;
  std::size_t options = 0;
  for (const CLI::App* sub :
       cli.app().get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
    EXPECT_FALSE(sub->get_description().empty()) << sub->get_name();
    for (const CLI::Option* o : sub->get_options()) {
      if (o->get_group().empty()) continue;  // the hidden positional catch-all
      EXPECT_FALSE(o->get_description().empty()) << sub->get_name() << " " << o->get_name();
      ++options;
    }
  }
  EXPECT_GE(options, 60u) << "every command's options (and -h, --version) were seen";
  std::size_t declared = 0;
  for (const Command& c : commands()) {
    for (const auto* list : {&c.spec->valued, &c.spec->flags})
      for (const Opt& o : *list) {
        EXPECT_FALSE(o.help.empty()) << c.name << " --" << o.name;
        ++declared;
      }
    for (const Opt& o : c.spec->valued)
      EXPECT_FALSE(o.value.empty()) << c.name << " --" << o.name << " names no value";
  }
  EXPECT_EQ(options, declared + 2 * commands().size()) << "-h and --version of each command besides its own";
}

TEST(CliOptions, EachKindRefusesWhatItIsNot) {
  auto opt = [](Kind k) { return Opt("x", "V", "h", k); };
  struct Case {
    Kind kind;
    std::vector<std::string> good, bad;
  };
  const std::string file = kScratch.path() + "/a-file";
  std::ofstream(file) << "x";
  const std::vector<Case> cases = {
      {Kind::count, {"0", "7", "4096"}, {"", "-1", "1.5", "x", " 3", "1e3", "9999999999"}},
      {Kind::positive, {"1", "8"}, {"0", "-2", "two", "00"}},
      {Kind::seconds, {"0", "0.5", "900", "1e300"}, {"-1", "nan", "inf", "-0.1", "1e999", "5s", ""}},
      {Kind::number, {"-3", "2.5", "25"}, {"nan", "NaN", "-inf", "1e999", "x"}},
      {Kind::file, {file}, {"", kScratch.path(), kScratch.path() + "/absent"}},
      {Kind::dir, {kScratch.path(), "."}, {"", file, kScratch.path() + "/absent"}},
      {Kind::text, {"", "anything at all"}, {}},
  };
  for (const auto& c : cases) {
    for (const auto& v : c.good) EXPECT_EQ(refusal(opt(c.kind), v), "") << "'" << v << "'";
    for (const auto& v : c.bad) EXPECT_NE(refusal(opt(c.kind), v), "") << "'" << v << "' accepted";
  }
  const Opt level("level", "L", "h", {"quick", "standard", "full"});
  EXPECT_EQ(refusal(level, "full"), "");
  EXPECT_EQ(refusal(level, "fast"), "'fast' is not one of quick, standard, full");
}

// The options as typed in the command tables: the kinds that matter to users.
TEST(CliOptions, TheTablesTypeTheirNumbersAndPaths) {
  auto kind_of = [](const char* command, const char* option) {
    for (const Command& c : commands())
      if (std::string(c.name) == command)
        for (const Opt& o : c.spec->valued)
          if (o.name == option) return o.kind;
    ADD_FAILURE() << command << " --" << option << " not declared";
    return Kind::text;
  };
  EXPECT_EQ(kind_of("qualify", "timeout"), Kind::seconds) << "0 means no limit";
  EXPECT_EQ(kind_of("qualify", "grace"), Kind::seconds);
  EXPECT_EQ(kind_of("qualify", "mpi-ranks"), Kind::positive);
  EXPECT_EQ(kind_of("qualify", "expect-gpus"), Kind::count);
  EXPECT_EQ(kind_of("qualify", "level"), Kind::choice);
  EXPECT_EQ(kind_of("qualify", "tests-json"), Kind::file);
  EXPECT_EQ(kind_of("report", "tolerance"), Kind::number);
  EXPECT_EQ(kind_of("report", "baseline"), Kind::dir);
  EXPECT_EQ(kind_of("campaign", "timeout"), Kind::seconds);
  EXPECT_EQ(kind_of("campaign", "ranks"), Kind::positive);
  EXPECT_EQ(kind_of("check", "fingerprint"), Kind::file);
  EXPECT_EQ(kind_of("journal-to-junit", "journal-dir"), Kind::dir);
}

// End to end: CLI11 refuses the value in one line naming the option, exit 2, before the command
// writes its output folder.
TEST(CliOptions, ABadValueIsRefusedBeforeAnythingIsWritten) {
  REQUIRE_CLI();
  const std::string out = kScratch.path() + "/out";
  const std::vector<std::vector<std::string>> bad = {
      {"qualify", "--timeout", "-1", "--output", out},
      {"qualify", "--grace", "nan", "--output", out},
      {"qualify", "--mpi-ranks", "0", "--output", out},
      {"qualify", "--expect-gpus", "many", "--output", out},
      {"qualify", "--level", "fast", "--output", out},
      {"qualify", "--tests-json", kScratch.path() + "/absent.json", "--output", out},
      {"campaign", "--nccl", "2.28.9", "--ranks", "x", "--output", out},
      {"campaign", "--nccl", "2.28.9", "--stop-after", "soon", "--output", out},
      {"report", "--baseline", kScratch.path(), "--candidate", kScratch.path(), "--tolerance", "inf",
       "--output", out},
      {"report", "--baseline", kScratch.path() + "/absent", "--candidate", kScratch.path(), "--output", out},
      {"journal-to-junit", "--journal-dir", kScratch.path() + "/absent", "--output", out},
  };
  for (const auto& args : bad) {
    const std::string option = *std::find_if(args.begin() + 1, args.end(), [&](const std::string& a) {
      return a.rfind("--", 0) == 0 && a != "--output" && a != "--nccl" &&
             (a != "--baseline" || args[2] != kScratch.path()) && a != "--candidate";
    });
    CliRun r = gpucts(args);
    EXPECT_EQ(r.rc, 2) << option << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("gpucts " + args[0] + ": " + option + ": ", 0), 0u) << r.err;
    EXPECT_EQ(r.out, "") << option;
    EXPECT_FALSE(fs::exists(out)) << "written before " << option << " was refused";
  }
}

// Bad input from a user's command line, end to end: exit 2, one line on standard error holding
// `says`, nothing on standard output, and `absent` (the output the command would have made) not
// there. Each row is a case that once printed several lines, a C++ exception's text, or wrote
// before refusing.
struct Refused {
  const char* name;
  std::vector<std::string> args;
  std::string says, absent;
};

TEST(CliOptions, EveryRefusalIsOneLineAndWritesNothing) {
  REQUIRE_CLI();
  const std::string d = kScratch.path() + "/refused";
  fs::create_directories(d);
  std::ofstream(d + "/a-file") << "x";
  const std::string out = d + "/out", fp = d + "/fp.json", file = d + "/a-file";
  const std::string long_name = d + "/" + std::string(5000, 'x');
  const std::string huge(100000, 'y');
  // A suite list of one suite that passes, and a bundle of it to render.
  const std::string tests = d + "/tests.json", bundle = d + "/bundle";
  std::ofstream(tests) << R"({"kind": "ctestInfo", "tests": [{"name": "t", "command": ["/bin/true"]}]})";
  ASSERT_EQ(gpucts({"qualify", "--no-python", "--tests-json", tests, "--output", bundle}).rc, 0);
  const std::vector<Refused> rows = {
      // Text from the command line that would start a line of its own.
      {"unknown_command_with_newline", {"x\nALL PASSED"}, "unknown command 'x\\nALL PASSED'", ""},
      {"unknown_option_with_newline", {"check", "--x\ny"}, "unknown option --x\\ny", ""},
      {"argument_with_escape", {"report", "a\x1b[2J"}, "unexpected argument 'a\\x1b[2J'", ""},
      {"output_path_with_newline",
       {"fingerprint", "--no-python", "--output", d + "/none\nPASS/fp.json"},
       "none\\nPASS/fp.json: cannot create a file beside it",
       ""},
      // A path too long to create: the cause is still on the line.
      {"overlong_output_path",
       {"fingerprint", "--no-python", "--output", long_name},
       "File name too long",
       ""},
      // Overlong values are quoted cut, so what is wrong with them is still on the line.
      {"overlong_bisect_case",
       {"campaign", "--bisect", huge, "--good", "2.27.3", "--bad", "2.28.9", "--output", out},
       "expected [BINARY/]SUITE.CASE",
       out},
      {"overlong_waiver", {"qualify", "--list", "--accept-known", huge}, "no such defect", ""},
      // An option that takes one value, given twice: which one would count?
      {"output_twice",
       {"fingerprint", "--no-python", "--output", fp, "--output", fp + "2"},
       "gpucts fingerprint: --output given 2 times: give it once",
       fp},
      {"tolerance_twice",
       {"report", "--baseline", d, "--candidate", d, "--tolerance", "5", "--tolerance", "9"},
       "--tolerance given 2 times",
       ""},
      {"campaign_label_twice",
       {"campaign", "--nccl", "2.28.9", "--label", "a", "--label", "b", "--output", out},
       "--label given 2 times",
       out},
      // Probe with a python and with none: which one would count?
      {"fingerprint_python_and_no_python",
       {"fingerprint", "--no-python", "--python", "python3", "--output", fp},
       "gpucts fingerprint: --python and --no-python exclude each other",
       fp},
      {"check_python_and_no_python",
       {"check", "--python", "python3", "--no-python"},
       "gpucts check: --python and --no-python exclude each other",
       ""},
      {"qualify_python_and_no_python",
       {"qualify", "--no-python", "--python", "python3", "--tests-json", tests, "--output", out},
       "gpucts qualify: --python and --no-python exclude each other",
       out},
      // report --render into a file: the folder cannot be made (was a std::filesystem message).
      {"render_into_a_file", {"report", "--render", bundle, "--output", file}, "cannot create " + file, ""},
      // campaign refuses what it is missing before it makes its folder.
      {"campaign_without_nccl",
       {"campaign", "--output", out},
       "--nccl VERSION[,VERSION...] is required",
       out},
      {"campaign_ranks_one",
       {"campaign", "--nccl", "2.28.9", "--ranks", "1", "--output", out},
       "--ranks '1': expected a number of ranks from 2 to 4096",
       out},
      // An upper bound said as one (it read as if the number were too small).
      {"campaign_ranks_too_many",
       {"campaign", "--nccl", "2.28.9", "--ranks", "5000", "--output", out},
       "--ranks '5000': expected a number of ranks from 2 to 4096",
       out},
      {"expect_gpus_too_many",
       {"qualify", "--list", "--expect-gpus", "5000"},
       "--expect-gpus '5000': expected a number from 0 to 4096",
       ""},
      {"campaign_bad_regex",
       {"campaign", "--nccl", "2.28.9", "--exclude-tests", "(", "--output", out},
       "--exclude-tests '(' is not a valid regular expression",
       out},
      {"bisect_without_ends",
       {"campaign", "--bisect", "S.c", "--output", out},
       "--good VERSION and --bad",
       out},
      {"bisect_bad_good",
       {"campaign", "--bisect", "S.c", "--good", "x1", "--bad", "2.28.9", "--output", out},
       "--good 'x1' is not a version",
       out},
      {"bisect_no_case",
       {"campaign", "--bisect", "S", "--good", "2.27.3", "--bad", "2.28.9", "--output", out},
       "--bisect 'S': expected [BINARY/]SUITE.CASE",
       out},
      // qualify's node files are checked before the suites run, not after.
      {"status_file_in_no_folder",
       {"qualify", "--no-python", "--tests-json", tests, "--output", out, "--status-file",
        d + "/none/status"},
       "--status-file: " + d + "/none/status: cannot create a file beside it",
       out},
      {"prom_is_a_folder",
       {"qualify", "--no-python", "--tests-json", tests, "--output", out, "--prom", d},
       "--prom: " + d + ": is a directory",
       out},
  };
  for (const Refused& row : rows) {
    CliRun r = gpucts(row.args);
    EXPECT_EQ(r.rc, 2) << row.name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << row.name << ": " << r.err;
    EXPECT_EQ(r.err.find("filesystem error"), std::string::npos) << row.name << ": " << r.err;
    EXPECT_NE(r.err.find(row.says), std::string::npos) << row.name << ": " << r.err << "wanted: " << row.says;
    EXPECT_EQ(r.out, "") << row.name;
    if (!row.absent.empty()) {
      EXPECT_FALSE(fs::exists(row.absent)) << row.name << ": written before refusing";
    }
  }
}

// Every line within 80 columns but a single word longer than that (a path).
void expect_wrapped(const std::string& text, const std::string& what) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    EXPECT_TRUE(line.size() <= 80 || line.find(' ', line.find_first_not_of(' ')) == std::string::npos)
        << what << ":\n"
        << line;
}

TEST(CliOptions, TheCommandListAndEachHelpAreWrapped) {
  REQUIRE_CLI();
  CliRun list = gpucts({"--help"});
  EXPECT_EQ(list.rc, 0) << list.err;
  expect_wrapped(list.out, "gpucts --help");
  for (const Command& c : commands()) {
    EXPECT_NE(list.out.find("\n  " + std::string(c.name) + " "), std::string::npos) << c.name << ":\n"
                                                                                    << list.out;
    CliRun h = gpucts({c.name, "--help"});
    EXPECT_EQ(h.rc, 0) << c.name;
    expect_wrapped(h.out, std::string(c.name) + " --help");
    for (const Opt& o : c.spec->valued)
      EXPECT_NE(h.out.find("--" + o.name + " " + o.value), std::string::npos) << o.name;
  }
  CliRun bare = gpucts({});
  EXPECT_EQ(bare.rc, 2);
  EXPECT_EQ(bare.err, list.out) << "gpucts alone prints the list on standard error";
  // A long description is broken beside its name, not run past the edge.
  EXPECT_EQ(wrap("aaa bbb ccc", 7), "aaa bbb\nccc");
  EXPECT_EQ(wrap("one\ntwo three", 5), "one\ntwo\nthree");
  EXPECT_EQ(reflow("usage: gpucts x [--a A] [--b B] [--c C]\nSome words\nhere. More.", 34),
            "usage: gpucts x [--a A] [--b B]\n                [--c C]\nSome words here. More.\n");
}

// With no GPU visible, `gpus --resource-spec F` writes no spec, says so in one line and exits 1
// (ctest's include file reads that as no GPU).
TEST(CliOptions, GpusResourceSpecWithNoGpuSaysSoAndFails) {
  REQUIRE_CLI();
  CliRun count = gpucts({"gpus"});
  ASSERT_EQ(count.rc, 0) << count.err;
  if (count.out != "0\n")
    GTEST_SKIP() << "GPUs are visible here (" << count.out << "): the no-GPU answer cannot be seen";
  const std::string spec = kScratch.path() + "/resources.json";
  CliRun r = gpucts({"gpus", "--resource-spec", spec});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(r.out, "0\n");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("no GPU visible"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(spec));
}

}  // namespace
}  // namespace cts::cli
