#include <cstdio>
#include <string>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/reliability/preflight.hpp"
#include "results/output_file.hpp"
#include "results/terminal_text.hpp"

namespace cts::cli {

// Prints the number of visible GPUs. With --resource-spec FILE also writes CTest's resource spec
// for them (one "gpus" resource of one slot per GPU); with none visible it writes no file, says so
// on standard error and exits 1, because an empty "gpus" list makes every GPU test "Not Run",
// which CTest counts as failed (ctest's include file reads the exit status as "no GPU").
// With --host a second line names this process's host as NCCL tells hosts apart (NCCL_HOSTID where
// set, else host name and boot id): ranks of one host identity may not share a GPU.
const CommandSpec kGpusSpec = {
    {{"resource-spec", "FILE",
      "also write CTest's resource spec for the visible GPUs (none visible: exit 1)"}},
    {{"host", "also print this host's identity as NCCL has it (NCCL_HOSTID where set)"}},
    "usage: gpucts gpus [--resource-spec FILE] [--host]"};

int cmd_gpus(const Args& a) {
  if (!a.positional().empty())
    throw UsageError("unexpected argument '" + terminal_safe(a.positional().front()) + "'");
  int n = visible_gpu_count();
  auto spec = a.value("resource-spec");
  if (spec && n == 0) {
    std::printf("0\n");
    std::fprintf(stderr, "gpucts gpus: no GPU visible: wrote no resource spec %s\n",
                 terminal_safe(*spec).c_str());
    return 1;
  }
  if (spec) {
    std::string f = "{\"version\":{\"major\":1,\"minor\":0},\"local\":[{\"gpus\":[";
    for (int i = 0; i < n; ++i)
      f += std::string(i ? "," : "") + "{\"id\":\"" + std::to_string(i) + "\",\"slots\":1}";
    f += "]}]}\n";
    try {
      write_file_atomic(*spec, f);
    } catch (const OutputError& e) {
      throw UsageError(e.what());
    }
  }
  std::printf("%d\n", n);
  if (a.flag("host")) {
    ProbeOptions o;
    o.toolkit = false;
    o.python = false;
    // An NCCL_HOSTID is up to 1023 bytes (2046 in hex): room for it whole, controls escaped.
    std::printf("host %s\n", terminal_safe(nccl_host_identity(probe_fingerprint(o)), 4096).c_str());
  }
  return 0;
}

}  // namespace cts::cli
