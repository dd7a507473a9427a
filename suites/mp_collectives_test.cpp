// NCCL collective conformance, one process per GPU over MPI: the SAME case list and test body as
// suites/collectives_test.cpp (cts::collective_cases, cts::run_collective_case), on a World of the
// MPI bootstrap (ncclCommInitRank(Config) over the MPI-broadcast ncclUniqueId). Every rank
// registers the same ordered list for the launcher's world size; before each case the ranks
// compare the collective's arguments; the verdict is reduced across ranks and rank 0's XML lists
// each rank's result.
#include <gtest/gtest.h>

#include <string>

#include "fixtures/gtest/case_registration.hpp"
#include "fixtures/mpi/mpi_nccl_world.hpp"
#include "fixtures/nccl/collectives.hpp"
#include "fixtures/probe/gpu_requirement.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/simulated_hosts.hpp"

namespace {

class MpiCollectiveCase : public ::testing::Test {
 public:
  explicit MpiCollectiveCase(cts::CollCase c) : c_(std::move(c)) {}
  void TestBody() override {
    CTS_REQUIRE_PREFLIGHT();
    if (!cts::mpi::not_runnable_reason().empty()) GTEST_SKIP() << cts::mpi::not_runnable_reason();
    cts::CollectiveArgs args{c_.coll->name,
                             static_cast<long long>(c_.count),
                             cts::name_of(c_.dtype),
                             c_.op ? cts::name_of(*c_.op) : "",
                             c_.coll->rooted ? c_.root : -1,
                             -1};
    CTS_ASSERT_SAME_COLLECTIVE_ARGS(args);
    cts::World* w = nullptr;
    std::string error;
    try {
      w = &cts::mpi::mpi_world(c_.world_config());
    } catch (const std::exception& e) {
      error = e.what();
    }
    ASSERT_NE(w, nullptr) << "cannot create the world " << c_.world_config().key() << ": " << error;
    cts::run_collective_case(*w, c_);
  }

 private:
  cts::CollCase c_;
};

void register_cases(const cts::mpi::Context& ctx) {
  std::string why;
  const auto* pf = cts::mpi::preflight();
  if (pf && !pf->ok())
    why = pf->message() + " (see Preflight.RanksConsistent)";
  else if (std::string none = cts::mpi::ranks_without_gpu(); !none.empty())
    why = "needs a GPU per rank; none visible to " + none;
  // Where the cases cannot run at all, one case says why instead of thousands of skips; decided
  // alike on every rank. A listing still names every case (a CI job plans with it).
  // A listing or a filter still registers every case; each then skips with the reason.
  if (!why.empty() && pf && pf->ok()) cts::mpi::set_not_runnable(why);
  if (!why.empty() && !cts::register_every_case(0, nullptr)) {
    cts::register_case_for_missing_gpus("MpiCollectives", "w" + std::to_string(ctx.size) + "_not_runnable",
                                        why, cts::simulated_hosts_requested() ? 1 : ctx.local_size);
    return;
  }
  for (const auto& c : cts::collective_cases(ctx.size, cts::sweep_from_env()))
    ::testing::RegisterTest(c.suite().c_str(), c.name().c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> ::testing::Test* { return new MpiCollectiveCase(c); });
}

const bool registered = cts::mpi::add_registrar(register_cases);

// Communicators are torn down before MPI_Finalize, while every peer is still there.
class ReleaseWorlds : public ::testing::Environment {
 public:
  void TearDown() override { cts::mpi::release_mpi_worlds(); }
};
const auto* release = ::testing::AddGlobalTestEnvironment(new ReleaseWorlds);

}  // namespace
