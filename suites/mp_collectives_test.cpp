// NCCL collective conformance, one process per GPU over MPI: the SAME case list and test body as
// suites/collectives_test.cpp (cts::collective_cases, cts::run_collective_case), on a World of the
// MPI bootstrap (ncclCommInitRank(Config) over the MPI-broadcast ncclUniqueId). Every rank
// registers the same ordered list for the launcher's world size; before each case the ranks
// compare the collective's arguments; the verdict is reduced across ranks and rank 0's XML lists
// each rank's result.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "fixtures/mpi/mpi_nccl_world.hpp"
#include "fixtures/nccl/collectives.hpp"
#include "fixtures/probe/gpu_requirement.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/simulated_hosts.hpp"
#include "results/nccl_transport.hpp"

extern char** environ;

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
  if (cts::mpi::stand_in_when_not_runnable(ctx, "MpiCollectives")) return;
  for (const auto& c : cts::collective_cases(ctx.size, cts::sweep_from_env()))
    ::testing::RegisterTest(c.suite().c_str(), c.name().c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> ::testing::Test* { return new MpiCollectiveCase(c); });
}

// NCCL_DEBUG_FILE with NCCL's %h (host name up to its first '.') and %p (pid) filled in.
std::string nccl_debug_file() {
  const char* f = std::getenv("NCCL_DEBUG_FILE");
  if (!f) return "";
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string h = host;
  h = h.substr(0, h.find('.'));
  std::string out;
  for (const char* p = f; *p; ++p) {
    if (p[0] == '%' && p[1] == 'h') {
      out += h;
      ++p;
    } else if (p[0] == '%' && p[1] == 'p') {
      out += std::to_string(getpid());
      ++p;
    } else {
      out += *p;
    }
  }
  return out;
}

// The path NCCL took, from this rank's own INFO lines (NCCL_DEBUG_FILE, set by the MPI main for
// simulated hosts), against what the world implies; runs after every collective case, since NCCL
// connects peers at first use. The summary is the case's own gpucts.transport property: a bundle
// keeps a case's properties, while GoogleTest writes a suite's as attributes no reader keeps.
void transport_case() {
  CTS_REQUIRE_PREFLIGHT();
  if (!cts::mpi::not_runnable_reason().empty()) GTEST_SKIP() << cts::mpi::not_runnable_reason();
  if (!cts::simulated_hosts_requested())
    GTEST_SKIP() << "only the simulated-hosts entries imply one transport";
  const char* level = std::getenv("NCCL_DEBUG");
  if (!level || std::string(level) != "INFO")
    GTEST_SKIP() << "NCCL_DEBUG=" << (level ? level : "")
                 << " was set by the user: NCCL prints no channel line";
  const std::string file = nccl_debug_file();
  cts::NcclTransportLog log;
  try {
    log = cts::read_nccl_log(file);
  } catch (const std::exception& e) {
    FAIL() << "NCCL_DEBUG=INFO, but its log is not there: " << e.what();
  }
  cts::TransportWorld world;
  world.simulated_hosts = true;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("NCCL_", 0) == 0 && kv.find('=') != std::string::npos)
      world.env[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  ::testing::Test::RecordProperty("gpucts.transport", log.summary());
  for (const auto& f : cts::transport_findings(log, world))
    ADD_FAILURE() << f.id << ": " << f.message << " [" << file << "]";
  EXPECT_EQ(log.network, "Socket") << log.summary();
}

class TransportCase : public ::testing::Test {
 public:
  void TestBody() override { transport_case(); }
};

void register_transport_case(const cts::mpi::Context&) {
  ::testing::RegisterTest("Transport", "ChannelsMatchTheWorld", nullptr, nullptr, __FILE__, __LINE__,
                          []() -> ::testing::Test* { return new TransportCase; });
}

const bool registered = cts::mpi::add_registrar(register_cases);
const bool transport_registered = cts::mpi::add_registrar(register_transport_case);

// Communicators are torn down before MPI_Finalize, while every peer is still there.
class ReleaseWorlds : public ::testing::Environment {
 public:
  void TearDown() override { cts::mpi::release_mpi_worlds(); }
};
const auto* release = ::testing::AddGlobalTestEnvironment(new ReleaseWorlds);

}  // namespace
