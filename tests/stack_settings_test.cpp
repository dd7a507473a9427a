// The NCCL/torch settings a run was under (results/run_settings.hpp, fixtures/probe/environment.hpp):
// what the record says for each way NVLS can be set, the summary's sentence, and, run as a CTest
// entry by gpucts_env_inherited with NCCL_NVLS_ENABLE=1 around it, that the entry got the user's value.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "fixtures/probe/environment.hpp"
#include "fixtures/probe/scoped_env.hpp"
#include "results/run_settings.hpp"

namespace cts {
namespace {

TEST(StackSettings, NvlsUnsetIsNcclsDefault) {
  auto r = stack_settings_record({{"PATH", "/bin"}, {"NCCL_DEBUG", "WARN"}});
  EXPECT_EQ(r["nvls"], "default");
  EXPECT_EQ(r["settings"], nlohmann::json({{"NCCL_DEBUG", "WARN"}})) << "only NCCL_/TORCH_/NVSHMEM_ names";
  EXPECT_EQ(nvls_note(r), "");
}

TEST(StackSettings, NvlsOffNamesWhatTurnedItOff) {
  auto r = stack_settings_record(
      {{"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}, {"NVSHMEM_DISABLE_NVLS", "1"}});
  EXPECT_EQ(r["nvls"], "off");
  EXPECT_EQ(r["settings"].size(), 3u);
  EXPECT_EQ(nvls_note(r),
            "NVLS was off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1): "
            "NVLS paths were not tested");
  EXPECT_EQ(nvls_note(stack_settings_record({{"NCCL_NVLS_ENABLE", "0"}})),
            "NVLS was off (NCCL_NVLS_ENABLE=0): NVLS paths were not tested");
}

TEST(StackSettings, NvlsOnAndAlgoLists) {
  EXPECT_EQ(stack_settings_record({{"NCCL_NVLS_ENABLE", "1"}})["nvls"], "on");
  EXPECT_EQ(stack_settings_record({{"NCCL_NVLS_ENABLE", "2"}})["nvls"], "default");
  EXPECT_EQ(stack_settings_record({{"NCCL_ALGO", "Ring,Tree"}})["nvls"], "off");
  EXPECT_EQ(stack_settings_record({{"NCCL_ALGO", "^NVLS,NVLSTree"}})["nvls"], "off");
  EXPECT_EQ(stack_settings_record({{"NCCL_ALGO", "NVLS"}})["nvls"], "default");
  EXPECT_EQ(stack_settings_record({{"NCCL_ALGO", "^Ring"}})["nvls"], "default");
  // A per-collective list may keep NVLS for some collectives: not called off.
  EXPECT_EQ(stack_settings_record({{"NCCL_ALGO", "allreduce:ring;allgather:nvls"}})["nvls"], "default");
  // A torch or NVSHMEM switch alone does not turn NCCL's NVLS off.
  EXPECT_EQ(stack_settings_record({{"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}})["nvls"], "default");
  EXPECT_EQ(nvls_note(nlohmann::json::array()), "") << "a record of the wrong shape says nothing";
}

TEST(StackSettings, InForceIsTheEnvironmentWithTheEntryOverIt) {
  ScopedEnv env({{"NCCL_NVLS_ENABLE", "1"}, {"TORCH_NCCL_BLOCKING_WAIT", "1"}, {"NCCL_ALGO", nullptr}});
  auto r = stack_settings_in_force();
  EXPECT_EQ(r["nvls"], "on");
  EXPECT_EQ(r["settings"]["TORCH_NCCL_BLOCKING_WAIT"], "1");
  auto pinned = stack_settings_in_force({"NCCL_NVLS_ENABLE=0", "GPUCTS_TEST_NAME=x"});
  EXPECT_EQ(pinned["nvls"], "off") << "the entry's own list wins, as CTest's ENVIRONMENT does";
  EXPECT_FALSE(pinned["settings"].contains("GPUCTS_TEST_NAME"));
}

// Run by the gpucts_env_inherited entry (tests/env_inherited_test.cmake), which sets
// NCCL_NVLS_ENABLE around a ctest of this entry and names the value it expects.
TEST(StackSettings, EntryGetsTheUsersNvlsSetting) {
  const char* expect = std::getenv("GPUCTS_EXPECT_NVLS_ENABLE");
  if (!expect) GTEST_SKIP() << "run through the gpucts_env_inherited entry, which sets NCCL_NVLS_ENABLE";
  const char* got = std::getenv("NCCL_NVLS_ENABLE");
  ASSERT_NE(got, nullptr) << "the entry lost NCCL_NVLS_ENABLE";
  EXPECT_EQ(std::string(got), expect) << "the entry's environment overrode the user's NCCL_NVLS_ENABLE";
  std::printf("entry environment: NCCL_NVLS_ENABLE=%s\n", got);
}

}  // namespace
}  // namespace cts
