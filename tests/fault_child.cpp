// The fault-injection child of tests/faults_test.cpp (built, not registered: NO_TEST). It runs
// under gpucts::gtest_main_mpi like every MPI suite; GPUCTS_FAULT=<kind>:<rank> makes one rank
// misbehave in Faults.Inject:
//   exit (exit(3)), segv (SIGSEGV), stop (SIGSTOP: hangs), spin (busy until the watchdog),
//   fail (an ordinary failed assertion), argmismatch (count doubled in the argument check),
//   diverge (one extra exchange: the ranks are out of step).
// Faults.Slow sleeps GPUCTS_FAULT_SLOW_S seconds so a signal can arrive mid-run.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "fixtures/gtest/require.hpp"
#include "fixtures/mpi/mpi_world.hpp"
#if GPUCTS_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "fixtures/mpi/mpi_nccl_world.hpp"
#include "fixtures/nccl/nccl_util.hpp"
#endif

namespace cts {
namespace {

struct Fault {
  std::string kind;
  int rank = -1;
};

Fault fault() {
  Fault f;
  const char* v = std::getenv("GPUCTS_FAULT");
  if (!v) return f;
  std::string s = v;
  auto colon = s.find(':');
  f.kind = s.substr(0, colon);
  f.rank = colon == std::string::npos ? 0 : std::atoi(s.c_str() + colon + 1);
  return f;
}

bool mine(const Fault& f) { return f.rank == mpi::context().rank; }

TEST(Faults, Before) { SUCCEED(); }

TEST(Faults, Inject) {
  Fault f = fault();
  if (f.kind == "argmismatch") {
    CollectiveArgs a{"AllReduce", 4096, "f32", "sum", -1, -1};
    if (mine(f)) a.count *= 2;
    CTS_ASSERT_SAME_COLLECTIVE_ARGS(a);
    return;
  }
  if (!mine(f)) return;
  // One exchange too many on this rank: the others are already in the verdict exchange.
  if (f.kind == "diverge") mpi::check_collective_args({"Broadcast", 1, "i8", "", 0, -1});
  if (f.kind == "exit") std::exit(3);
  if (f.kind == "segv") raise(SIGSEGV);
  if (f.kind == "stop") raise(SIGSTOP);
  if (f.kind == "spin")
    for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (f.kind == "fail") FAIL() << "injected failure on rank " << f.rank;
}

TEST(Faults, Slow) {
  const char* s = std::getenv("GPUCTS_FAULT_SLOW_S");
  if (!s) GTEST_SKIP() << "GPUCTS_FAULT_SLOW_S unset";
  std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(s)));
}

// Stands for every NCCL case: skipped, citing the preflight, when the ranks disagree.
TEST(Faults, NcclCase) {
  CTS_REQUIRE_PREFLIGHT();
  CTS_REQUIRE_GPUS(1);
  SUCCEED();
}

// A rank dies in the middle of NCCL traffic (GPUCTS_FAULT=nccl_segv:<rank>): the others are inside
// a collective when the launcher tears the job down; their watchdog must abort the communicator
// (journal line "aborted") within the grace instead of hanging in NCCL. Needs a GPU per rank.
TEST(Faults, NcclPeerCrash) {
  Fault f = fault();
  if (f.kind != "nccl_segv") GTEST_SKIP() << "GPUCTS_FAULT is not nccl_segv";
  CTS_REQUIRE_PREFLIGHT();
#if GPUCTS_HAVE_CUDA
  CTS_REQUIRE_GPUS(1);
  World& w = mpi::mpi_world(WorldConfig{mpi::context().size});
  const LocalRank& r = w.local().at(0);
  float* buf = nullptr;
  cuda_ok("cudaMalloc", cudaMalloc(&buf, 1 << 20));
  for (int i = 0; i < 1000; ++i) {
    if (i == 10 && mine(f)) raise(SIGSEGV);
    nccl_check("ncclAllReduce", ncclAllReduce(buf, buf, (1 << 20) / 4, ncclFloat, ncclSum, r.comm, r.stream),
               r.comm);
    wait_streams({r.comm}, {r.stream}, deadline_after(case_timeout_s()), "ncclAllReduce");
  }
  cudaFree(buf);
#else
  GTEST_SKIP() << "gpucts was built without CUDA";
#endif
}

TEST(Faults, After) { SUCCEED(); }

}  // namespace
}  // namespace cts
