// The bandwidth arithmetic of the perf suite, on any machine: nccl-tests' bus factors, statistics,
// the size sweep, the thresholds data (the shipped file and broken ones) and the judgement.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "results/bandwidth.hpp"

namespace cts::bw {
namespace {

struct FactorCase {
  const char* family;
  cts::BusFactor f;
  int n;
  double factor;  // < 0: not defined
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const FactorCase& c, std::ostream* os) { *os << c.family << " n=" << c.n; }

class BusFactor : public ::testing::TestWithParam<FactorCase> {};

TEST_P(BusFactor, MatchesNcclTests) {
  const auto& c = GetParam();
  auto f = bus_factor(c.f, c.n);
  if (c.factor < 0) {
    EXPECT_FALSE(f.has_value()) << kNoBusbwOneRank;
  } else {
    ASSERT_TRUE(f.has_value());
    EXPECT_DOUBLE_EQ(*f, c.factor);
  }
}

// The family of each row is a column of the collective table (collective_table_test checks them).
using F = cts::BusFactor;
const FactorCase kFactors[] = {
    {"all_reduce", F::all_reduce, 8, 2.0 * 7 / 8},
    {"all_reduce", F::all_reduce, 2, 1.0},
    {"n_minus_one_over_n", F::n_minus_one_over_n, 8, 7.0 / 8},
    {"n_minus_one_over_n", F::n_minus_one_over_n, 4, 3.0 / 4},
    {"n_minus_one_over_n", F::n_minus_one_over_n, 2, 0.5},
    {"one", F::one, 8, 1.0},
    {"all_reduce", F::all_reduce, 1, -1},
    {"one", F::one, 1, -1},
    {"n_minus_one_over_n", F::n_minus_one_over_n, 1, -1},
};

INSTANTIATE_TEST_SUITE_P(Nccl, BusFactor, ::testing::ValuesIn(kFactors), [](const auto& i) {
  return std::string(i.param.family) + "_n" + std::to_string(i.param.n);
});

TEST(BusFactorErrors, BadRankCount) {
  EXPECT_THROW(bus_factor(F::all_reduce, 0), BandwidthError);
  EXPECT_THROW(bus_factor(F::one, -1), BandwidthError);
}

TEST(Stats, MedianMinMaxSpread) {
  auto s = summarize({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.spread_pct, 120.0);
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(summarize({5, 1, 9}).median, 5);
  EXPECT_THROW(summarize({}), BandwidthError);
}

TEST(Sizes, ParseAndFormatBytes) {
  EXPECT_EQ(parse_bytes("8"), 8u);
  EXPECT_EQ(parse_bytes("64K"), 65536u);
  EXPECT_EQ(parse_bytes("1GiB"), 1u << 30);
  EXPECT_EQ(parse_bytes("4096B"), 4096u);
  EXPECT_EQ(format_bytes(1u << 30), "1 GiB");
  EXPECT_EQ(format_bytes(65536), "64 KiB");
  EXPECT_EQ(format_bytes(1000), "1000 B");
  for (const char* bad : {"", "K", "1Q", "-1", "1.5G", "99999999999999999999"})
    EXPECT_THROW(parse_bytes(bad), BandwidthError) << bad;
}

TEST(Sizes, DefaultSweepCovers8BytesTo1GiB) {
  auto s = parse_sweep(kDefaultSweep);
  ASSERT_EQ(s.size(), 28u);
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s.back(), 1u << 30);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i], s[i - 1] * 2);
  EXPECT_EQ(parse_sweep("1K:1M:4").size(), 6u);
  EXPECT_EQ(parse_sweep("1K:1K:2").size(), 1u);
  for (const char* bad : {"8:1G", "8:1G:1", "8:1G:1.5", "1G:8:2", "0:8:2", "a:b:c"})
    EXPECT_THROW(parse_sweep(bad), BandwidthError) << bad;
}

TEST(Thresholds, ShippedTableLoadsAndEveryRowHasASource) {
  const auto& t = builtin_thresholds();
  ASSERT_FALSE(t.empty());
  bool h200 = false;
  for (const auto& r : t) {
    EXPECT_FALSE(r.source.empty()) << "row at line " << r.line;
    h200 |= r.gpu == "NVIDIA H200" && r.world_size == 8 && r.collective == "AllReduce" && r.expected == 370;
  }
  EXPECT_TRUE(h200) << "the 8x H200 NVLink4 all-reduce row (370 GB/s) is missing";
}

struct BadCsv {
  const char* name;
  const char* row;      // appended after a valid header
  const char* message;  // expected in the error, which names file:line
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const BadCsv& c, std::ostream* os) { *os << c.name; }

class ThresholdErrors : public ::testing::TestWithParam<BadCsv> {};

TEST_P(ThresholdErrors, NameTheLine) {
  std::string csv =
      "# "
      "comment\ngpu,link,nvls,world_size,collective,placement,min_bytes,metric,expected,tolerance_pct,"
      "source\n";
  csv += GetParam().row;
  try {
    parse_thresholds(csv, "t.csv");
    FAIL() << "accepted: " << GetParam().row;
  } catch (const BandwidthError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("t.csv:3"), std::string::npos) << m;
    EXPECT_NE(m.find(GetParam().message), std::string::npos) << m;
  }
}

const BadCsv kBadCsv[] = {
    {"no_collective", "any,none,any,1,,any,1G,busbw_gbps,1,3,src\n", "must not be empty"},
    {"bad_metric", "any,none,any,1,AllReduce,any,1G,speed,1,3,src\n", "metric must be"},
    {"bad_size", "any,none,any,1,AllReduce,any,1Q,busbw_gbps,1,3,src\n", "min_bytes"},
    {"bad_number", "any,none,any,1,AllReduce,any,1G,busbw_gbps,fast,3,src\n", "not a number"},
    {"no_source", "any,none,any,1,AllReduce,any,1G,busbw_gbps,1,3,\n", "must not be empty"},
    {"bad_placement", "any,none,any,1,AllReduce,both,1G,busbw_gbps,1,3,src\n", "placement must be"},
    {"tolerance_range", "any,none,any,1,AllReduce,any,1G,busbw_gbps,1,100,src\n", "tolerance_pct"},
    {"too_few_cells", "any,none,any,1,AllReduce\n", "t.csv:3"},
};

INSTANTIATE_TEST_SUITE_P(Csv, ThresholdErrors, ::testing::ValuesIn(kBadCsv),
                         [](const auto& i) { return std::string(i.param.name); });

// A point at `busbw` GB/s on 8 H200 (or algbw for one rank), judged against the shipped table.
// The families of the rows these points name (their rows' column in the collective table).
cts::BusFactor family_of(const std::string& coll) {
  if (coll == "AllReduce") return F::all_reduce;
  if (coll == "Broadcast" || coll == "Reduce" || coll.rfind("SendRecv", 0) == 0) return F::one;
  return F::n_minus_one_over_n;
}

Point point(const std::string& coll, std::uint64_t bytes, int ranks, double gbps, bool in_place = false) {
  Point p;
  p.collective = coll;
  p.dtype = "f32";
  p.bytes = bytes;
  p.ranks = ranks;
  p.in_place = in_place;
  auto f = bus_factor(family_of(coll), ranks);
  double algbw = f ? gbps / *f : gbps;
  double t = static_cast<double>(bytes) / (algbw * 1e9) * 1e6;
  p.time_us = summarize({t});
  compute_rates(p, family_of(coll));
  return p;
}

const Context kH200x8{"NVIDIA H200", "NVLink4", "off", 8, std::nullopt};

TEST(Judge, BusbwAboveTheFloorPasses) {
  auto p = point("AllReduce", 1u << 30, 8, 365);
  ASSERT_TRUE(p.busbw_gbps);
  EXPECT_NEAR(*p.busbw_gbps, 365, 1e-6);
  judge(p, kH200x8, builtin_thresholds());
  EXPECT_EQ(p.verdict, "pass") << p.message;
  EXPECT_NEAR(*p.threshold_gbps, 370 * 0.95, 1e-9);
}

TEST(Judge, BusbwBelowTheFloorFailsSayingHowFarBelow) {
  auto p = point("AllReduce", 256u << 20, 8, 300);
  judge(p, kH200x8, builtin_thresholds());
  EXPECT_EQ(p.verdict, "fail");
  EXPECT_NE(p.message.find("% below the floor"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("gpu-machine.md"), std::string::npos) << "the source must be cited: " << p.message;
}

TEST(Judge, NoMatchingRowIsRecordedNotJudged) {
  for (auto p : {point("AllReduce", 1u << 20, 8, 10),  // below the row's min size
                 point("Broadcast", 1u << 30, 8, 10),  // no row for this collective at 8 ranks
                 point("AllReduce", 1u << 30, 4, 10)}) {
    judge(p, kH200x8, builtin_thresholds());
    EXPECT_EQ(p.verdict, "unjudged") << p.key();
    EXPECT_FALSE(p.threshold_gbps);
  }
  Context other{"NVIDIA H200 NVL", "PCIe", "off", 8, std::nullopt};
  auto p = point("AllReduce", 1u << 30, 8, 10);
  judge(p, other, builtin_thresholds());
  EXPECT_EQ(p.verdict, "unjudged") << "an H200 NVL (PCIe) is not judged by the SXM row";
}

TEST(Judge, OneRankIsJudgedAgainstTheCopyBandwidthOfTheSameRun) {
  Context one{"NVIDIA H200", "none", "off", 1, 2118.0};
  auto fast = point("AllReduce", 1u << 30, 1, 2100);  // within 3% of the copy rate
  EXPECT_FALSE(fast.busbw_gbps) << kNoBusbwOneRank;
  judge(fast, one, builtin_thresholds());
  EXPECT_EQ(fast.verdict, "pass") << fast.message;
  auto slow = point("AllReduce", 1u << 30, 1, 1900);  // 10% below
  judge(slow, one, builtin_thresholds());
  EXPECT_EQ(slow.verdict, "fail") << slow.message;
  auto inplace = point("AllReduce", 1u << 30, 1, 1e6, true);  // a no-op: not judged
  judge(inplace, one, builtin_thresholds());
  EXPECT_EQ(inplace.verdict, "unjudged");
  Context unmeasured = one;
  unmeasured.copy_gbps.reset();
  auto p = point("AllReduce", 1u << 30, 1, 2100);
  judge(p, unmeasured, builtin_thresholds());
  EXPECT_EQ(p.verdict, "unjudged");
  EXPECT_NE(p.message.find("copy bandwidth was not measured"), std::string::npos);
}

// A figure holds for the launch mode it was measured in: the shipped rows are eager launches, so a
// CUDA-graph replay point of the same size is recorded, not judged; a graph row judges it.
TEST(Judge, ThresholdsApplyToTheirLaunchMode) {
  Context one{"NVIDIA H200", "none", "off", 1, 2118.0};
  auto graphed = point("AllReduce", 1u << 30, 1, 1384);
  graphed.graph = true;
  judge(graphed, one, builtin_thresholds());
  EXPECT_EQ(graphed.verdict, "unjudged") << graphed.message;
  auto eager = point("AllReduce", 1u << 30, 1, 1384);
  judge(eager, one, builtin_thresholds());
  EXPECT_EQ(eager.verdict, "fail") << eager.message;
  auto rows = parse_thresholds(
      "gpu,link,nvls,world_size,collective,placement,launch,min_bytes,metric,expected,tolerance_pct,source\n"
      "any,none,any,1,AllReduce,out_of_place,graph,1G,algbw_vs_copy,1.0,3,test\n",
      "t.csv");
  judge(graphed, one, rows);
  EXPECT_EQ(graphed.verdict, "fail") << graphed.message;
  EXPECT_THROW(parse_thresholds("gpu,link,nvls,world_size,collective,placement,launch,min_bytes,metric,"
                                "expected,tolerance_pct,source\n"
                                "any,none,any,1,AllReduce,out_of_place,replay,1G,algbw_vs_copy,1.0,3,test\n",
                                "t.csv"),
               BandwidthError);
}

TEST(Sizes, AListSweepIsItsSizesAscendingEachOnce) {
  EXPECT_EQ(parse_sweep("8,1M,1G"), (std::vector<std::uint64_t>{8, 1u << 20, 1u << 30}));
  EXPECT_EQ(parse_sweep("1G,8,8"), (std::vector<std::uint64_t>{8, 1u << 30}));
  for (const char* bad : {"8,,1G", "8,", "0,8", "8,1Q"})
    EXPECT_THROW(parse_sweep(bad), BandwidthError) << bad;
}

// The default (blocking) cases keep the names and keys they always had; the op is named only
// when it is not sum; the nonblocking variant has names and keys of its own.
TEST(Variants, CaseNamesKeepTheDefaultAndMarkTheVariant) {
  CaseName n;
  n.bytes = 1u << 30;
  EXPECT_EQ(case_name(n), "f32_1073741824B_outofplace_w1");
  n.op = "sum";
  EXPECT_EQ(case_name(n), "f32_1073741824B_outofplace_w1");
  n.op = "max";
  n.dtype = "bf16";
  n.bytes = 8;
  n.in_place = true;
  n.graph = true;
  n.world = 4;
  EXPECT_EQ(case_name(n), "bf16_max_8B_inplace_graph_w4");
  n.comm = kNonblocking;
  EXPECT_EQ(case_name(n), "bf16_max_8B_inplace_graph_nonblocking_w4");
  n.comm = "polling";
  EXPECT_THROW(case_name(n), BandwidthError);
}

TEST(Variants, NonblockingPointsHaveTheirOwnKeyAndThresholds) {
  Context one{"NVIDIA H200", "none", "off", 1, 2118.0};
  auto blocking = point("AllReduce", 1u << 30, 1, 1900);
  auto nonblocking = blocking;
  nonblocking.comm = kNonblocking;
  EXPECT_EQ(blocking.key(), "AllReduce/f32/1073741824/out_of_place");
  EXPECT_EQ(nonblocking.key(), "AllReduce/f32/1073741824/out_of_place/nonblocking");
  auto max = blocking;
  max.op = "max";
  EXPECT_EQ(max.key(), "AllReduce/f32_max/1073741824/out_of_place");
  // The shipped rows are blocking figures: the nonblocking point is recorded, not judged.
  judge(blocking, one, builtin_thresholds());
  EXPECT_EQ(blocking.verdict, "fail") << blocking.message;
  judge(nonblocking, one, builtin_thresholds());
  EXPECT_EQ(nonblocking.verdict, "unjudged") << nonblocking.message;
  const std::string head =
      "gpu,link,nvls,world_size,collective,placement,comm,min_bytes,metric,expected,tolerance_pct,source\n";
  auto rows = parse_thresholds(
      head + "any,none,any,1,AllReduce,out_of_place,nonblocking,1G,algbw_vs_copy,0.5,3,t\n", "t.csv");
  judge(nonblocking, one, rows);
  EXPECT_EQ(nonblocking.verdict, "pass") << nonblocking.message;
  judge(blocking, one, rows);
  EXPECT_EQ(blocking.verdict, "unjudged") << "a nonblocking row does not judge the default";
  auto any = parse_thresholds(head + "any,none,any,1,AllReduce,out_of_place,any,1G,algbw_vs_copy,0.5,3,t\n",
                              "t.csv");
  judge(blocking, one, any);
  EXPECT_EQ(blocking.verdict, "pass");
  EXPECT_THROW(parse_thresholds(
                   head + "any,none,any,1,AllReduce,out_of_place,async,1G,algbw_vs_copy,0.5,3,t\n", "t.csv"),
               BandwidthError);
  // The files carry the mode; a file without it (older runs) reads as blocking.
  bw::Run r;
  r.ctx = one;
  r.points = {blocking, nonblocking, max};
  auto j = to_json(r);
  bw::Run back = run_from_json(j, "mem");
  ASSERT_EQ(back.points.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(back.points[i].key(), r.points[i].key());
  // Each alone: without its mode or op a point would be a second point of another's key.
  auto alone_without = [&](std::size_t k, const char* field) {
    nlohmann::json one_point = j;
    one_point["points"] = nlohmann::json::array({j["points"][k]});
    one_point["points"][0].erase(field);
    return run_from_json(one_point, "mem").points.at(0);
  };
  EXPECT_EQ(alone_without(1, "comm").comm, kBlocking);
  EXPECT_EQ(alone_without(2, "op").op, "");
  nlohmann::json twice = j;
  twice["points"][1].erase("comm");
  try {
    run_from_json(twice, "mem");
    ADD_FAILURE() << "two points of one key were read";
  } catch (const BandwidthError& e) {
    EXPECT_NE(
        std::string(e.what()).find("points[1]: a second point for AllReduce/f32/1073741824/out_of_place"),
        std::string::npos)
        << e.what();
  }
  j["points"][0]["comm"] = "sometimes";
  EXPECT_THROW(run_from_json(j, "mem"), BandwidthError);
  EXPECT_NE(to_csv(r).find(",max,blocking,"), std::string::npos) << to_csv(r);
  EXPECT_NE(to_csv(r).find(",nonblocking,"), std::string::npos);
}

// A CUDA-graph replay of a one-rank in-place call (nothing to copy) times about 0.1 us: 1 GiB over it
// is past any plausible rate. That point is read back (a run file is not thrown away for it); the
// same figure where data moves is refused.
TEST(RunFiles, NoDataPointsKeepTheirFigurePlausibleOrNot) {
  bw::Run r;
  r.ctx = {"NVIDIA H200", "none", "off", 1, 2118.0};
  r.points.push_back(point("AllReduce", 1u << 30, 1, 1.05e7, /*in_place=*/true));
  ASSERT_GT(r.points[0].algbw_gbps, kMaxPlausibleGbps);
  EXPECT_EQ(run_from_json(to_json(r), "mem").points.size(), 1u);
  r.points[0].in_place = false;
  EXPECT_THROW(run_from_json(to_json(r), "mem"), BandwidthError);
}

// The host clock's figures travel with a point; a file written before them reads as "not measured",
// and a figure that is no time of one call is refused with the field named.
TEST(RunFiles, HostClockFiguresRoundTripOrAreAbsent) {
  bw::Run r;
  r.ctx = {"NVIDIA H200", "none", "off", 1, 2118.0};
  r.points.push_back(point("AllReduce", 8, 1, 6.9));
  r.points[0].host_time_us = 7.4;
  r.points[0].enqueue_us = 6.1;
  auto j = to_json(r);
  bw::Run back = run_from_json(j, "mem");
  ASSERT_TRUE(back.points.at(0).host_time_us && back.points[0].enqueue_us);
  EXPECT_DOUBLE_EQ(*back.points[0].host_time_us, 7.4);
  EXPECT_DOUBLE_EQ(*back.points[0].enqueue_us, 6.1);
  const std::string csv = to_csv(r);
  EXPECT_NE(csv.find(",host_time_us,enqueue_us\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",7.4,6.1\n"), std::string::npos) << csv;
  auto older = j;
  older["points"][0].erase("host_time_us");
  older["points"][0].erase("enqueue_us");
  back = run_from_json(older, "mem");
  EXPECT_FALSE(back.points.at(0).host_time_us);
  EXPECT_FALSE(back.points[0].enqueue_us);
  for (double bad : {-1.0, 2e9}) {
    auto k = j;
    k["points"][0]["enqueue_us"] = bad;
    try {
      run_from_json(k, "mem");
      ADD_FAILURE() << "enqueue_us " << bad << " was read";
    } catch (const BandwidthError& e) {
      EXPECT_NE(std::string(e.what()).find("field 'enqueue_us'"), std::string::npos) << e.what();
    }
  }
}

TEST(RunFiles, JsonRoundTripAndCsvSayBusbwIsUndefinedForOneRank) {
  bw::Run r;
  r.host = "h";
  r.nccl_version = "2.28.3";
  r.ctx = {"NVIDIA H200", "none", "off", 1, 2118.0};
  r.points.push_back(point("AllReduce", 1u << 30, 1, 2100));
  judge(r.points[0], r.ctx, builtin_thresholds());
  auto j = to_json(r);
  EXPECT_TRUE(j["points"][0]["busbw_gbps"].is_null());
  EXPECT_EQ(j["points"][0]["busbw_note"], kNoBusbwOneRank);
  bw::Run back = run_from_json(j, "mem");
  ASSERT_EQ(back.points.size(), 1u);
  EXPECT_EQ(back.points[0].key(), r.points[0].key());
  EXPECT_EQ(back.points[0].verdict, r.points[0].verdict);
  EXPECT_NEAR(back.points[0].algbw_gbps, r.points[0].algbw_gbps, 1e-9);
  {
    // The busbw column of a one-rank point is an empty numeric cell, never text.
    std::istringstream csv(to_csv(r));
    std::string head, row;
    std::getline(csv, head);
    std::getline(csv, row);
    auto cells = [](const std::string& line) {
      std::vector<std::string> out;
      std::stringstream ss(line);
      for (std::string c; std::getline(ss, c, ',');) out.push_back(c);
      if (!line.empty() && line.back() == ',') out.emplace_back();
      return out;
    };
    const auto h = cells(head), v = cells(row);
    const auto at = std::find(h.begin(), h.end(), "busbw_gbps") - h.begin();
    ASSERT_LT(static_cast<std::size_t>(at), h.size());
    ASSERT_EQ(v.size(), h.size()) << row;
    EXPECT_EQ(v[at], "") << row;
    EXPECT_NE(v[at - 1], "") << "algbw is defined: " << row;
    EXPECT_EQ(to_csv(r).find("n/a"), std::string::npos);
  }
  j["schema"] = "gpucts.bandwidth/0";
  EXPECT_THROW(run_from_json(j, "mem"), BandwidthError);
  auto k = to_json(r);
  k["points"][0].erase("bytes");
  EXPECT_THROW(run_from_json(k, "mem"), BandwidthError);
}

}  // namespace
}  // namespace cts::bw
