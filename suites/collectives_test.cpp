// NCCL collective conformance in one process over the first N visible GPUs: one GoogleTest case
// per (collective row, dtype, op, count, placement, root, mode, variant), registered from
// cts::collective_cases(). Suite = the collective ("AllReduce"), case = the combination
// ("bf16_sum_1048575_inplace_w1"). World size: --world-size=N|all or GPUCTS_WORLD_SIZE (default 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixtures/gtest/case_registration.hpp"
#include "fixtures/gtest/flags.hpp"
#include "fixtures/gtest/gtest_main.hpp"
#include "fixtures/gtest/require.hpp"
#include "fixtures/nccl/collectives.hpp"
#include "fixtures/nccl/nccl_util.hpp"
#include "fixtures/nccl/world.hpp"
#include "fixtures/probe/environment.hpp"
#include "fixtures/probe/gpu_requirement.hpp"

namespace {

class CollectiveCase : public ::testing::Test {
 public:
  explicit CollectiveCase(cts::CollCase c) : c_(std::move(c)) {}
  void TestBody() override {
    CTS_REQUIRE_GPUS(c_.world);
    cts::World* w = nullptr;
    try {
      w = &cts::single_process_world(c_.world_config());
    } catch (const std::exception& e) {
      FAIL() << "cannot create the world " << c_.world_config().key() << ": " << e.what();
    }
    cts::run_collective_case(*w, c_);
  }

 private:
  cts::CollCase c_;
};

}  // namespace

int main(int argc, char** argv) {
  int world = 1;
  cts::SuiteFlags flags("gpucts_collectives");
  cts::add_world_size(flags, world);
  if (auto rc = flags.parse(argc, argv)) return *rc;
  std::vector<cts::CollCase> cases;
  try {
    // The GPU mapping must precede the first CUDA call (visible_gpu_count for "all").
    const std::string mapped = cts::apply_ctest_resource_groups();
    if (!mapped.empty()) unsetenv("CTEST_RESOURCE_GROUP_COUNT");  // applied once, here
    if (world == 0) world = std::max(1, cts::visible_gpu_count());
    cases = cts::collective_cases(world, cts::sweep_from_env());
    cts::case_timeout_s();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucts_collectives: %s\n", e.what());
    return 2;
  }
  // With too few GPUs one case skips for the whole world and its name says how many cases it
  // stands for; GPUCTS_REGISTER_ALL=1 or a --gtest_filter registers them one by one (gpu_requirement.hpp).
  auto given = flags.given_argv();
  if (cts::stand_in_for_world("Collectives", world, cases.size(), static_cast<int>(given.size()) - 1,
                              given.data()))
    cases.clear();
  for (const auto& c : cases) {
    ::testing::RegisterTest(c.suite().c_str(), c.name().c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> ::testing::Test* { return new CollectiveCase(c); });
  }
  const auto t0 = std::chrono::steady_clock::now();
  cts::MainOptions opts;
  opts.finish = [&](int rc) {
    cts::print_collective_run_summary(
        "gpucts_collectives", world, cases.size(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cts::release_worlds();
    return rc;
  };
  return cts::run_gtest_main(argc, argv, opts);
}
