// The reader of NCCL's INFO/TUNING lines over logs of several releases (suites/data/nccl_logs), and the
// transport assertions against what the world implies.
#include <gtest/gtest.h>

#include <string>

#include "fixtures/probe/paths.hpp"
#include "results/nccl_transport.hpp"

namespace cts {
namespace {

NcclTransportLog load(const std::string& name) { return read_nccl_log(test_data_file("nccl_logs/" + name)); }

bool has_id(const std::vector<TransportFinding>& f, const std::string& id) {
  for (const auto& x : f)
    if (x.id == id) return true;
  return false;
}

TEST(NcclTransportLog, Release2_18ConnectsAtInitWithBusIdsInTheBrackets) {
  auto log = load("2.18.3_simhosts_2ranks.log");
  EXPECT_EQ(log.version, "2.18.3");
  EXPECT_EQ(log.network, "Socket");
  EXPECT_EQ(log.socket_ifs, std::vector<std::string>{"lo:127.0.0.1<0>"});
  EXPECT_TRUE(log.ib_absent);
  ASSERT_EQ(log.comms.size(), 1u);
  const auto& c = log.comms[0];
  EXPECT_EQ(c.pointer, "0x55d5f2c0a1b0");
  EXPECT_EQ(c.comm_id, "0x5b0c1e2a5ec1f2bc");
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.nranks, 2);
  ASSERT_EQ(c.paths.size(), 4u);
  EXPECT_EQ(c.paths[0].from, 1);
  EXPECT_EQ(c.paths[0].to, 0);
  EXPECT_EQ(c.paths[0].direction, "receive");
  EXPECT_EQ(c.paths[3].channel, 1);
  EXPECT_EQ(c.transports(), std::set<std::string>{"NET/Socket"});
  EXPECT_TRUE(c.tuning.empty());  // TRACE only before 2.21
  EXPECT_TRUE(transport_findings(log, {true, false, false, {}}).empty());
}

TEST(NcclTransportLog, Release2_21OneNodeP2pAndNumericTuning) {
  auto log = load("2.21.5_one_node_2gpus.log");
  EXPECT_EQ(log.version, "2.21.5");
  ASSERT_EQ(log.comms.size(), 1u);
  EXPECT_EQ(log.comms[0].nnodes, 1);
  EXPECT_EQ(log.comms[0].local_ranks, 2);
  EXPECT_EQ(log.transports(), std::set<std::string>{"P2P/CUMEM"});
  ASSERT_TRUE(log.nvls_available.has_value());
  EXPECT_FALSE(*log.nvls_available);
  ASSERT_EQ(log.comms[0].tuning.size(), 2u);
  EXPECT_EQ(log.comms[0].tuning[0].algorithm, "RING");
  EXPECT_EQ(log.comms[0].tuning[0].protocol, "LL");
  EXPECT_EQ(log.comms[0].tuning[1].protocol, "SIMPLE");
  EXPECT_EQ(log.comms[0].tuning[1].bytes, 4194304);
  EXPECT_TRUE(transport_findings(log, {false, true, false, {}}).empty());
  // The same log for simulated hosts: P2P between them is impossible, and said so.
  auto wrong = transport_findings(log, {true, false, false, {}});
  ASSERT_TRUE(has_id(wrong, "transport-not-socket"));
  EXPECT_NE(wrong[0].message.find("via P2P/CUMEM/read"), std::string::npos) << wrong[0].message;
}

TEST(NcclTransportLog, Release2_23SocketWhereIbIsPresentNamesTheSetting) {
  auto log = load("2.23.4_ib_disabled.log");
  EXPECT_EQ(log.version, "2.23.4");
  EXPECT_EQ(log.socket_ifs.size(), 2u);
  ASSERT_EQ(log.comms.size(), 1u);
  EXPECT_EQ(log.comms[0].nnodes, 2);
  ASSERT_EQ(log.comms[0].tuning.size(), 1u);
  EXPECT_EQ(log.comms[0].tuning[0].collective, "AllReduce");
  EXPECT_EQ(log.comms[0].tuning[0].algorithm, "RING");
  auto f = transport_findings(log, {false, false, true, {{"NCCL_IB_DISABLE", "1"}}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "transport-socket-fallback");
  EXPECT_NE(f[0].message.find("(set by NCCL_IB_DISABLE=1)"), std::string::npos) << f[0].message;
  auto net = transport_findings(log, {false, false, true, {{"NCCL_NET", "Socket"}}});
  ASSERT_EQ(net.size(), 1u);
  EXPECT_NE(net[0].message.find("NCCL_NET=Socket"), std::string::npos) << net[0].message;
  auto none = transport_findings(log, {false, false, true, {}});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_NE(none[0].message.find("no setting explains it"), std::string::npos) << none[0].message;
  EXPECT_TRUE(transport_findings(log, {false, false, false, {}}).empty())
      << "no IB device: sockets are right";
}

TEST(NcclTransportLog, Release2_28LazyConnectionNamedTuningAndTwoCommunicators) {
  auto log = load("2.28.9_simhosts_2ranks.log");
  EXPECT_EQ(log.version, "2.28.9");
  EXPECT_EQ(log.network, "Socket");
  EXPECT_TRUE(log.ib_absent);
  ASSERT_EQ(log.comms.size(), 2u);
  const auto& a = log.comms[0];
  EXPECT_EQ(a.pointer, "0x2f1e3c40");
  EXPECT_EQ(a.nnodes, 2);
  EXPECT_EQ(a.paths.size(), 4u) << "the lines after Init COMPLETE belong to it";
  ASSERT_EQ(a.tuning.size(), 2u);
  EXPECT_EQ(a.tuning[0].channels, 1);
  EXPECT_EQ(a.tuning[1].algorithm, "PAT");
  EXPECT_EQ(a.tuning[1].channels, 2);
  EXPECT_EQ(log.comms[1].pointer, "0x3a00b000");
  EXPECT_EQ(log.comms[1].paths.size(), 1u);
  EXPECT_TRUE(transport_findings(log, {true, false, false, {}}).empty());
  auto one_node = transport_findings(log, {false, true, false, {{"NCCL_P2P_DISABLE", "1"}}});
  ASSERT_TRUE(has_id(one_node, "transport-net-on-one-node"));
  EXPECT_NE(one_node[0].message.find("set by NCCL_P2P_DISABLE=1"), std::string::npos) << one_node[0].message;
  const std::string s = log.summary();
  EXPECT_NE(s.find("NCCL 2.28.9, network Socket (lo:127.0.0.1<0>), NVLS not available"), std::string::npos)
      << s;
  EXPECT_NE(s.find("comm 0x2f1e3c40 rank 0/2 nNodes 2: NET/Socket x4, AllReduce RING/LL"), std::string::npos)
      << s;
}

TEST(NcclTransportLog, IbAcrossNodesWithNvls) {
  auto log = load("2.28.9_ib_2nodes.log");
  EXPECT_EQ(log.network, "IB");
  EXPECT_EQ(log.ib_devices, (std::vector<std::string>{"mlx5_0:1/IB", "mlx5_1:1/IB"}));
  EXPECT_TRUE(*log.nvls_available);
  EXPECT_TRUE(log.nvls_used);
  EXPECT_EQ(log.transports(), (std::set<std::string>{"NET/IB", "P2P/CUMEM"}));
  EXPECT_EQ(log.comms[0].tuning[0].algorithm, "NVLS");
  EXPECT_TRUE(transport_findings(log, {false, false, true, {}}).empty());
  EXPECT_TRUE(has_id(transport_findings(log, {true, false, false, {}}), "transport-not-socket"));
}

TEST(NcclTransportLog, NothingToSeeIsUnknownNotPassed) {
  auto log =
      parse_nccl_log("hello\nvm:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 - Init COMPLETE\n");
  EXPECT_EQ(log.lines, 2);
  EXPECT_EQ(log.nccl_lines, 1);
  auto f = transport_findings(log, {true, false, false, {}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "transport-unknown");
  EXPECT_THROW(read_nccl_log("/nonexistent/nccl.log"), std::runtime_error);
}

TEST(NcclTransportLog, OlderWordingsAndGarbageDoNotThrow) {
  // busId in hex brackets and no connection index (before 2.12), a CRLF line, a truncated line.
  auto log = parse_nccl_log(
      "h:1:1 [0] NCCL INFO Channel 00 : 0[1a000] -> 1[1b000] via SHM/direct/direct\r\n"
      "h:1:1 [0] NCCL INFO Channel 01 : 1[1b000] -> 0[1a000] [receive] via NET/Socket/0\n"
      "h:1:1 [0] NCCL INFO Channel 0\n"
      "h:1:1 [0] NCCL INFO AllReduce [Symmetric]: 1024 Bytes -> Kernel AllReduce_ST nchannels 4 nthreads "
      "512\n"
      "h:1:1 [0] NCCL INFO 99999999999999999999 Bytes -> Algo 9 proto 7\n");
  ASSERT_EQ(log.comms.size(), 1u);
  EXPECT_EQ(log.transports(), (std::set<std::string>{"NET/Socket", "SHM/direct"}));
  ASSERT_GE(log.comms[0].tuning.size(), 1u);
  EXPECT_EQ(log.comms[0].tuning[0].algorithm, "SYMMETRIC:AllReduce_ST");
}

}  // namespace
}  // namespace cts
