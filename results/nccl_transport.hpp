// The path NCCL took, read from its own report: the INFO lines of NCCL_DEBUG=INFO (subsystems INIT,
// NET, GRAPH, TUNING; NCCL_DEBUG_FILE=<dir>/<test>.nccl.%h.%p.log, one file per process) turned into
// structure: per communicator (its pointer, commId, rank, nranks, nNodes), per peer and channel the
// transport (P2P, SHM, NET over Socket, IB or a plugin, NVLS, CollNet) with its detail, the network
// ("Using network X"), the interfaces and devices NET reported, the NVLS state, and algorithm/protocol
// per collective where the release prints them (TUNING, rank 0). Tolerant of the wording of 2.18 to
// 2.30: busId or device index in the peer brackets, "Channel NN" or "Channel NN/C", the numeric
// TUNING line of 2.21-2.23 and the named one of 2.24 on; a line it does not know is skipped.
// Then transport_findings(): what the world implies, asserted against what NCCL did.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace cts {

struct NcclChannelPath {
  int channel = -1;
  int from = -1, to = -1;   // ranks
  std::string direction;    // "send", "receive", or "" (P2P, SHM print one line per connection)
  std::string transport;    // "P2P", "SHM", "NET", "NVLS", "COLLNET"
  std::string detail;       // after the transport: "Socket/0", "IB/0/GDRDMA", "CUMEM/read", "direct pointer"
  std::string net;          // for NET: the network ("Socket", "IB", a plugin's name)
  std::string key() const;  // "NET/Socket", "P2P/CUMEM", "SHM/direct", "NVLS"
};

struct NcclTuningChoice {
  std::string collective;  // "AllReduce" ("" where 2.21/2.22 do not print it)
  long long bytes = -1;
  std::string algorithm;  // "RING", "TREE", "NVLS", "PAT", "COLLNET_DIRECT", ... (2.21-2.23 numbers mapped)
  std::string protocol;   // "LL", "LL128", "SIMPLE"
  int channels = -1;      // channel range width where printed (2.24 on), else -1
};

struct NcclCommunicator {
  std::string pointer;  // "0x55d5f2c0" as printed in "comm 0x..." (per process)
  std::string comm_id;  // "0x5b0c1e2a5ec1f2bc" where printed
  int rank = -1, nranks = -1, nnodes = -1, local_ranks = -1;
  std::vector<NcclChannelPath> paths;
  std::vector<NcclTuningChoice> tuning;
  std::set<std::string> transports() const;  // keys of the paths
};

struct NcclTransportLog {
  std::string version;                  // "2.28.9" from "NCCL version 2.28.9+cuda13.0"
  std::string network;                  // "Socket", "IB", a plugin, from "Using network X"
  std::vector<std::string> socket_ifs;  // "lo:127.0.0.1<0>" from "NET/Socket : Using [0]lo:..."
  std::vector<std::string> ib_devices;  // "mlx5_0:1/IB" from "NET/IB : Using [0]mlx5_0:1/IB ..."
  bool ib_absent = false;               // "NET/IB : No device found." or "Failed to initialize NET plugin IB"
  std::vector<std::string> plugin_notes;  // "NET/Plugin ..." lines as printed
  std::optional<bool> nvls_available;     // "NVLS multicast support is [not ]available"
  bool nvls_used = false;                 // an "NVLS comm 0x..." line: a communicator set NVLS up
  std::vector<NcclCommunicator> comms;    // in order of appearance
  int lines = 0, nccl_lines = 0;          // read, and of those NCCL INFO/WARN lines
  std::set<std::string> transports() const;
  // One line for a person and a JUnit property: "NCCL 2.28.9, network Socket (lo), NVLS not available;
  // comm 0x.. rank 0/2 nNodes 2: NET/Socket x4 channels; AllReduce 4 B RING/LL".
  std::string summary() const;
};

// Parses NCCL's output (any mix of lines; non-NCCL lines are skipped).
NcclTransportLog parse_nccl_log(std::string_view text);
// Reads and parses one file; throws std::runtime_error naming the file when it cannot be read.
NcclTransportLog read_nccl_log(const std::string& path);

// What the world implies about the transport.
struct TransportWorld {
  bool simulated_hosts = false;  // ranks on one machine, each its own NCCL_HOSTID: NET/Socket only
  bool one_node = false;         // several GPUs of one host (no simulated hosts): never NET
  bool ib_present = false;       // an InfiniBand/RoCE device is on this host (/sys/class/infiniband)
  std::map<std::string, std::string> env;  // NCCL_* of the run, to name the setting behind a fall back
};

struct TransportFinding {
  std::string id;  // transport-not-socket, transport-net-on-one-node, transport-socket-fallback,
                   // transport-unknown
  std::string message;
};

// Every way the log contradicts the world, each with the communicator and peers it saw; empty when
// NCCL's path is what the world implies. A log without a single channel line is transport-unknown.
std::vector<TransportFinding> transport_findings(const NcclTransportLog& log, const TransportWorld& world);

}  // namespace cts
