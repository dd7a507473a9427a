#include <cstdio>
#include <string>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "fixtures/probe/probe.hpp"
#include "report/output_file.hpp"

namespace cts::cli {

// Prints the number of visible GPUs. With --resource-spec FILE also writes CTest's resource spec
// for them (one "gpus" resource of one slot per GPU); with none visible it writes no file, because
// an empty "gpus" list makes every GPU test "Not Run", which CTest counts as failed.
const CommandSpec kGpusSpec = {{"resource-spec"}, {}, "usage: gpucts gpus [--resource-spec FILE]"};

int cmd_gpus(const Args& a) {
  int n = visible_gpu_count();
  if (auto spec = a.value("resource-spec"); spec && n > 0) {
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
  return 0;
}

}  // namespace cts::cli
