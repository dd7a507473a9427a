// The suite binaries' flags on CLI11 (fixtures/gtest/flags.hpp): both spellings, nccl-tests' short
// spellings of the perf suite, the environment fallback, bad values, unknown flags, and --version,
// --help and an unknown flag on this very binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fixtures/gtest/flags.hpp"
#include "fixtures/gtest/perf_flags.hpp"
#include "fixtures/probe/environment.hpp"
#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/scoped_env.hpp"
#include "fixtures/probe/spawn.hpp"
#include "kernels/dtypes.hpp"
#include "results/bandwidth.hpp"

namespace cts {
namespace {

// The perf suite's settings as parsed from `args`; the exit status where parsing ends the run.
struct Parsed {
  std::optional<int> rc;
  bw::Settings s;
};
// The names -d / -o accept, from the one dtype and reduction lists.
bw::Names known() {
  bw::Names n;
  for (const auto& t : kDTypes) n.dtypes.push_back(t.name);
  for (const auto& o : kRedOps) n.ops.push_back(o.name);
  return n;
}

Parsed perf(const std::vector<std::string>& args) {
  SuiteFlags flags("gpucts_bandwidth");
  bw::SettingsFlags settings(flags, known());
  Parsed p;
  p.rc = flags.parse(args);
  if (!p.rc) p.s = settings.settings();
  return p;
}

// Unset for the scope: the variables the perf suite's flags fall back on.
ScopedEnv no_perf_env() {
  return ScopedEnv({{"GPUCTS_WORLD_SIZE", nullptr},
                    {"GPUCTS_BW_SWEEP", nullptr},
                    {"GPUCTS_BW_ITERS", nullptr},
                    {"GPUCTS_BW_WARMUP", nullptr},
                    {"GPUCTS_BW_REPS", nullptr},
                    {"GPUCTS_BW_GRAPH", nullptr},
                    {"GPUCTS_BW_DTYPE", nullptr},
                    {"GPUCTS_BW_OP", nullptr},
                    {"GPUCTS_BW_NONBLOCKING", nullptr},
                    {"GPUCTS_BW_OUTPUT", nullptr}});
}

TEST(Flags, BothSpellings) {
  auto env = no_perf_env();
  Parsed p = perf({"--iters=7", "--reps", "3", "--graph", "--output=o"});
  ASSERT_FALSE(p.rc);
  EXPECT_EQ(p.s.iters, 7);
  EXPECT_EQ(p.s.reps, 3);
  EXPECT_TRUE(p.s.graph);
  EXPECT_EQ(p.s.output, "o");
  EXPECT_EQ(p.s.sizes, bw::parse_sweep(bw::kDefaultSweep));
  EXPECT_EQ(perf({"--iters=1", "--iters", "2"}).s.iters, 2) << "the last one wins";
}

TEST(Flags, NcclTestsShortSpellingsParseAsTheLongOnes) {
  auto env = no_perf_env();
  const Parsed shrt = perf({"-b", "8", "-e", "1M", "-f", "2", "-n", "5", "-w", "1"});
  const Parsed lng = perf({"--minbytes=8", "--maxbytes=1M", "--stepfactor=2", "--iters=5", "--warmup=1"});
  const Parsed sweep = perf({"--sweep=8:1M:2", "--iters", "5", "--warmup", "1"});
  for (const Parsed* p : {&shrt, &lng, &sweep}) {
    ASSERT_FALSE(p->rc);
    EXPECT_EQ(p->s.sizes, bw::parse_sweep("8:1M:2"));
    EXPECT_EQ(p->s.iters, 5);
    EXPECT_EQ(p->s.warmup, 1);
    EXPECT_EQ(p->s.reps, 5);
  }
  EXPECT_EQ(shrt.s.sizes.size(), 18u) << "8 B to 1 MiB by 2";
  EXPECT_EQ(shrt.s.sizes.back(), 1u << 20);
  // -b/-e/-f replace their part of a --sweep given with them, whatever the order.
  EXPECT_EQ(perf({"-e", "64K", "--sweep=1K:1G:4"}).s.sizes, bw::parse_sweep("1K:64K:4"));
  EXPECT_EQ(perf({"-b4", "-f4"}).s.sizes, bw::parse_sweep("4:1G:4")) << "a value attached to its letter";
  EXPECT_THROW(perf({"-b", "1G", "-e", "8"}), bw::BandwidthError) << "minimum above maximum";
  // Two points only, as beside nccl-tests at its goal sizes: 8 B and 1 GiB by 2^27.
  EXPECT_EQ(perf({"-b", "8", "-e", "1G", "-f", "134217728"}).s.sizes,
            (std::vector<std::uint64_t>{8, 1u << 30}));
}

// nccl-tests' -d (dtype) and -o (op), each a name, a list or "all"; -g the world of one process;
// blocking communicators unless --nonblocking.
TEST(Flags, DtypeOpWorldAndCommunicatorMode) {
  auto env = no_perf_env();
  const Parsed def = perf({});
  ASSERT_FALSE(def.rc);
  EXPECT_EQ(def.s.dtypes, std::vector<std::string>{"f32"});
  EXPECT_EQ(def.s.ops, std::vector<std::string>{"sum"});
  EXPECT_EQ(def.s.comm, bw::kBlocking) << "blocking by default, as nccl-tests and PyTorch";
  EXPECT_EQ(def.s.world, 1);
  const Parsed p = perf({"-d", "f32,bf16", "-o", "max", "-g", "4", "--nonblocking"});
  ASSERT_FALSE(p.rc);
  EXPECT_EQ(p.s.dtypes, (std::vector<std::string>{"bf16", "f32"})) << "in the dtype list's order";
  EXPECT_EQ(p.s.ops, std::vector<std::string>{"max"});
  EXPECT_EQ(p.s.world, 4);
  EXPECT_EQ(p.s.comm, bw::kNonblocking);
  EXPECT_EQ(perf({"--dtype=all"}).s.dtypes.size(), kNumDTypes);
  EXPECT_EQ(perf({"-o", "all"}).s.ops.size(), kNumRedOps);
  EXPECT_EQ(perf({"-g", "all"}).s.world, 0);
  EXPECT_EQ(bw::parse_names("sum,sum", known().ops, "op"), std::vector<std::string>{"sum"}) << "each once";
  {
    ScopedEnv e({{"GPUCTS_BW_DTYPE", "u8"}, {"GPUCTS_BW_NONBLOCKING", "1"}});
    EXPECT_EQ(perf({}).s.dtypes, std::vector<std::string>{"u8"});
    EXPECT_EQ(perf({}).s.comm, bw::kNonblocking);
  }
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"-d", "f33"}, {"-o", "mean"}, {"-d", "f32,"}, {"-g", "0"}}) {
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(perf(bad).rc, 2) << bad.front() << " " << bad.back();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.rfind("gpucts_bandwidth: ", 0), 0u) << err;
  }
}

TEST(Flags, SettingsFallBackToTheEnvironment) {
  auto env = no_perf_env();
  {
    ScopedEnv e({{"GPUCTS_BW_ITERS", "9"}, {"GPUCTS_BW_SWEEP", "1K:4K:2"}, {"GPUCTS_BW_GRAPH", "1"}});
    Parsed p = perf({});
    EXPECT_EQ(p.s.iters, 9);
    EXPECT_EQ(p.s.sizes.size(), 3u);
    EXPECT_TRUE(p.s.graph);
    EXPECT_EQ(perf({"-n", "3"}).s.iters, 3) << "the flag wins";
  }
  ScopedEnv empty({{"GPUCTS_BW_ITERS", ""}, {"GPUCTS_BW_GRAPH", "0"}});
  EXPECT_EQ(perf({}).s.iters, 20) << "an empty variable is not set";
  EXPECT_FALSE(perf({}).s.graph);
  ScopedEnv bad("GPUCTS_BW_ITERS", "lots");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(perf({}).rc, 2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("GPUCTS_BW_ITERS"), std::string::npos) << "a bad variable is named: " << err;
}

TEST(Flags, BadValuesAreUsageErrors) {
  auto env = no_perf_env();
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"-n", "0"},
                                              {"--iters=x"},
                                              {"--iters"},
                                              {"-w", "1x"},
                                              {"--reps=99999999999999999999"},
                                              {"-b", "8Q"},
                                              {"-f", "1"},
                                              {"--sweep=8:1G"},
                                              {"--world-size=0"},
                                              {"--graph=1"}}) {
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(perf(bad).rc, 2) << bad.front();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.rfind("gpucts_bandwidth: ", 0), 0u) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one line: " << err;
  }
}

TEST(Flags, WorldSize) {
  auto env = no_perf_env();
  auto world = [](const std::vector<std::string>& args) {
    SuiteFlags flags("gpucts_collectives");
    int w = -1;
    add_world_size(flags, w);
    return flags.parse(args) ? -1 : w;
  };
  EXPECT_EQ(world({}), 1);
  EXPECT_EQ(world({"--world-size=all"}), 0);
  EXPECT_EQ(world({"--world-size", "4"}), 4);
  ScopedEnv eight("GPUCTS_WORLD_SIZE", "8");
  EXPECT_EQ(world({}), 8);
  EXPECT_EQ(world({"--world-size=2"}), 2);
}

TEST(Flags, AnUnknownFlagIsRefusedNamingTheKnownOnes) {
  auto env = no_perf_env();
  for (const char* unknown : {"--bogus", "--iterations=3", "-x", "extra"}) {
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(perf({"-n", "3", unknown}).rc, 2) << unknown;
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(unknown), std::string::npos) << err;
    EXPECT_NE(err.find("(known: -h/--help --version -g/--world-size --sweep -b/--minbytes"),
              std::string::npos)
        << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one line: " << err;
  }
}

TEST(Flags, VersionAndHelpEndTheRun) {
  SuiteFlags flags("gpucts_flags");
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(flags.parse({"--version"}), 0);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), version_line() + "\n");
  EXPECT_EQ(version_line().rfind("gpucts ", 0), 0u);
  SuiteFlags perf_flags("gpucts_bandwidth");
  bw::SettingsFlags settings(perf_flags, known());
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(perf_flags.parse({"-h"}), 0);
  const std::string help = ::testing::internal::GetCapturedStdout();
  for (const char* flag : {"--world-size", "--sweep", "-b,--minbytes", "-n,--iters", "GPUCTS_BW_ITERS"})
    EXPECT_NE(help.find(flag), std::string::npos) << flag << " in\n" << help;
}

// This binary as CTest runs it: GoogleTest's flags pass, ours are checked. Where a flag were not
// taken as it should, one quick case runs, never this one again.
proc::Result self(const std::vector<std::string>& args) {
  std::vector<std::string> argv{self_exe(), "--gtest_filter=Flags.WorldSize"};
  argv.insert(argv.end(), args.begin(), args.end());
  proc::Options o;
  o.err = proc::Output::Capture;
  o.timeout_s = 60;
  return proc::run(argv, o);
}

TEST(FlagsBinary, VersionHelpAndUnknownFlags) {
  proc::Result v = self({"--version"});
  EXPECT_EQ(v.exit_code, 0) << v.describe();
  EXPECT_EQ(v.output, version_line() + "\n");
  for (const char* h : {"-h", "--help"}) {
    proc::Result r = self({h});
    EXPECT_EQ(r.exit_code, 0) << h << ": " << r.describe();
    EXPECT_NE(r.output.find("--gtest_list_tests"), std::string::npos) << h << ": GoogleTest's help\n"
                                                                      << r.output;
    EXPECT_NE(r.output.find("--version"), std::string::npos) << h << ": our flags\n" << r.output;
  }
  proc::Result bad = self({"--gtest_brief=1", "--bogus"});
  EXPECT_EQ(bad.exit_code, 2) << bad.describe();
  EXPECT_NE(bad.output.find("gpucts_flags: unknown flag --bogus (known: -h/--help --version;"),
            std::string::npos)
      << bad.output;
  proc::Result list = self({"--gtest_list_tests", "--gtest_filter=FlagsBinary.*"});  // the last filter wins
  EXPECT_EQ(list.exit_code, 0) << list.describe();
  EXPECT_NE(list.output.find("FlagsBinary.\n  VersionHelpAndUnknownFlags\n"), std::string::npos)
      << list.output;
}

}  // namespace
// A suite refuses GPUCTS_* values it cannot mean before any case runs (exit 2, one line).
TEST(HarnessEnv, MeaninglessValuesAreRefused) {
  const ScopedEnv clean({{"GPUCTS_JOURNAL_DIR", nullptr},
                         {"GPUCTS_CASE_TIMEOUT_S", nullptr},
                         {"GPUCTS_SKIP_IF_FEWER_GPUS", nullptr},
                         {"GPUCTS_SIMULATED_HOSTS", nullptr}});
  EXPECT_EQ(harness_env_problem(), "");
  const std::string file = self_exe();
  for (const auto& [name, value] :
       std::vector<std::pair<const char*, std::string>>{{"GPUCTS_JOURNAL_DIR", "/nonexistent/journal"},
                                                        {"GPUCTS_JOURNAL_DIR", file},
                                                        {"GPUCTS_CASE_TIMEOUT_S", "abc"},
                                                        {"GPUCTS_CASE_TIMEOUT_S", "0"},
                                                        {"GPUCTS_SKIP_IF_FEWER_GPUS", "yes"},
                                                        {"GPUCTS_SIMULATED_HOSTS", "yes"}}) {
    const ScopedEnv e(name, value.c_str());
    const std::string why = harness_env_problem();
    EXPECT_EQ(why.rfind(name, 0), 0u) << name << "=" << value << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
  const ScopedEnv ok({{"GPUCTS_CASE_TIMEOUT_S", "2.5"},
                      {"GPUCTS_SKIP_IF_FEWER_GPUS", "1"},
                      {"GPUCTS_SIMULATED_HOSTS", "0"}});
  EXPECT_EQ(harness_env_problem(), "");
  // End to end: this very binary (run_gtest_main) exits 2 before running anything.
  int rc = 0;
  const std::string out =
      proc::output_of({self_exe(), "--gtest_filter=HarnessEnv.*"}, &rc, {"GPUCTS_CASE_TIMEOUT_S=abc"}, 60);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("GPUCTS_CASE_TIMEOUT_S='abc'"), std::string::npos) << out;
}

}  // namespace cts
