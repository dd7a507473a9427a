// Processes and folders of a qualify run: the bundle folder claimed by one run only
// (cli/bundle_dir.hpp), every signal that would end qualify caught (cli/qualify_run.hpp), a child's
// whole process group gone before a run returns and children dying with their parent
// (fixtures/probe/spawn.hpp).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "cli/bundle_dir.hpp"
#include "cli/qualify_run.hpp"
#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/spawn.hpp"
#include "tests/process_wait.hpp"

namespace fs = std::filesystem;

namespace cts {
namespace {

fs::path scratch(const std::string& name) {
  static const std::string base = make_scratch_dir("processes");
  fs::path p = fs::path(base) / name;
  fs::remove_all(p);
  return p;
}

using test::gone_within;
using test::read_pid;

TEST(BundleDir, OneOfManyConcurrentRunsGetsANewFolder) {
  for (bool pre_existing : {false, true}) {
    const fs::path out = scratch(pre_existing ? "empty" : "new");
    if (pre_existing) fs::create_directories(out);
    std::atomic<int> won{0}, refused{0};
    std::vector<std::thread> runs;
    for (int i = 0; i < 8; ++i)
      runs.emplace_back([&] {
        try {
          claim_bundle_dir(out.string(), {"gtest", "journal"});
          ++won;
        } catch (const BundleDirError&) {
          ++refused;
        }
      });
    for (auto& t : runs) t.join();
    EXPECT_EQ(won.load(), 1) << out;
    EXPECT_EQ(refused.load(), 7) << out;
    EXPECT_TRUE(fs::is_directory(out / "gtest"));
    EXPECT_FALSE(fs::exists(out / kClaimFile));
    for (const auto& e : fs::directory_iterator(out.parent_path()))  // no temporary folder left
      EXPECT_EQ(e.path().filename().string().rfind(".gpucts-new-", 0), std::string::npos) << e.path();
  }
}

TEST(BundleDir, RefusesEmptyNameFilesAndFoldersInUse) {
  EXPECT_THROW(claim_bundle_dir("", {}), BundleDirError);
  const fs::path file = scratch("a-file");
  std::ofstream(file) << "x";
  EXPECT_THROW(claim_bundle_dir(file.string(), {}), BundleDirError);
  const fs::path used = scratch("used");
  fs::create_directories(used);
  std::ofstream(used / "junit.xml") << "<x/>";
  EXPECT_THROW(claim_bundle_dir(used.string(), {}), BundleDirError);
  const fs::path claimed = scratch("claimed");
  fs::create_directories(claimed);
  std::ofstream(claimed / kClaimFile) << "";
  try {
    claim_bundle_dir(claimed.string() + "/", {"logs"});
    ADD_FAILURE() << "a folder another run is claiming was taken";
  } catch (const BundleDirError& e) {
    EXPECT_NE(std::string(e.what()).find("another gpucts qualify"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(claimed / "logs"));
  const std::string got = claim_bundle_dir(scratch("fresh").string() + "/", {"logs"});
  EXPECT_TRUE(fs::is_directory(fs::path(got) / "logs")) << got;
}

// Each signal that would end qualify with no bundle only marks it interrupted.
TEST(QualifySignals, EveryEndingSignalIsCaught) {
  std::vector<std::pair<int, struct sigaction>> saved;
  for (int sig : qualify::kEndingSignals) {
    struct sigaction old {};
    sigaction(sig, nullptr, &old);
    saved.emplace_back(sig, old);
  }
  qualify::install_signal_handlers();
  for (int sig : {SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT, SIGTERM, SIGPIPE}) {
    qualify::g_signal.store(0);
    ::raise(sig);
    EXPECT_EQ(qualify::g_signal.load(), sig == SIGPIPE ? 0 : sig) << strsignal(sig);
  }
  EXPECT_EQ(qualify::signal_to_forward(SIGINT), SIGINT);
  EXPECT_EQ(qualify::signal_to_forward(SIGHUP), SIGTERM);
  EXPECT_EQ(qualify::signal_to_forward(SIGUSR1), SIGTERM);
  qualify::g_signal.store(0);
  for (auto& [sig, old] : saved) sigaction(sig, &old, nullptr);
  signal(SIGPIPE, SIG_DFL);
}

// A child of the suite that ignores SIGTERM and outlives its leader is gone when end_group
// returns: nothing writes into the bundle after the manifest.
TEST(ProcessGroup, EndGroupWaitsForEveryMember) {
  proc::adopt_orphans();  // as qualify: the orphaned member is reaped here, whatever init does
  const fs::path pidfile = scratch("member.pid");
  const std::string script =
      "trap '' TERM; (trap '' TERM; exec sleep 60) & echo $! > '" + pidfile.string() + "'; wait";
  std::string err;
  proc::Options o;
  o.out = proc::Output::Null;
  const pid_t leader = proc::start({"sh", "-c", script}, o, &err);
  ASSERT_GT(leader, 0) << err;
  const pid_t member = read_pid(pidfile, 10);
  ASSERT_GT(member, 0);
  const auto t0 = std::chrono::steady_clock::now();
  proc::GroupEnd g = proc::end_group(leader, SIGTERM, 0.5, false);
  EXPECT_TRUE(g.gone);
  ASSERT_TRUE(g.leader_status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*g.leader_status) && WTERMSIG(*g.leader_status) == SIGKILL);
  EXPECT_TRUE(gone_within(member, 0.1)) << "member " << member << " outlived end_group";
  EXPECT_EQ(::kill(-leader, 0), -1);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4);
}

TEST(ProcessGroup, RunLeavesNoMemberBehindAfterANormalExit) {
  proc::adopt_orphans();
  const fs::path pidfile = scratch("daemon.pid");
  proc::Options o;
  o.grace_s = 0.5;
  proc::Result r =
      proc::run({"sh", "-c", "sleep 60 > /dev/null 2>&1 & echo $! > '" + pidfile.string() + "'; exit 0"}, o);
  ASSERT_TRUE(r.ok()) << r.describe();
  const pid_t member = read_pid(pidfile, 1);
  ASSERT_GT(member, 0);
  EXPECT_TRUE(gone_within(member, 2)) << "the child's background sleep outlived proc::run";
}

TEST(ProcessGroup, MissingWorkingDirectoryIsAnError) {
  proc::Options o;
  o.working_dir = scratch("no-such-dir").string();
  proc::Result r = proc::run({"true"}, o);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("working directory"), std::string::npos) << r.error;
}

// Run by DiesWithItsParent in a process of its own: starts a sleeper, says its pid, waits.
TEST(ProcessGroup, DISABLED_StartsASleeperAndWaits) {
  const char* out = std::getenv("GPUCTS_SLEEPER_PID_FILE");
  ASSERT_NE(out, nullptr);
  proc::Options o;
  o.out = proc::Output::Null;
  std::string err;
  const pid_t pid = proc::start({"sleep", "60"}, o, &err);
  ASSERT_GT(pid, 0) << err;
  std::ofstream(std::string(out) + ".tmp") << pid << "\n";
  fs::rename(std::string(out) + ".tmp", out);
  std::this_thread::sleep_for(std::chrono::seconds(60));
}

// SIGKILL of the process that started a child (qualify) takes the child with it.
TEST(ProcessGroup, ChildrenDieWithTheirParent) {
  const fs::path pidfile = scratch("sleeper.pid");
  proc::Options o;
  o.set_env = {"GPUCTS_SLEEPER_PID_FILE=" + pidfile.string()};
  o.out = proc::Output::Null;
  std::string err;
  const pid_t parent = proc::start({self_exe(), "--gtest_also_run_disabled_tests",
                                    "--gtest_filter=ProcessGroup.DISABLED_StartsASleeperAndWaits"},
                                   o, &err);
  ASSERT_GT(parent, 0) << err;
  const pid_t sleeper = read_pid(pidfile, 30);
  ASSERT_GT(sleeper, 0) << "the helper never started its sleeper";
  ::kill(parent, SIGKILL);
  int st = 0;
  ::waitpid(parent, &st, 0);
  EXPECT_TRUE(gone_within(sleeper, 5)) << "sleep " << sleeper << " outlived its killed parent";
  ::kill(sleeper, SIGKILL);
}

}  // namespace
}  // namespace cts
