// Fault self-tests of the harness: each injects one
// fault into gpucts_fault_child run under mpiexec (or alone), with short deadlines, and asserts
// what the harness did: which rank is named as the first cause, that nothing outlived its
// deadline, and that the journals and the JUnit made from them are intact. Children are started
// with posix_spawn in their own process group (never fork after CUDA init); every wait is bounded.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "fixtures/probe/paths.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/simulated_hosts.hpp"
#include "results/journal_report.hpp"

extern char** environ;

namespace cts {
namespace {

using Clock = std::chrono::steady_clock;

// Short, ordered deadlines for the children: collective < watchdog < +grace < launcher < CTest.
const std::map<std::string, std::string> kDeadlines = {
    {"GPUCTS_COLLECTIVE_DEADLINE_S", "2"}, {"GPUCTS_WATCHDOG_S", "4"},
    {"GPUCTS_ABORT_GRACE_S", "1"},         {"GPUCTS_LAUNCHER_KILL_S", "15"},
    {"GPUCTS_CTEST_TIMEOUT_S", "30"},      {"GPUCTS_BOOTSTRAP_DEADLINE_S", "4"}};
constexpr double kLauncherKill = 15;  // nothing may outlive this

struct RunResult {
  bool exited = false;
  int code = -1;
  int sig = 0;
  double wall_s = 0;
  bool hit_deadline = false;  // we had to SIGKILL it
  bool group_left = false;    // members of its process group outlived it
  std::string output;
};

// The programs under test, found at run time: gpucts_fault_child and gpucts beside this binary
// (build tree or install tree), mpiexec where it was at configure time or else on PATH.
const std::string& fault_child() {
  static const std::string p = find_beside("gpucts_fault_child").value_or("");
  return p;
}
const std::string& cli() {
  static const std::string p = find_beside("gpucts").value_or("");
  return p;
}
const std::string& mpiexec_exe() {
  static const std::string p = find_program(GPUCTS_MPIEXEC).value_or("");
  return p;
}

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(fault_child().empty()) << "gpucts_fault_child not found beside " << self_exe();
    ASSERT_FALSE(cli().empty()) << "gpucts not found beside " << self_exe() << " (../cli or ../../bin)";
    if (mpiexec_exe().empty())
      GTEST_SKIP() << "no mpiexec: " << GPUCTS_MPIEXEC << " is not there and none is on PATH";
    const char* base = std::getenv("GPUCTS_LOG_DIR");
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name)
      if (c == '/') c = '_';
    // The log folder keeps the children's journals for a person; without one, a fresh scratch folder.
    static const std::string scratch = base && *base ? std::string(base) : make_scratch_dir("faults");
    dir_ = scratch + "/faults-" + name;
    ::mkdir(dir_.c_str(), 0755);
    // A rerun starts from an empty directory: journals append.
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir_, ec)) std::filesystem::remove(f.path(), ec);
    ASSERT_FALSE(ec) << dir_ << ": " << ec.message();
  }

  std::map<std::string, std::string> child_env(const std::map<std::string, std::string>& extra) const {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const char* drop : {"GPUCTS_EXPECT_RANKS", "GTEST_OUTPUT", "GPUCTS_FAULT", "GPUCTS_FAULT_SLOW_S"})
      env.erase(drop);
    env["GPUCTS_TEST_NAME"] = "child";
    env["GPUCTS_JOURNAL_DIR"] = dir_;
    env["GPUCTS_LOG_DIR"] = dir_;
    env["TEST_PREMATURE_EXIT_FILE"] = dir_ + "/child.premature";
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1";
    // On a machine with fewer GPUs than ranks the preflight skips rather than fails, so that the
    // injected fault, not the placement, is the first cause.
    env["GPUCTS_SKIP_IF_FEWER_GPUS"] = "1";
    for (const auto& [k, v] : kDeadlines) env[k] = v;
    for (const auto& [k, v] : extra) env[k] = v;
    return env;
  }

  // Spawns argv in a new process group; `tick` runs every 10 ms while it lives.
  RunResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                double deadline_s, const std::function<void(pid_t, double)>& tick = {}) {
    RunResult r;
    std::vector<std::string> envs;
    for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (auto& e : envs) cenv.push_back(e.data());
    cenv.push_back(nullptr);
    std::string out = dir_ + "/launcher.out";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&at, 0);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    pid_t pid = -1;
    auto t0 = Clock::now();
    int rc = posix_spawnp(&pid, cargv[0], &fa, &at, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
      ADD_FAILURE() << "posix_spawn " << argv[0] << ": " << std::strerror(rc);
      return r;
    }
    int status = 0;
    for (;;) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      double el = std::chrono::duration<double>(Clock::now() - t0).count();
      if (w == pid) break;
      if (el > deadline_s) {
        r.hit_deadline = true;
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      if (tick) tick(pid, el);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    r.exited = WIFEXITED(status);
    r.code = r.exited ? WEXITSTATUS(status) : -1;
    r.sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    // Anything of the group still alive (a stopped rank) is a leak; take it down either way.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    r.group_left = kill(-pid, 0) == 0;
    kill(-pid, SIGCONT);
    kill(-pid, SIGKILL);
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    r.output = ss.str();
    return r;
  }

  std::vector<std::string> mpiexec(int n) const {
    return {mpiexec_exe(), "-n", std::to_string(n), fault_child()};
  }

  TestRun journals() const {
    for (auto& run : read_journal_dir(dir_))
      if (run.test == "child") return run;
    ADD_FAILURE() << "no journal of the child in " << dir_;
    return {};
  }

  // The JUnit as the always-run step makes it: `gpucts journal-to-junit`.
  std::string junit() {
    std::string out = dir_ + "/child.junit";  // outside a **/*.xml glob: its failures are on purpose
    RunResult r = run({cli(), "journal-to-junit", "--journal-dir", dir_, "--output", out}, child_env({}), 30);
    // 1: written, but the journals are incomplete (a rank the launcher counted left none).
    EXPECT_TRUE(r.code == 0 || r.code == 1) << r.output;
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    last_cli_output_ = r.output;
    return ss.str();
  }
  std::string last_cli_output_;

  // True once every one of `ranks` journals has started `case_name`.
  bool all_started(const std::string& case_name, int ranks) const {
    int n = 0;
    for (const auto& r : journals_quiet())
      if (r.running && r.running->name == case_name) ++n;
    return n == ranks;
  }
  std::vector<RankJournal> journals_quiet() const {
    for (auto& run : read_journal_dir(dir_))
      if (run.test == "child") return run.ranks;
    return {};
  }

  std::string dir_;
};

const JournalCase* find_case(const RankJournal& r, const std::string& name) {
  for (const auto& c : r.cases)
    if (c.name == name) return &c;
  return nullptr;
}

std::string describe(const RunResult& r, const TestRun& t) {
  std::string s = "exit " + std::to_string(r.code) + " signal " + std::to_string(r.sig) + " after " +
                  std::to_string(r.wall_s) + " s; cause: " + first_cause(t).summary() +
                  "\nlauncher output:\n" + r.output.substr(0, 3000);
  return s;
}

// A minimal well-formedness check of the JUnit we write: balanced tags, one root.
bool well_formed(const std::string& xml) {
  std::vector<std::string> stack;
  size_t i = xml.find("<testsuites");
  if (i == std::string::npos) return false;
  while ((i = xml.find('<', i)) != std::string::npos) {
    size_t e = xml.find('>', i);
    if (e == std::string::npos) return false;
    std::string tag = xml.substr(i + 1, e - i - 1);
    i = e + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    bool closing = tag[0] == '/', selfclose = tag.back() == '/';
    std::string name = tag.substr(closing ? 1 : 0, tag.find_first_of(" /", 1) - (closing ? 1 : 0));
    if (closing) {
      if (stack.empty() || stack.back() != name) return false;
      stack.pop_back();
    } else if (!selfclose) {
      stack.push_back(name);
    }
  }
  return stack.empty();
}

// --- one rank goes, the rest must be named "peer lost" ----------------------------------

struct DeathCase {
  const char* name;
  const char* fault;
  int ranks;
  int culprit;
  const char* what;  // Cause::what expected
};

void PrintTo(const DeathCase& c, std::ostream* os) { *os << c.name; }

class RankDeath : public FaultTest, public ::testing::WithParamInterface<DeathCase> {};

TEST_P(RankDeath, NamesTheRankThatWentFirst) {
  const auto& p = GetParam();
  RunResult r = run(mpiexec(p.ranks),
                    child_env({{"GPUCTS_FAULT", std::string(p.fault) + ":" + std::to_string(p.culprit)}}),
                    kLauncherKill);
  TestRun t = journals();
  EXPECT_FALSE(r.hit_deadline) << "the run outlived the launcher-kill deadline: " << describe(r, t);
  EXPECT_FALSE(r.group_left) << "a rank outlived the launcher: " << describe(r, t);
  EXPECT_NE(r.exited && r.code == 0, true) << describe(r, t);
  ASSERT_EQ(static_cast<int>(t.ranks.size()), p.ranks) << describe(r, t);
  Cause c = first_cause(t);
  ASSERT_TRUE(c.found) << describe(r, t);
  EXPECT_EQ(c.rank, p.culprit) << describe(r, t);
  EXPECT_EQ(c.what, p.what) << describe(r, t);
  EXPECT_NE(c.summary().find("Faults.Inject"), std::string::npos) << c.summary();
  // Every other rank is a peer lost, and every rank kept its finished case.
  EXPECT_EQ(static_cast<int>(c.peers_lost.size()), p.ranks - 1) << c.summary();
  for (const auto& rj : t.ranks) {
    const JournalCase* before = find_case(rj, "Faults.Before");
    ASSERT_NE(before, nullptr) << "rank " << rj.rank << " lost its finished case";
    EXPECT_EQ(before->result, "passed");
  }
  std::string xml = junit();
  EXPECT_TRUE(well_formed(xml)) << xml;
  EXPECT_NE(xml.find("name=\"Before\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<error type="), std::string::npos) << xml;
  EXPECT_NE(xml.find("first cause: rank " + std::to_string(p.culprit)), std::string::npos) << xml;
  EXPECT_NE(last_cli_output_.find("child: first cause: rank " + std::to_string(p.culprit)), std::string::npos)
      << last_cli_output_;
}

INSTANTIATE_TEST_SUITE_P(Faults, RankDeath,
                         ::testing::Values(DeathCase{"exit_2ranks", "exit", 2, 1, "exit"},
                                           DeathCase{"exit_4ranks", "exit", 4, 2, "exit"},
                                           DeathCase{"segv_2ranks", "segv", 2, 1, "SIGSEGV"},
                                           DeathCase{"segv_4ranks_rank0", "segv", 4, 0, "SIGSEGV"},
                                           DeathCase{"sigstop_2ranks", "stop", 2, 1, "did not answer"},
                                           DeathCase{"sigstop_4ranks", "stop", 4, 3, "did not answer"}),
                         [](const ::testing::TestParamInfo<DeathCase>& i) {
                           return std::string(i.param.name);
                         });

// A GPU per rank, or with one GPU the two ranks as simulated hosts (each its own NCCL_HOSTID, NCCL's
// socket transport): the survivor is inside NCCL traffic either way.
TEST_F(FaultTest, NcclPeerCrashSurvivorsAbortTheirCommunicator) {
  const int gpus = visible_gpu_count();
  if (gpus < 1) GTEST_SKIP() << "needs a GPU, 0 visible: " << no_gpu_reason();
  const char* simulated = gpus < 2 ? "1" : "0";
  if (gpus < 2) std::printf("1 GPU: the 2 ranks run as %s\n", simulated_hosts_note(2).c_str());
  RunResult r = run(mpiexec(2),
                    child_env({{"GPUCTS_FAULT", "nccl_segv:1"},
                               {"GPUCTS_FAULT_SLOW_S", "0"},
                               {"GPUCTS_SIMULATED_HOSTS", simulated}}),
                    kLauncherKill);
  TestRun t = journals();
  EXPECT_FALSE(r.hit_deadline) << describe(r, t);
  EXPECT_FALSE(r.group_left) << describe(r, t);
  Cause c = first_cause(t);
  EXPECT_EQ(c.rank, 1) << describe(r, t);
  EXPECT_EQ(c.what, "SIGSEGV") << describe(r, t);
  EXPECT_EQ(c.case_name, "Faults.NcclPeerCrash") << describe(r, t);
  bool aborted = false;
  for (const auto& e : t.ranks.at(0).events) aborted |= e.event == "aborted";
  EXPECT_TRUE(aborted) << "rank 0 did not abort its communicator: " << describe(r, t);
}

TEST_F(FaultTest, RankNeverStartsEndsAtBootstrapDeadline) {
  // Open MPI's MPMD form: rank 1 is a program that never calls MPI_Init.
  std::vector<std::string> argv = {mpiexec_exe(), "-n", "1", fault_child(), ":", "-n", "1", "sleep", "60"};
  RunResult r = run(argv, child_env({}), kLauncherKill);
  TestRun t = journals();
  EXPECT_FALSE(r.hit_deadline) << describe(r, t);
  EXPECT_FALSE(r.group_left) << describe(r, t);
  EXPECT_LT(r.wall_s, 4 + 1 + 5) << "bootstrap deadline 4 s + grace 1 s + teardown";
  Cause c = first_cause(t);
  ASSERT_TRUE(c.found) << describe(r, t);
  EXPECT_EQ(c.rank, 1) << describe(r, t);
  EXPECT_EQ(c.what, "never started") << describe(r, t);
  bool bootstrap_line = false;
  for (const auto& e : t.ranks.at(0).events)
    bootstrap_line |= e.event == "watchdog" && e.reason.find("bootstrap") != std::string::npos;
  EXPECT_TRUE(bootstrap_line) << "rank 0 did not journal the bootstrap deadline";
  std::string xml = junit();
  EXPECT_TRUE(well_formed(xml)) << xml;
  EXPECT_NE(xml.find("never started"), std::string::npos) << xml;
}

// --- signals mid-run ------------------------------------------------------------------

struct SignalCase {
  const char* name;
  int sig;
  bool to_group;  // the whole process group (Ctrl-C in a terminal) or the launcher only (CTest)
  int ranks;      // 0: the child alone, no launcher
};

void PrintTo(const SignalCase& c, std::ostream* os) { *os << c.name; }

class Interrupt : public FaultTest, public ::testing::WithParamInterface<SignalCase> {};

TEST_P(Interrupt, JournalsTheInterruptedCaseAndExits) {
  const auto& p = GetParam();
  bool sent = false;
  double sent_at = 0;
  int want = p.ranks == 0 ? 1 : p.ranks;
  auto argv = p.ranks == 0 ? std::vector<std::string>{fault_child()} : mpiexec(p.ranks);
  // The signal, not the bootstrap, is under test: 4 ranks under ASan on a loaded 2-core machine
  // can take more than the 4 s the bootstrap cases use to get through MPI_Init.
  RunResult r = run(argv, child_env({{"GPUCTS_FAULT_SLOW_S", "20"}, {"GPUCTS_BOOTSTRAP_DEADLINE_S", "12"}}),
                    kLauncherKill, [&](pid_t pid, double el) {
                      if (!sent && all_started("Faults.Slow", want)) {
                        kill(p.to_group ? -pid : pid, p.sig);
                        sent = true;
                        sent_at = el;
                      }
                    });
  TestRun t = journals();
  ASSERT_TRUE(sent) << "the child never reached Faults.Slow: " << describe(r, t);
  EXPECT_FALSE(r.hit_deadline) << describe(r, t);
  EXPECT_FALSE(r.group_left) << describe(r, t);
  EXPECT_LT(r.wall_s - sent_at, 5.0) << "took too long to go down after the signal";
  if (p.ranks == 0) {
    EXPECT_TRUE(r.exited) << describe(r, t);
    EXPECT_EQ(r.code, 128 + p.sig) << describe(r, t);
  }
  const std::string sig = p.sig == SIGTERM ? "SIGTERM" : "SIGINT";
  int interrupted = 0;
  for (const auto& rj : t.ranks) {
    ASSERT_NE(find_case(rj, "Faults.Before"), nullptr);
    ASSERT_TRUE(rj.running.has_value()) << "rank " << rj.rank << " has no interrupted case";
    EXPECT_EQ(rj.running->name, "Faults.Slow");
    for (const auto& e : rj.events)
      if (e.event == "interrupted") {
        ++interrupted;
        // Open MPI's mpiexec turns what it receives into SIGTERM for its ranks.
        if (p.ranks == 0)
          EXPECT_EQ(e.signal, sig);
        else
          EXPECT_TRUE(e.signal == sig || e.signal == "SIGTERM") << e.signal;
        EXPECT_EQ(e.case_name, "Faults.Slow");
      }
  }
  // The launcher may deliver its own SIGTERM rather than forward ours: every rank journals one.
  EXPECT_EQ(interrupted, want) << describe(r, t);
  std::string xml = junit();
  EXPECT_TRUE(well_formed(xml)) << xml;
  EXPECT_NE(xml.find("message=\"interrupted by SIG"), std::string::npos) << xml;
  EXPECT_NE(xml.find("was running Faults.Slow"), std::string::npos) << xml;
}

INSTANTIATE_TEST_SUITE_P(Faults, Interrupt,
                         ::testing::Values(SignalCase{"sigterm_alone", SIGTERM, false, 0},
                                           SignalCase{"sigint_alone", SIGINT, false, 0},
                                           SignalCase{"sigterm_launcher_2ranks", SIGTERM, false, 2},
                                           SignalCase{"sigint_group_2ranks", SIGINT, true, 2},
                                           SignalCase{"sigterm_group_4ranks", SIGTERM, true, 4}),
                         [](const ::testing::TestParamInfo<SignalCase>& i) {
                           return std::string(i.param.name);
                         });

// --- the watchdog and the argument check -------------------------------------------------

TEST_F(FaultTest, WatchdogEndsACaseThatSpins) {
  RunResult r = run({fault_child()}, child_env({{"GPUCTS_FAULT", "spin:0"}}), kLauncherKill);
  TestRun t = journals();
  EXPECT_TRUE(r.exited) << describe(r, t);
  EXPECT_EQ(r.code, 124) << describe(r, t);
  EXPECT_LT(r.wall_s, 4 + 1 + 2) << "watchdog 4 s + grace 1 s";
  Cause c = first_cause(t);
  EXPECT_EQ(c.what, "watchdog") << c.summary();
  EXPECT_EQ(c.case_name, "Faults.Inject") << c.summary();
  std::string xml = junit();
  EXPECT_NE(xml.find("timeout: case Faults.Inject"), std::string::npos) << xml;
}

TEST_F(FaultTest, ArgumentMismatchFailsEveryRankAtOnce) {
  RunResult r = run(mpiexec(2), child_env({{"GPUCTS_FAULT", "argmismatch:1"}}), kLauncherKill);
  TestRun t = journals();
  EXPECT_TRUE(r.exited) << describe(r, t);
  EXPECT_EQ(r.code, 1) << describe(r, t);
  EXPECT_LT(r.wall_s, 2.0 * 2) << "a mismatch must fail at once, not at a deadline";
  ASSERT_EQ(t.ranks.size(), 2u);
  for (const auto& rj : t.ranks) {
    const JournalCase* c = find_case(rj, "Faults.Inject");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->result, "failed");
    EXPECT_NE(c->message.find("rank 0 AllReduce(count=4096"), std::string::npos) << c->message;
    EXPECT_NE(c->message.find("rank 1 AllReduce(count=8192"), std::string::npos) << c->message;
    const JournalCase* after = find_case(rj, "Faults.After");
    ASSERT_NE(after, nullptr) << "the run must go on after a mismatch";
    EXPECT_EQ(after->result, "passed");
  }
}

TEST_F(FaultTest, RanksOutOfStepAreStoppedTogether) {
  RunResult r = run(mpiexec(2), child_env({{"GPUCTS_FAULT", "diverge:1"}}), kLauncherKill);
  TestRun t = journals();
  EXPECT_FALSE(r.hit_deadline) << describe(r, t);
  EXPECT_LT(r.wall_s, 2.0 + 1 + 4) << "must stop at once, not at a deadline: " << describe(r, t);
  int diverged = 0;
  for (const auto& rj : t.ranks)
    for (const auto& e : rj.events)
      if (e.event == "diverged") {
        ++diverged;
        EXPECT_NE(e.reason.find("rank 0 is in the verdict of Faults.Inject"), std::string::npos) << e.reason;
        EXPECT_NE(e.reason.find("rank 1 is in the argument check of Broadcast"), std::string::npos)
            << e.reason;
      }
  EXPECT_GE(diverged, 1) << describe(r, t);
  Cause c = first_cause(t);
  EXPECT_EQ(c.what, "diverged") << c.summary();
}

TEST_F(FaultTest, PreflightCatchesOneRankWithAnotherNccl) {
  if (!GPUCTS_HAVE_CUDA)
    GTEST_SKIP() << "built without NCCL (the asan build): rank 0 has no NCCL runtime to differ from";
  // One rank told (test mode only) that its libnccl is 2.27.3, through Open MPI's ':' form.
  std::vector<std::string> argv = {
      mpiexec_exe(), "-n", "1", fault_child(), ":", "-n", "1", "-x", "GPUCTS_FAKE_NCCL_RUNTIME=2.27.3",
      fault_child()};
  RunResult r = run(argv, child_env({{"GPUCTS_TEST_MODE", "1"}}), kLauncherKill);
  TestRun t = journals();
  EXPECT_TRUE(r.exited) << describe(r, t);
  EXPECT_EQ(r.code, 1) << describe(r, t);
  ASSERT_EQ(t.ranks.size(), 2u) << describe(r, t);
  std::string first_message;
  for (const auto& rj : t.ranks) {
    const JournalCase* pf = find_case(rj, "Preflight.RanksConsistent");
    ASSERT_NE(pf, nullptr) << describe(r, t);
    EXPECT_EQ(pf->result, "failed");
    // The matrix's cross-host rule labels inputs "<host> rank <r>".
    EXPECT_NE(pf->message.find("2.27.3 on " + rj.host + " rank 1"), std::string::npos) << pf->message;
    if (first_message.empty()) first_message = pf->message;
    EXPECT_EQ(pf->message, first_message) << "every rank must fail with the same message";
    const JournalCase* nccl = find_case(rj, "Faults.NcclCase");
    ASSERT_NE(nccl, nullptr);
    EXPECT_EQ(nccl->result, "skipped");
    EXPECT_NE(nccl->message.find("preflight"), std::string::npos) << nccl->message;
  }
}

TEST_F(FaultTest, FakesAreIgnoredOutsideTestMode) {
  RunResult r = run(mpiexec(2), child_env({{"GPUCTS_FAKE_NCCL_RUNTIME", "2.27.3"}}), kLauncherKill);
  TestRun t = journals();
  EXPECT_TRUE(r.exited) << describe(r, t);
  EXPECT_EQ(r.code, 0) << describe(r, t);
  EXPECT_NE(r.output.find("ignored"), std::string::npos) << r.output;
}

// --- gpucts check under mpirun: one report from rank 0, one status everywhere --------------
// The cases below are about ranks, not torch: --no-python spares them a python start per rank
// (seconds on a loaded machine), except where a slow probe is the subject.

std::string hostname() {
  char h[256] = {};
  gethostname(h, sizeof h - 1);
  return h;
}

int count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t i = hay.find(needle); i != std::string::npos; i = hay.find(needle, i + 1)) ++n;
  return n;
}

TEST_F(FaultTest, CheckUnderMpiNamesTheRankWithAnotherNccl) {
  if (!GPUCTS_HAVE_CUDA)
    GTEST_SKIP() << "built without NCCL (the asan build): rank 0 has no NCCL runtime to differ from";
  std::vector<std::string> argv = {mpiexec_exe(),
                                   "-n",
                                   "1",
                                   cli(),
                                   "check",
                                   "--no-python",
                                   ":",
                                   "-n",
                                   "1",
                                   "-x",
                                   "GPUCTS_FAKE_NCCL_RUNTIME=2.27.3",
                                   cli(),
                                   "check",
                                   "--no-python"};
  RunResult r = run(argv, child_env({{"GPUCTS_TEST_MODE", "1"}}), kLauncherKill);
  EXPECT_TRUE(r.exited) << r.output;
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_EQ(count(r.output, "gpucts check: 2 fingerprints"), 1) << "rank 0 alone prints the report:\n"
                                                                << r.output;
  EXPECT_NE(r.output.find("cross-host-mismatch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2.27.3 on " + hostname() + " rank 1"), std::string::npos) << r.output;
}

TEST_F(FaultTest, CheckUnderMpiGivesEveryRankOneStatus) {
  // Four (fake) GPUs, so that four ranks on a machine with fewer do not add placement findings.
  auto env =
      child_env({{"GPUCTS_TEST_MODE", "1"},
                 {"GPUCTS_FAKE_GPUS",
                  "GPU-00000000-0000-0000-0000-000000000001,GPU-00000000-0000-0000-0000-000000000002,"
                  "GPU-00000000-0000-0000-0000-000000000003,GPU-00000000-0000-0000-0000-000000000004"}});
  RunResult alone = run({cli(), "check", "--json", "--no-python"}, env, 60);
  ASSERT_TRUE(alone.exited) << alone.output;
  RunResult four =
      run({mpiexec_exe(), "-n", "4", cli(), "check", "--json", "--no-python"}, env, kLauncherKill);
  EXPECT_TRUE(four.exited) << four.output;
  // Same machine, same stack: the gathered verdict equals the single-process one.
  EXPECT_EQ(four.code, alone.code) << four.output;
  EXPECT_EQ(count(four.output, "\"verdict\""), 1) << four.output;
}

TEST_F(FaultTest, CheckUnderMpiCatchesTwoRanksOnOneGpu) {
  // Test mode: both ranks are shown the same single GPU.
  RunResult r = run({mpiexec_exe(), "-n", "2", cli(), "check", "--no-python"},
                    child_env({{"GPUCTS_TEST_MODE", "1"},
                               {"GPUCTS_FAKE_GPUS", "GPU-00000000-0000-0000-0000-0000000000bb"}}),
                    kLauncherKill);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("gpu-shared-by-ranks"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ranks 0,1 on " + hostname()), std::string::npos) << r.output;
}

// The same two ranks on one GPU as simulated hosts: each its own NCCL_HOSTID, so NCCL (and the
// check) take them for two hosts; the report says what the mode is.
TEST_F(FaultTest, CheckUnderMpiTakesSimulatedHostsForTwoHosts) {
  RunResult r = run({mpiexec_exe(), "-n", "2", cli(), "check", "--no-python"},
                    child_env({{"GPUCTS_TEST_MODE", "1"},
                               {"GPUCTS_SIMULATED_HOSTS", "1"},
                               {"GPUCTS_FAKE_GPUS", "GPU-00000000-0000-0000-0000-0000000000bb"}}),
                    kLauncherKill);
  EXPECT_EQ(r.output.find("gpu-shared-by-ranks"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("ranks-exceed-gpus"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 simulated hosts on one GPU"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NCCL_HOSTID=" + hostname() + "-simhost1 on rank 1"), std::string::npos)
      << r.output;
}

// A python for the probe that is slow on one rank ($SLOW_RANK sleeps $SLOW_S seconds), as python
// importing torch is on a loaded machine, and answers an empty probe. Sleeps of a second each: none
// outlives the rank by more than that.
std::string slow_python(const std::string& dir) {
  const std::string path = dir + "/slow-python";
  std::ofstream(path)
      << "#!/bin/sh\n"
         "i=0\n"
         "while [ \"$OMPI_COMM_WORLD_RANK\" = \"$SLOW_RANK\" ] && [ $i -lt \"$SLOW_S\" ]; do\n"
         "  sleep 1; i=$((i + 1))\n"
         "done\n"
         "echo '{}'\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

// A rank still probing when the others have finished is waited for (its probe has the watchdog's
// budget), not named as a rank that did not answer: the exchange's collective deadline (3 s here)
// starts once the probes may be over.
TEST_F(FaultTest, CheckUnderMpiWaitsForARankStillProbing) {
  auto env = child_env(
      {{"GPUCTS_TEST_MODE", "1"}, {"GPUCTS_WATCHDOG_S", "10"}, {"SLOW_RANK", "1"}, {"SLOW_S", "4"}});
  RunResult r =
      run({mpiexec_exe(), "-n", "2", cli(), "check", "--python", slow_python(dir_)}, env, kLauncherKill);
  EXPECT_TRUE(r.exited) << r.output;
  EXPECT_EQ(r.output.find("did not answer"), std::string::npos) << r.output;
  EXPECT_EQ(count(r.output, "gpucts check: 2 fingerprints"), 1) << r.output;
}

// A rank whose probe never ends is ended by its own watchdog, which names the probe; no wait is
// longer than the budget of the probe and the exchange.
TEST_F(FaultTest, CheckUnderMpiEndsARankWhoseProbeHangs) {
  auto env = child_env({{"GPUCTS_TEST_MODE", "1"}, {"SLOW_RANK", "1"}, {"SLOW_S", "60"}});
  RunResult r =
      run({mpiexec_exe(), "-n", "2", cli(), "check", "--python", slow_python(dir_)}, env, kLauncherKill);
  EXPECT_TRUE(r.exited) << r.output;
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("probe: this rank's fingerprint (GPUCTS_WATCHDOG_S=4) ran past its deadline"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace cts
