// The one "too few GPUs" decision (fixtures/probe/gpu_requirement.hpp) on any machine: its wording, which
// skip reasons and reports match on, and when a world's cases stand behind one placeholder.
#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "fixtures/gtest/case_registration.hpp"
#include "fixtures/probe/gpu_requirement.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/scoped_env.hpp"

namespace cts {
namespace {

TEST(GpuRequirement, WordingIsTheOneReportsMatch) {
  EXPECT_EQ(gpu_shortfall(8, 1, ""), "needs 8 GPU(s), 1 visible");
  EXPECT_EQ(gpu_shortfall(2, 0, "no CUDA device visible"),
            "needs 2 GPU(s), 0 visible (no CUDA device visible)");
}

TEST(GpuRequirement, MissingGpusFollowsTheVisibleCount) {
  const int visible = visible_gpu_count();
  EXPECT_EQ(missing_gpus(visible), std::nullopt);
  EXPECT_EQ(missing_gpus(0), std::nullopt);
  const std::optional<std::string> why = missing_gpus(visible + 1);
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(std::regex_search(*why, std::regex("^needs " + std::to_string(visible + 1) + " GPU\\(s\\), " +
                                                 std::to_string(visible) + " visible")))
      << *why;
}

// GPUCTS_EXPECT_GPUS=N promises N GPUs: a case that finds fewer than it needs fails, not skips.
TEST(GpuRequirement, ExpectGpusTurnsTheShortfallIntoAFailure) {
  const int visible = visible_gpu_count();
  {
    ScopedEnv unset("GPUCTS_EXPECT_GPUS", nullptr);
    EXPECT_EQ(expected_gpus_missing(visible + 1), std::nullopt) << "without the promise it is a skip";
  }
  {
    ScopedEnv promise("GPUCTS_EXPECT_GPUS", std::to_string(visible + 1).c_str());
    const auto why = expected_gpus_missing(visible + 1);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("GPUCTS_EXPECT_GPUS=" + std::to_string(visible + 1)), std::string::npos) << *why;
    EXPECT_NE(why->find("needs " + std::to_string(visible + 1) + " GPU(s)"), std::string::npos) << *why;
    EXPECT_EQ(expected_gpus_missing(0), std::nullopt) << "a case that needs no GPU is not affected";
  }
  {
    // A world larger than the promise (8 GPUs on a 2-GPU runner) still skips: the runner kept its word.
    ScopedEnv promise("GPUCTS_EXPECT_GPUS", std::to_string(visible).c_str());
    EXPECT_EQ(expected_gpus_missing(visible + 1), std::nullopt);
  }
  {
    ScopedEnv bad("GPUCTS_EXPECT_GPUS", "many");
    const auto why = expected_gpus_missing(1);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("is not a GPU count"), std::string::npos) << *why;
  }
}

bool every_case(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return register_every_case(static_cast<int>(argv.size()), argv.data());
}

TEST(GpuRequirement, FilterOrRegisterAllListsEveryCase) {
  ScopedEnv filter("GTEST_FILTER", nullptr);
  ScopedEnv all("GPUCTS_REGISTER_ALL", nullptr);
  EXPECT_FALSE(every_case({"gpucts_collectives", "--world-size=8"}));
  EXPECT_TRUE(every_case({"gpucts_collectives", "--gtest_filter=AllReduce.*"}));
  EXPECT_TRUE(every_case({"gpucts_collectives", "--gtest_list_tests"})) << "a listing names every case";
  {
    ScopedEnv on("GPUCTS_REGISTER_ALL", "1");
    EXPECT_TRUE(every_case({"gpucts_collectives"}));
  }
  {
    ScopedEnv off("GPUCTS_REGISTER_ALL", "0");
    EXPECT_FALSE(every_case({"gpucts_collectives"}));
  }
  ScopedEnv env_filter("GTEST_FILTER", "Broadcast.*");
  EXPECT_TRUE(every_case({"gpucts_collectives"}));
}

TEST(GpuRequirement, SkipIfFewerGpusIsAskedForByTheEntry) {
  {
    ScopedEnv on("GPUCTS_SKIP_IF_FEWER_GPUS", "1");
    EXPECT_TRUE(skip_if_fewer_gpus());
  }
  ScopedEnv off("GPUCTS_SKIP_IF_FEWER_GPUS", nullptr);
  EXPECT_FALSE(skip_if_fewer_gpus());
}

// One world of 40 cases that needs one GPU more than are visible, registered before the run as
// the suites do (DISABLED_: listed, never run): a single placeholder whose name gives the count.
char g_prog[] = "gpucts_gpu_requirement";
char* g_argv[] = {g_prog, nullptr};
const int g_world = visible_gpu_count() + 1;
const bool g_stood_in =
    !register_every_case(1, g_argv) && stand_in_for_world("DISABLED_StandIn", g_world, 40, 1, g_argv);

TEST(GpuRequirement, StandInForWorldRegistersOnePlaceholder) {
  if (register_every_case(1, g_argv))
    GTEST_SKIP() << "GPUCTS_REGISTER_ALL=1 or GTEST_FILTER set: every case is listed";
  ASSERT_TRUE(g_stood_in);
  const auto* unit = ::testing::UnitTest::GetInstance();
  const std::string name = "w" + std::to_string(g_world) + "_all_40_cases";
  int placeholders = 0;
  for (int i = 0; i < unit->total_test_suite_count(); ++i) {
    const auto* s = unit->GetTestSuite(i);
    if (std::string(s->name()) != "DISABLED_StandIn") continue;
    ASSERT_EQ(s->total_test_count(), 1);
    EXPECT_EQ(s->GetTestInfo(0)->name(), name);
    ++placeholders;
  }
  EXPECT_EQ(placeholders, 1);
  EXPECT_FALSE(stand_in_for_world("DISABLED_StandIn", 0, 40, 1, g_argv)) << "a world of 0 GPUs always fits";
}

}  // namespace
}  // namespace cts
