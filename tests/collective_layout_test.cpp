// Host side of a collective case, no GPU: the buffer layout (what is allocated, poisoned, filled,
// passed to NCCL and verified) for every listed case and rank, and the forced NCCL_ALGO/NCCL_PROTO
// values of the variants against nccl_env.csv.
#include <gtest/gtest.h>

#include <string>

#include "fixtures/nccl/collectives.hpp"

namespace {
using namespace cts;

// The invariants of one rank's layout; returns "" or what is broken.
std::string layout_problem(const CollCase& c, int n, int rank) {
  const CaseLayout l = case_layout(c, n, rank);
  const std::size_t mis = c.misaligned ? 1 : 0;
  const std::size_t own = static_cast<std::size_t>(rank) * c.count;
  auto fail = [&](const std::string& what) {
    return c.suite() + "." + c.name() + " rank " + std::to_string(rank) + ": " + what;
  };
  if (l.call_count != c.count) return fail("NCCL count " + std::to_string(l.call_count) + " != case count");
  if (l.send_elems != c.coll->send_count(c.count, n)) return fail("send elements differ from the row");
  if (l.recv_elems != c.coll->recv_count(c.count, n)) return fail("receive elements differ from the row");
  if (l.recv_off < mis || l.send_off < mis) return fail("an offset ignores the misalignment");
  if (l.recv_off + l.recv_elems > l.a_elems) return fail("receive buffer runs past its allocation");
  const std::size_t send_room = l.send_in_b ? l.b_elems : l.a_elems;
  if (l.send_off + l.send_elems > send_room) return fail("send buffer runs past its allocation");
  if (!c.in_place) {
    if (c.coll->in_place == InPlace::only) return fail("listed out of place but the row has one buffer only");
    if (!l.send_in_b || !l.poison_recv)
      return fail("out of place must use two buffers and poison the output");
    if (l.recv_off != mis || l.send_off != mis) return fail("out-of-place offsets");
    if (l.a_elems != l.recv_elems + mis || l.b_elems != l.send_elems + mis) return fail("out-of-place sizes");
    return "";
  }
  if (l.send_in_b || l.b_elems != 0) return fail("in place must use one buffer");
  switch (c.coll->in_place) {
    case InPlace::same:
    case InPlace::only:
      if (l.send_off != l.recv_off || !l.poison_recv)
        return fail("in place: send must equal recv, recv poisoned first");
      break;
    case InPlace::send_in_recv:
      if (l.send_off != l.recv_off + own || !l.poison_recv)
        return fail("in place: send must be recv + rank*count");
      break;
    case InPlace::recv_in_send:
      if (l.recv_off != l.send_off + own || l.poison_recv)
        return fail("in place: recv must be send + rank*count, not poisoned");
      break;
    case InPlace::none:
      return fail("listed in place but the row has no in-place form");
  }
  return "";
}

TEST(CaseLayout, EveryListedCaseAndRankIsConsistent) {
  for (int n : {1, 2, 3, 4, 8}) {
    std::size_t checked = 0;
    for (const CollCase& c : collective_cases(n, Sweep::quick))
      for (int r = 0; r < n; ++r) {
        const std::string why = layout_problem(c, n, r);
        ASSERT_EQ(why, "");
        ++checked;
      }
    EXPECT_GT(checked, 1000u) << "world " << n;
  }
}

// A one-buffer row (a call like ncclBcast: a Broadcast twin with no out-of-place form) lists every
// case in place, each with the layout of an in-place Broadcast.
TEST(CaseLayout, AOneBufferRowListsInPlaceOnly) {
  Collective bcast = *find_collective("Broadcast");
  bcast.name = "BcastTestOnly";
  bcast.in_place = InPlace::only;
  const std::vector<Collective> table = {bcast};
  for (int n : {1, 2, 4}) {
    const auto cases = collective_cases(n, Sweep::quick, table);
    ASSERT_FALSE(cases.empty());
    for (const CollCase& c : cases) {
      ASSERT_TRUE(c.in_place) << c.name();
      for (int r = 0; r < n; ++r) ASSERT_EQ(layout_problem(c, n, r), "");
    }
  }
}

// The one-rank avg/premulsum cases whose tail NCCL 2.28.3 leaves unwritten: our side passes the
// full count, allocates and poisons exactly count elements, and fills the whole input.
TEST(CaseLayout, OneRankTailCasesPassTheFullCount) {
  struct Row {
    const char* coll;
    DType d;
    RedOp op;
    std::size_t count;
    bool mis;
  };
  const Row rows[] = {
      {"AllReduce", DType::f32, RedOp::avg, 262145, false},
      {"AllReduce", DType::f32, RedOp::premulsum, 4194305, false},
      {"AllReduce", DType::bf16, RedOp::avg, 524289, false},
      {"Reduce", DType::u8, RedOp::premulsum, 1048577, false},
      {"ReduceScatter", DType::i32, RedOp::premulsum, 262145, false},
      {"AllReduce", DType::f64, RedOp::avg, 8193, false},
      {"AllReduce", DType::i64, RedOp::premulsum, 65537, true},
  };
  for (const Row& row : rows) {
    CollCase c;
    c.coll = find_collective(row.coll);
    ASSERT_NE(c.coll, nullptr);
    c.dtype = row.d;
    c.op = row.op;
    c.count = row.count;
    c.misaligned = row.mis;
    c.world = 1;
    const CaseLayout l = case_layout(c, 1, 0);
    const std::size_t mis = row.mis ? 1 : 0;
    EXPECT_EQ(l.call_count, row.count) << c.name();
    EXPECT_EQ(l.recv_elems, row.count) << c.name();
    EXPECT_EQ(l.send_elems, row.count) << c.name();
    EXPECT_EQ(l.a_elems, row.count + mis) << c.name();
    EXPECT_EQ(l.b_elems, row.count + mis) << c.name();
    EXPECT_TRUE(l.poison_recv && l.send_in_b) << c.name();
    EXPECT_EQ(c.bytes_per_rank(1), 2 * (row.count + mis) * dtype_info(row.d).size) << c.name();
    EXPECT_EQ(layout_problem(c, 1, 0), "");
  }
}

TEST(ForcedEnv, VariantValuesExistOnTheGpuMachinesNccl) {
  const Version v = Version::parse("2.28.3", VersionKind::Nccl);
  for (const VariantInfo& var : variants()) {
    if (!var.env_name) continue;
    const CaseSupport s = forced_env_support(var.env_name, var.env_value, v);
    EXPECT_TRUE(s.ok) << var.env_name << "=" << var.env_value << ": " << s.reason;
  }
}

TEST(ForcedEnv, AValueTheReleaseLacksSkipsWithTheReason) {
  // PAT exists from 2.23 (nccl_env.csv), NCCL_ALGO from 2.5.
  const CaseSupport pat = forced_env_support("NCCL_ALGO", "PAT", Version::parse("2.22.3", VersionKind::Nccl));
  EXPECT_FALSE(pat.ok);
  EXPECT_NE(pat.reason.find("NCCL_ALGO=PAT"), std::string::npos) << pat.reason;
  EXPECT_NE(pat.reason.find("2.23"), std::string::npos) << pat.reason;
  EXPECT_TRUE(forced_env_support("NCCL_ALGO", "PAT", Version::parse("2.23.4", VersionKind::Nccl)).ok);
  const CaseSupport bogus =
      forced_env_support("NCCL_PROTO", "LL256", Version::parse("2.28.3", VersionKind::Nccl));
  EXPECT_FALSE(bogus.ok);
  EXPECT_NE(bogus.reason.find("LL256"), std::string::npos) << bogus.reason;
  const CaseSupport old = forced_env_support("NCCL_ALGO", "Ring", Version::parse("2.4.8", VersionKind::Nccl));
  EXPECT_FALSE(old.ok) << "NCCL 2.4 does not read NCCL_ALGO";
}

TEST(ForcedEnv, CaseSupportRunsTheEnvVariantsOn2283) {
  CollCase c;
  c.coll = find_collective("AllReduce");
  c.dtype = DType::f32;
  c.op = RedOp::sum;
  c.count = 1021;
  c.variant = Variant::proto_ll128;
  const CaseSupport ok = case_support(c, Version::parse("2.28.3", VersionKind::Nccl), 22803, 90, 1);
  EXPECT_TRUE(ok.ok) << ok.reason;
}

}  // namespace
