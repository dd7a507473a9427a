// The reliability machinery without processes: deadline order and parsing, journals read back
// (torn lines, reruns), the first cause across ranks, JUnit from journals, the preflight
// comparison over synthetic fingerprints, and collective-argument comparison.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include <map>
#include <string>
#include <vector>

#include "fixtures/probe/scoped_env.hpp"
#include "fixtures/probe/simulated_hosts.hpp"
#include "fixtures/reliability/collective_args.hpp"
#include "fixtures/reliability/deadlines.hpp"
#include "fixtures/reliability/preflight.hpp"
#include "results/journal_report.hpp"
#include "tests/cpu_seconds.hpp"

namespace cts {
namespace {

// --- deadlines ---------------------------------------------------------------------------

using Vars = std::vector<std::pair<const char*, const char*>>;

const std::vector<std::pair<const char*, const char*>> kNoDeadlineEnv = {
    {"GPUCTS_COLLECTIVE_DEADLINE_S", nullptr}, {"GPUCTS_WATCHDOG_S", nullptr},
    {"GPUCTS_ABORT_GRACE_S", nullptr},         {"GPUCTS_LAUNCHER_KILL_S", nullptr},
    {"GPUCTS_CTEST_TIMEOUT_S", nullptr},       {"GPUCTS_BOOTSTRAP_DEADLINE_S", nullptr}};

// The one environment guard: restores a set, an unset and a twice-set variable.
TEST(ScopedEnvGuard, RestoresWhatWasThere) {
  setenv("GPUCTS_SCOPED_A", "old", 1);
  unsetenv("GPUCTS_SCOPED_B");
  {
    ScopedEnv g(Vars{{"GPUCTS_SCOPED_A", nullptr}, {"GPUCTS_SCOPED_B", "1"}, {"GPUCTS_SCOPED_B", "2"}});
    EXPECT_EQ(std::getenv("GPUCTS_SCOPED_A"), nullptr);
    EXPECT_STREQ(std::getenv("GPUCTS_SCOPED_B"), "2");
    ScopedEnv m(std::map<std::string, std::string>{{"GPUCTS_SCOPED_A", "map"}});
    EXPECT_STREQ(std::getenv("GPUCTS_SCOPED_A"), "map");
  }
  EXPECT_STREQ(std::getenv("GPUCTS_SCOPED_A"), "old");
  EXPECT_EQ(std::getenv("GPUCTS_SCOPED_B"), nullptr);
  unsetenv("GPUCTS_SCOPED_A");
}

TEST(Deadlines, DefaultsAreOrdered) {
  ScopedEnv g(kNoDeadlineEnv);
  Deadlines d = Deadlines::from_env();
  EXPECT_EQ(d.order_error(), "");
  EXPECT_LT(d.collective_s, d.watchdog_s);
  EXPECT_LT(d.watchdog_s + d.abort_grace_s, d.launcher_kill_s);
  EXPECT_LT(d.launcher_kill_s, d.ctest_timeout_s);
}

TEST(Deadlines, ScaleDownWithAShortCtestTimeout) {
  ScopedEnv g(kNoDeadlineEnv);
  ScopedEnv t(Vars{{"GPUCTS_CTEST_TIMEOUT_S", "60"}});
  Deadlines d = Deadlines::from_env();
  EXPECT_EQ(d.order_error(), "");
  EXPECT_DOUBLE_EQ(d.ctest_timeout_s, 60);
  EXPECT_LT(d.launcher_kill_s, 60);
}

TEST(Deadlines, OutOfOrderIsRefusedNamingBoth) {
  ScopedEnv g(kNoDeadlineEnv);
  ScopedEnv t(Vars{{"GPUCTS_COLLECTIVE_DEADLINE_S", "200"}});
  try {
    Deadlines::from_env();
    FAIL() << "accepted a collective deadline above the watchdog";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("GPUCTS_WATCHDOG_S=120 must exceed GPUCTS_COLLECTIVE_DEADLINE_S=200"),
        std::string::npos)
        << e.what();
  }
}

TEST(Deadlines, GarbageValuesAreRefused) {
  for (const char* bad : {"", "abc", "12abc", "-5", "0", "inf", "nan"}) {
    EXPECT_THROW(parse_seconds(bad, "GPUCTS_WATCHDOG_S"), std::invalid_argument) << "'" << bad << "'";
  }
  EXPECT_DOUBLE_EQ(parse_seconds("2.5", "x"), 2.5);
}

TEST(Deadlines, PropertiesNameEveryLayer) {
  Deadlines d;
  auto p = d.properties();
  ASSERT_EQ(p.size(), 6u);
  EXPECT_EQ(p[0].first, "gpucts.deadline.collective_s");
  EXPECT_NE(d.summary().find("watchdog=120s"), std::string::npos) << d.summary();
}

// --- journals -----------------------------------------------------------------------------

std::string line(const std::string& json) { return json + "\n"; }

RankJournal rank_journal(int rank, const std::string& host, const std::string& body) {
  return parse_journal(
      "r" + std::to_string(rank), rank,
      line(R"({"event":"rank_info","host":")" + host + R"(","world_size":2,"time_ms":900})") +
          line(R"({"event":"program_start","cases":3,"time_ms":1000})") + body);
}

const std::string kBeforePassed =
    line(R"({"event":"start","case":"S.Before","time_ms":1001})") +
    line(R"({"event":"end","case":"S.Before","result":"passed","message":"","time_ms":1002})");

TEST(Journal, FinishedAndRunningCases) {
  auto r = rank_journal(0, "a", kBeforePassed + line(R"({"event":"start","case":"S.Mid","time_ms":1003})"));
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].result, "passed");
  ASSERT_TRUE(r.running);
  EXPECT_EQ(r.running->name, "S.Mid");
  EXPECT_FALSE(r.program_ended);
  EXPECT_EQ(r.host, "a");
  EXPECT_NE(r.abnormal_end().find("killed: the journal stops during S.Mid"), std::string::npos)
      << r.abnormal_end();
}

TEST(Journal, TornLineIsCountedNotFatal) {
  auto r = rank_journal(0, "a", kBeforePassed + "{\"event\":\"start\",\"ca");
  EXPECT_EQ(r.bad_lines, 1);
  EXPECT_EQ(r.cases.size(), 1u);
}

TEST(Journal, OnlyTheLastRunCounts) {
  std::string first = line(R"({"event":"program_start","cases":1,"time_ms":1})") +
                      line(R"({"event":"start","case":"Old.Case","time_ms":2})");
  auto r = parse_journal("p", 0,
                         first + line(R"({"event":"program_start","cases":3,"time_ms":1000})") +
                             kBeforePassed + line(R"({"event":"program_end","time_ms":1005})"));
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_FALSE(r.running);
  EXPECT_TRUE(r.program_ended);
  EXPECT_EQ(r.abnormal_end(), "");
}

TestRun two_ranks(const std::string& r0, const std::string& r1) {
  TestRun t;
  t.test = "gpucts_x";
  t.ranks.push_back(rank_journal(0, "node-a", r0));
  t.ranks.push_back(rank_journal(1, "node-b", r1));
  return t;
}

TEST(FirstCause, EarliestCrashBeatsLouderPeerErrors) {
  // Rank 1 segfaults at t=1010; rank 0 sees the loss later and fails loudly.
  auto t = two_ranks(
      kBeforePassed + line(R"({"event":"start","case":"S.Mid","time_ms":1003})") +
          line(
              R"({"event":"end","case":"S.Mid","result":"failed","message":"ncclRemoteError: Connection reset by peer","time_ms":1020})") +
          line(R"({"event":"program_end","time_ms":1030})"),
      kBeforePassed + line(R"({"event":"start","case":"S.Mid","time_ms":1003})") +
          line(R"({"event":"fault","kind":"signal","signal":"SIGSEGV","case":"S.Mid","time_ms":1010})"));
  Cause c = first_cause(t);
  ASSERT_TRUE(c.found);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.host, "node-b");
  EXPECT_EQ(c.what, "SIGSEGV");
  EXPECT_EQ(c.case_name, "S.Mid");
  EXPECT_EQ(c.peers_lost, std::vector<int>{0});  // ended normally, but failed after the cause: a consequence
  EXPECT_NE(c.summary().find("rank 1 (node-b): SIGSEGV during S.Mid at "), std::string::npos) << c.summary();
}

TEST(FirstCause, BlamedRankOfAPeerLostLine) {
  auto t = two_ranks(
      kBeforePassed + line(R"({"event":"start","case":"S.Mid","time_ms":1003})") +
          line(
              R"({"event":"peer_lost","reason":"rank 1 did not answer","blamed":[1],"case":"S.Mid","time_ms":1500})"),
      kBeforePassed + line(R"({"event":"start","case":"S.Mid","time_ms":1003})"));
  Cause c = first_cause(t);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.what, "did not answer");
  EXPECT_EQ(c.peers_lost, std::vector<int>{0});
  EXPECT_NE(c.detail.find("its journal stops in S.Mid"), std::string::npos) << c.detail;
}

TEST(FirstCause, MissingJournalIsNeverStarted) {
  TestRun t;
  t.test = "gpucts_x";
  t.ranks.push_back(rank_journal(
      0, "node-a",
      line(R"({"event":"watchdog","reason":"bootstrap: MPI_Init ran past its deadline","time_ms":5000})")));
  Cause c = first_cause(t);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.what, "never started");
}

TEST(FirstCause, InterruptedOnlyIsTheSignal) {
  std::string mid = kBeforePassed + line(R"({"event":"start","case":"S.Mid","time_ms":1003})");
  auto t = two_ranks(
      mid +
          line(
              R"({"event":"interrupted","signal":"SIGTERM","reason":"interrupted by SIGTERM during S.Mid","case":"S.Mid","time_ms":1100})"),
      mid +
          line(
              R"({"event":"interrupted","signal":"SIGTERM","reason":"interrupted by SIGTERM during S.Mid","case":"S.Mid","time_ms":1101})"));
  Cause c = first_cause(t);
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.what, "SIGTERM");
}

TEST(Junit, InterruptedCaseIsAnErrorNamingWhatRan) {
  std::string mid = kBeforePassed + line(R"({"event":"start","case":"S.Mid","time_ms":1003})");
  auto t = two_ranks(
      mid +
          line(
              R"({"event":"interrupted","signal":"SIGTERM","reason":"interrupted by SIGTERM during S.Mid","case":"S.Mid","time_ms":1100})"),
      mid + line(R"({"event":"fault","kind":"signal","signal":"SIGSEGV","case":"S.Mid","time_ms":1050})"));
  std::string x = journals_to_junit({t});
  EXPECT_NE(
      x.find(R"(<testsuites name="gpucts journals" tests="2" failures="0" errors="1" time="0.001000">)"),
      std::string::npos)
      << x;
  EXPECT_NE(x.find(R"(<testcase classname="gpucts_x.S" name="Before" time="0.001000">)"), std::string::npos)
      << x;
  EXPECT_NE(
      x.find(
          R"(<error type="crash" message="interrupted by SIGTERM (rank 0 (node-a) was running S.Mid); first cause: rank 1 (node-b): SIGSEGV)"),
      std::string::npos)
      << x;
  EXPECT_NE(x.find("gpucts.rank1.end=killed by SIGSEGV"), std::string::npos) << x;
  EXPECT_EQ(x.find(" skipped=\"0\">\n  <testsuite"), std::string::npos) << "no testsuites@skipped: " << x;
}

// A rank the launcher counted that left no journal, a result the reader does not know, a case end
// without a string name: each an error case and a problem, never a quiet pass.
TEST(Junit, IncompleteJournalsAreErrorsAndProblems) {
  auto t = two_ranks(
      kBeforePassed + line(R"({"event":"end","case":"S.Odd","result":"maybe","message":"","time_ms":1003})") +
          line(R"({"event":"end","case":7,"result":"passed","time_ms":1004})") +
          line(R"({"event":"program_end","time_ms":1005})"),
      kBeforePassed + line(R"({"event":"program_end","time_ms":1005})"));
  t.ranks[0].world_size = 3;  // the launcher started three ranks; rank 2 wrote nothing
  const JournalJunit j = journals_to_cases({t});
  std::map<std::string, junit::Case> by_name;
  for (const auto& c : j.cases) by_name[c.name] = c;
  ASSERT_TRUE(by_name.count("Odd"));
  EXPECT_EQ(by_name["Odd"].status, junit::Status::error);
  EXPECT_NE(by_name["Odd"].message.find("unknown result 'maybe'"), std::string::npos);
  ASSERT_TRUE(by_name.count("rank2_journal"));
  EXPECT_EQ(by_name["rank2_journal"].status, junit::Status::error);
  ASSERT_TRUE(by_name.count("journal")) << "the nameless case end";
  EXPECT_NE(by_name["journal"].message.find("line 6: a case end without a case name"), std::string::npos)
      << by_name["journal"].message;
  EXPECT_EQ(j.problems.size(), 3u);
  EXPECT_FALSE(journals_to_cases({}).problems.empty()) << "no journal at all is not a green run";
  // A case start whose name is no string: a problem, and the case it was stays open as an error.
  auto nameless = two_ranks(kBeforePassed + line(R"({"event":"start","case":5,"time_ms":1003})"),
                            kBeforePassed + line(R"({"event":"program_end","time_ms":1005})"));
  const JournalJunit n = journals_to_cases({nameless});
  bool named = false;
  for (const auto& c : n.cases)
    named |= c.name == "(a case without a name, line 5)" && junit::failing(c.status);
  EXPECT_TRUE(named) << journals_to_junit({nameless});
  bool said = false;
  for (const auto& p : n.problems) said |= p.find("a case start without a case name") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Junit, RankBeyondIntIsNamedNotDropped) {
  const std::string dir = ::testing::TempDir() + "gpucts-journal-bigrank-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  std::ofstream(dir + "/gpucts_x.rank99999999999.jsonl") << kBeforePassed;
  auto runs = read_journal_dir(dir);
  std::remove((dir + "/gpucts_x.rank99999999999.jsonl").c_str());
  ::rmdir(dir.c_str());
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].unreadable.size(), 1u);
  EXPECT_NE(runs[0].unreadable[0].find("rank number 99999999999"), std::string::npos);
  EXPECT_FALSE(journals_to_cases(runs).problems.empty());
}

// A million-case journal is read and written in seconds: rows are found by name, not by a scan.
TEST(Junit, LinearInTheNumberOfCases) {
  std::string body;
  const int n = 200000;
  body.reserve(static_cast<size_t>(n) * 140);
  for (int i = 0; i < n; ++i) {
    const std::string name = "S.c" + std::to_string(i);
    body += R"({"event":"start","case":")" + name +
            R"(","time_ms":1001})"
            "\n";
    body += R"({"event":"end","case":")" + name +
            R"(","result":"passed","time_ms":1001.5})"
            "\n";
  }
  TestRun t;
  t.test = "gpucts_big";
  t.ranks.push_back(parse_journal("big", -1, body));
  const double start = cts::test::cpu_seconds();
  const std::string x = journals_to_junit({t});
  const double s = cts::test::cpu_seconds() - start;
  EXPECT_NE(x.find("tests=\"" + std::to_string(n) + "\""), std::string::npos);
  EXPECT_LT(s, 10.0) << n << " cases took " << s << " s";
}

TEST(Junit, EscapesMessages) {
  auto t = two_ranks(
      kBeforePassed + line(R"({"event":"start","case":"S.F","time_ms":1003})") +
          line(R"({"event":"end","case":"S.F","result":"failed","message":"a<b & \"c\"","time_ms":1004})"),
      kBeforePassed);
  std::string x = journals_to_junit({t});
  EXPECT_NE(x.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos) << x;
  EXPECT_EQ(x.find("a<b"), std::string::npos);
}

// --- preflight over synthetic fingerprints -------------------------------------------------

Fingerprint fp(int rank, const std::string& host, const std::string& nccl = "2.28.9") {
  Fingerprint f;
  f.host = host;
  f.boot_id = host + "-boot";
  f.nccl_runtime = Version::parse(nccl, VersionKind::Nccl);
  f.nccl_header = Version::parse("2.28.9", VersionKind::Nccl);
  f.cuda_runtime = Version::parse("13.0", VersionKind::Cuda);
  f.interfaces = std::vector<InterfaceInfo>{{"lo", true, {"127.0.0.1"}}, {"eth0", true, {"10.0.0.1"}}};
  f.env = std::map<std::string, std::string>{};
  annotate_for_preflight(f, {rank, 0, 2, -1});
  return f;
}

bool has(const PreflightResult& r, const std::string& id) {
  for (const auto& p : r.problems)
    if (p.id == id) return true;
  return false;
}

TEST(Preflight, AgreeingRanksPass) {
  auto r = compare_fingerprints({fp(0, "a"), fp(1, "b")});
  EXPECT_TRUE(r.ok()) << r.message();
}

TEST(Preflight, NcclRuntimeDifferenceNamesHostAndRank) {
  auto r = compare_fingerprints({fp(0, "a"), fp(1, "b", "2.27.3")});
  ASSERT_TRUE(has(r, "cross-host-mismatch")) << r.message();
  EXPECT_NE(r.message().find("2.27.3 on b rank 1"), std::string::npos) << r.message();
}

TEST(Preflight, MissingNcclOnOneRank) {
  auto b = fp(1, "b");
  b.nccl_runtime.reset();
  auto r = compare_fingerprints({fp(0, "a"), b});
  EXPECT_NE(r.message().find("absent on rank 1 (b)"), std::string::npos) << r.message();
}

TEST(Preflight, SocketIfnamePrefixExcludeAndExact) {
  struct Row {
    const char* spec;
    bool ok;
  };
  for (Row row :
       {Row{"eth", true}, Row{"=eth0", true}, Row{"=eth", false}, Row{"^eth,lo", false}, Row{"ib", false}}) {
    auto b = fp(1, "b");
    (*b.env)["NCCL_SOCKET_IFNAME"] = row.spec;
    auto r = compare_fingerprints({fp(0, "a"), b});
    EXPECT_EQ(!has(r, "nccl-socket-ifname-no-match"), row.ok) << row.spec << ": " << r.message();
  }
}

TEST(Preflight, LoopbackAcrossHostsIsRefused) {
  auto a = fp(0, "a"), b = fp(1, "b");
  (*a.env)["NCCL_SOCKET_IFNAME"] = (*b.env)["NCCL_SOCKET_IFNAME"] = "lo";
  EXPECT_TRUE(has(compare_fingerprints({a, b}), "nccl-socket-ifname-loopback"));
  auto c = fp(1, "a");  // same host: loopback is fine
  (*c.env)["NCCL_SOCKET_IFNAME"] = "lo";
  EXPECT_FALSE(has(compare_fingerprints({a, c}), "nccl-socket-ifname-loopback"));
}

TEST(Preflight, CapacityVersusMapping) {
  auto with_gpus = [](int rank, int local, std::vector<std::string> uuids) {
    Fingerprint f = fp(rank, "a");
    std::vector<GpuInfo> gpus;
    for (auto& u : uuids) {
      GpuInfo g;
      g.index = static_cast<int>(gpus.size());
      g.uuid = u;
      gpus.push_back(g);
    }
    f.gpus = gpus;
    annotate_for_preflight(f, {rank, local, 2, select_device(local, static_cast<int>(gpus.size()))});
    return f;
  };
  // One GPU, two ranks: a capacity problem (skip under CTest with too few GPUs).
  auto few = compare_fingerprints({with_gpus(0, 0, {"GPU-1"}), with_gpus(1, 1, {"GPU-1"})});
  EXPECT_TRUE(has(few, "ranks-exceed-gpus")) << few.message();
  EXPECT_TRUE(few.only_capacity()) << few.message();
  // Two GPUs, but each rank was handed only the same one: a mapping bug, a failure.
  auto collapsed =
      compare_fingerprints({with_gpus(0, 0, {"GPU-1", "GPU-2"}), with_gpus(1, 0, {"GPU-1", "GPU-2"})});
  EXPECT_TRUE(has(collapsed, "gpu-shared-by-ranks")) << collapsed.message();
  EXPECT_FALSE(collapsed.only_capacity()) << collapsed.message();
}

// Ranks on one machine and one GPU, as `mpirun -np N` on a one-GPU node places them; `hostid`
// empty leaves NCCL_HOSTID unset.
Fingerprint on_one_gpu(int rank, const std::string& hostid) {
  Fingerprint f = fp(rank, "vm");
  GpuInfo g;
  g.index = 0;
  g.uuid = "GPU-1";
  f.gpus = std::vector<GpuInfo>{g};
  (*f.env)["NCCL_SOCKET_IFNAME"] = "lo";
  if (!hostid.empty()) (*f.env)["NCCL_HOSTID"] = hostid;
  annotate_for_preflight(f, {rank, rank, 2, select_device(rank, 1)});
  return f;
}

TEST(HostIdentity, NcclHostidReplacesHostNameAndBootId) {
  EXPECT_EQ(nccl_host_identity(fp(0, "a")), "a/a-boot");
  EXPECT_EQ(nccl_host_identity(on_one_gpu(0, "sim0")), "NCCL_HOSTID#73696d30");
  // NCCL hashes the value alone: one id on two machines is one host to it.
  auto a = fp(0, "a"), b = fp(1, "b");
  (*a.env)["NCCL_HOSTID"] = (*b.env)["NCCL_HOSTID"] = "rack1";
  EXPECT_EQ(nccl_host_identity(a), nccl_host_identity(b));
}

TEST(HostIdentity, DistinctHostidsOnOneGpuAreSimulatedHostsAndPass) {
  auto r = compare_fingerprints({on_one_gpu(0, "sim0"), on_one_gpu(1, "sim1")});
  EXPECT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r.simulated_hosts());
  EXPECT_EQ(r.nccl_hosts, 2);
  EXPECT_EQ(r.machines, 1);
  // Per host by nature: out of the environment comparison, still listed rank by rank.
  EXPECT_EQ(r.host_ids, "NCCL_HOSTID=sim0 on rank 0 (sim0); NCCL_HOSTID=sim1 on rank 1 (sim1)");
  EXPECT_FALSE(has(r, "env-differs"));
  // Loopback joins the simulated hosts: they are one machine.
  EXPECT_FALSE(has(r, "nccl-socket-ifname-loopback")) << r.message();
}

TEST(HostIdentity, TwoRanksOnOneGpuWithoutDistinctHostidsStillFail) {
  for (const char* id : {"", "same"}) {
    auto r = compare_fingerprints({on_one_gpu(0, id), on_one_gpu(1, id)});
    EXPECT_FALSE(r.simulated_hosts()) << id;
    ASSERT_TRUE(has(r, "gpu-shared-by-ranks")) << id << ": " << r.message();
    EXPECT_TRUE(has(r, "ranks-exceed-gpus")) << id << ": " << r.message();
    const std::string host = *id ? id : "vm";  // named as NCCL has it
    EXPECT_NE(r.message().find("ranks 0,1 on " + host +
                               " would share GPU GPU-1 (NCCL: \"Duplicate GPU detected\")"),
              std::string::npos)
        << r.message();
  }
}

// NCCL hashes the first 1023 raw bytes of NCCL_HOSTID: identity follows its bytes, not their UTF-8.
TEST(HostIdentity, ComparesNcclsRawBytes) {
  const std::string base(1023, 's');
  ScopedEnv x(std::map<std::string, std::string>{{"NCCL_HOSTID", base + "x"}});
  auto a = on_one_gpu(0, "");
  ScopedEnv y(std::map<std::string, std::string>{{"NCCL_HOSTID", base + "y"}});
  auto b = on_one_gpu(1, "");
  EXPECT_EQ(nccl_host_identity(a), nccl_host_identity(b)) << "ids that differ after byte 1023 are one host";
  EXPECT_TRUE(has(compare_fingerprints({a, b}), "gpu-shared-by-ranks"));
  ScopedEnv ff("NCCL_HOSTID", "sim\xff");
  auto c = on_one_gpu(0, "");
  ScopedEnv fe("NCCL_HOSTID", "sim\xfe");
  auto d = on_one_gpu(1, "");
  EXPECT_NE(nccl_host_identity(c), nccl_host_identity(d)) << "sim\\xff and sim\\xfe are two hosts";
  auto r = compare_fingerprints({c, d});
  EXPECT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(c.label(), "sim\\xff rank 0");
}

// Every message names a simulated host by its NCCL_HOSTID, not by the machine both share.
TEST(HostIdentity, MessagesNameSimulatedHostsByTheirHostid) {
  auto a = on_one_gpu(0, "sim0"), b = on_one_gpu(1, "sim1");
  b.nccl_runtime = Version::parse("2.28.3", VersionKind::Nccl);
  auto r = compare_fingerprints({a, b});
  ASSERT_TRUE(has(r, "cross-host-mismatch")) << r.message();
  EXPECT_NE(r.message().find("2.28.3 on sim1 rank 1"), std::string::npos) << r.message();
  EXPECT_EQ(r.message().find(" vm"), std::string::npos) << r.message();
}

TEST(SimulatedHosts, SwitchAcceptsZeroOrOneOnly) {
  {
    ScopedEnv off("GPUCTS_SIMULATED_HOSTS", "0");
    EXPECT_FALSE(simulated_hosts_requested());
  }
  {
    ScopedEnv on("GPUCTS_SIMULATED_HOSTS", "1");
    EXPECT_TRUE(simulated_hosts_requested());
  }
  // Forked, not re-run: a re-run binary would stop at its own start-up check of the same value.
  GTEST_FLAG_SET(death_test_style, "fast");
  ScopedEnv bad("GPUCTS_SIMULATED_HOSTS", "yes");
  // Not anchored at the end: a sanitizer build's leak checker adds its own lines to the child's stderr.
  EXPECT_EXIT(simulated_hosts_requested(), ::testing::ExitedWithCode(2),
              "^gpucts: GPUCTS_SIMULATED_HOSTS=yes: expected 0 or 1\n");
}

TEST(HostIdentity, LoopbackAcrossRealMachinesIsRefusedWhateverTheHostids) {
  auto a = fp(0, "a"), b = fp(1, "b");
  (*a.env)["NCCL_SOCKET_IFNAME"] = (*b.env)["NCCL_SOCKET_IFNAME"] = "lo";
  (*a.env)["NCCL_HOSTID"] = "x";
  (*b.env)["NCCL_HOSTID"] = "y";
  EXPECT_TRUE(has(compare_fingerprints({a, b}), "nccl-socket-ifname-loopback"));
}

TEST(HostIdentity, HostidIsLeftOutOfTheEnvironmentHash) {
  EXPECT_EQ(preflight_env_hash({{"NCCL_ALGO", "Ring"}, {"NCCL_HOSTID", "sim0"}}),
            preflight_env_hash({{"NCCL_ALGO", "Ring"}, {"NCCL_HOSTID", "sim1"}}));
}

TEST(SimulatedHosts, EachRankItsOwnHostidOnLoopbackUnlessTheUserSetThem) {
  {
    ScopedEnv g(
        Vars{{"NCCL_HOSTID", nullptr}, {"NCCL_SOCKET_IFNAME", nullptr}, {"NCCL_IB_DISABLE", nullptr}});
    auto e0 = simulated_host_env(0), e1 = simulated_host_env(1);
    ASSERT_TRUE(e0.count("NCCL_HOSTID") && e1.count("NCCL_HOSTID"));
    EXPECT_NE(e0["NCCL_HOSTID"], e1["NCCL_HOSTID"]);
    EXPECT_EQ(e0["NCCL_SOCKET_IFNAME"], "lo");
    EXPECT_EQ(e0["NCCL_IB_DISABLE"], "1");
  }
  {
    ScopedEnv g(Vars{{"NCCL_HOSTID", "mine"}, {"NCCL_SOCKET_IFNAME", "eth0"}, {"NCCL_IB_DISABLE", nullptr}});
    auto e = simulated_host_env(3);
    EXPECT_FALSE(e.count("NCCL_HOSTID"));
    EXPECT_FALSE(e.count("NCCL_SOCKET_IFNAME"));
  }
  {
    ScopedEnv g(Vars{{"GPUCTS_SIMULATED_HOSTS", nullptr}, {"NCCL_HOSTID", nullptr}});
    EXPECT_EQ(apply_simulated_host_env(0), "");
    EXPECT_EQ(std::getenv("NCCL_HOSTID"), nullptr);
  }
  EXPECT_EQ(simulated_hosts_note(4),
            "4 simulated hosts on one GPU over NCCL's socket transport: proves the multi-rank cases and the "
            "harness, not NVLink, P2P or SHM transports, nor bandwidth");
}

TEST(Preflight, EnvironmentHashIgnoresPerRankVariables) {
  std::map<std::string, std::string> a = {
      {"NCCL_ALGO", "Ring"}, {"RANK", "0"}, {"CUDA_VISIBLE_DEVICES", "0"}};
  std::map<std::string, std::string> b = {
      {"NCCL_ALGO", "Ring"}, {"RANK", "1"}, {"CUDA_VISIBLE_DEVICES", "1"}};
  EXPECT_EQ(preflight_env_hash(a), preflight_env_hash(b));
  b["NCCL_ALGO"] = "Tree";
  EXPECT_NE(preflight_env_hash(a), preflight_env_hash(b));
}

TEST(Preflight, TestOverridesNeedTheTestMode) {
  ScopedEnv g(Vars{{"GPUCTS_TEST_MODE", nullptr}, {"GPUCTS_FAKE_NCCL_RUNTIME", "2.27.3"}});
  Fingerprint f = fp(0, "a");
  EXPECT_EQ(apply_preflight_test_overrides(f), "");
  EXPECT_EQ(f.nccl_runtime->str(), "2.28.9");
  ScopedEnv t(Vars{{"GPUCTS_TEST_MODE", "1"}});
  EXPECT_EQ(apply_preflight_test_overrides(f), "GPUCTS_FAKE_NCCL_RUNTIME=2.27.3");
  EXPECT_EQ(f.nccl_runtime->str(), "2.27.3");
}

// --- collective arguments --------------------------------------------------------------------

TEST(CollectiveArgs, EqualArgumentsAgree) {
  CollectiveArgs a{"AllReduce", 8, "f32", "sum", -1, 0};
  EXPECT_EQ(compare_collective_args({a, a, a}), "");
}

TEST(CollectiveArgs, EachDifferingRankIsNamedWithBothArguments) {
  CollectiveArgs a{"Broadcast", 8, "bf16", "", 0, 4};
  CollectiveArgs b = a, c = a;
  b.root = 1;
  c.dtype = "f16";
  std::string m = compare_collective_args({a, b, c});
  EXPECT_NE(m.find("rank 0 Broadcast(count=8, dtype=bf16, op=-, root=0, seq=4) vs rank 1 Broadcast(count=8, "
                   "dtype=bf16, op=-, root=1, seq=4)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("vs rank 2 Broadcast(count=8, dtype=f16"), std::string::npos) << m;
}

}  // namespace
}  // namespace cts
