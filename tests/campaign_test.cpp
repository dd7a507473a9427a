// The NCCL campaign report (report/campaign.hpp) over synthetic bundles of four releases: columns in
// version order, pass/fail/skip per collective x dtype x op, the first release where a behaviour
// changed, matrix claims against what the runs saw with disagreements first, bandwidth per release;
// the bisect search; and `gpucts campaign` / `gpucts report --campaign` / `--bisect` end to end over
// a store of stand-in releases (every one the library this machine has, so a campaign must notice
// that the release it asked for is not the one that was loaded).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"
#include "matrix/matrix.hpp"
#include "matrix/version.hpp"
#include "report/across_runs.hpp"
#include "report/bundle.hpp"
#include "report/campaign.hpp"
#include "results/bandwidth.hpp"
#include "results/case_axes.hpp"
#include "results/junit.hpp"
#include "results/xml.hpp"
#if GPUCTS_HAVE_CUDA
#include "fixtures/probe/nccl_api.hpp"
#endif

namespace fs = std::filesystem;

namespace cts {
namespace {

// A case that fails from the release named by GPUCTS_FIXTURE_FAIL_FROM on (a regression), or
// before GPUCTS_FIXTURE_PASS_FROM (a fix), the release being the folder above the first
// LD_LIBRARY_PATH entry (<store>/<version>/lib): the bisect tests' subject.
TEST(DISABLED_Fixture, FailsFromVersionInPath) {
  const char* ld = std::getenv("LD_LIBRARY_PATH");
  ASSERT_TRUE(ld) << "needs LD_LIBRARY_PATH";
  std::string first = ld;
  first = first.substr(0, first.find(':'));
  const Version v = Version::parse(fs::path(first).parent_path().filename().string());
  if (const char* from = std::getenv("GPUCTS_FIXTURE_FAIL_FROM")) {
    EXPECT_LT(v, Version::parse(from)) << "fails from " << from << " on";
  }
  if (const char* from = std::getenv("GPUCTS_FIXTURE_PASS_FROM")) {
    EXPECT_GE(v, Version::parse(from)) << "fails before " << from;
  }
}

struct SynthCase {
  std::string suite, name, status, message;
  std::map<std::string, std::string> props;
};

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A bundle as `gpucts qualify` writes it, for one release.
std::string make_bundle(const fs::path& dir, const std::string& nccl, const std::vector<SynthCase>& cases,
                        const std::map<std::string, bool>& symbols, bool defect_finding, double gbps_1g,
                        double us_8b) {
  fs::create_directories(dir / "gtest");
  bundle::Manifest m;
  m.gpucts_version = GPUCTS_VERSION;
  m.created = "2026-12-03T00:00:00Z";
  m.host = "h200";
  m.tree = "build:/b";
  m.verdict = "fail";
  m.elapsed_s = 42;
  bundle::SuiteRun s;
  s.name = "gpucts_collectives";
  s.status = std::any_of(cases.begin(), cases.end(), [](const SynthCase& c) { return c.status == "failed"; })
                 ? bundle::SuiteStatus::failed
                 : bundle::SuiteStatus::passed;
  s.xml = {"gtest/gpucts_collectives.xml"};
  m.suites.push_back(s);
  write_file(dir / "manifest.json", bundle::to_json(m).dump(2));
  std::vector<junit::Case> jc;
  std::string xml = "<?xml version=\"1.0\"?>\n<testsuites name=\"AllTests\">\n";
  std::map<std::string, std::vector<const SynthCase*>> by_suite;
  for (const auto& c : cases) by_suite[c.suite].push_back(&c);
  for (const auto& [suite, list] : by_suite) {
    xml += " <testsuite name=\"" + suite + "\">\n";
    for (const auto* c : list) {
      jc.push_back({"gpucts_collectives", c->suite, c->name, *junit::parse_status(c->status), c->message,
                    c->message, 0.01});
      xml += "  <testcase name=\"" + c->name + "\" classname=\"" + suite + "\" time=\"0.01\"" +
             (c->status == "skipped" ? " result=\"skipped\"" : "") + ">\n";
      if (!c->props.empty()) {
        xml += "   <properties>";
        for (const auto& [k, v] : c->props)
          xml += "<property name=\"" + k + "\" value=\"" + xml::escape(v) + "\"/>";
        xml += "</properties>\n";
      }
      if (c->status == "failed") xml += "   <failure message=\"" + xml::escape(c->message) + "\"/>\n";
      if (c->status == "skipped") xml += "   <skipped message=\"" + xml::escape(c->message) + "\"/>\n";
      xml += "  </testcase>\n";
    }
    xml += " </testsuite>\n";
  }
  xml += "</testsuites>\n";
  write_file(dir / "gtest" / "gpucts_collectives.xml", xml);
  write_file(dir / "junit.xml", junit::write(jc, "synthetic " + nccl));
  nlohmann::json fp = {
      {"schema", "gpucts.fingerprint/1"},
      {"host", "h200"},
      {"nccl",
       {{"header", "2.28.9"}, {"runtime", nccl}, {"library", "/store/" + nccl + "/lib/libnccl.so.2"}}},
      {"nccl_symbols", symbols}};
  write_file(dir / "fingerprints" / "h200.json", fp.dump(2));
  nlohmann::json check = {{"verdict", defect_finding ? "fail" : "pass"},
                          {"findings", nlohmann::json::array()}};
  if (defect_finding)
    check["findings"].push_back({{"id", "nccl-known-defect"},
                                 {"severity", "error"},
                                 {"subject", "NCCL " + nccl},
                                 {"message", "one-rank avg leaves the tail unwritten"},
                                 {"source", "nccl_defects.csv:nccl-1950"},
                                 {"fix", "upgrade NCCL to >= 2.29.7"}});
  write_file(dir / "check.json", check.dump(2));
  bw::Run run;
  run.host = "h200";
  run.nccl_version = nccl;
  run.ctx = {"NVIDIA H200", "none", "off", 1, std::nullopt};
  for (std::uint64_t bytes : {std::uint64_t(8), std::uint64_t(1) << 20, std::uint64_t(1) << 30}) {
    bw::Point p;
    p.collective = "AllReduce";
    p.dtype = "f32";
    p.bytes = bytes;
    p.ranks = 1;
    p.iterations = 20;
    double t = bytes == 8 ? us_8b : static_cast<double>(bytes) / (gbps_1g * 1e3);
    p.time_us = bw::summarize({t, t, t});
    bw::compute_rates(p, BusFactor::all_reduce);  // AllReduce's family
    run.points.push_back(p);
  }
  write_file(dir / "bandwidth" / "gpucts_bandwidth.json", bw::to_json(run).dump(2));
  return dir.string();
}

// Four releases; one-rank tail failures (the known defect nccl-1950) up to 2.29.3, native AlltoAll
// from 2.28.x, fp8 avg with one rank rejected until 2.29.7 accepts it (the matrix says unsupported
// throughout).
std::vector<campaign::Release> synthetic_releases(const fs::path& root) {
  std::vector<campaign::Release> out;
  const std::vector<std::string> versions = {"2.29.7", "2.27.7", "2.29.3", "2.28.9"};  // not in order
  for (const auto& v : versions) {
    const bool old = Version::parse(v) < Version::parse("2.29.7");
    const bool native = Version::parse(v) >= Version::parse("2.28.3");
    std::vector<SynthCase> cs;
    for (const char* n : {"f32_avg_1048577_outofplace_w1", "f32_avg_65537_outofplace_w1"}) {
      if (old)
        cs.push_back({"AllReduce",
                      n,
                      "failed",
                      "collective_runner.cpp:1\n12 element(s) wrong, first at index 1048576",
                      {{"gpucts.known_defect", "nccl-1950"}}});
      else
        cs.push_back({"AllReduce", n, "passed", "", {}});
    }
    // The defect's condition is wider than the counts it hits: a power of two passes. One hit
    // still confirms the row on that release.
    if (old)
      cs.push_back({"AllReduce",
                    "f32_avg_1048576_outofplace_w1",
                    "passed",
                    "",
                    {{"gpucts.known_defect_not_seen", "nccl-1950"}}});
    cs.push_back({"AllReduce", "f32_sum_1024_inplace_w1", "passed", "", {}});
    if (native)
      cs.push_back({"AlltoAll", "f32_1021_outofplace_w1", "passed", "", {}});
    else
      cs.push_back({"AlltoAll",
                    "f32_1021_outofplace_w1",
                    "skipped",
                    "AlltoAll needs NCCL >= 2.28.3 [nccl_features.csv:AlltoAll]",
                    {}});
    if (old)
      cs.push_back({"AllReduce",
                    "f8e4m3_avg_13_outofplace_w1",
                    "passed",
                    "",
                    {{"probe", "matrix says unsupported"},
                     {"probe_result", "rejected: ncclAllReduce: invalid argument (code 4)"}}});
    else
      cs.push_back({"AllReduce",
                    "f8e4m3_avg_13_outofplace_w1",
                    "failed",
                    "nccl_ops.csv says unsupported (x) but NCCL 2.29.7 accepted it and computed it right: "
                    "update nccl_ops.csv",
                    {{"probe", "matrix says unsupported"}}});
    std::map<std::string, bool> syms = {{"ncclAlltoAll", native}, {"ncclCommShrink", v != "2.28.9"}};
    make_bundle(root / ("nccl-" + v), v, cs, syms, old, v == "2.29.7" ? 2100 : 2000,
                v == "2.27.7" ? 6.5 : 5.0);
    out.push_back(campaign::load_release((root / ("nccl-" + v)).string()));
  }
  return out;
}

const campaign::Change* find_change(const campaign::Report& r, const std::string& coll,
                                    const std::string& dtype, const std::string& op) {
  for (const auto& c : r.changes)
    if (c.collective == coll && c.dtype == dtype && c.op == op) return &c;
  return nullptr;
}

TEST(CampaignReport, ColumnsInVersionOrderAndFirstChanges) {
  ScratchDir tmp("campaign");
  campaign::Report r = campaign::build(synthetic_releases(tmp.path()), builtin_matrix());
  ASSERT_EQ(r.releases.size(), 4u);
  const std::vector<std::string> order = {"2.27.7", "2.28.9", "2.29.3", "2.29.7"};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(r.releases[i].version.release_str(), order[i]);
  EXPECT_TRUE(r.problems.empty());

  ASSERT_EQ(r.changes.size(), 3u) << campaign::to_json(r)["changes"].dump(1);
  const campaign::Change* tail = find_change(r, "AllReduce", "f32", "avg");
  ASSERT_NE(tail, nullptr);
  EXPECT_EQ(tail->from, "fail");
  EXPECT_EQ(tail->to, "pass");
  EXPECT_EQ(r.releases[tail->at].version.release_str(), "2.29.7") << "first release where it changed";
  EXPECT_EQ(tail->cases, 2) << "two cases, one change";
  EXPECT_EQ(tail->defects, std::vector<std::string>{"nccl-1950"});
  EXPECT_NE(tail->message.find("element(s) wrong"), std::string::npos) << tail->message;
  const campaign::Change* a2a = find_change(r, "AlltoAll", "f32", "");
  ASSERT_NE(a2a, nullptr);
  EXPECT_EQ(a2a->from + ">" + a2a->to, "skip>pass");
  EXPECT_EQ(r.releases[a2a->at].version.release_str(), "2.28.9");
  EXPECT_EQ(r.changes.front().at, 1u) << "changes in release order";

  // Grid: one row per collective x dtype x op, a cell per release.
  bool found = false;
  for (const auto& g : r.grid)
    if (g.collective == "AllReduce" && g.dtype == "f32" && g.op == "avg") {
      found = true;
      ASSERT_EQ(g.cells.size(), 4u);
      EXPECT_EQ(g.cells[0].fail, 2);
      EXPECT_EQ(g.cells[2].fail, 2);
      EXPECT_EQ(g.cells[3].pass, 2);
      EXPECT_EQ(g.cells[3].fail, 0);
    }
  EXPECT_TRUE(found);

  // Bandwidth at 1 GiB and 8 B per release.
  ASSERT_EQ(r.bandwidth.size(), 1u);
  ASSERT_TRUE(r.bandwidth[0].gbps_1g[3].has_value());
  EXPECT_NEAR(*r.bandwidth[0].gbps_1g[3], 2100, 1);
  EXPECT_NEAR(*r.bandwidth[0].gbps_1g[0], 2000, 1);
  ASSERT_TRUE(r.bandwidth[0].latency_8b[0].has_value());
  EXPECT_NEAR(*r.bandwidth[0].latency_8b[0], 6.5, 1e-9);
  EXPECT_EQ(r.bandwidth[0].metric, "algbw");

  const std::string md = doc::to_markdown(campaign::to_doc(r));
  EXPECT_NE(md.find("| collective | dtype | op | 2.27.7 | 2.28.9 | 2.29.3 | 2.29.7 |"), std::string::npos)
      << md;
  EXPECT_NE(
      md.find("| 2.29.7 | 2.29.3 | nccl-1950 | AllReduce f32 avg | fail -> pass | 2 | gpucts_collectives |"),
      std::string::npos)
      << md;
}

TEST(CampaignReport, MatrixClaimsDisagreementsFirst) {
  ScratchDir tmp("campaign");
  campaign::Report r = campaign::build(synthetic_releases(tmp.path()), builtin_matrix());
  ASSERT_FALSE(r.claims.empty());
  // Disagreements come first, then agreements, never interleaved.
  bool seen_agree = false;
  for (const auto& c : r.claims) {
    if (!c.disagrees())
      seen_agree = true;
    else
      EXPECT_FALSE(seen_agree) << c.key << " disagrees but comes after an agreeing claim";
  }
  auto claim = [&](const std::string& key) -> const campaign::Claim* {
    for (const auto& c : r.claims)
      if (c.key == key) return &c;
    return nullptr;
  };
  const campaign::Claim* a2a = claim("AlltoAll (ncclAlltoAll)");
  ASSERT_NE(a2a, nullptr);
  EXPECT_FALSE(a2a->disagrees()) << a2a->claim;
  EXPECT_EQ(a2a->observed[0], "not exported");
  const campaign::Claim* shrink = claim("CommShrink (ncclCommShrink)");
  ASSERT_NE(shrink, nullptr);
  EXPECT_TRUE(shrink->disagrees());
  EXPECT_EQ(shrink->agree[1], 0) << "2.28.9 did not export it, the matrix says it has it from 2.27.3";
  EXPECT_EQ(shrink->agree[0], 1);

  const campaign::Claim* fp8 = claim("f8e4m3/avg (1 rank)");
  ASSERT_NE(fp8, nullptr);
  EXPECT_TRUE(fp8->disagrees());
  EXPECT_EQ(fp8->agree, (std::vector<int>{1, 1, 1, 0}));
  EXPECT_NE(fp8->claim.find("rejected on 2.27.7-2.29.3, accepted and right on 2.29.7"), std::string::npos)
      << fp8->claim;
  EXPECT_NE(fp8->claim.find("matrix: f8e4m3 avg unsupported from 2.24.3"), std::string::npos) << fp8->claim;

  const campaign::Claim* defect = claim("nccl-1950");
  ASSERT_NE(defect, nullptr);
  EXPECT_EQ(defect->matrix, (std::vector<std::string>{"affected", "affected", "affected", ""}));
  EXPECT_EQ(defect->agree, (std::vector<int>{1, 1, 1, -1}));
  EXPECT_NE(defect->claim.find("affects 2.27.7, 2.28.9, 2.29.3"), std::string::npos) << defect->claim;

  const std::string md = doc::to_markdown(campaign::to_doc(r));
  const auto first_disagree = md.find("DISAGREE");
  const auto agree_row = md.find("| nccl_features.csv | AlltoAll (ncclAlltoAll) |");
  ASSERT_NE(first_disagree, std::string::npos);
  ASSERT_NE(agree_row, std::string::npos);
  EXPECT_LT(first_disagree, agree_row) << "disagreements are listed first";
}

TEST(CampaignReport, DefectIdsFromFindingsAndProperties) {
  ScratchDir tmp("campaign");
  auto rel = synthetic_releases(tmp.path());
  // A finding as `gpucts check` words it, for a defect whose id holds dots and words.
  rel[0].bundle.check["findings"].push_back(
      {{"id", "nccl-known-defect"},
       {"severity", "warning"},
       {"subject", "this host loaded NCCL"},
       {"message", "loaded NCCL 2.29.7 has nccl-2.30.3-symk-ll-unaligned (corruption): Symmetric LL kernels"},
       {"source",
        "nccl_defects.csv:nccl-2.30.3-symk-ll-unaligned "
        "(https://github.com/NVIDIA/nccl/releases/tag/v2.30.3-1)"}});
  campaign::Report r = campaign::build(std::move(rel), builtin_matrix());
  bool found = false;
  for (const auto& c : r.claims)
    if (c.file == "nccl_defects.csv" && c.key == "nccl-2.30.3-symk-ll-unaligned") {
      found = true;
      EXPECT_EQ(c.matrix[3], "affected") << "the 2.29.7 bundle carries the finding";
      EXPECT_FALSE(c.disagrees()) << "no case of its condition ran: nothing to hold it against";
    }
  EXPECT_TRUE(found);
  for (const auto& c : r.claims) EXPECT_NE(c.key, "nccl-2") << "an id is never cut at its first dot";
}

// A bandwidth point of one rank, out of place: `value` GB/s at 64 KiB and above, us below; the
// repetitions `spread_pct` apart.
bw::Point perf_point(const std::string& coll, std::uint64_t bytes, double value, double spread_pct,
                     const std::string& comm = bw::kBlocking) {
  bw::Point p;
  p.collective = coll;
  p.dtype = "f32";
  p.comm = comm;
  p.bytes = bytes;
  p.ranks = 1;
  p.iterations = 20;
  const double t = bytes < (64u << 10) ? value : static_cast<double>(bytes) / (value * 1e3);
  p.time_us = bw::summarize({t * (1 - spread_pct / 200), t, t * (1 + spread_pct / 200)});
  bw::compute_rates(p, BusFactor::one);
  return p;
}

// Replaces a synthetic bundle's bandwidth results.
void write_points(const fs::path& dir, const std::string& nccl, std::vector<bw::Point> points) {
  bw::Run run;
  run.host = "h200";
  run.nccl_version = nccl;
  run.ctx = {"NVIDIA H200", "none", "off", 1, std::nullopt};
  run.points = std::move(points);
  write_file(dir / "bandwidth" / "gpucts_bandwidth.json", bw::to_json(run).dump(2));
}

// The header the suites were built against, unlike the release loaded: an error of every campaign.
void add_header_mismatch(const fs::path& dir, const std::string& nccl) {
  std::ifstream in(dir / "check.json");
  nlohmann::json check = nlohmann::json::parse(in);
  check["verdict"] = "fail";
  check["findings"].push_back({{"id", "nccl-header-library-mismatch"},
                               {"severity", "error"},
                               {"subject", "NCCL"},
                               {"message", "built against 2.28.9, loaded " + nccl},
                               {"source", "rule:nccl-header-library-mismatch"}});
  write_file(dir / "check.json", check.dump(2));
}

// The releases of the real campaign: one-rank Send/Recv at 1 GiB goes 1226 -> 1900 GB/s after
// 2.21.5; the nonblocking variant at 8 B goes 8.6 -> 60-71 us there while the blocking one stays.
std::vector<campaign::Release> perf_releases(const fs::path& root) {
  struct R {
    const char* v;
    double sendrecv_1g, blocking_8b, nonblocking_8b, allreduce_1g, noisy_1m;
  };
  const R rs[] = {{"2.18.3", 1226, 8.6, 8.6, 2100, 500},
                  {"2.21.5", 1226.5, 8.9, 8.97, 2104, 540},
                  {"2.26.2", 1900, 9.2, 60, 2150, 500},
                  {"2.30.7", 1901.7, 9.45, 71, 2110, 540}};
  const std::uint64_t gib = std::uint64_t(1) << 30;
  std::vector<campaign::Release> out;
  for (const auto& r : rs) {
    const fs::path dir = root / (std::string("nccl-") + r.v);
    make_bundle(dir, r.v, {{"AllReduce", "f32_sum_1024_inplace_w1", "passed", "", {}}}, {}, false, 2000, 5);
    add_header_mismatch(dir, r.v);
    std::vector<bw::Point> pts = {
        perf_point("SendRecvRing", 8, r.blocking_8b, 2),
        perf_point("SendRecvRing", 8, r.nonblocking_8b, 2, bw::kNonblocking),
        perf_point("SendRecvRing", gib, r.sendrecv_1g, 1),
        perf_point("AllReduce", gib, r.allreduce_1g, 1),
        // 8% apart from release to release, but its repetitions ranged 12%: not a move.
        perf_point("Broadcast", std::uint64_t(1) << 20, r.noisy_1m, 12),
    };
    // A variant seen on one release only, the default on the next: never compared.
    if (std::string(r.v) == "2.18.3") pts.push_back(perf_point("Scatter", 8, 60, 1, bw::kNonblocking));
    if (std::string(r.v) == "2.21.5") pts.push_back(perf_point("Scatter", 8, 9, 1));
    write_points(dir, r.v, pts);
    out.push_back(campaign::load_release(dir.string()));
  }
  return out;
}

TEST(CampaignPerformance, TheSendRecvJumpIsListedAndTheNonblockingArtefactIsNot) {
  ScratchDir tmp("campaign");
  campaign::Report r = campaign::build(perf_releases(tmp.path()), builtin_matrix());
  ASSERT_EQ(r.releases.size(), 4u);
  std::vector<const across::PerfChange*> defaults, variants;
  for (const auto& p : r.perf) {
    EXPECT_EQ(p.before.variant, p.after.variant) << p.before.key << " compared across variants";
    EXPECT_NE(p.before.collective, "Scatter") << "a nonblocking point met a blocking one";
    (p.before.variant.empty() ? defaults : variants).push_back(&p);
  }
  ASSERT_EQ(defaults.size(), 1u) << campaign::to_json(r)["performance"].dump(1);
  const auto& jump = *defaults[0];
  EXPECT_EQ(jump.before.collective, "SendRecvRing");
  EXPECT_EQ(jump.before.bytes, std::uint64_t(1) << 30);
  EXPECT_EQ(r.releases[jump.from].version.release_str(), "2.21.5");
  EXPECT_EQ(r.releases[jump.from + 1].version.release_str(), "2.26.2");
  EXPECT_EQ(jump.move.change, "faster");
  EXPECT_EQ(jump.before.metric, "algbw_gbps");
  EXPECT_NEAR(jump.before.value, 1226.5, 0.5);
  EXPECT_NEAR(jump.after.value, 1900, 0.5);
  // The nonblocking 8 B jump is a change of its own variant, never the default's latency.
  ASSERT_EQ(variants.size(), 2u);
  EXPECT_EQ(variants[0]->before.variant, bw::kNonblocking);
  EXPECT_EQ(variants[0]->before.metric, "time_us");
  EXPECT_EQ(variants[0]->move.change, "slower");
  // The headline's 8 B latency is the blocking one.
  for (const auto& b : r.bandwidth)
    if (b.collective == "SendRecvRing") {
      ASSERT_TRUE(b.latency_8b[2].has_value());
      EXPECT_NEAR(*b.latency_8b[2], 9.2, 1e-6);
    }

  const std::string md = doc::to_markdown(campaign::to_doc(r));
  EXPECT_NE(md.find("## Performance between adjacent releases (1 point(s))"), std::string::npos) << md;
  EXPECT_NE(
      md.find("| NCCL 2.21.5 -> NCCL 2.26.2 | gpucts_bandwidth | SendRecvRing | f32 | 1 GiB | out of place "
              "| algbw | 1226.5 GB/s | 1900.0 GB/s | +54.9% faster |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("1 performance change(s)"), std::string::npos) << md;
  const auto perf_at = md.find("## Performance between"), plot_at = md.find("![SendRecvRing");
  const auto grid_at = md.find("## Pass/fail/skip by collective");
  ASSERT_NE(plot_at, std::string::npos) << md;
  EXPECT_LT(plot_at, perf_at) << "plots before the long tables";
  EXPECT_LT(plot_at, grid_at) << "plots before the long tables";
  // The first screen tells it against the oldest release, the metric named.
  const auto story_at = md.find("## What changed against NCCL 2.18.3");
  ASSERT_NE(story_at, std::string::npos) << md;
  EXPECT_LT(story_at, md.find("## Releases"));
  EXPECT_NE(md.find("- NCCL 2.26.2: SendRecvRing algbw 55% faster at 1 GiB\n"), std::string::npos) << md;
  EXPECT_NE(md.find("- NCCL 2.26.2: SendRecvRing latency"), std::string::npos)
      << "the nonblocking 8 B: " << md;
  EXPECT_NE(md.find("(nonblocking)"), std::string::npos) << md;
  const auto j = campaign::to_json(r);
  ASSERT_EQ(j["performance"].size(), 3u);
  int blocking = 0;
  for (const auto& p : j["performance"]) blocking += p["variant"] == "blocking";
  EXPECT_EQ(blocking, 1);
}

TEST(CampaignPerformance, AReleaseWithOnlyTheExpectedMismatchPasses) {
  ScratchDir tmp("campaign");
  auto rel = synthetic_releases(tmp.path());
  for (const auto& v : {"2.27.7", "2.28.9", "2.29.3", "2.29.7"})
    add_header_mismatch(fs::path(tmp.path()) / (std::string("nccl-") + v), v);
  rel.clear();
  for (const auto& v : {"2.27.7", "2.29.7"})
    rel.push_back(campaign::load_release((fs::path(tmp.path()) / (std::string("nccl-") + v)).string()));
  // 2.29.7's fp8 probe failed on purpose in the shared fixture: make it a release with nothing failed.
  for (auto& c : rel[1].bundle.cases)
    if (c.status == junit::Status::failed) c.status = junit::Status::passed;
  for (auto& s : rel[1].bundle.manifest.suites) s.status = bundle::SuiteStatus::passed;
  campaign::Report r = campaign::build(std::move(rel), builtin_matrix());
  ASSERT_EQ(r.releases.size(), 2u);
  EXPECT_EQ(r.releases[1].bundle.manifest.verdict, "fail") << "the bundle's own verdict, as qualify wrote it";
  EXPECT_EQ(r.releases[1].verdict, "pass") << "only the expected header mismatch";
  EXPECT_EQ(r.releases[1].expected, std::vector<std::string>{"nccl-header-library-mismatch"});
  EXPECT_EQ(r.releases[0].verdict, "fail") << "2.27.7 has failed cases and a known-defect finding";
  const std::string md = doc::to_markdown(campaign::to_doc(r));
  EXPECT_NE(md.find("| 2.29.7 | pass |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2.27.7 | fail |"), std::string::npos) << md;
  EXPECT_EQ(campaign::to_json(r)["releases"][1]["verdict"], "pass");
  // A run that could not reach a GPU never turns into a pass.
  auto nogpu = r.releases[1].bundle;
  nogpu.manifest.verdict = "no_gpu";
  EXPECT_EQ(campaign::release_verdict(nogpu), "no_gpu");
}

TEST(CampaignPerformance, ChangesGroupPerDefectAndPerCollectiveDtypeOp) {
  ScratchDir tmp("campaign");
  std::vector<campaign::Release> rel;
  for (const char* v : {"2.29.3", "2.29.7"}) {
    const bool old = std::string(v) == "2.29.3";
    std::vector<SynthCase> cs;
    // nccl-1950 across two collectives and two dtypes: one row.
    for (const char* suite : {"AllReduce", "Reduce"})
      for (const char* n : {"f32_avg_65537_outofplace_w1", "f64_premulsum_8193_outofplace_w1"})
        cs.push_back(
            old ? SynthCase{suite, n, "failed", "tail never written", {{"gpucts.known_defect", "nccl-1950"}}}
                : SynthCase{suite, n, "passed", "", {}});
    // Native AlltoAll: 3 f32 cases and 2 bf16 ones skip -> pass: two rows.
    for (const char* n : {"f32_0_outofplace_w1", "f32_13_outofplace_w1", "f32_1021_outofplace_w1",
                          "bf16_0_outofplace_w1", "bf16_13_outofplace_w1"})
      cs.push_back({"AlltoAll", n, old ? "skipped" : "passed", old ? "AlltoAll needs NCCL 2.28.3" : "", {}});
    make_bundle(fs::path(tmp.path()) / v, v, cs, {}, false, 2000, 5);
    rel.push_back(campaign::load_release((fs::path(tmp.path()) / v).string()));
  }
  campaign::Report r = campaign::build(std::move(rel), builtin_matrix());
  ASSERT_EQ(r.changes.size(), 3u) << campaign::to_json(r)["changes"].dump(1);
  EXPECT_EQ(r.case_changes.size(), 9u) << "every case is still there, for the details";
  const campaign::Change& defect = r.changes[0];
  EXPECT_EQ(defect.defect, "nccl-1950") << "defect groups first";
  EXPECT_EQ(defect.cases, 4);
  EXPECT_EQ(defect.collectives, (std::vector<std::string>{"AllReduce", "Reduce"}));
  EXPECT_EQ(defect.from + ">" + defect.to, "fail>pass");
  const campaign::Change* f32 = find_change(r, "AlltoAll", "f32", "");
  const campaign::Change* bf16 = find_change(r, "AlltoAll", "bf16", "");
  ASSERT_NE(f32, nullptr);
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ(f32->cases, 3);
  EXPECT_EQ(bf16->cases, 2);
  EXPECT_TRUE(f32->defect.empty());
  EXPECT_EQ(f32->example, "gpucts_collectives/AlltoAll.f32_0_outofplace_w1");
  const std::string md = doc::to_markdown(campaign::to_doc(r));
  EXPECT_NE(md.find("| 2.29.7 | 2.29.3 | nccl-1950 | AllReduce, Reduce | fail -> pass | 4 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 2.29.7 | 2.29.3 | - | AlltoAll f32 | skip -> pass | 3 |"), std::string::npos) << md;
  // Each case on request: a details section after everything else.
  const auto details = md.find("## Every case that changed (9)");
  ASSERT_NE(details, std::string::npos) << md;
  EXPECT_GT(details, md.find("## Pass/fail/skip by collective"));
  EXPECT_NE(
      md.find("| gpucts_collectives/Reduce.f64_premulsum_8193_outofplace_w1 | fail -> pass | nccl-1950 |",
              details),
      std::string::npos)
      << md;
  EXPECT_EQ(campaign::to_json(r)["case_changes"].size(), 9u);
}

TEST(CampaignPerformance, OneReleaseStillShowsTheMatrixTable) {
  ScratchDir tmp("campaign");
  auto rel = synthetic_releases(tmp.path());
  rel.resize(1);
  campaign::Report r = campaign::build(std::move(rel), builtin_matrix());
  ASSERT_EQ(r.releases.size(), 1u);
  EXPECT_FALSE(r.claims.empty());
  const std::string md = doc::to_markdown(campaign::to_doc(r));
  const auto at = md.find("## Observed against the matrix");
  ASSERT_NE(at, std::string::npos) << md;
  EXPECT_NE(md.find("| nccl_features.csv | AlltoAll (ncclAlltoAll) |", at), std::string::npos) << md;
  EXPECT_NE(md.find("one release: nothing to compare"), std::string::npos) << md;
}

junit::Case collective_case(const std::string& suite, const std::string& name,
                            std::map<std::string, std::string> properties = {}) {
  junit::Case k;
  k.binary = "gpucts_collectives";
  k.suite = suite;
  k.name = name;
  k.status = junit::Status::passed;
  k.properties = std::move(properties);
  return k;
}

// The axes a collective case records (results/case_axes.hpp), as the runner writes them.
std::map<std::string, std::string> recorded_axes(const CaseAxes& a) {
  std::map<std::string, std::string> p;
  for (const auto& [k, v] : axis_properties(a)) p[k] = v;
  return p;
}

CaseAxes bcast_axes() {
  CaseAxes a;
  a.collective = "Broadcast";
  a.dtype = "f8e5m2";
  a.count = 1048575;
  a.placement = kInPlace;
  a.world = 2;
  a.variant = "graph";
  return a;
}

void expect_same_axes(const CaseAxes& got, const CaseAxes& want) {
  EXPECT_EQ(got.collective, want.collective);
  EXPECT_EQ(got.dtype, want.dtype);
  EXPECT_EQ(got.op, want.op);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.placement, want.placement);
  EXPECT_EQ(got.world, want.world);
  EXPECT_EQ(got.variant, want.variant);
}

// A case without gpucts.axis.* properties (a bundle written before the cases recorded them): the
// name says what it can.
TEST(CampaignReport, CaseAxesFromTheNameOfAnOlderCase) {
  auto a = campaign::case_axes(collective_case("AllReduce", "bf16_avg_1048577_outofplace_mixed_w4"));
  EXPECT_EQ(a.collective, "AllReduce");
  EXPECT_EQ(a.dtype, "bf16");
  EXPECT_EQ(a.op, "avg");
  EXPECT_EQ(a.world, 4);
  EXPECT_EQ(a.count, std::nullopt) << "the name is not read for more than it was before";
  a = campaign::case_axes(collective_case("Broadcast", "f8e5m2_13_outofplace_root1_w2"));
  EXPECT_EQ(a.dtype, "f8e5m2");
  EXPECT_EQ(a.op, "");
  EXPECT_TRUE(campaign::case_axes(collective_case("Fingerprint", "RoundTrip")).collective.empty());
}

// The recorded properties are the axes, whatever the name says; a malformed number falls back to
// the name.
TEST(CampaignReport, CaseAxesFromTheRecordedProperties) {
  CaseAxes want = bcast_axes();
  expect_same_axes(campaign::case_axes(collective_case("Broadcast", "renamed", recorded_axes(want))), want);
  want.collective = "AllReduce";
  want.op = "premulsum";
  want.placement = kOutOfPlace;
  want.count = 0;
  want.variant = "plain";
  const CaseAxes got =
      campaign::case_axes(collective_case("AllReduce", "f32_sum_13_inplace_w1", recorded_axes(want)));
  expect_same_axes(got, want);
  EXPECT_EQ(got.dtype, "f8e5m2") << "not f32 from the name";
  auto bad = recorded_axes(want);
  bad[axis::kWorld] = "2 ranks";
  const CaseAxes fallback = campaign::case_axes(collective_case("AllReduce", "f32_sum_13_inplace_w1", bad));
  EXPECT_EQ(fallback.dtype, "f32");
  EXPECT_EQ(fallback.world, 1);
  bad = recorded_axes(want);
  bad[axis::kCount] = "-1";
  EXPECT_EQ(campaign::case_axes(collective_case("AllReduce", "x", bad)).collective, "")
      << "a bad count is no axis; the name 'x' is none either";
}

// The grid groups cases by the axes they recorded: here the f32 avg cases say they are bf16.
TEST(CampaignReport, TheGridGroupsByTheRecordedAxes) {
  ScratchDir tmp("campaign");
  auto rel = synthetic_releases(tmp.path());
  for (auto& r : rel)
    for (auto& k : r.bundle.cases) {
      if (k.suite != "AllReduce" || k.name.rfind("f32_avg_", 0) != 0) continue;
      CaseAxes a = campaign::case_axes(k);
      a.dtype = "bf16";
      k.properties = recorded_axes(a);
    }
  const campaign::Report r = campaign::build(std::move(rel), builtin_matrix());
  const campaign::GridRow* f32 = nullptr;
  const campaign::GridRow* bf16 = nullptr;
  for (const auto& g : r.grid)
    if (g.collective == "AllReduce" && g.op == "avg") {
      if (g.dtype == "f32") f32 = &g;
      if (g.dtype == "bf16") bf16 = &g;
    }
  EXPECT_EQ(f32, nullptr);
  ASSERT_NE(bf16, nullptr);
  ASSERT_EQ(bf16->cells.size(), 4u);
  EXPECT_EQ(bf16->cells[0].fail, 2);
  EXPECT_EQ(bf16->cells[3].pass, 2);
}

// gtest writes a case's RecordProperty under its <testcase>; qualify merges the binaries' files
// into one junit.xml whose cases keep them in <system-out>; the bundle reads that back. The axes
// must come through both steps unchanged.
TEST(CampaignReport, CaseAxesSurviveTheMergedJUnitRoundTrip) {
  const CaseAxes want = bcast_axes();
  std::string props;
  for (const auto& [k, v] : axis_properties(want))
    props += "<property name=\"" + k + "\" value=\"" + xml::escape(v) + "\"/>";
  const std::string gtest_xml =
      "<?xml version=\"1.0\"?>\n<testsuites name=\"AllTests\">\n"
      " <testsuite name=\"Broadcast\" tests=\"2\">\n"
      "  <testcase name=\"f8e5m2_1048575_inplace_root0_graph_w2\" classname=\"Broadcast\" time=\"0.2\">\n"
      "   <properties>" +
      props +
      "<property name=\"note\" value=\"a=b &amp; c\"/></properties>\n"
      "  </testcase>\n"
      "  <testcase name=\"f32_13_outofplace_root1_w2\" classname=\"Broadcast\" time=\"0.1\">\n"
      "   <skipped message=\"needs 2 GPUs\"/>\n"
      "  </testcase>\n"
      " </testsuite>\n</testsuites>\n";
  const auto read = junit::read(xml::parse(gtest_xml, "gtest.xml"), "gtest.xml", "gpucts_collectives_w2");
  ASSERT_EQ(read.size(), 2u);
  const std::string merged = junit::write(read, "merged");
  EXPECT_NE(merged.find(std::string(axis::kDtype) + "=f8e5m2\n"), std::string::npos) << merged;
  const auto back = junit::read(xml::parse(merged, "junit.xml"), "junit.xml", "");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].binary, "gpucts_collectives_w2");
  EXPECT_EQ(back[0].suite, "Broadcast");
  EXPECT_EQ(back[0].properties, read[0].properties);
  EXPECT_EQ(back[0].property("note"), "a=b & c");
  expect_same_axes(campaign::case_axes(back[0]), want);
  EXPECT_TRUE(back[1].properties.empty());
  const CaseAxes old = campaign::case_axes(back[1]);  // no properties: the name
  EXPECT_EQ(old.collective, "Broadcast");
  EXPECT_EQ(old.world, 2);
}

TEST(CampaignBisect, SearchesBetweenTheLastPassAndTheFirstFail) {
  campaign::BisectState s;
  s.versions = {"2.27.7", "2.28.3", "2.28.9", "2.29.2", "2.29.3", "2.29.7", "2.30.7"};
  auto truth = [](std::size_t i) { return i >= 5 ? "fail" : "pass"; };
  s.outcome[0] = "pass";
  s.outcome[6] = "fail";
  int runs = 0;
  while (auto n = s.next()) {
    ASSERT_FALSE(s.outcome.count(*n)) << "never the same release twice";
    s.outcome[*n] = truth(*n);
    ASSERT_LT(++runs, 10);
  }
  ASSERT_TRUE(s.first_changed().has_value());
  EXPECT_EQ(s.versions[*s.first_changed()], "2.29.7");
  EXPECT_LE(runs, 3) << "a binary search over 5 releases between";
  // A release that cannot decide (skipped) is stepped over.
  campaign::BisectState k;
  k.versions = {"a", "b", "c", "d"};
  k.outcome = {{0, "pass"}, {3, "fail"}};
  while (auto n = k.next()) k.outcome[*n] = *n == 1 ? "skip" : "fail";
  EXPECT_EQ(k.outcome.at(2), "fail");
  EXPECT_EQ(*k.first_changed(), 2u);
  // A fix: failing on the oldest, passing on the newest.
  campaign::BisectState f;
  f.versions = {"2.27.7", "2.28.9", "2.29.2", "2.29.3", "2.29.7", "2.32.3"};
  f.old_cls = "fail";
  f.new_cls = "pass";
  f.outcome = {{0, "fail"}, {5, "pass"}};
  while (auto n = f.next()) f.outcome[*n] = *n >= 4 ? "pass" : "fail";
  EXPECT_EQ(f.versions[*f.first_changed()], "2.29.7");
}

// gpucts with `args`: its exit status, its output and error in *out (240 s at most: the suite has 300).
int run_gpucts(std::vector<std::string> args, std::string* out) {
  const auto cli = find_beside("gpucts");
  if (!cli) {
    *out = "gpucts not found beside " + self_dir();
    return -1;
  }
  args.insert(args.begin(), *cli);
  int rc = -1;
  *out = proc::output_of(args, &rc, {}, 240);
  return rc;
}

TEST(CampaignCli, ReportCampaignWritesTheReportAndFailsOnDisagreement) {
  ScratchDir tmp("campaign");
  synthetic_releases(tmp.path());
  std::vector<std::string> args = {"report", "--campaign", "--output", tmp.path() + "/out"};
  for (const char* v : {"2.29.7", "2.27.7", "2.28.9", "2.29.3"})
    args.insert(args.end(), {"--candidate", tmp.path() + "/nccl-" + v});
  std::string out;
  EXPECT_EQ(run_gpucts(args, &out), 1) << out;
  for (const char* f :
       {"campaign.md", "campaign.html", "campaign.json", "plots/gpucts_bandwidth_AllReduce.svg"})
    EXPECT_TRUE(fs::exists(fs::path(tmp.path()) / "out" / f)) << f << "\n" << out;
  EXPECT_EQ(run_gpucts({"report", "--campaign", "--baseline", "x", "--candidate", "y"}, &out), 2) << out;
}

// --ranks N selects the simulated-host entry of N ranks; a count without one is refused naming
// those there are (this build tree has them where MPI and CUDA were found).
TEST(CampaignCli, RanksNeedsASimulatedHostEntry) {
  ScratchDir tmp("campaign");
  std::string out;
  EXPECT_EQ(run_gpucts({"campaign", "--nccl", "2.28.9", "--ranks", "1", "--output", tmp.path()}, &out), 2)
      << out;
  EXPECT_NE(out.find("--ranks '1': expected a number of ranks from 2 to 4096"), std::string::npos) << out;
  EXPECT_EQ(run_gpucts({"campaign", "--nccl", "2.28.9", "--ranks", "3", "--output", tmp.path()}, &out), 2)
      << out;
  EXPECT_NE(out.find("no entry gpucts_mp_collectives_sim3"), std::string::npos) << out;
#if GPUCTS_HAVE_CUDA
  EXPECT_NE(out.find("(ranks there: 2, 4, 8)"), std::string::npos) << out;
#endif
}

// Options are checked before the output folder exists; a store entry is used only when it is a
// whole library: a FIFO is no archive, a cut archive leaves nothing in the store.
TEST(CampaignCli, OptionsAndStoreAreChecked) {
  ScratchDir tmp("campaign");
  const fs::path out = fs::path(tmp.path()) / "out";
  std::string text;
  for (const auto& bad : std::vector<std::vector<std::string>>{{"--nccl", "2.28.9,2.28.9"},
                                                               {"--nccl", "2.28.9", "--stop-after", "-1"},
                                                               {"--nccl", "2.28.9", "--timeout", "-1"},
                                                               {"--nccl", "2.28.x"}}) {
    std::vector<std::string> args = {"campaign", "--output", out.string()};
    args.insert(args.end(), bad.begin(), bad.end());
    EXPECT_EQ(run_gpucts(args, &text), 2) << bad.back() << "\n" << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
    EXPECT_FALSE(fs::exists(out)) << "written before the options were checked: " << bad.back();
  }
  const fs::path store = fs::path(tmp.path()) / "store";
  fs::create_directories(store / "stage" / "2.27.7" / "lib");
  {  // a shared object cut after its first 4 KiB: its section headers are gone
    std::ifstream whole(self_exe(), std::ios::binary);
    std::string head(4096, '\0');
    whole.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(store / "stage" / "2.27.7" / "lib" / "libnccl.so.2", std::ios::binary) << head;
  }
  int rc = -1;
  text = proc::output_of({"tar", "-cJf", (store / "nccl-2.27.7-sm90.tar.xz").string(), "-C",
                          (store / "stage").string(), "2.27.7"},
                         &rc);
  ASSERT_EQ(rc, 0) << text;
  ASSERT_EQ(::mkfifo((store / "nccl-2.26.2.tar.xz").c_str(), 0644), 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(
      run_gpucts({"campaign", "--nccl", "2.27.7,2.26.2", "--store", store.string(), "--output", out.string()},
                 &text),
      1)
      << text;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60) << text;
  EXPECT_FALSE(fs::exists(store / "2.27.7")) << "a cut library was left in the store\n" << text;
  EXPECT_NE(text.find("holds no whole 2.27.7/lib/libnccl.so.2"), std::string::npos) << text;
  EXPECT_NE(text.find("is not a regular file"), std::string::npos) << text;
  for (const auto& e : fs::directory_iterator(store))
    EXPECT_EQ(e.path().filename().string().rfind(".unpack-", 0), std::string::npos) << e.path();
}

#if GPUCTS_HAVE_CUDA
// A store of stand-in releases: each <store>/<v>/lib/libnccl.so.2 a link to this machine's library.
std::string make_store(const fs::path& store, const std::vector<std::string>& versions) {
  const std::string real = nccl::loaded_library();
  for (const auto& v : versions) {
    fs::create_directories(store / v / "lib");
    fs::create_symlink(real, store / v / "lib" / "libnccl.so.2");
  }
  return real;
}

TEST(CampaignCli, RunsEachReleaseAndNoticesTheWrongLibrary) {
  ScratchDir tmp("campaign");
  const fs::path store = fs::path(tmp.path()) / "store";
  int code = 0;
  ASSERT_EQ(ncclGetVersion(&code), ncclSuccess);
  const std::string here = Version::from_code(code, VersionKind::Nccl).release_str();
  make_store(store, {here, "2.27.7"});
  // 2.27.7 as an archive (what ci/nccl_prune pack makes), unpacked by the campaign.
  int tar_rc = -1;
  std::string out = proc::output_of(
      {"tar", "-cJf", (store / "nccl-2.27.7-sm90.tar.xz").string(), "-C", store.string(), "2.27.7"}, &tar_rc);
  ASSERT_EQ(tar_rc, 0) << out;
  fs::remove_all(store / "2.27.7");
  const std::string build = fs::path(self_dir()).parent_path().string();
  const std::vector<std::string> campaign = {
      "campaign", "--nccl",           here + ",2.27.7", "--label",      "harness",
      "--tests",  "^gpucts_version$", "--store",        store.string(), "--build-dir",
      build,      "--output",         tmp.path() + "/c"};
  EXPECT_EQ(run_gpucts(campaign, &out), 1) << out;
  const fs::path c = fs::path(tmp.path()) / "c";
  EXPECT_TRUE(fs::exists(c / ("nccl-" + here) / "manifest.json")) << out;
  EXPECT_TRUE(fs::exists(store / "2.27.7" / "lib" / "libnccl.so.2"))
      << "the archive was unpacked into the store";
  std::ifstream in(c / "campaign.json");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  bool named = false;
  for (const auto& p : j["problems"])
    named |=
        p.get<std::string>().find("asked for NCCL 2.27.7, the suites loaded " + here) != std::string::npos;
  EXPECT_TRUE(named) << j["problems"].dump() << "\n" << out;
  for (const auto& r : j["releases"]) {
    EXPECT_NE(r["timing"]["run_s"], nullptr);
    if (r["requested"] == "2.27.7") {
      EXPECT_NE(r["timing"]["unpack_s"], nullptr);
      EXPECT_EQ(r["timing"]["how"], "archive nccl-2.27.7-sm90.tar.xz");
    }
  }
  // --resume reads the bundles back instead of running again.
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), campaign.begin(), campaign.end());
    return extra;
  };
  EXPECT_EQ(run_gpucts(with({"--resume"}), &out), 1) << out;
  EXPECT_NE(out.find("2 release(s)"), std::string::npos) << out;
  // --stop-after: no release starts once the time budget is spent; each is named as not run.
  EXPECT_EQ(run_gpucts(with({"--stop-after", "0.000001"}), &out), 1) << out;
  std::ifstream in2(c / "campaign.json");
  j = nlohmann::json::parse(in2, nullptr, false);
  EXPECT_EQ(j["releases"].size(), 0u);
  EXPECT_NE(j["problems"].dump().find("time budget"), std::string::npos) << j["problems"].dump();
}

TEST(CampaignCli, BisectNamesTheFirstFailingRelease) {
  ScratchDir tmp("campaign");
  const fs::path store = fs::path(tmp.path()) / "store";
  make_store(store, {"2.27.7", "2.28.3", "2.28.9", "2.29.3", "2.29.7", "2.30.7"});
  const std::string build = fs::path(self_dir()).parent_path().string();
  // A bisect of the fixture case from `good` to `bad`, the case failing from (or passing from) 2.29.7.
  auto bisect = [&](const std::string& good, const std::string& bad, const std::string& fixture_env,
                    const std::string& output, std::string* out) {
    return run_gpucts({"campaign", "--bisect", "gpucts_campaign/DISABLED_Fixture.FailsFromVersionInPath",
                       "--good", good, "--bad", bad, "--store", store.string(), "--build-dir", build, "--env",
                       "GTEST_ALSO_RUN_DISABLED_TESTS=1", "--env", fixture_env + "=2.29.7", "--output",
                       tmp.path() + "/" + output},
                      out);
  };
  std::string out;
  EXPECT_EQ(bisect("2.27.7", "2.30.7", "GPUCTS_FIXTURE_FAIL_FROM", "b", &out), 0) << out;
  EXPECT_NE(out.find("first failing release: 2.29.7 (last passing: 2.29.3)"), std::string::npos) << out;
  std::ifstream in(fs::path(tmp.path()) / "b" / "bisect.md");
  std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("| 2.28.3 | not needed |"), std::string::npos) << md;
  // The ends must hold: a case that passes on both is no bisect.
  EXPECT_EQ(bisect("2.27.7", "2.29.3", "GPUCTS_FIXTURE_FAIL_FROM", "b2", &out), 1) << out;
  EXPECT_NE(out.find("cannot bisect"), std::string::npos) << out;
  // A fix: --good newer than --bad names the first passing release.
  EXPECT_EQ(bisect("2.30.7", "2.27.7", "GPUCTS_FIXTURE_PASS_FROM", "b3", &out), 0) << out;
  EXPECT_NE(out.find("first passing release: 2.29.7 (last failing: 2.29.3)"), std::string::npos) << out;
}
#endif

}  // namespace
}  // namespace cts
