// The preflight and argument checks over real MPI ranks (CI: 2 and 4 ranks, no GPU needed).
// Each case probes every rank, injects one difference on the last rank in-process, gathers over
// MPI and asserts that every rank reaches the same single verdict naming that rank and its host.
#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "fixtures/mpi/mpi_world.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/scoped_env.hpp"

namespace cts {
namespace {

const mpi::Context& ctx() { return mpi::context(); }
int last_rank() { return ctx().size - 1; }

// This rank's annotated fingerprint, changed by `edit` on the last rank only.
template <class Edit>
PreflightResult gathered_preflight(Edit edit, std::vector<Fingerprint>* out = nullptr) {
  ProbeOptions o;
  o.python = false;
  o.toolkit = false;
  Fingerprint fp = probe_fingerprint(o);
  RankPlacement p{ctx().rank, ctx().local_rank, ctx().size, -1};
  if (ctx().rank == last_rank()) edit(fp);
  int visible = fp.gpus ? static_cast<int>(fp.gpus->size()) : 0;
  p.gpu_index = select_device(ctx().local_rank, visible);
  annotate_for_preflight(fp, p);
  std::vector<Fingerprint> fps;
  for (const auto& s : mpi::allgather(to_json(fp).dump(), "a preflight self-test"))
    fps.push_back(parse_fingerprint(s, "gathered"));
  if (out) *out = fps;
  return compare_fingerprints(fps);
}

// Every rank must have computed the same message: compare them over MPI too.
void expect_same_everywhere(const std::string& message) {
  auto all = mpi::allgather(message, "the preflight message comparison");
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 1u)
      << "ranks disagree on the preflight verdict";
}

bool has_problem(const PreflightResult& r, const std::string& id) {
  for (const auto& p : r.problems)
    if (p.id == id) return true;
  return false;
}

std::string who(int rank, const std::vector<Fingerprint>& fps) {
  return "rank " + std::to_string(rank) + " (" + fps[rank].host.value_or("?") + ")";
}

TEST(PreflightWorld, LauncherMatchesExpectedRanks) {
  if (const char* e = std::getenv("GPUCTS_EXPECT_RANKS")) {
    EXPECT_EQ(ctx().size, std::atoi(e))
        << "the launcher started a different number of ranks than CTest asked for";
  }
  EXPECT_GE(ctx().local_rank, 0);
  EXPECT_LT(ctx().local_rank, ctx().local_size);
}

TEST(PreflightWorld, NoInjectionPasses) {
  auto r = gathered_preflight([](Fingerprint&) {});
  // More ranks than this machine has GPUs (the GPU machine has one): a skip with the reason.
  if (mpi::preflight_is_skip(r)) GTEST_SKIP() << r.message();
  EXPECT_TRUE(r.ok()) << r.message();
  expect_same_everywhere(r.message());
}

TEST(PreflightInjected, NcclRuntimeDifferenceNamesRankAndHost) {
  if (ctx().size < 2) GTEST_SKIP() << "needs 2 ranks to differ, world has " << ctx().size;
  if (!GPUCTS_HAVE_CUDA)
    GTEST_SKIP() << "built without NCCL (the asan build): rank 0 has no NCCL runtime to differ from";
  std::vector<Fingerprint> fps;
  auto r = gathered_preflight(
      [](Fingerprint& fp) { fp.nccl_runtime = Version::parse("2.27.3", VersionKind::Nccl); }, &fps);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has_problem(r, "cross-host-mismatch")) << r.message();
  EXPECT_NE(r.message().find("2.27.3 on " + fps[last_rank()].label()), std::string::npos) << r.message();
  expect_same_everywhere(r.message());
}

TEST(PreflightInjected, DriverCudaDifferenceNamesRankAndHost) {
  if (ctx().size < 2) GTEST_SKIP() << "needs 2 ranks to differ, world has " << ctx().size;
  std::vector<Fingerprint> fps;
  auto r = gathered_preflight(
      [](Fingerprint& fp) { fp.driver_cuda = Version::parse("12.2", VersionKind::Cuda); }, &fps);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("12.2 on " + who(last_rank(), fps)), std::string::npos) << r.message();
  expect_same_everywhere(r.message());
}

TEST(PreflightInjected, TwoRanksOnOneGpu) {
  if (ctx().size < 2) GTEST_SKIP() << "needs 2 ranks, world has " << ctx().size;
  // Every rank sees the same single GPU: they would all use it.
  ProbeOptions o;
  o.python = o.toolkit = false;
  Fingerprint fp = probe_fingerprint(o);
  GpuInfo g;
  g.uuid = "GPU-00000000-0000-0000-0000-0000000000aa";
  fp.gpus = std::vector<GpuInfo>{g};
  annotate_for_preflight(fp, {ctx().rank, ctx().local_rank, ctx().size, select_device(ctx().local_rank, 1)});
  // A real job's ranks: without the distinct NCCL_HOSTID a simulated-hosts run gives each rank.
  fp.extra["gpucts_rank"].erase("nccl_hostid");
  if (fp.env) fp.env->erase("NCCL_HOSTID");
  std::vector<Fingerprint> fps;
  for (const auto& s : mpi::allgather(to_json(fp).dump(), "a preflight self-test"))
    fps.push_back(parse_fingerprint(s, "g"));
  auto r = compare_fingerprints(fps);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has_problem(r, "gpu-shared-by-ranks")) << r.message();
  EXPECT_TRUE(has_problem(r, "ranks-exceed-gpus")) << r.message();
  EXPECT_NE(r.message().find(*g.uuid), std::string::npos) << r.message();
  expect_same_everywhere(r.message());
}

TEST(PreflightInjected, SocketIfnameMatchesNothingOnOneRank) {
  if (ctx().size < 2) GTEST_SKIP() << "needs 2 ranks, world has " << ctx().size;
  std::vector<Fingerprint> fps;
  auto r = gathered_preflight(
      [](Fingerprint& fp) {
        if (!fp.env) fp.env = std::map<std::string, std::string>{};
        (*fp.env)["NCCL_SOCKET_IFNAME"] = "=gpucts_no_such_if0";
      },
      &fps);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has_problem(r, "nccl-socket-ifname-no-match")) << r.message();
  EXPECT_NE(r.message().find("rank " + std::to_string(last_rank())), std::string::npos) << r.message();
  expect_same_everywhere(r.message());
}

TEST(PreflightInjected, EnvironmentDifferenceNamesVariable) {
  if (ctx().size < 2) GTEST_SKIP() << "needs 2 ranks, world has " << ctx().size;
  // The environment is read at annotation time: set it on the last rank only, then restore.
  const bool last = ctx().rank == last_rank();
  Fingerprint fp;
  {
    std::optional<ScopedEnv> proto;
    if (last) proto.emplace("NCCL_PROTO", "Simple");
    ProbeOptions o;
    o.python = o.toolkit = false;
    fp = probe_fingerprint(o);
    annotate_for_preflight(fp, {ctx().rank, ctx().local_rank, ctx().size, -1});
  }
  std::vector<Fingerprint> fps;
  for (const auto& s : mpi::allgather(to_json(fp).dump(), "a preflight self-test"))
    fps.push_back(parse_fingerprint(s, "g"));
  auto r = compare_fingerprints(fps);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has_problem(r, "env-differs")) << r.message();
  EXPECT_NE(r.message().find("NCCL_PROTO=Simple on rank " + std::to_string(last_rank())), std::string::npos)
      << r.message();
  expect_same_everywhere(r.message());
}

TEST(ArgCheck, SameArgumentsAgree) {
  CollectiveArgs a{"AllReduce", 1024, "f32", "sum", -1, -1};
  EXPECT_EQ(mpi::check_collective_args(a), "");
}

TEST(ArgCheck, CountMismatchNamesBothRanks) {
  if (ctx().size < 2) GTEST_SKIP() << "needs 2 ranks, world has " << ctx().size;
  CollectiveArgs a{"AllReduce", 1024, "f32", "sum", -1, 7};
  if (ctx().rank == last_rank()) a.count = 2048;
  std::string m = mpi::check_collective_args(a);
  EXPECT_NE(m.find("rank 0 AllReduce(count=1024, dtype=f32, op=sum, root=-, seq=7)"), std::string::npos) << m;
  EXPECT_NE(m.find("rank " + std::to_string(last_rank()) + " AllReduce(count=2048"), std::string::npos) << m;
  expect_same_everywhere(m);
}

TEST(ArgCheck, SkippedCollectiveShowsAsSequenceMismatch) {
  if (ctx().size < 2) GTEST_SKIP() << "needs 2 ranks, world has " << ctx().size;
  CollectiveArgs a{"Broadcast", 64, "i32", "", 0, ctx().rank == last_rank() ? 11 : 10};
  std::string m = mpi::check_collective_args(a);
  EXPECT_NE(m.find("seq=11"), std::string::npos) << m;
}

}  // namespace
}  // namespace cts
