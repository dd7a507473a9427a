// Bandwidth of every row of the collective table, one process per rank over MPI, as nccl-tests'
// MPI build measures it across nodes: the same cases, timing and judgement as gpucts_bandwidth
// (fixtures/nccl/bandwidth_runner.hpp) on a World of the MPI bootstrap. Each point's time is the
// mean over the processes of each one's timed calls; rank 0 writes the results files. The sweep
// and the rest come from the environment (GPUCTS_BW_SWEEP, GPUCTS_BW_ITERS, GPUCTS_BW_WARMUP,
// GPUCTS_BW_REPS, GPUCTS_BW_DTYPE, GPUCTS_BW_OP, GPUCTS_BW_GRAPH, GPUCTS_BW_NONBLOCKING,
// GPUCTS_BW_OUTPUT), since the MPI main takes GoogleTest's flags only.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fixtures/gtest/flags.hpp"
#include "fixtures/mpi/mpi_nccl_world.hpp"
#include "fixtures/nccl/bandwidth_runner.hpp"
#include "fixtures/nccl/device_buffers.hpp"
#include "fixtures/nccl/nccl_util.hpp"

namespace {

cts::bw::Settings g_settings;

class MpiBandwidthCase : public ::testing::Test {
 public:
  explicit MpiBandwidthCase(cts::bw::BwCase c) : c_(c) {}
  void TestBody() override {
    CTS_REQUIRE_PREFLIGHT();
    if (!cts::mpi::not_runnable_reason().empty()) GTEST_SKIP() << cts::mpi::not_runnable_reason();
    cts::World* w = nullptr;
    std::string error;
    try {
      w = &cts::mpi::mpi_world(cts::bw::world_config(c_));
    } catch (const std::exception& e) {
      error = e.what();
    }
    ASSERT_NE(w, nullptr) << "cannot create the world " << cts::bw::world_config(c_).key() << ": " << error;
    cts::bw::Measurement m;
    std::string failure;
    try {
      m = cts::bw::measure(*w, c_, g_settings);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    // Every rank learns whether any failed, and all rebuild together; a rank that failed between
    // two of its peers' collective steps leaves them waiting, which the watchdog bounds.
    if (!w->all_agree(failure.empty())) {
      ADD_FAILURE() << (failure.empty() ? std::string("another rank failed this case") : failure);
      try {
        w->rebuild();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rebuilding the communicators failed: " << e.what();
      }
      return;
    }
    if (!m.skip.empty()) GTEST_SKIP() << m.skip;
    cts::bw::judge_case(m.point, /*print=*/cts::mpi::context().rank == 0);
  }

 private:
  cts::bw::BwCase c_;
};

// The settings from the environment, for the launcher's world; bad values end the program with
// the cause (exit 2) on every rank alike.
cts::bw::Settings settings_from_env(int world) {
  cts::SuiteFlags flags("gpucts_mp_bandwidth");
  cts::bw::SettingsFlags settings(flags, cts::bw::known_names());
  if (auto rc = flags.parse(std::vector<std::string>{})) std::exit(*rc);
  cts::bw::Settings s;
  try {
    s = cts::bw::settings_for_run(settings);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucts_mp_bandwidth: %s\n", e.what());
    std::exit(2);
  }
  s.world = world;
  return s;
}

void register_cases(const cts::mpi::Context& ctx) {
  g_settings = settings_from_env(ctx.size);
  if (ctx.rank != 0) g_settings.output.clear();  // one writer of the results files
  if (cts::mpi::stand_in_when_not_runnable(ctx, "MpiBandwidth")) return;
  for (const auto& c : cts::bw::bandwidth_cases(g_settings))
    ::testing::RegisterTest(c.coll->name, c.name().c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> ::testing::Test* { return new MpiBandwidthCase(c); });
}

const bool registered = cts::mpi::add_registrar(register_cases);

// Buffers and communicators go before MPI_Finalize, while every peer is still there.
class ReleaseWorlds : public ::testing::Environment {
 public:
  void TearDown() override {
    cts::release_device_buffers();
    cts::mpi::release_mpi_worlds();
  }
};
const auto* release = ::testing::AddGlobalTestEnvironment(new ReleaseWorlds);

}  // namespace
