#include "results/nccl_transport.hpp"

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "results/text_format.hpp"

namespace cts {
namespace {

// The numbers 2.21-2.23 print for algorithm and protocol (src/include/devcomm.h order).
// Digits as NCCL printed them; -1 where the number does not fit (a garbled line is not an error).
long long num(const std::string& s) {
  try {
    return std::stoll(s);
  } catch (const std::exception&) {
    return -1;
  }
}
int num_i(const std::string& s) {
  long long v = num(s);
  return v < 0 || v > 1 << 30 ? -1 : static_cast<int>(v);
}

std::string algo_name(const std::string& a) {
  static const char* names[] = {"TREE",      "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
                                "NVLS_TREE", "PAT"};
  if (!a.empty() && std::isdigit(static_cast<unsigned char>(a[0]))) {
    long long i = num(a);
    return i >= 0 && i < static_cast<long long>(sizeof names / sizeof *names) ? names[i] : "ALGO" + a;
  }
  return a;
}
std::string proto_name(const std::string& p) {
  static const char* names[] = {"LL", "LL128", "SIMPLE"};
  if (!p.empty() && std::isdigit(static_cast<unsigned char>(p[0]))) {
    long long i = num(p);
    return i >= 0 && i < 3 ? names[i] : "PROTO" + p;
  }
  return p;
}

// "[0]lo:127.0.0.1<0> [1]eth0:10.0.0.2<0>" -> {"lo:127.0.0.1<0>", "eth0:10.0.0.2<0>"}
std::vector<std::string> bracket_list(const std::string& s) {
  std::vector<std::string> out;
  static const std::regex item(R"(\[\d+\]([^ \[]+))");
  for (std::sregex_iterator it(s.begin(), s.end(), item), end; it != end; ++it) out.push_back((*it)[1]);
  return out;
}

}  // namespace

std::string NcclChannelPath::key() const {
  if (transport == "NET") return "NET/" + net;
  auto slash = detail.find_first_of("/ ");
  std::string first = detail.substr(0, slash);
  return first.empty() ? transport : transport + "/" + first;
}

std::set<std::string> NcclCommunicator::transports() const {
  std::set<std::string> s;
  for (const auto& p : paths) s.insert(p.key());
  return s;
}

std::set<std::string> NcclTransportLog::transports() const {
  std::set<std::string> s;
  for (const auto& c : comms)
    for (const auto& k : c.transports()) s.insert(k);
  return s;
}

std::string NcclTransportLog::summary() const {
  std::ostringstream o;
  o << "NCCL " << (version.empty() ? "?" : version) << ", network " << (network.empty() ? "?" : network);
  if (!socket_ifs.empty()) o << " (" << join(socket_ifs, ",") << ")";
  if (!ib_devices.empty()) o << ", IB " << join(ib_devices, ",");
  o << ", NVLS " << (nvls_available ? (*nvls_available ? "available" : "not available") : "unreported")
    << (nvls_used ? ", used" : "");
  for (const auto& c : comms) {
    o << "; comm " << (c.pointer.empty() ? "?" : c.pointer) << " rank " << c.rank << "/" << c.nranks;
    if (c.nnodes >= 0) o << " nNodes " << c.nnodes;
    std::map<std::string, int> n;
    for (const auto& p : c.paths) ++n[p.key()];
    o << ":";
    if (n.empty()) o << " no channel line";
    for (const auto& [k, cnt] : n) o << " " << k << " x" << cnt;
    std::set<std::string> seen;
    for (const auto& t : c.tuning) {
      std::string s = (t.collective.empty() ? "coll" : t.collective) + " " + t.algorithm + "/" + t.protocol;
      if (seen.insert(s).second) o << ", " << s;
    }
  }
  return o.str();
}

NcclTransportLog parse_nccl_log(std::string_view text) {
  static const std::regex version_re(R"(^NCCL version (\d+\.\d+\.\d+))");
  static const std::regex network_re(R"(^Using network (\S+))");
  static const std::regex comm_re(R"(comm (0x[0-9a-fA-F]+) rank (\d+) n[Rr]anks (\d+))");
  static const std::regex nodes_re(R"(nNodes (\d+) localRanks (\d+))");
  static const std::regex commid_re(R"(commId (0x[0-9a-fA-F]+))");
  static const std::regex channel_re(
      R"(^Channel (\d+)(?:/\d+)? : (\d+)\[[0-9a-fA-F]+\] -> (\d+)\[[0-9a-fA-F]+\](?: \[(send|receive)\])? via (.+)$)");
  static const std::regex tuning_re(
      R"(^(?:(\w+): )?(\d+) Bytes -> Algo (\w+) proto (\w+)(?: channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})?)");
  static const std::regex symmetric_re(
      R"(^(\w+) \[Symmetric\]: (\d+) Bytes -> Kernel (\S+) nchannels (\d+))");
  NcclTransportLog log;
  std::istringstream in{std::string(text)};
  auto current = [&]() -> NcclCommunicator& {
    if (log.comms.empty()) log.comms.emplace_back();  // lines before any comm line: a communicator unnamed
    return log.comms.back();
  };
  for (std::string line; std::getline(in, line);) {
    ++log.lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto at = line.find("NCCL INFO ");
    size_t skip = 10;
    if (at == std::string::npos) {
      at = line.find("NCCL WARN ");
      if (at == std::string::npos) {
        // NCCL_DEBUG=VERSION/WARN print the banner bare.
        std::smatch v;
        if (line.rfind("NCCL version ", 0) == 0 && std::regex_search(line, v, version_re)) log.version = v[1];
        continue;
      }
    }
    ++log.nccl_lines;
    const std::string msg = line.substr(at + skip);
    std::smatch m;
    if (std::regex_search(msg, m, version_re)) {
      log.version = m[1];
    } else if (std::regex_search(msg, m, network_re)) {
      log.network = m[1];
    } else if (msg.rfind("NET/Socket : Using", 0) == 0) {
      log.socket_ifs = bracket_list(msg);
    } else if (msg.rfind("NET/IB : Using", 0) == 0) {
      log.ib_devices = bracket_list(msg);
    } else if (msg.rfind("NET/IB : No device found", 0) == 0 ||
               msg.find("Failed to initialize NET plugin IB") != std::string::npos) {
      log.ib_absent = true;
    } else if (msg.rfind("NET/Plugin", 0) == 0) {
      log.plugin_notes.push_back(msg);
    } else if (msg.find("NVLS multicast support is") != std::string::npos) {
      log.nvls_available = msg.find("is not available") == std::string::npos;
    } else if (msg.rfind("NVLS comm 0x", 0) == 0) {
      log.nvls_used = true;
    } else if (std::regex_match(msg, m, channel_re)) {
      NcclChannelPath p;
      p.channel = num_i(m[1]);
      p.from = num_i(m[2]);
      p.to = num_i(m[3]);
      p.direction = m[4];
      std::string via = m[5];
      auto slash = via.find('/');
      p.transport = via.substr(0, slash);
      for (auto& c : p.transport) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      p.detail = slash == std::string::npos ? "" : via.substr(slash + 1);
      if (p.transport == "NET") p.net = p.detail.substr(0, p.detail.find('/'));
      current().paths.push_back(p);
    } else if (std::regex_search(msg, m, symmetric_re)) {
      current().tuning.push_back({m[1], num(m[2]), "SYMMETRIC:" + m[3].str(), "", num_i(m[4])});
    } else if (std::regex_search(msg, m, tuning_re)) {
      NcclTuningChoice t{m[1], num(m[2]), algo_name(m[3]), proto_name(m[4]), -1};
      if (m[5].matched && num_i(m[6]) >= num_i(m[5]) && num_i(m[5]) >= 0)
        t.channels = num_i(m[6]) - num_i(m[5]) + 1;
      current().tuning.push_back(t);
    } else if (std::regex_search(msg, m, comm_re)) {
      std::string ptr = m[1];
      NcclCommunicator* c = nullptr;
      for (auto& x : log.comms)
        if (x.pointer == ptr) c = &x;
      if (!c && !log.comms.empty() && log.comms.back().pointer.empty() && log.comms.back().paths.empty())
        c = &log.comms.back();  // the unnamed placeholder gets its name
      if (!c) c = &log.comms.emplace_back();
      c->pointer = ptr;
      c->rank = num_i(m[2]);
      c->nranks = num_i(m[3]);
      std::smatch n;
      if (std::regex_search(msg, n, nodes_re)) {
        c->nnodes = num_i(n[1]);
        c->local_ranks = num_i(n[2]);
      }
      if (std::regex_search(msg, n, commid_re)) c->comm_id = n[1];
      // Keep the communicator the later channel lines belong to at the back.
      if (c != &log.comms.back()) {
        NcclCommunicator moved = *c;
        log.comms.erase(log.comms.begin() + (c - log.comms.data()));
        log.comms.push_back(moved);
      }
    }
  }
  return log;
}

NcclTransportLog read_nccl_log(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open for reading");
  std::ostringstream s;
  s << f.rdbuf();
  return parse_nccl_log(s.str());
}

std::vector<TransportFinding> transport_findings(const NcclTransportLog& log, const TransportWorld& world) {
  std::vector<TransportFinding> out;
  auto env = [&](const char* k) {
    auto it = world.env.find(k);
    return it == world.env.end() ? std::string() : it->second;
  };
  auto peers = [](const NcclCommunicator& c, const NcclChannelPath& p) {
    return "comm " + (c.pointer.empty() ? std::string("?") : c.pointer) + " channel " +
           std::to_string(p.channel) + " " + std::to_string(p.from) + "->" + std::to_string(p.to) + " via " +
           p.transport + (p.detail.empty() ? "" : "/" + p.detail);
  };
  bool any = false;
  for (const auto& c : log.comms) {
    for (const auto& p : c.paths) {
      any = true;
      if (world.simulated_hosts && p.key() != "NET/Socket")
        out.push_back({"transport-not-socket",
                       "simulated hosts (each rank its own NCCL_HOSTID on one machine) must join over NCCL's "
                       "socket transport, but " +
                           peers(c, p)});
      if (world.one_node && p.transport == "NET") {
        std::string why;
        for (const char* k : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE"})
          if (env(k) == "1") why += std::string(why.empty() ? "" : ", ") + k + "=1";
        if (!env("NCCL_P2P_LEVEL").empty())
          why += (why.empty() ? "" : ", ") + ("NCCL_P2P_LEVEL=" + env("NCCL_P2P_LEVEL"));
        out.push_back({"transport-net-on-one-node",
                       "GPUs of one host talk over the network instead of P2P/SHM/NVLink: " + peers(c, p) +
                           (why.empty() ? " (no NCCL_* setting explains it: check P2P support, ACS/IOMMU)"
                                        : " (set by " + why + ")")});
      }
      if (world.ib_present && p.transport == "NET" && p.net == "Socket") {
        std::string why;
        if (env("NCCL_IB_DISABLE") == "1") why = "NCCL_IB_DISABLE=1";
        if (!env("NCCL_NET").empty()) why += (why.empty() ? "" : ", ") + ("NCCL_NET=" + env("NCCL_NET"));
        if (!env("NCCL_IB_HCA").empty())
          why += (why.empty() ? "" : ", ") + ("NCCL_IB_HCA=" + env("NCCL_IB_HCA"));
        out.push_back(
            {"transport-socket-fallback",
             "an InfiniBand/RoCE device is present but NCCL fell back to TCP sockets (right answers at a "
             "fraction of the bandwidth): " +
                 peers(c, p) +
                 (why.empty() ? std::string(" (no setting explains it: the IB transport did not "
                                            "initialise") +
                                    (log.ib_absent ? ", NCCL said no IB device" : "") + ")"
                              : " (set by " + why + ")")});
        break;  // one finding per communicator names the fall back
      }
    }
  }
  if (!any)
    out.push_back(
        {"transport-unknown",
         "no channel line in NCCL's log (NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS including INIT or NET, and "
         "a collective run: connections are made at first use since 2.22)"});
  return out;
}

}  // namespace cts
