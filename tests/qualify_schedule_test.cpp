// `gpucts qualify --jobs N` (cli/qualify_schedule.hpp): at most N suites at once, an entry that must
// run alone has nothing beside it, starts follow the list, every entry runs once, errors come back.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cli/qualify_schedule.hpp"
#include "fixtures/probe/spawn.hpp"

namespace cts::qualify {
namespace {

struct Watch {
  std::mutex mu;
  int running = 0, most = 0;
  std::vector<std::size_t> starts;
  std::vector<int> beside;  // how many others ran while entry i started or ran
  explicit Watch(std::size_t n) : beside(n, 0) {}
  void enter(std::size_t i) {
    std::lock_guard<std::mutex> lock(mu);
    beside[i] = std::max(beside[i], running);
    ++running;
    most = std::max(most, running);
    starts.push_back(i);
  }
  void leave(std::size_t i) {
    std::lock_guard<std::mutex> lock(mu);
    --running;
    beside[i] = std::max(beside[i], running);
  }
};

void work(Watch& w, std::size_t i, int ms) {
  w.enter(i);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  w.leave(i);
}

TEST(QualifySchedule, NeverMoreThanJobsAtOnceAndStartsInOrder) {
  Watch w(9);
  run_side_by_side(
      9, 3, [](std::size_t) { return false; }, [&](std::size_t i) { work(w, i, 40); });
  EXPECT_EQ(w.most, 3);  // three at a time, never four
  ASSERT_EQ(w.starts.size(), 9u);
  // Entry i is handed out only once every entry before i - 2 has ended: neighbours may begin in
  // either order, but none runs ahead of its place by more than the jobs beside it.
  std::vector<std::size_t> place(9);
  for (std::size_t p = 0; p < 9; ++p) place[w.starts[p]] = p;
  for (std::size_t i = 0; i < 9; ++i) EXPECT_GE(place[i] + 2, i) << "entry " << i << " began at " << place[i];
  std::vector<std::size_t> sorted = w.starts;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < 9; ++i) EXPECT_EQ(sorted[i], i);  // each once
}

TEST(QualifySchedule, AnEntryThatRunsAloneHasNothingBesideIt) {
  Watch w(7);
  auto alone = [](std::size_t i) { return i == 2 || i == 5; };
  // Long neighbours: an alone entry that did not wait for them would overlap them.
  run_side_by_side(7, 4, alone, [&](std::size_t i) { work(w, i, alone(i) ? 10 : 60); });
  EXPECT_EQ(w.beside[2], 0);
  EXPECT_EQ(w.beside[5], 0);
  EXPECT_GE(w.most, 2);  // the others still ran side by side
  EXPECT_EQ(w.starts.size(), 7u);
}

TEST(QualifySchedule, OneJobIsOneAtATime) {
  Watch w(5);
  run_side_by_side(
      5, 1, [](std::size_t) { return false; }, [&](std::size_t i) { work(w, i, 5); });
  EXPECT_EQ(w.most, 1);
  run_side_by_side(
      0, 4, [](std::size_t) { return false; }, [&](std::size_t) { FAIL() << "nothing to run"; });
}

TEST(QualifySchedule, AnErrorComesBackAfterEveryEntryRan) {
  std::atomic<int> ran{0};
  EXPECT_THROW(run_side_by_side(
                   6, 3, [](std::size_t) { return false; },
                   [&](std::size_t i) {
                     ++ran;
                     if (i == 1) throw std::runtime_error("suite 1 broke");
                   }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 6);
}

// Through `gpucts qualify --tests-json`: two entries that each wait for the other pass only side by
// side, and a perf entry between them finds nothing else running.
namespace fs = std::filesystem;

std::string gpucts_beside() {
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  const fs::path g = exe.parent_path().parent_path() / "cli" / "gpucts";
  return fs::exists(g) ? g.string() : "";
}

// Marks itself running, waits up to 10 s for `other` to start, then unmarks itself.
std::string meet(const std::string& me, const std::string& other) {
  return "touch running." + me + " started." + me + "; i=0; while [ ! -e started." + other +
         " ]; do sleep 0.1; i=$((i+1)); [ $i -gt 100 ] && { rm -f running." + me + "; echo never met " +
         other + "; exit 1; }; done; sleep 0.3; rm -f running." + me;
}

std::string entry_json(const std::string& name, const std::string& script, const std::string& dir,
                       const std::string& label) {
  return R"({"name":")" + name + R"(","command":["/bin/sh","-c",")" + script +
         R"("],"properties":[{"name":"WORKING_DIRECTORY","value":")" + dir +
         R"("},{"name":"LABELS","value":[")" + label + R"("]},{"name":"TIMEOUT","value":60}]})";
}

TEST(QualifyJobs, SuitesMeetSideBySideAndAPerfSuiteRunsAlone) {
  const std::string gpucts = gpucts_beside();
  if (gpucts.empty()) GTEST_SKIP() << "gpucts is not built beside this test (cli/gpucts)";
  char tmpl[] = "/tmp/gpucts_jobs_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const std::string alone =
      "sleep 0.5; if ls running.* >/dev/null 2>&1; then echo not alone: $(ls running.*); exit 1; fi";
  const std::string list = R"({"kind":"ctestInfo","version":{"major":1,"minor":0},"tests":[)" +
                           entry_json("meet_a", meet("a", "b"), dir.string(), "cpu") + "," +
                           entry_json("meet_b", meet("b", "a"), dir.string(), "cpu") + "," +
                           entry_json("timing", alone, dir.string(), "perf") + "," +
                           entry_json("meet_c", meet("c", "d"), dir.string(), "cpu") + "," +
                           entry_json("meet_d", meet("d", "c"), dir.string(), "cpu") + "]}";
  std::ofstream(dir / "tests.json") << list;
  auto qualify = [&](const std::string& jobs, const std::string& out) {
    for (const char* m : {"a", "b", "c", "d"}) fs::remove(dir / (std::string("started.") + m));
    proc::Options o;
    o.out = o.err = proc::Output::Capture;
    return proc::run({gpucts, "qualify", "--no-python", "--label", "cpu|perf", "--jobs", jobs, "--tests-json",
                      (dir / "tests.json").string(), "--output", (dir / out).string()},
                     o);
  };
  const auto side = qualify("2", "side");
  EXPECT_EQ(side.exit_code, 0) << side.output;
  const auto one = qualify("1", "one");
  EXPECT_EQ(one.exit_code, 1) << one.output;  // one at a time, the first never meets the second
  EXPECT_NE(one.output.find("meet_a: failed"), std::string::npos) << one.output;
  // The bundle lists the suites in the list's order whatever order they ended in.
  std::ifstream manifest(dir / "side" / "manifest.json");
  const std::string text((std::istreambuf_iterator<char>(manifest)), std::istreambuf_iterator<char>());
  const auto a = text.find("\"meet_a\""), b = text.find("\"meet_b\""), t = text.find("\"timing\""),
             d = text.find("\"meet_d\"");
  ASSERT_NE(d, std::string::npos) << text.substr(0, 400);
  EXPECT_TRUE(a < b && b < t && t < d);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cts::qualify
