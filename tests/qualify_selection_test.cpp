// What `gpucts qualify` selects (cli/qualify_run.hpp): the levels quick, standard and full, the
// harness labels no level takes, and --label / --tests on top of a level.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/qualify_run.hpp"

namespace cts::qualify {
namespace {

TestEntry entry(const std::string& name, std::vector<std::string> labels, std::vector<std::string> env = {}) {
  TestEntry t;
  t.name = name;
  t.command = {name};
  t.labels = std::move(labels);
  t.env = std::move(env);
  return t;
}

const std::vector<TestEntry>& suites() {
  static const std::vector<TestEntry> t = {
      entry("gpucts_version", {"cpu"}),
      entry("gpucts_collectives", {"single-gpu", "quick"}, {"GPUCTS_COLL_SWEEP=full", "A=1"}),
      entry("gpucts_collectives_w2", {"multi-gpu"}),
      entry("gpucts_bandwidth", {"perf", "quick"}),
      entry("gpucts_bandwidth_nonblocking", {"perf"}),
      entry("gpucts_mp_collectives_sim2", {"multi-process", "multi-rank-sim"}),
      entry("gpucts_mp_collectives_sim4", {"multi-process", "multi-rank-sim"}),
      entry("gpucts_layers", {"cpu", "self-test"}),
      entry("gpucts_report", {"cpu", "harness"}),
      entry("gpucts_install_tree", {"install-only"}),
  };
  return t;
}

std::vector<std::string> names(const std::vector<TestEntry>& v) {
  std::vector<std::string> n;
  for (const auto& t : v) n.push_back(t.name);
  return n;
}

std::vector<std::string> select(Level l, std::optional<std::string> label = {},
                                std::optional<std::string> tests = {}) {
  Selection s;
  s.level = l;
  if (label) s.labels.push_back(*label);
  s.tests = std::move(tests);
  return names(select_tests(suites(), s));
}

TEST(QualifyLevels, RepeatedLabelsAreAnded) {
  Selection s;
  s.level = Level::full;
  s.labels = {"multi", "rank-sim"};  // multi-gpu, multi-process and multi-rank-sim match the first
  EXPECT_EQ(names(select_tests(suites(), s)),
            (std::vector<std::string>{"gpucts_mp_collectives_sim2", "gpucts_mp_collectives_sim4"}));
  s.labels = {"^perf$", "^no-such-label$"};
  EXPECT_TRUE(select_tests(suites(), s).empty());
}

TEST(QualifyLevels, NamesParse) {
  for (Level l : {Level::quick, Level::standard, Level::full}) EXPECT_EQ(parse_level(level_name(l)), l);
  EXPECT_THROW(parse_level("medium"), std::invalid_argument);
  EXPECT_EQ(Selection{}.level, Level::standard) << "standard is the default";
}

TEST(QualifyLevels, StandardIsTheStackWithoutSimulatedRanksOrHarness) {
  EXPECT_EQ(select(Level::standard),
            (std::vector<std::string>{"gpucts_version", "gpucts_collectives", "gpucts_collectives_w2",
                                      "gpucts_bandwidth", "gpucts_bandwidth_nonblocking"}));
}

TEST(QualifyLevels, FullAddsTheSimulatedMultiRankSuites) {
  EXPECT_EQ(select(Level::full),
            (std::vector<std::string>{"gpucts_version", "gpucts_collectives", "gpucts_collectives_w2",
                                      "gpucts_bandwidth", "gpucts_bandwidth_nonblocking",
                                      "gpucts_mp_collectives_sim2", "gpucts_mp_collectives_sim4"}));
  EXPECT_EQ(select(Level::full, std::string("multi-rank-sim")),
            (std::vector<std::string>{"gpucts_mp_collectives_sim2", "gpucts_mp_collectives_sim4"}));
  // A --label that names the label asks for it below full too; one that matches only another
  // label of the entry does not.
  EXPECT_EQ(select(Level::standard, std::string("^multi-rank-sim$")).size(), 2u);
  EXPECT_EQ(select(Level::standard, std::string("multi-process")).size(), 0u);
}

TEST(QualifyLevels, QuickIsTheQuickEntriesWithOneSizeAndThreeBandwidthPoints) {
  Selection s;
  s.level = Level::quick;
  const auto q = select_tests(suites(), s);
  ASSERT_EQ(names(q), (std::vector<std::string>{"gpucts_collectives", "gpucts_bandwidth"}));
  auto has = [](const TestEntry& t, const std::string& kv) {
    return std::find(t.env.begin(), t.env.end(), kv) != t.env.end();
  };
  for (const auto& t : q) {
    EXPECT_TRUE(has(t, "GPUCTS_COLL_SWEEP=smoke")) << t.name;
    EXPECT_TRUE(has(t, std::string("GPUCTS_BW_SWEEP=") + kQuickBandwidthSweep)) << t.name;
  }
  EXPECT_FALSE(has(q[0], "GPUCTS_COLL_SWEEP=full")) << "the level's value replaces the entry's";
  EXPECT_TRUE(has(q[0], "A=1")) << "the entry's other variables stay";
  EXPECT_EQ(select(Level::quick, std::string("perf")), std::vector<std::string>{"gpucts_bandwidth"});
  // The other levels leave the entries' environment as it is.
  Selection st;
  EXPECT_EQ(select_tests(suites(), st)[1].env, suites()[1].env);
}

TEST(QualifyLevels, HarnessEntriesOnlyWhenALabelNamesThem) {
  for (Level l : {Level::quick, Level::standard, Level::full}) {
    const auto n = select(l);
    EXPECT_EQ(std::count(n.begin(), n.end(), "gpucts_layers"), 0);
    EXPECT_EQ(std::count(n.begin(), n.end(), "gpucts_install_tree"), 0);
    EXPECT_EQ(std::count(n.begin(), n.end(), "gpucts_report"), 0);
  }
  EXPECT_EQ(select(Level::standard, std::string("self-test")), std::vector<std::string>{"gpucts_layers"});
  EXPECT_EQ(select(Level::standard, std::string("harness")), std::vector<std::string>{"gpucts_report"});
  EXPECT_EQ(select(Level::standard, std::string("cpu")), std::vector<std::string>{"gpucts_version"})
      << "gpucts's own tests stay out of --label cpu";
  EXPECT_EQ(select(Level::full, {}, std::string("bandwidth")),
            (std::vector<std::string>{"gpucts_bandwidth", "gpucts_bandwidth_nonblocking"}));
  Selection bad;
  bad.tests = "(";
  EXPECT_THROW(select_tests(suites(), bad), std::regex_error);
}

}  // namespace
}  // namespace cts::qualify
