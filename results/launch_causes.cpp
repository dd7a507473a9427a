#include "results/launch_causes.hpp"

#include <fstream>

namespace cts {
namespace {

struct KnownLaunchFailure {
  const char* needle;  // a text the launcher prints, matched as is
  const char* cause;   // the cause and its fix, one line
};

// Open MPI's texts are from its help files (4.x); each needle is specific to its failure.
const KnownLaunchFailure kKnown[] = {
    {"plm_rsh_agent: ssh : rsh",
     "Open MPI's mpirun wants ssh or rsh on PATH even to start ranks on this one host: install an ssh "
     "client, or set OMPI_MCA_plm=isolated for a run on one node"},
    {"There are not enough slots available in the system",
     "Open MPI has fewer slots than the ranks asked for: set OMPI_MCA_rmaps_base_oversubscribe=1 (or give "
     "a hostfile with enough slots)"},
    {"mpirun has detected an attempt to run as root",
     "Open MPI refuses to run as root: set OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
     "(or run as another user)"},
    {"It looks like orte_init failed for some reason",
     "Open MPI could not start its runtime on this host (orte_init): see the suite's log for its reason"},
};

}  // namespace

std::string launcher_cause(std::string_view log) {
  for (const auto& k : kKnown)
    if (log.find(k.needle) != std::string_view::npos) return k.cause;
  return "";
}

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  if (size <= 0) return "";
  const std::streamoff from = size > static_cast<std::streamoff>(max_bytes) ? size - max_bytes : 0;
  in.seekg(from);
  std::string out(static_cast<std::size_t>(size - from), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

}  // namespace cts
