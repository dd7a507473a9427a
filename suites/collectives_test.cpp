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

#include "collectives.hpp"
#include "environment.hpp"
#include "flags.hpp"
#include "gpu_requirement.hpp"
#include "gtest_main.hpp"
#include "nccl_util.hpp"
#include "require.hpp"
#include "world.hpp"

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
  std::vector<cts::CollCase> cases;
  try {
    world = cts::take_world_size(argc, argv);
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
  if (cts::stand_in_for_world("Collectives", world, cases.size(), argc, argv)) cases.clear();
  for (const auto& c : cases) {
    ::testing::RegisterTest(c.suite().c_str(), c.name().c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> ::testing::Test* { return new CollectiveCase(c); });
  }
  const auto t0 = std::chrono::steady_clock::now();
  cts::MainOptions opts;
  opts.finish = [&](int rc) {
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double setup = cts::world_setup_seconds();
    const auto* u = ::testing::UnitTest::GetInstance();
    std::printf("\ngpucts_collectives: world %d, %d of %zu cases run, %.2f s wall: communicator setup %.2f s "
                "(of it loading the payload kernels %.2f s), cases %.2f s\n",
                world, u->test_to_run_count(), cases.size(), total, setup, cts::kernel_load_seconds(),
                u->elapsed_time() / 1000.0 - setup);
    const cts::CaseTimes& t = cts::collective_case_times();
    std::printf("  inside the cases: checks %.2f s, poison+fill %.2f s, NCCL+wait %.2f s, verify %.2f s, failures %.2f s\n",
                t.checks, t.prepare, t.nccl, t.verify, t.errors);
    for (int i = 0; i < u->total_test_suite_count(); ++i) {
      const auto* s = u->GetTestSuite(i);
      if (s->test_to_run_count() == 0) continue;
      std::printf("  %-18s %6d cases %8.2f s (%d failed, %d skipped)\n", s->name(), s->total_test_count(),
                  s->elapsed_time() / 1000.0, s->failed_test_count(), s->skipped_test_count());
    }
    // The slowest cases, to see where the time goes beyond the per-collective totals.
    std::vector<std::pair<long long, std::string>> slow;
    for (int i = 0; i < u->total_test_suite_count(); ++i)
      for (int j = 0; j < u->GetTestSuite(i)->total_test_count(); ++j) {
        const auto* t = u->GetTestSuite(i)->GetTestInfo(j);
        if (!t->should_run()) continue;
        slow.emplace_back(t->result()->elapsed_time(), std::string(t->test_suite_name()) + "." + t->name());
      }
    std::sort(slow.rbegin(), slow.rend());
    for (std::size_t k = 0; k < std::min<std::size_t>(8, slow.size()); ++k)
      std::printf("  slowest %zu: %6lld ms %s\n", k + 1, slow[k].first, slow[k].second.c_str());
    cts::release_worlds();
    return rc;
  };
  return cts::run_gtest_main(argc, argv, opts);
}
