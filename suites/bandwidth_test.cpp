// Bandwidth of every row of the collective table (fixtures/nccl/collectives.hpp) over a size sweep, in
// one process over the first N visible GPUs: one GoogleTest case per (row, dtype, op, size,
// placement[, graph][, nonblocking]), e.g. AllReduce/f32_1073741824B_outofplace_w1. Communicators
// are blocking, as nccl-tests and PyTorch use them; --nonblocking times nonblocking ones as a
// variant of its own (case names ..._nonblocking_wN, points marked "nonblocking"). Each case times many
// back-to-back calls between CUDA events after a warm-up, takes the median and spread over repetitions,
// computes algbw and busbw with nccl-tests' factors and is judged against the thresholds data; a point with
// no threshold is recorded, not judged. With one rank busbw is not defined and algbw is judged against
// cudaMemcpyAsync device-to-device measured in the same run. The machinery (flags, timing, results files) is
// fixtures/nccl/bandwidth_runner.hpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "fixtures/gtest/flags.hpp"
#include "fixtures/gtest/gtest_main.hpp"
#include "fixtures/gtest/require.hpp"
#include "fixtures/nccl/bandwidth_runner.hpp"
#include "fixtures/nccl/nccl_util.hpp"

namespace {

cts::bw::Settings g_settings;

class BandwidthCase : public ::testing::Test {
 public:
  explicit BandwidthCase(cts::bw::BwCase c) : c_(c) {}
  void TestBody() override {
    CTS_REQUIRE_GPUS(c_.world);
    const cts::WorldConfig cfg = cts::bw::world_config(c_);
    cts::World* w = nullptr;
    try {
      w = &cts::single_process_world(cfg);
    } catch (const std::exception& e) {
      FAIL() << "cannot create the world " << cfg.key() << ": " << e.what();
    }
    cts::bw::Measurement m;
    try {
      m = cts::bw::measure(*w, c_, g_settings);
    } catch (const cts::NcclError& e) {
      ADD_FAILURE() << e.what();
      w->rebuild();
      return;
    }
    if (!m.skip.empty()) GTEST_SKIP() << m.skip;
    cts::bw::judge_case(m.point, /*print=*/true);
  }

 private:
  cts::bw::BwCase c_;
};

}  // namespace

int main(int argc, char** argv) {
  cts::SuiteFlags flags("gpucts_bandwidth");
  cts::bw::SettingsFlags settings(flags, cts::bw::known_names());
  if (auto rc = flags.parse(argc, argv)) return *rc;
  try {
    g_settings = cts::bw::settings_for_run(settings);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpucts_bandwidth: %s\n", e.what());
    return 2;
  }
  bool listing = false;
  for (const auto& a : flags.given()) listing |= a.rfind("--gtest_list_tests", 0) == 0;
  if (!listing) cts::bw::print_banner(g_settings);
  for (const auto& c : cts::bw::bandwidth_cases(g_settings))
    ::testing::RegisterTest(c.coll->name, c.name().c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> ::testing::Test* { return new BandwidthCase(c); });
  cts::MainOptions opts;
  opts.finish = [](int rc) {
    cts::bw::finish(g_settings);
    return rc;
  };
  return cts::run_gtest_main(argc, argv, opts);
}
