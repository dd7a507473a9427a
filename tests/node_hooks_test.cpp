// What cluster tooling reads of a qualification (report/prometheus.hpp): the one-word node status
// and the node_exporter textfile, on a bundle built in memory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "report/prometheus.hpp"

namespace cts {
namespace {

bw::Point point(const std::string& coll, std::uint64_t bytes, double median_us, double busbw,
                bool in_place = false) {
  bw::Point p;
  p.collective = coll;
  p.dtype = "f32";
  p.op = "sum";
  p.bytes = bytes;
  p.ranks = 8;
  p.in_place = in_place;
  p.time_us.median = median_us;
  p.time_us.n = 5;
  p.algbw_gbps = busbw / 2;
  p.busbw_gbps = busbw;
  return p;
}

bundle::Bundle sample() {
  bundle::Bundle b;
  junit::Case ok, bad, skip;
  ok.name = "a";
  bad.name = "b";
  bad.status = junit::Status::failed;
  skip.name = "c";
  skip.status = junit::Status::skipped;
  b.cases = {ok, ok, bad, skip};
  bundle::SuiteRun s;
  s.name = "gpucts_collectives";
  s.status = bundle::SuiteStatus::failed;
  b.manifest.suites = {s};
  b.manifest.elapsed_s = 61.5;
  bw::Run run;
  run.points = {point("AllReduce", 8, 12.5, 0.001), point("AllReduce", 1ull << 30, 9000, 370.25),
                point("AllReduce", 1ull << 30, 1, 999, /*in_place=*/true), point("AllGather", 8, 10, 0.001),
                point("Odd\"Name", 1ull << 30, 100, 1)};
  b.bandwidth = {{"gpucts_bandwidth", run}};
  return b;
}

TEST(NodeStatus, OneWordPerVerdictKindAndNothingElse) {
  for (const char* k : {"pass", "waived", "fail", "no_gpu", "not_run"}) EXPECT_EQ(node_status_word(k), k);
  EXPECT_THROW(node_status_word("PASS"), std::invalid_argument) << "an unknown kind never reads as a pass";
  EXPECT_THROW(node_status_word(""), std::invalid_argument);
  const std::string path = ::testing::TempDir() + "gpucts-status-" + std::to_string(::getpid());
  write_node_status(path, "no_gpu");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "no_gpu\n");
  std::remove(path.c_str());
}

TEST(Prometheus, VerdictCountsLatencyAndBandwidth) {
  const std::string t = prometheus_text(sample(), "fail");
  EXPECT_NE(t.find("gpucts_verdict{kind=\"fail\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("gpucts_verdict{kind=\"pass\"} 0\n"), std::string::npos) << t;
  EXPECT_NE(t.find("gpucts_cases{result=\"passed\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("gpucts_cases{result=\"failed\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("gpucts_suites{status=\"failed\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("gpucts_latency_8b_seconds{collective=\"AllReduce\",dtype=\"f32\",op=\"sum\",ranks=\"8\"} "
                   "1.25e-05\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("gpucts_busbw_1gib_bytes_per_second{collective=\"AllReduce\",dtype=\"f32\",op=\"sum\","
                   "ranks=\"8\"} 3.7025e+11\n"),
            std::string::npos)
      << "out of place only: " << t;
  EXPECT_NE(t.find("collective=\"Odd\\\"Name\""), std::string::npos) << "label values escaped: " << t;
  EXPECT_THROW(prometheus_text(sample(), "green"), std::invalid_argument);
  // Every line is a comment or "name{labels} value", as node_exporter's textfile collector reads it.
  const std::regex sample_line(
      R"(^[a-z_0-9]+(\{[a-z_]+="([^"\\]|\\.)*"(,[a-z_]+="([^"\\]|\\.)*")*\})? [-+0-9.e]+$)");
  std::istringstream in(t);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) != 0) {
      EXPECT_TRUE(std::regex_match(line, sample_line)) << line;
    }
  }
  // Each family has its HELP and TYPE once.
  for (const char* f : {"gpucts_verdict", "gpucts_cases", "gpucts_latency_8b_seconds"}) {
    const std::string type = std::string("# TYPE ") + f + " gauge\n";
    const auto at = t.find(type);
    EXPECT_NE(at, std::string::npos) << f;
    EXPECT_EQ(t.find(type, at + 1), std::string::npos) << f;
  }
}

TEST(Prometheus, NoBandwidthRunNoBandwidthFamilies) {
  bundle::Bundle b;
  const std::string t = prometheus_text(b, "no_gpu");
  EXPECT_NE(t.find("gpucts_verdict{kind=\"no_gpu\"} 1\n"), std::string::npos);
  EXPECT_EQ(t.find("gpucts_latency_8b_seconds"), std::string::npos);
  EXPECT_EQ(t.find("gpucts_busbw_1gib"), std::string::npos);
}

}  // namespace
}  // namespace cts
