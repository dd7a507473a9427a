// `gpucts check` as a pipeline runs it: the built binary on fixture files (suites/data/check).
// Every bad input of the contract gives exit 2 and one line naming the file (and line/column for
// a parse error) with nothing on stdout; a failing fingerprint gives exit 1; --json has the
// contract's shape.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"

namespace cts {
namespace {

namespace fs = std::filesystem;
const std::string kData = test_data_dir() + "/check/";
const std::string kMatrix = matrix_data_dir();
// Scratch files (the broken matrix, captured output): a fresh temporary folder, never the build
// or install tree.
const ScratchDir kScratch("check_cli");
const std::string kWork = kScratch.path() + "/";
// gpucts beside this binary (<build>/cli or <prefix>/bin); empty when missing (the cases fail).
const std::string kBin = find_beside("gpucts").value_or("");

struct CliRun {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs gpucts with `args` (words separated by blanks: fixture paths have none), under a deadline.
CliRun gpucts(const std::string& args, const std::vector<std::string>& set_env = {}) {
  std::vector<std::string> argv{kBin};
  std::istringstream words(args);
  for (std::string w; words >> w;) argv.push_back(w);
  proc::Options o;
  o.set_env = set_env;
  o.err = proc::Output::File;
  o.error_file = (fs::path(kWork) / "err").string();
  o.timeout_s = 60;
  proc::Result p = proc::run(argv, o);
  CliRun r;
  r.rc = p.exit_code.value_or(-1);
  r.out = p.output;
  r.err = slurp(o.error_file);
  return r;
}

struct BadInput {
  const char* name;
  std::string args;
  const char* error;  // regex over stderr; it must be one line
};

const BadInput kBad[] = {
    {"missing_file", "check --fingerprint " + kData + "nope.json",
     "^gpucts check: .*/check/nope\\.json: cannot open for reading: No such file or directory\n$"},
    {"malformed_json", "check --fingerprint " + kData + "malformed.json",
     "^gpucts check: .*/check/malformed\\.json:3:11: malformed JSON: .*\n$"},
    {"empty_file", "check --fingerprint " + kData + "empty.json",
     "^gpucts check: .*/check/empty\\.json:1:1: malformed JSON: no JSON value"},
    {"unknown_schema", "check --fingerprint " + kData + "unknown_schema.json",
     "^gpucts check: .*/check/unknown_schema\\.json: unknown schema \"gpucts\\.fingerprint/9\""},
    {"bad_version", "check --fingerprint " + kData + "bad_version.json",
     "^gpucts check: .*/check/bad_version\\.json: field 'cuda_runtime': invalid version 'thirteen'"},
    {"not_an_object", "check --fingerprint " + kData + "not_object.json",
     "^gpucts check: .*/check/not_object\\.json: "},
    {"good_then_bad",
     "check --fingerprint " + kData + "h200_system_nccl.json --fingerprint " + kData + "malformed.json",
     "^gpucts check: .*/check/malformed\\.json:3:11: malformed JSON"},
    {"directory", "check --fingerprint " + kData,
     "^gpucts check: --fingerprint: .*/check/: is a directory, not a file\n$"},
    {"unknown_option", "check --frobnicate", "^gpucts check: .*frobnicate.*\n$"},
    {"option_without_value", "check --fingerprint", "^gpucts check: .*fingerprint.*\n$"},
    {"positional_argument", "check extra.json", "^gpucts check: unexpected argument 'extra\\.json'\n$"},
    {"missing_matrix_dir", "check --matrix /nonexistent/m --fingerprint " + kData + "h200_system_nccl.json",
     "^gpucts check: --matrix: /nonexistent/m: No such file or directory\n$"},
    {"matrix_dir_without_csv",
     "check --matrix " + kData + " --fingerprint " + kData + "h200_system_nccl.json",
     "^gpucts check: matrix: .*/check//?torch\\.csv: cannot open for reading: No such file or directory\n$"},
    {"broken_matrix_dir",
     "check --matrix " + kWork + "broken-matrix --fingerprint " + kData + "h200_system_nccl.json",
     "^gpucts check: matrix: .*/broken-matrix/torch\\.csv:[0-9]+: duplicate key '2\\.11/cu130' \\(first at "
     "line [0-9]+\\)\n$"},
    // The folder's bandwidth thresholds are read too: a row given twice is refused with file:line.
    {"broken_thresholds_in_matrix_dir",
     "check --matrix " + kWork + "broken-thresholds --fingerprint " + kData + "h200_system_nccl.json",
     "^gpucts check: matrix: .*/broken-thresholds/bandwidth_thresholds\\.csv:[0-9]+: the same gpu, link, .* "
     "as line [0-9]+\n$"},
};

void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

class CheckBadInput : public ::testing::TestWithParam<BadInput> {
 public:
  // broken-matrix: the real data with a duplicated torch row (made here so it tracks the data).
  static void SetUpTestSuite() {
    fs::path dst = kWork + "broken-matrix";
    fs::create_directories(dst);
    for (const auto& e : fs::directory_iterator(kMatrix))
      fs::copy_file(e.path(), dst / e.path().filename(), fs::copy_options::overwrite_existing);
    std::string torch = slurp(dst / "torch.csv");
    auto at = torch.find("\n2.11,cu130,");
    ASSERT_NE(at, std::string::npos);
    std::string row = torch.substr(at + 1, torch.find('\n', at + 1) - at);
    std::ofstream(dst / "torch.csv", std::ios::app) << row;
    // broken-thresholds: the real matrix files with a thresholds table whose row is given twice.
    fs::path thr = kWork + "broken-thresholds";
    fs::create_directories(thr);
    for (const auto& e : fs::directory_iterator(kMatrix))
      fs::copy_file(e.path(), thr / e.path().filename(), fs::copy_options::overwrite_existing);
    const std::string twice = "any,none,any,1,AllReduce,any,1G,busbw_gbps,10,5,a measurement\n";
    std::ofstream(thr / "bandwidth_thresholds.csv", std::ios::trunc)
        << "gpu,link,nvls,world_size,collective,placement,min_bytes,metric,expected,tolerance_pct,source\n"
        << twice << twice;
  }
};

TEST_P(CheckBadInput, ExitTwoWithOneLine) {
  const auto& c = GetParam();
  CliRun r = gpucts(c.args);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(c.error))) << "stderr: " << r.err << "wanted: " << c.error;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  EXPECT_EQ(r.out, "") << "nothing is half-evaluated on bad input";
}

INSTANTIATE_TEST_SUITE_P(Contract, CheckBadInput, ::testing::ValuesIn(kBad),
                         [](const auto& info) { return std::string(info.param.name); });

// The error lines of a check table, by finding id.
std::vector<std::string> error_ids(const std::string& out) {
  std::vector<std::string> ids;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("ERROR", 0) == 0) {
      std::istringstream words(line.substr(5));
      std::string id;
      words >> id;
      ids.push_back(id);
    }
  return ids;
}

// The GPU machine as it was: system NCCL 2.28.3 loaded, torch's 2.28.9. Both have NVIDIA/nccl#1950
// (one-rank avg/PreMulSum leaves the output tail unwritten), which the suites reproduced there.
// Matched by version alone it warns, for both libraries, naming the cases it hits and the release
// that fixes it; --strict-defects makes it an error.
TEST(CheckCli, GpuMachineSituationNamesNcclDefect1950) {
  CliRun strict = gpucts("check --strict-defects --fingerprint " + kData + "h200_system_nccl.json");
  EXPECT_EQ(strict.rc, 1) << strict.out << strict.err;
  EXPECT_FALSE(error_ids(strict.out).empty()) << strict.out;
  for (const auto& id : error_ids(strict.out))  // torch 2.11's own known defects too (torch_defects.csv)
    EXPECT_TRUE(id == "nccl-known-defect" || id == "torch-known-defect") << strict.out;
  CliRun r = gpucts("check --fingerprint " + kData + "h200_system_nccl.json");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_TRUE(error_ids(r.out).empty()) << r.out;
  EXPECT_NE(r.out.find("WARNING nccl-known-defect"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("only where a 1-rank communicator, AllReduce/Reduce/ReduceScatter, op avg, "
                       "out-of-place buffers"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("loaded NCCL 2.28.3 has nccl-1950 (corruption)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torch's NCCL 2.28.9 has nccl-1950 (corruption)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("https://github.com/NVIDIA/nccl/issues/1950"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-> upgrade NCCL to >= 2.29.7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torch-nccl-differs-from-loaded"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torch 2.11.0+cu130 (CUDA 13.0, NCCL 2.28.9"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matrix row torch.csv:2.11/cu130"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVIDIA H200 (sm_90, in torch's arch list)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" rules evaluated)"), std::string::npos)
      << "the headline says how much it looked at: " << r.out;
}

// The same machine with NCCL 2.29.7, where that defect is fixed: a pass (defects that need a
// transport this fingerprint cannot show only warn).
TEST(CheckCli, GpuMachineWithFixedNcclPasses) {
  CliRun r = gpucts("check --fingerprint " + kData + "h200_nccl_2_29_7.json");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("nccl-1950"), std::string::npos) << r.out;
}

// An RTX 5090 on an R560 driver with torch 2.7+cu128: CUDA 12.8 runs there under minor-version
// compatibility, but the driver predates Blackwell. The line cites the row and its source.
TEST(CheckCli, BlackwellOnPreR570DriverFails) {
  CliRun r = gpucts("check --fingerprint " + kData + "rtx5090_driver_560.json");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("ERROR   driver-too-old-for-gpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("needs an R570 or newer driver"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[gpu_families.csv:Blackwell (GB20x) (https://docs.nvidia.com/"), std::string::npos)
      << r.out;
  // On R580 the driver is fine; what fails is torch 2.7's NCCL 2.26.2, which has nccl-1950.
  CliRun ok = gpucts("check --fingerprint " + kData + "rtx5090_driver_580.json");
  EXPECT_EQ(ok.out.find("driver-too-old-for-gpu"), std::string::npos) << ok.out;
  for (const auto& id : error_ids(ok.out)) EXPECT_EQ(id, "nccl-known-defect") << ok.out;
}

// A stack newer than the data in every component (driver R625, CUDA 13.6, NCCL 2.33, cuDNN 9.29, torch
// 2.16, Lightning 2.7): each component is named once as beyond the data with the newest the data
// knows, and the rules that needed those facts are "outside the data", not "inputs absent".
TEST(CheckCli, EveryComponentBeyondTheDataIsNamed) {
  CliRun r = gpucts("check --fingerprint " + kData + "h200_every_component_beyond_the_data.json");
  EXPECT_TRUE(r.rc == 0 || r.rc == 1) << r.out << r.err;
  const std::string who = "WARNING data-beyond-reach  h200-node rank 0 ";
  for (const char* named :
       {"driver: driver R625 (625.20.01) is newer than the newest driver the data knows, R620",
        "CUDA: CUDA 13.6 (CUDA runtime), 13.6 (torch's CUDA) is newer than the newest CUDA the data knows, "
        "13.5",
        "NCCL: NCCL 2.33.1 (loaded NCCL), 2.33.1 (NCCL header), 2.33.1 (torch's NCCL) is newer than "
        "the newest NCCL the data knows, 2.32.6",
        "cuDNN: cuDNN 9.29.0 (loaded cuDNN), 9.29.0 (torch's cuDNN), 9.29.0 (torch's build cuDNN) is newer "
        "than the newest cuDNN the data knows, 9.28.1",
        "torch: torch 2.16.0+cu136 (torch) is newer than the newest torch the data knows, 2.15",
        "Lightning: Lightning 2.7.0 (lightning), 2.7.0 (pytorch_lightning) is newer than the newest "
        "Lightning the data knows, 2.6.6"})
    EXPECT_NE(r.out.find(who + named), std::string::npos) << named << "\n" << r.out;
  // The ids after "not evaluated (N, <why>):", blank-separated with a blank at each end.
  const auto listed = [&](const std::string& why) {
    std::smatch m;
    const std::regex line("not evaluated \\([0-9]+, " + why + "\\):([^\n]*)");
    return std::regex_search(r.out, m, line) ? m[1].str() + " " : std::string();
  };
  const std::string outside = listed("inputs outside the data"), absent = listed("inputs absent");
  for (const char* id : {"torch-release-unknown", "gpu-unsupported-by-cudnn", "lightning-torch-incompatible",
                         "driver-branch-eol"}) {
    const std::string word = std::string(" ") + id + " ";
    EXPECT_NE(outside.find(word), std::string::npos) << id << "\n" << r.out;
    EXPECT_EQ(absent.find(word), std::string::npos) << id << " had its inputs\n" << r.out;
  }
  EXPECT_NE(r.out.find(", Lightning 2.6.6\n"), std::string::npos)
      << "the reach line names Lightning: " << r.out;
}

// NCCL_ALGO=Tree on NCCL 2.28.9: NCCL refuses Broadcast, Reduce, AllGather and ReduceScatter (no
// Ring fallback from 2.24). The line names them and cites the implementation rows and the fallback row.
// The same setting on NCCL 2.18 (Ring kept for all but AllReduce) raises nothing.
TEST(CheckCli, NcclAlgoTreeNamesTheCollectivesLeftWithout) {
  CliRun r = gpucts("check --fingerprint " + kData + "h200_nccl_algo_tree.json");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("ERROR   nccl-collective-without-algorithm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("leaves Broadcast, Reduce, AllGather, ReduceScatter without any algorithm/protocol"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[nccl_algos.csv:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nccl_features.csv:AlgoRingFallback (github:NVIDIA/nccl src/graph/tuning.cc"),
            std::string::npos)
      << r.out;
  CliRun old = gpucts("check --fingerprint " + kData + "a100_torch_2_1_nccl_2_18_algo_tree.json");
  EXPECT_EQ(old.out.find("nccl-collective-without-algorithm"), std::string::npos) << old.out;
}

TEST(CheckCli, OldDriverFailsWithExitOneErrorsFirst) {
  CliRun r = gpucts("check --fingerprint " + kData + "driver_575.json");
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  std::istringstream lines(r.out);
  std::string header, checked, first;
  std::getline(lines, header);
  std::getline(lines, checked);
  std::getline(lines, first);
  EXPECT_EQ(checked.rfind("checked h200-node rank 0: driver 575.57.08", 0), 0u) << checked;
  EXPECT_NE(header.find("FAIL"), std::string::npos) << header;
  EXPECT_EQ(first.rfind("ERROR", 0), 0u) << "errors come first: " << first;
  EXPECT_NE(r.out.find("driver-too-old-for-cuda-runtime"), std::string::npos);
  EXPECT_NE(r.out.find("torch 2.11+cu128"), std::string::npos)
      << "the fix names the wheel that runs: " << r.out;
  EXPECT_NE(r.out.find("R580"), std::string::npos) << "or the driver branch: " << r.out;
}

TEST(CheckCli, BadEnvironmentFails) {
  CliRun r = gpucts("check --fingerprint " + kData + "bad_env.json");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("NCCL_BUFFSIZE=12abc"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did you mean NCCL_SOCKET_IFNAME"), std::string::npos) << r.out;
}

TEST(CheckCli, TwoHostsMismatchJson) {
  CliRun r = gpucts("check --json --fingerprint " + kData + "h200_system_nccl.json --fingerprint " + kData +
                    "rank1_other_nccl.json");
  EXPECT_EQ(r.rc, 1) << r.err;
  auto j = nlohmann::json::parse(r.out);  // one object, nothing else on stdout
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["verdict"], "fail");
  ASSERT_TRUE(j["findings"].is_array());
  ASSERT_TRUE(j["not_evaluated"].is_array());
  bool cross = false;
  for (const auto& f : j["findings"]) {
    for (const char* k : {"id", "severity", "subject", "message", "source"})
      ASSERT_TRUE(f[k].is_string()) << k;
    EXPECT_TRUE(f["severity"] == "error" || f["severity"] == "warning" || f["severity"] == "info");
    if (f["id"] == "cross-host-mismatch") {
      cross = true;
      EXPECT_NE(f["message"].get<std::string>().find("2.27.5 on h200-node-b rank 1"), std::string::npos);
    }
  }
  EXPECT_TRUE(cross);
}

TEST(CheckCli, JsonPassShape) {
  CliRun r = gpucts("check --json --fingerprint " + kData + "h200_nccl_2_29_7.json");
  EXPECT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "pass");
  EXPECT_NE(std::find(j["not_evaluated"].begin(), j["not_evaluated"].end(), "cross-host-mismatch"),
            j["not_evaluated"].end());
  EXPECT_EQ(j["rules_evaluated"].get<int>() + static_cast<int>(j["not_evaluated"].size()),
            j["rules_total"].get<int>());
}

// Build tree and install tree alike: the command and the fixtures are found at run time.
TEST(CheckCli, FindsGpuctsAndItsData) {
  EXPECT_FALSE(kBin.empty()) << "no gpucts beside " << self_dir() << " (../cli/gpucts or ../../bin/gpucts)";
  EXPECT_TRUE(fs::exists(kData + "h200_system_nccl.json")) << "test data not found: " << kData;
  EXPECT_TRUE(fs::exists(fs::path(kMatrix) / "torch.csv")) << "matrix data not found: " << kMatrix;
}

// The matrix folder this binary found (the installed copy, or the source tree's) loads as is.
TEST(CheckCli, MatrixDataDirLoads) {
  CliRun r = gpucts("check --matrix " + kMatrix + " --fingerprint " + kData + "h200_nccl_2_29_7.json");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(kMatrix), std::string::npos) << "the report names the matrix used: " << r.out;
}

// Without a driver version the fingerprint keeps NVML's own words for why (a library/driver
// mismatch after an upgrade is not "no driver"), and the check line shows them.
TEST(CheckCli, LiveProbeRecordsWhyNvmlGaveNoDriver) {
  CliRun fp = gpucts("fingerprint");
  ASSERT_EQ(fp.rc, 0) << fp.err;
  auto j = nlohmann::json::parse(fp.out);
  if (j.contains("driver") && j["driver"].contains("version"))
    GTEST_SKIP() << "NVML answered on this machine";
  ASSERT_TRUE(j.contains("driver")) << fp.out;
  ASSERT_TRUE(j["driver"]["nvml_error"].is_string()) << fp.out;
  EXPECT_FALSE(j["driver"]["nvml_error"].get<std::string>().empty());
  CliRun r = gpucts("check");
  EXPECT_NE(r.out.find("[NVML: "), std::string::npos) << r.out;
}

// The conventions users carry over from CMake, ctest and mpirun.
TEST(CheckCli, VersionHelpAndUnknownOptions) {
  for (const char* args : {"--version", "check --version", "qualify --version"}) {
    CliRun r = gpucts(args);
    EXPECT_EQ(r.rc, 0) << args << ": " << r.err;
    EXPECT_EQ(r.out.rfind("gpucts ", 0), 0u) << args << ": " << r.out;
  }
  for (const char* args : {"check -h", "qualify -h", "report --help", "campaign -h"}) {
    CliRun r = gpucts(args);
    EXPECT_EQ(r.rc, 0) << args << ": " << r.err;
    EXPECT_NE(r.out.find("usage: gpucts"), std::string::npos) << args << ": " << r.out;
  }
  CliRun bad = gpucts("report --bogus");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("unknown option --bogus (known: "), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("--baseline"), std::string::npos) << bad.err;
}

// Every subcommand answers --version and --help; what is not an option or a command of it is
// refused in one line that lists what is.
TEST(CheckCli, EveryCommandAnswersVersionAndHelp) {
  for (const char* cmd :
       {"fingerprint", "gpus", "check", "journal-to-junit", "qualify", "report", "campaign"}) {
    CliRun v = gpucts(std::string(cmd) + " --version");
    EXPECT_EQ(v.rc, 0) << cmd << ": " << v.err;
    EXPECT_EQ(v.out, gpucts("--version").out) << cmd;
    CliRun h = gpucts(std::string(cmd) + " --help");
    EXPECT_EQ(h.rc, 0) << cmd << ": " << h.err;
    EXPECT_EQ(h.out.rfind(std::string("usage: gpucts ") + cmd, 0), 0u) << cmd << ": " << h.out;
  }
  for (const char* args : {"-h", "--help", "help"}) {
    CliRun r = gpucts(args);
    EXPECT_EQ(r.rc, 0) << args << ": " << r.err;
    EXPECT_NE(r.out.find("journal-to-junit"), std::string::npos) << args << ": " << r.out;
  }
  EXPECT_EQ(gpucts("").rc, 2) << "no command";
}

// --help is CLI11's list of the options each command declares: every option it accepts is there,
// described. --version names the git revision and the CUDA and NCCL the build used.
TEST(CheckCli, HelpListsEveryOptionAndVersionNamesTheBuild) {
  for (const char* cmd :
       {"fingerprint", "gpus", "check", "journal-to-junit", "qualify", "report", "campaign"}) {
    CliRun bad = gpucts(std::string(cmd) + " --no-such-option");
    const auto open = bad.err.find("(known: "), close = bad.err.rfind(')');
    ASSERT_NE(open, std::string::npos) << cmd << ": " << bad.err;
    std::istringstream known(bad.err.substr(open + 8, close - open - 8));
    const std::string help = gpucts(std::string(cmd) + " --help").out;
    for (std::string flag; known >> flag;) {
      const std::string name = flag.substr(flag.rfind('/') == std::string::npos ? 0 : flag.rfind('/') + 1);
      EXPECT_NE(help.find(name + " "), std::string::npos) << cmd << " --help lacks " << name << ":\n" << help;
    }
  }
  const std::string q = gpucts("qualify --help").out;
  for (const char* opt : {"--accept-known ID[,ID]", "--python EXE", "--strict-defects", "--label REGEX"})
    EXPECT_NE(q.find(opt), std::string::npos) << opt << ":\n" << q;
  const std::string v = gpucts("--version").out;
  EXPECT_NE(v.find(" (git "), std::string::npos) << v;
  EXPECT_NE(v.find("; built against CUDA "), std::string::npos) << v;
  EXPECT_NE(v.find(", NCCL "), std::string::npos) << v;
}

// `qualify --list` lines as name -> labels (",a,b,"); comment lines left out.
static std::map<std::string, std::string> listed_entries(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    m[line.substr(0, tab)] = "," + line.substr(tab + 1, line.find('\t', tab + 1) - tab - 1) + ",";
  }
  return m;
}

// Selections as ctest makes them: repeated --label must all match; a repeated selection that
// would silently keep one value is refused.
TEST(CheckCli, RepeatedLabelsAreAndedOthersRefused) {
  CliRun cpu = gpucts("qualify --list --label cpu");
  CliRun both = gpucts("qualify --list --label cpu --label ^matrix$");
  ASSERT_EQ(cpu.rc, 0) << cpu.err;
  ASSERT_EQ(both.rc, 0) << both.err;
  const auto listed = listed_entries(both.out);
  for (const auto& [name, labels] : listed) {
    EXPECT_NE(labels.find(",cpu,"), std::string::npos) << name;
    EXPECT_NE(labels.find(",matrix,"), std::string::npos) << name;
  }
  EXPECT_GT(listed.size(), 0u) << both.out;
  EXPECT_LT(both.out.size(), cpu.out.size()) << "the second --label narrowed nothing";
  CliRun twice = gpucts("qualify --list --tests a --tests b");
  EXPECT_EQ(twice.rc, 2) << twice.out;
  EXPECT_NE(twice.err.find("--tests given 2 times"), std::string::npos) << twice.err;
}

// --level picks what qualify runs, in whatever tree this is: quick only entries labelled quick,
// standard none of the simulated-host entries, full standard and those; an unknown level is a
// usage error.
TEST(CheckCli, LevelsSelectTheirEntries) {
  CliRun quick = gpucts("qualify --list --level quick");
  CliRun standard = gpucts("qualify --list --level standard");
  CliRun full = gpucts("qualify --list --level full");
  ASSERT_EQ(quick.rc, 0) << quick.err;
  ASSERT_EQ(standard.rc, 0) << standard.err;
  ASSERT_EQ(full.rc, 0) << full.err;
  const auto q = listed_entries(quick.out), st = listed_entries(standard.out), f = listed_entries(full.out);
  ASSERT_FALSE(st.empty()) << standard.out;
  for (const auto& [name, labels] : q) EXPECT_NE(labels.find(",quick,"), std::string::npos) << name;
  EXPECT_LT(q.size(), st.size()) << "quick selected as much as standard";
  for (const auto& [name, labels] : st) {
    EXPECT_EQ(labels.find(",multi-rank-sim,"), std::string::npos) << name;
    EXPECT_EQ(f.count(name), 1u) << name << " is in standard, not in full";
  }
  for (const auto& [name, labels] : f) {
    if (st.count(name)) continue;
    EXPECT_NE(labels.find(",multi-rank-sim,"), std::string::npos) << name << " is in full only";
  }
  CliRun bad = gpucts("qualify --list --level thorough");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.err.find("thorough"), std::string::npos) << bad.err;
}

TEST(CheckCli, UnknownCommandsAndOptionsListTheKnownOnes) {
  struct Bad {
    const char* args;
    const char* error;  // the whole of stderr
  };
  const Bad kUnknown[] = {
      {"chek",
       "gpucts: unknown command 'chek' (known: fingerprint gpus check journal-to-junit qualify report "
       "campaign)\n"},
      {"--frobnicate check", "gpucts: unknown option --frobnicate (known: -h/--help --version)\n"},
      {"gpus --resource-spec x --gpus 2",
       "gpucts gpus: unknown option --gpus (known: -h/--help --version --resource-spec --host)\n"},
      {"check -j",
       "gpucts check: unknown option -j (known: -h/--help --version --fingerprint --matrix --python --json "
       "--strict-defects --job-ranks --no-python)\n"},
  };
  for (const auto& b : kUnknown) {
    CliRun r = gpucts(b.args);
    EXPECT_EQ(r.rc, 2) << b.args;
    EXPECT_EQ(r.err, b.error) << b.args;
    EXPECT_EQ(r.out, "") << b.args;
  }
  // A switch takes no value, a value option needs one: bad usage in one line.
  for (const char* args : {"check --json=yes", "journal-to-junit --output"}) {
    CliRun r = gpucts(args);
    EXPECT_EQ(r.rc, 2) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
}

// --job-ranks: the fingerprints are ranks of one job (as gpucts_preflight and gpucts_check_ranks write
// them): two ranks on one GPU of one host are a finding only then; simulated hosts are named by id.
TEST(CheckCli, JobRanksAddsThePlacementComparisons) {
  auto rank = [](int r, const std::string& hostid) {
    std::string id = hostid.empty() ? "" : ", \"nccl_hostid\": \"" + hostid + "\"";
    return "{\"schema\": \"gpucts.fingerprint/1\", \"host\": \"vm\", \"boot_id\": \"b\", \"rank\": " +
           std::to_string(r) +
           ", \"gpus\": [{\"index\": 0, \"uuid\": \"GPU-1\"}], \"gpucts_rank\": {\"rank\": " +
           std::to_string(r) +
           ", \"local_rank\": 0, \"world_size\": 2, \"gpu_index\": 0, \"gpu_uuid\": \"GPU-1\"" + id + "}}";
  };
  const std::string dir = kWork + "job-ranks/";
  fs::create_directories(dir);
  std::ofstream(dir + "r0.json") << rank(0, "");
  std::ofstream(dir + "r1.json") << rank(1, "");
  const std::string files = "--fingerprint " + dir + "r0.json --fingerprint " + dir + "r1.json";
  CliRun alone = gpucts("check " + files);
  EXPECT_EQ(alone.out.find("gpu-shared-by-ranks"), std::string::npos) << alone.out;
  CliRun job = gpucts("check --job-ranks " + files);
  EXPECT_EQ(job.rc, 1) << job.out << job.err;
  EXPECT_NE(job.out.find("gpu-shared-by-ranks"), std::string::npos) << job.out;
  EXPECT_NE(job.out.find("ranks 0,1 on vm would share GPU GPU-1"), std::string::npos) << job.out;
  std::ofstream(dir + "r0.json") << rank(0, "vm-simhost0");
  std::ofstream(dir + "r1.json") << rank(1, "vm-simhost1");
  CliRun sim = gpucts("check --job-ranks " + files);
  EXPECT_EQ(sim.out.find("gpu-shared-by-ranks"), std::string::npos) << sim.out;
  EXPECT_NE(sim.out.find("2 simulated hosts on one GPU"), std::string::npos) << sim.out;
  EXPECT_NE(sim.out.find("checked vm-simhost1 rank 1:"), std::string::npos) << sim.out;
}

TEST(CheckCli, LiveProbeGivesAVerdict) {
  CliRun r = gpucts("check --json");
  ASSERT_TRUE(r.rc == 0 || r.rc == 1) << r.rc << " " << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["verdict"] == "pass" || j["verdict"] == "fail");
  EXPECT_EQ(j["verdict"] == "fail", r.rc == 1);
}

}  // namespace
}  // namespace cts

namespace cts {
namespace {

// GPUCTS_EXPECT_GPUS is judged whether a driver answers or not: a value that is no count is bad
// input before any probe; a promised GPU that is not visible is an error finding.
TEST(CheckCli, ExpectedGpusIsCheckedWithOrWithoutADriver) {
  for (const char* bad : {"abc", "1x", "-1", "5000"}) {
    CliRun r = gpucts("check --no-python", {std::string("GPUCTS_EXPECT_GPUS=") + bad});
    EXPECT_EQ(r.rc, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("GPUCTS_EXPECT_GPUS='" + std::string(bad) + "' is not a GPU count"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
  CliRun none = gpucts("check --no-python", {"GPUCTS_EXPECT_GPUS=1", "CUDA_VISIBLE_DEVICES="});
  EXPECT_EQ(none.rc, 1) << none.out << none.err;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(none.out, m,
                                std::regex("\nERROR +cuda-visible-devices-odd .*resolves to 0 GPU\\(s\\), "
                                           "fewer than the 1 expected by GPUCTS_EXPECT_GPUS")))
      << none.out;
  CliRun zero = gpucts("check --no-python --json", {"GPUCTS_EXPECT_GPUS=0", "CUDA_VISIBLE_DEVICES="});
  EXPECT_EQ(zero.out.find("fewer than the"), std::string::npos) << zero.out;
}

TEST(CheckCli, GpusRefusesAnUnknownArgument) {
  CliRun r = gpucts("gpus bogus");
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(r.err, "gpucts gpus: unexpected argument 'bogus'\n");
  EXPECT_EQ(r.out, "");
}

// Host and GPU names and NCCL_* values come from the probed machine: an escape sequence or a
// newline in them is printed as an escape, never acted on or made into a line of its own.
TEST(CheckCli, OutsideTextIsPrintedEscaped) {
  nlohmann::json fp = nlohmann::json::parse(slurp(kData + "h200_system_nccl.json"));
  fp["host"] = "node\u001b[2J\nALL CHECKS PASSED";
  fp["gpus"][0]["name"] = "H200\u001b]0;title\u0007\r";
  fp["env"]["NCCL_SOCKET_IFNAME"] = "nomatch\u001b[31m\nPASS";
  const std::string file = kWork + "escapes.json";
  std::ofstream(file) << fp.dump();
  CliRun r = gpucts("check --fingerprint " + file);
  EXPECT_TRUE(r.rc == 0 || r.rc == 1) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "an ESC byte reached the terminal";
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  EXPECT_EQ(r.out.find('\a'), std::string::npos);
  EXPECT_EQ(r.out.find("\nALL CHECKS PASSED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\nPASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node\\x1b[2J\\nALL CHECKS PASSED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nomatch\\x1b[31m\\nPASS"), std::string::npos) << r.out;
}

// A result that cannot reach standard output (here /dev/full) is a failure, never a cut file read as
// whole: fingerprint and check --json exit non-zero and say why on one line.
TEST(CheckCli, StandardOutputThatCannotBeWrittenIsAFailure) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  const std::vector<std::string> commands = {"fingerprint --no-python",
                                             "check --json --fingerprint " + kData + "h200_system_nccl.json"};
  for (const std::string& args : commands) {
    std::vector<std::string> argv{kBin};
    std::istringstream words(args);
    for (std::string w; words >> w;) argv.push_back(w);
    proc::Options o;
    o.out = proc::Output::File;
    o.output_file = "/dev/full";
    o.err = proc::Output::File;
    o.error_file = (fs::path(kWork) / "err_full").string();
    o.timeout_s = 60;
    proc::Result p = proc::run(argv, o);
    EXPECT_EQ(p.exit_code.value_or(-1), 1) << args;
    EXPECT_NE(slurp(o.error_file).find("cannot write standard output"), std::string::npos) << args;
  }
}

}  // namespace
}  // namespace cts
