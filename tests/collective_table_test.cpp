// The collective table, case list, names and support rules: host logic, no GPU needed.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "fixtures/nccl/bandwidth_runner.hpp"
#include "fixtures/nccl/collectives.hpp"
#include "fixtures/probe/scoped_env.hpp"
#include "matrix/matrix.hpp"
#include "results/bandwidth.hpp"
#include "results/case_axes.hpp"

namespace {
using namespace cts;

const Version k2283 = Version::parse("2.28.3");

TEST(CollectiveTable, RowsAreUniqueAndCountsFollowNccl) {
  std::set<std::string> names;
  for (const auto& c : collectives()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
  for (int n : {1, 2, 3, 8}) {
    EXPECT_EQ(find_collective("AllGather")->recv_count(5, n), 5u * n);
    EXPECT_EQ(find_collective("AllGather")->send_count(5, n), 5u);
    EXPECT_EQ(find_collective("ReduceScatter")->send_count(5, n), 5u * n);
    EXPECT_EQ(find_collective("ReduceScatter")->recv_count(5, n), 5u);
    EXPECT_EQ(find_collective("AlltoAll")->send_count(5, n), 5u * n);
    EXPECT_EQ(find_collective("Gather")->recv_count(5, n), 5u * n);
    EXPECT_EQ(find_collective("Scatter")->send_count(5, n), 5u * n);
    EXPECT_EQ(find_collective("AllReduce")->recv_count(5, n), 5u);
  }
}

// The family is a column of the row; nccl-tests' factors by row.
TEST(CollectiveTable, EveryRowHasItsBusBandwidthFamily) {
  auto factor = [](const char* row, int n) { return bw::bus_factor(find_collective(row)->bus, n); };
  EXPECT_EQ(factor("AllReduce", 8), 1.75);
  EXPECT_EQ(factor("AllGather", 8), 0.875);
  EXPECT_EQ(factor("ReduceScatter", 4), 0.75);
  EXPECT_EQ(factor("Broadcast", 8), 1.0);
  EXPECT_EQ(factor("Reduce", 8), 1.0);
  EXPECT_EQ(factor("AlltoAll", 8), 0.875);
  EXPECT_EQ(factor("AlltoAllSendRecv", 8), 0.875);  // the family of the collective it implements
  EXPECT_EQ(factor("GatherSendRecv", 2), 0.5);
  EXPECT_EQ(factor("ScatterSendRecv", 8), 0.875);
  EXPECT_EQ(factor("SendRecvPairs", 8), 1.0);
  EXPECT_EQ(factor("SendRecvRing", 8), 1.0);
  for (const auto& c : collectives()) EXPECT_EQ(bw::bus_factor(c.bus, 1), std::nullopt) << c.name;
}

// Thresholds name rows of the table (the bandwidth library knows no collective itself).
TEST(CollectiveTable, ThresholdsNameRowsOfTheTable) {
  std::vector<std::string> rows;
  for (const auto& c : collectives()) rows.push_back(c.name);
  EXPECT_NO_THROW(bw::check_collectives(bw::builtin_thresholds(), rows));
  const std::string csv =
      "gpu,link,nvls,world_size,collective,placement,min_bytes,metric,expected,tolerance_pct,source\n"
      "any,none,any,1,AllReduce,any,1G,busbw_gbps,1,3,src\n"
      "any,none,any,1,AllToOne,any,1G,busbw_gbps,1,3,src\n";
  try {
    bw::check_collectives(bw::parse_thresholds(csv, "t.csv"), rows);
    ADD_FAILURE() << "a threshold naming no row was accepted";
  } catch (const bw::BandwidthError& e) {
    EXPECT_NE(std::string(e.what()).find("t.csv:3: unknown collective 'AllToOne'"), std::string::npos)
        << e.what();
  }
}

// Adding a collective is one row: a test-only row (a copy of AllGather under a name no row has) gets its
// cases, its layout, its bus factor and its support verdicts from the row alone.
TEST(CollectiveTable, ATestOnlyRowFlowsThroughWithoutAnyOtherEdit) {
  Collective copy = *find_collective("AllGather");
  copy.name = "AllGatherTestOnly";
  ASSERT_EQ(find_collective(copy.name), nullptr) << "the test-only row's name is taken";
  std::vector<Collective> table = collectives();
  table.push_back(copy);
  for (int w : {1, 4}) {
    std::vector<std::string> original, copied;
    const auto cases = collective_cases(w, Sweep::full, table);
    for (const auto& c : cases) {
      if (c.suite() == "AllGather") original.push_back(c.name());
      if (c.suite() != "AllGatherTestOnly") continue;
      copied.push_back(c.name());
      CollCase twin = c;
      twin.coll = find_collective("AllGather");
      for (int r = 0; r < w; ++r) {
        const CaseLayout a = case_layout(c, w, r), b = case_layout(twin, w, r);
        ASSERT_EQ(a.a_elems, b.a_elems) << c.name();
        ASSERT_EQ(a.b_elems, b.b_elems) << c.name();
        ASSERT_EQ(a.send_off, b.send_off) << c.name();
        ASSERT_EQ(a.recv_off, b.recv_off) << c.name();
        ASSERT_EQ(a.recv_elems, b.recv_elems) << c.name();
      }
      ASSERT_EQ(case_support(c, k2283, 22803, 90, w).ok, case_support(twin, k2283, 22803, 90, w).ok)
          << c.name();
    }
    EXPECT_FALSE(copied.empty());
    EXPECT_EQ(copied, original) << "the copy lists the same cases as its original, subsets included";
    EXPECT_EQ(cases.size(), collective_cases(w, Sweep::full).size() + copied.size());
  }
  EXPECT_EQ(bw::bus_factor(copy.bus, 8), 0.875);
  // A table of that row alone lists only its own cases.
  const std::vector<Collective> just_copy = {copy};  // the cases point into the table
  const auto alone = collective_cases(2, Sweep::quick, just_copy);
  EXPECT_FALSE(alone.empty());
  for (const auto& c : alone) ASSERT_EQ(c.suite(), "AllGatherTestOnly");
}

TEST(CollectiveTable, InPlaceOffsetsFollowNcclDocs) {
  EXPECT_EQ(find_collective("AllReduce")->in_place, InPlace::same);
  EXPECT_EQ(find_collective("AllGather")->in_place, InPlace::send_in_recv);      // send = recv + rank*count
  EXPECT_EQ(find_collective("ReduceScatter")->in_place, InPlace::recv_in_send);  // recv = send + rank*count
  EXPECT_EQ(find_collective("Gather")->in_place, InPlace::send_in_recv);   // send = recv + root*count at root
  EXPECT_EQ(find_collective("Scatter")->in_place, InPlace::recv_in_send);  // recv = send + root*count at root
  EXPECT_EQ(find_collective("AlltoAll")->in_place, InPlace::none);
  EXPECT_EQ(find_collective("SendRecvRing")->in_place, InPlace::none);
}

TEST(CollectiveTable, ExpectationsName) {
  Expectation rs = find_collective("ReduceScatter")->expect(3, 4, 10, 0);
  EXPECT_EQ(rs.kind, Expectation::Kind::reduce);
  EXPECT_EQ(rs.base, 30);
  Expectation a2a = find_collective("AlltoAll")->expect(2, 4, 10, 0);
  EXPECT_EQ(a2a.kind, Expectation::Kind::copy);
  EXPECT_EQ(a2a.block, 10);
  EXPECT_EQ(a2a.base, 20);
  EXPECT_EQ(find_collective("SendRecvRing")->expect(0, 4, 10, 0).src_rank, 3);
  EXPECT_EQ(find_collective("Broadcast")->expect(1, 4, 10, 2).src_rank, 2);
  EXPECT_EQ(find_collective("Scatter")->expect(1, 4, 10, 2).base, 10);
  for (int n : {1, 2, 3, 5, 8})
    for (int r = 0; r < n; ++r) {
      int p = find_collective("SendRecvPairs")->expect(r, n, 1, 0).src_rank;
      ASSERT_GE(p, 0);
      ASSERT_LT(p, n);
      EXPECT_EQ(find_collective("SendRecvPairs")->expect(p, n, 1, 0).src_rank, r) << "pairs must be mutual";
    }
  EXPECT_FALSE(find_collective("Reduce")->defined_at(1, 0));
  EXPECT_TRUE(find_collective("Reduce")->defined_at(0, 0));
  EXPECT_TRUE(find_collective("Scatter")->defined_at(1, 0));
}

TEST(CaseList, NamesAreUniqueAndReadable) {
  const std::regex ok("^[A-Za-z0-9_]+$");
  for (int w : {1, 2, 3, 8}) {
    std::set<std::string> seen;
    for (const auto& c : collective_cases(w, Sweep::full)) {
      const std::string full = c.suite() + "." + c.name();
      ASSERT_TRUE(std::regex_match(c.name(), ok)) << full;
      ASSERT_TRUE(seen.insert(full).second) << "duplicate " << full;
    }
  }
  std::set<std::string> w1;
  for (const auto& c : collective_cases(1)) w1.insert(c.suite() + "." + c.name());
  EXPECT_TRUE(w1.count("AllReduce.bf16_sum_1021_inplace_w1"));
  EXPECT_TRUE(w1.count("AllReduce.f32_sum_1048575_outofplace_graph_w1"));
  EXPECT_TRUE(w1.count("Reduce.f8e4m3_premulsum_13_outofplace_root0_devscalar_w1"));
  EXPECT_TRUE(w1.count("AllGather.u8_65537_outofplace_mis_w1"));
  EXPECT_TRUE(w1.count("Scatter.f8e5m2_0_inplace_root0_w1"));
}

TEST(CaseList, CoversTheIssue) {
  for (int w : {1, 4}) {
    auto cases = collective_cases(w);
    std::map<std::string, std::set<std::string>> combos;  // row -> dtype_op
    std::map<std::string, std::set<int>> roots;
    std::set<std::string> gib;  // dtypes with a 1 GiB case per row
    bool zero = false, one = false, odd_large = false, mixed = false, mis = false;
    for (const auto& c : cases) {
      combos[c.suite()].insert(std::string(name_of(c.dtype)) + (c.op ? name_of(*c.op) : ""));
      if (c.coll->rooted) roots[c.suite()].insert(c.root);
      if (c.count * dtype_info(c.dtype).size == (std::size_t(1) << 30))
        gib.insert(c.suite() + name_of(c.dtype));
      zero |= c.count == 0;
      one |= c.count == 1;
      odd_large |= c.count > (1u << 20) && c.count % 2 == 1;
      mixed |= c.mode == PayloadMode::mixed;
      mis |= c.misaligned;
    }
    EXPECT_TRUE(zero && one && odd_large && mixed && mis);
    for (const auto& col : collectives()) {
      EXPECT_EQ(combos[col.name].size(), col.reduces ? kNumDTypes * kNumRedOps : kNumDTypes) << col.name;
      if (col.rooted) {
        EXPECT_EQ(roots[col.name].size(), static_cast<std::size_t>(w)) << col.name;
      }
      for (const auto& t : kDTypes)
        EXPECT_TRUE(gib.count(col.name + std::string(t.name))) << col.name << " " << t.name;
    }
  }
  // Over 3 ranks float avg cannot be exact: those cases run in mixed mode.
  for (const auto& c : collective_cases(3)) {
    if (c.op && *c.op == RedOp::avg && dtype_info(c.dtype).is_float) {
      ASSERT_EQ(c.mode, PayloadMode::mixed) << c.name();
    }
  }
}

TEST(CaseList, SizedForTheOneMinuteBudget) {
  const std::size_t full = collective_cases(1, Sweep::full).size();
  const std::size_t quick = collective_cases(1, Sweep::quick).size();
  std::printf("world 1: %zu cases (full sweep), %zu (quick)\n", full, quick);
  EXPECT_LT(quick, full);
  EXPECT_LT(full, 40000u);
}

// The smoke sweep (qualify --level quick): exactly one out-of-place case per (row, dtype, op).
TEST(CaseList, SmokeIsOneSizePerRowDtypeAndOp) {
  const auto smoke = collective_cases(1, Sweep::smoke);
  std::size_t expect = 0;
  for (const auto& row : collectives()) expect += kNumDTypes * (row.reduces ? kNumRedOps : 1);
  EXPECT_EQ(smoke.size(), expect);
  std::set<std::string> seen;
  for (const auto& c : smoke) {
    EXPECT_EQ(c.in_place, c.coll->placements().front()) << "out of place where the row has it";
    EXPECT_EQ(c.variant, Variant::plain);
    EXPECT_TRUE(
        seen.insert(std::string(c.coll->name) + name_of(c.dtype) + (c.op ? name_of(*c.op) : "")).second);
  }
  ScopedEnv e("GPUCTS_COLL_SWEEP", "smoke");
  EXPECT_EQ(sweep_from_env(), Sweep::smoke);
}

// The rows of the table, and test-only rows that stand for collectives a new row could add: a
// Broadcast twin with one buffer (a call like ncclBcast: in place only) and an AllReduce twin
// without call variants.
std::vector<Collective> table_and_test_rows() {
  std::vector<Collective> rows = collectives();
  Collective bcast = *find_collective("Broadcast");
  bcast.name = "BcastTestOnly";
  bcast.in_place = InPlace::only;
  rows.push_back(bcast);
  Collective plain = *find_collective("AllReduce");
  plain.name = "AllReducePlainTestOnly";
  plain.variants = Variants::plain;
  rows.push_back(plain);
  return rows;
}

// The subsets as the case list shows them, read off each case (not from in_subset).
using SubsetSet = std::set<std::string>;
std::map<std::string, SubsetSet> listed_subsets(const std::vector<CollCase>& cases, int world) {
  std::map<std::string, SubsetSet> out;
  for (const auto& c : cases) {
    SubsetSet& s = out[c.suite()];
    switch (c.variant) {
      case Variant::plain:
        if (c.mode == PayloadMode::mixed && !(c.op && exact_limitation(c.dtype, *c.op, world)))
          s.insert("mixed");
        break;
      case Variant::devscalar:
        s.insert("devscalar");
        break;
      case Variant::grouped:
        s.insert("grouped");
        break;
      case Variant::graph:
        s.insert("graph");
        break;
      case Variant::algo_tree:
        s.insert("tree");
        break;
      default:  // initall, split, the other forced NCCL_ALGO / NCCL_PROTO values
        s.insert("every_variant");
    }
  }
  return out;
}

bool nccl_has_algorithms_for(const Collective& row) {
  for (const auto& a : builtin_matrix().nccl_algos)
    if (a.collective == row.feature) return true;
  return false;
}

// What each row qualifies for, said from its columns: a reducing row gets mixed-precision and
// device-scalar cases; the reference row every variant; a captured row a graph case, and a grouped
// one when elementwise; a row whose collective NCCL runs with an algorithm a forced Tree.
SubsetSet qualifies_for(const Collective& row) {
  SubsetSet s;
  const bool every = row.variants == Variants::every;
  if (row.reduces) s.insert({"mixed", "devscalar"});
  if (every) s.insert("every_variant");
  if (every || (row.variants == Variants::captured && row.elementwise)) s.insert("grouped");
  if (row.variants != Variants::plain) s.insert("graph");
  if (every || nccl_has_algorithms_for(row)) s.insert("tree");
  return s;
}

TEST(Subsets, EachRowIsInEverySubsetItQualifiesForAndInNoOther) {
  const std::vector<Collective> rows = table_and_test_rows();
  for (int w : {1, 2, 4})
    for (Sweep sweep : {Sweep::full, Sweep::quick, Sweep::shapes, Sweep::placements}) {
      auto listed = listed_subsets(collective_cases(w, sweep, rows), w);
      for (const auto& row : rows)
        EXPECT_EQ(listed[row.name], qualifies_for(row)) << row.name << " w" << w << " sweep " << int(sweep);
    }
  for (const auto& row : rows) {
    const SubsetSet q = qualifies_for(row);
    const bool every = in_subset(row, Subset::every_variant);
    EXPECT_EQ(in_subset(row, Subset::mixed), q.count("mixed") == 1) << row.name;
    EXPECT_EQ(in_subset(row, Subset::devscalar), q.count("devscalar") == 1) << row.name;
    EXPECT_EQ(every, q.count("every_variant") == 1) << row.name;
    // The reference row has grouped, graph and Tree among its variants, not as subsets of their own.
    EXPECT_EQ(in_subset(row, Subset::grouped), !every && q.count("grouped")) << row.name;
    EXPECT_EQ(in_subset(row, Subset::graph), !every && q.count("graph")) << row.name;
    EXPECT_EQ(in_subset(row, Subset::forced_tree), !every && q.count("tree")) << row.name;
  }
}

// The subsets of today's rows, named, so that a change of a column shows here.
TEST(Subsets, TheTableRowsKeepTheirSubsets) {
  const std::map<std::string, SubsetSet> want = {
      {"AllReduce", {"mixed", "devscalar", "every_variant", "grouped", "graph", "tree"}},
      {"Broadcast", {"grouped", "graph", "tree"}},
      {"Reduce", {"mixed", "devscalar", "grouped", "graph", "tree"}},
      {"AllGather", {"graph", "tree"}},
      {"ReduceScatter", {"mixed", "devscalar", "graph", "tree"}},
      {"AlltoAll", {"graph"}},
      {"AlltoAllSendRecv", {"graph"}},
      {"Gather", {}},
      {"GatherSendRecv", {}},
      {"Scatter", {}},
      {"ScatterSendRecv", {}},
      {"SendRecvRing", {"grouped", "graph"}},
      {"SendRecvPairs", {}},
  };
  ASSERT_EQ(want.size(), collectives().size());
  auto listed = listed_subsets(collective_cases(2), 2);
  for (const auto& row : collectives()) EXPECT_EQ(listed[row.name], want.at(row.name)) << row.name;
}

// A one-buffer twin of Broadcast gets what Broadcast gets, in place: the same subset cases and, at
// the quick level, its one case.
TEST(Subsets, ABcastTwinGetsEveryCaseOfBroadcastInPlace) {
  const std::vector<Collective> rows = table_and_test_rows();
  for (Sweep sweep : {Sweep::full, Sweep::smoke}) {
    std::vector<std::string> broadcast, twin;
    for (const auto& c : collective_cases(2, sweep, rows)) {
      if (c.suite() == "Broadcast" && (c.variant != Variant::plain || sweep == Sweep::smoke)) {
        CollCase in_place = c;
        in_place.in_place = true;
        broadcast.push_back(in_place.name());
      }
      if (c.suite() == "BcastTestOnly" && (c.variant != Variant::plain || sweep == Sweep::smoke))
        twin.push_back(c.name());
    }
    EXPECT_FALSE(twin.empty());
    EXPECT_EQ(twin, broadcast);
  }
}

// The quick level (qualify --level quick runs the smoke sweep) lists every row, test-only rows too.
TEST(Subsets, TheQuickLevelListsEveryRow) {
  const std::vector<Collective> rows = table_and_test_rows();
  ScopedEnv e("GPUCTS_COLL_SWEEP", "smoke");
  for (int w : {1, 2, 3, 8}) {
    std::map<std::string, std::size_t> per_row;
    for (const auto& c : collective_cases(w, sweep_from_env(), rows)) ++per_row[c.suite()];
    for (const auto& row : rows)
      EXPECT_EQ(per_row[row.name], kNumDTypes * (row.reduces ? kNumRedOps : 1)) << row.name << " w" << w;
  }
}

// The placements of every case list, the perf suite's included, are the row's.
TEST(Placements, EveryListWalksTheRowsPlacements) {
  EXPECT_EQ(find_collective("AllReduce")->placements(), (std::vector<bool>{false, true}));
  EXPECT_EQ(find_collective("AlltoAll")->placements(), (std::vector<bool>{false}));
  const std::vector<Collective> rows = table_and_test_rows();
  EXPECT_EQ(rows[rows.size() - 2].placements(), (std::vector<bool>{true}));
  std::map<std::string, std::set<bool>> seen;
  for (const auto& c : collective_cases(2, Sweep::quick, rows)) seen[c.suite()].insert(c.in_place);
  for (const auto& row : rows) {
    const std::vector<bool> p = row.placements();
    EXPECT_EQ(seen[row.name], std::set<bool>(p.begin(), p.end())) << row.name;
  }
  bw::Settings s;
  s.sizes = {8, 1 << 20};
  std::map<std::string, std::set<bool>> bw_seen;
  for (const auto& c : bw::bandwidth_cases(s)) bw_seen[c.coll->name].insert(c.in_place);
  for (const auto& row : collectives()) {
    const std::vector<bool> p = row.placements();
    EXPECT_EQ(bw_seen[row.name], std::set<bool>(p.begin(), p.end())) << row.name;
  }
}

// The axes a case records are its own, one property each (results/case_axes.hpp).
TEST(CaseAxes, ACaseRecordsItsAxes) {
  CollCase c;
  c.coll = find_collective("Reduce");
  c.dtype = DType::bf16;
  c.op = RedOp::premulsum;
  c.count = 1048575;
  c.in_place = true;
  c.root = 1;
  c.world = 4;
  c.variant = Variant::devscalar;
  std::map<std::string, std::string> props;
  for (const auto& [k, v] : axis_properties(c.axes())) props[k] = v;
  const std::map<std::string, std::string> want = {
      {"gpucts.axis.collective", "Reduce"},  {"gpucts.axis.dtype", "bf16"},
      {"gpucts.axis.op", "premulsum"},       {"gpucts.axis.count", "1048575"},
      {"gpucts.axis.placement", "in_place"}, {"gpucts.axis.world", "4"},
      {"gpucts.axis.variant", "devscalar"}};
  EXPECT_EQ(props, want);
  c.coll = find_collective("Broadcast");
  c.op.reset();
  c.in_place = false;
  c.variant = Variant::plain;
  props.clear();
  for (const auto& [k, v] : axis_properties(c.axes())) props[k] = v;
  EXPECT_EQ(props.count("gpucts.axis.op"), 0u) << "no op for a collective that does not reduce";
  EXPECT_EQ(props["gpucts.axis.placement"], "out_of_place");
  EXPECT_EQ(props["gpucts.axis.variant"], "plain");
  const auto back = axes_from_properties(props);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->collective, "Broadcast");
  EXPECT_EQ(back->count, std::optional<std::uint64_t>(1048575));
  EXPECT_EQ(back->world, 4);
}

CollCase make(const char* row, DType d, std::optional<RedOp> op, PayloadMode m = PayloadMode::exact) {
  CollCase c;
  c.coll = find_collective(row);
  c.dtype = d;
  c.op = op;
  c.mode = m;
  c.count = 13;
  return c;
}

// A forced NCCL_ALGO=Tree on a collective without a Tree implementation: refused from 2.24 on 2+
// ranks (the case passes on the refusal), run on Ring before, never refused on one rank.
TEST(CaseSupport, ForcedTreeOnRingOnlyCollectiveExpectsRefusal) {
  auto tree = [](const char* row) {
    CollCase c = make(row, DType::f32,
                      find_collective(row)->reduces ? std::optional<RedOp>(RedOp::sum) : std::nullopt);
    c.variant = Variant::algo_tree;
    return c;
  };
  const Version k2289 = Version::parse("2.28.9");
  for (const char* row : {"Broadcast", "Reduce", "AllGather", "ReduceScatter"}) {
    CaseSupport s = case_support(tree(row), k2289, 22809, 90, 2);
    EXPECT_TRUE(s.ok) << row << ": " << s.reason;
    EXPECT_TRUE(s.expect_refusal) << row;
    EXPECT_NE(s.refusal.find("nccl_algos.csv:"), std::string::npos) << s.refusal;
    EXPECT_FALSE(case_support(tree(row), k2289, 22809, 90, 1).expect_refusal)
        << row << ": one rank never asks for an algorithm";
    EXPECT_FALSE(case_support(tree(row), Version::parse("2.21.5"), 22105, 90, 2).expect_refusal)
        << row << ": Ring fallback";
    EXPECT_FALSE(case_support(tree(row), Version::parse("2.18.6"), 21806, 90, 2).expect_refusal)
        << row << ": Ring kept";
  }
  EXPECT_FALSE(case_support(tree("AllReduce"), k2289, 22809, 90, 2).expect_refusal) << "AllReduce has Tree";
  std::set<std::string> listed;
  for (const auto& c : collective_cases(2))
    if (c.variant == Variant::algo_tree) listed.insert(c.suite());
  EXPECT_EQ(listed,
            (std::set<std::string>{"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"}));
}

TEST(CaseSupport, NamesWhatIsMissing) {
  EXPECT_TRUE(case_support(make("AllReduce", DType::f32, RedOp::sum), k2283, 22803, 90, 1).ok);
  auto fp8_old_sm = case_support(make("AllReduce", DType::f8e4m3, RedOp::sum), k2283, 22803, 80, 1);
  EXPECT_FALSE(fp8_old_sm.ok);
  EXPECT_NE(fp8_old_sm.reason.find("sm_90"), std::string::npos) << fp8_old_sm.reason;
  EXPECT_TRUE(case_support(make("AllGather", DType::f8e4m3, std::nullopt), k2283, 22803, 80, 1).ok)
      << "copies need no sm_90";
  auto bf16_old =
      case_support(make("AllReduce", DType::bf16, RedOp::sum), Version::parse("2.9.9"), 20909, 90, 1);
  EXPECT_FALSE(bf16_old.ok);
  EXPECT_NE(bf16_old.reason.find("2.10.3"), std::string::npos) << bf16_old.reason;
  auto a2a = case_support(make("AlltoAll", DType::f32, std::nullopt), Version::parse("2.27.7"), 22707, 90, 2);
  EXPECT_FALSE(a2a.ok);
  EXPECT_NE(a2a.reason.find("2.28"), std::string::npos) << a2a.reason;
  EXPECT_TRUE(
      case_support(make("AlltoAllSendRecv", DType::f32, std::nullopt), Version::parse("2.27.7"), 22707, 90, 2)
          .ok);
  auto hdr = case_support(make("Gather", DType::f32, std::nullopt), k2283, 22707, 90, 2);
  EXPECT_FALSE(hdr.ok);
  EXPECT_NE(hdr.reason.find("header"), std::string::npos) << hdr.reason;
  auto avg8 = case_support(make("AllReduce", DType::f8e4m3, RedOp::avg), k2283, 22803, 90, 1);
  EXPECT_FALSE(avg8.ok) << "NCCL 2.28.3 rejects f8e4m3 avg (matrix data)";
  EXPECT_TRUE(
      case_support(make("AllReduce", DType::f8e4m3, RedOp::avg, PayloadMode::mixed), k2283, 22803, 90, 2).ok)
      << "the one-rank limitation of fp8 avg does not apply to 2 ranks (nccl_ops.csv)";
  auto avg3 = case_support(make("AllReduce", DType::f32, RedOp::avg), k2283, 22803, 90, 3);
  EXPECT_FALSE(avg3.ok);
  EXPECT_TRUE(
      case_support(make("AllReduce", DType::f32, RedOp::avg, PayloadMode::mixed), k2283, 22803, 90, 3).ok);
  CollCase g = make("AllGather", DType::f32, std::nullopt);
  g.variant = Variant::grouped;
  EXPECT_FALSE(case_support(g, k2283, 22803, 90, 2).ok);
  CollCase s = make("AllReduce", DType::f32, RedOp::sum);
  s.variant = Variant::split;
  EXPECT_FALSE(case_support(s, Version::parse("2.17.1"), 21701, 90, 2).ok);
}

// What the H200 machine (NCCL 2.28.3, sm_90, one GPU) must skip: only the matrix's one-rank fp8
// avg/premulsum rows. Printed so the GPU run's skip count can be checked against it.
TEST(CaseSupport, OneH200SkipsOnlyTheOneRankFp8PreMulSumFamily) {
  std::size_t skipped = 0, total = 0;
  for (const auto& c : collective_cases(1)) {
    ++total;
    CaseSupport s = case_support(c, k2283, 22803, 90, 1);
    if (s.ok) continue;
    ++skipped;
    const bool fp8 = c.dtype == DType::f8e4m3 || c.dtype == DType::f8e5m2;
    ASSERT_TRUE(fp8 && c.op && (*c.op == RedOp::avg || *c.op == RedOp::premulsum))
        << c.suite() << "." << c.name() << ": " << s.reason;
  }
  std::printf("world 1 on NCCL 2.28.3 / sm_90: %zu of %zu cases skip\n", skipped, total);
  EXPECT_GT(skipped, 0u);
}

// The dtype/op lists and the table carry first releases too (for the header check and for
// readers); they must agree with the matrix data.
TEST(CollectiveTable, VersionsAgreeWithTheMatrixData) {
  const Matrix& m = builtin_matrix();
  auto since = [&](const std::string& name) -> long {
    const NcclFeature* f = m.find_feature(name);
    EXPECT_NE(f, nullptr) << name << " missing from nccl_features.csv";
    return f ? f->since.nccl_code() : -1;
  };
  for (const auto& t : kDTypes)
    if (t.first_nccl > 0)
      EXPECT_EQ(t.first_nccl, since(t.name)) << t.name;
    else
      EXPECT_GE(since(t.name), 0) << t.name;
  for (const auto& o : kRedOps) {
    if (o.first_nccl > 0) {
      EXPECT_EQ(o.first_nccl, since(o.name)) << o.name;
    }
  }
  for (const auto& c : collectives())
    if (c.native_since > 0)
      EXPECT_EQ(c.native_since, since(c.feature)) << c.name;
    else
      EXPECT_GE(since(c.feature), 0) << c.name;
}

TEST(Variants, EachHasItsOwnWorld) {
  std::set<std::string> names, keys;
  for (const auto& v : variants()) {
    EXPECT_TRUE(names.insert(v.name).second) << v.name;
    CollCase c = make("AllReduce", DType::f32, RedOp::sum);
    c.variant = v.id;
    keys.insert(c.world_config().key());
  }
  // plain, grouped, graph, devscalar share the default world; initall, split and 5 env worlds are their own.
  EXPECT_EQ(keys.size(), 1u + 1u + 1u + 5u);
}

}  // namespace
