// gpucts: the command-line entry point (check, fingerprint, qualify, report, ...).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/args.hpp"
#include "cli/commands.hpp"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>&);
};

const Command kCommands[] = {
    {"fingerprint", "write this process's environment fingerprint (JSON)", cts::cli::cmd_fingerprint},
    {"gpus", "count the visible GPUs; --resource-spec FILE writes CTest's resource spec", cts::cli::cmd_gpus},
    {"check", "check fingerprints (default: this machine) against the compatibility matrix", cts::cli::cmd_check},
    {"journal-to-junit", "turn test journals (also of crashed or interrupted runs) into JUnit", cts::cli::cmd_journal_to_junit},
    {"qualify", "run every suite and write the qualification bundle (--output DIR)", cts::cli::cmd_qualify},
    {"report", "compare bundles: --baseline DIR --candidate DIR...", cts::cli::cmd_report},
    {"campaign", "the suites against several NCCL releases, one report: --nccl V,V... --output DIR", cts::cli::cmd_campaign},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: gpucts <command> [options]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(out, "\n'gpucts <command> --help' describes a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  // --version anywhere, as CMake, ctest and mpirun answer it.
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--version")) {
      std::printf("gpucts %s\n", GPUCTS_VERSION);
      return 0;
    }
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::vector<std::string> rest(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
    try {
      return c.run(rest);
    } catch (const cts::cli::UsageError& e) {
      std::fprintf(stderr, "gpucts %s: %s\n", c.name, e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpucts %s: %s\n", c.name, e.what());
      return 2;
    }
  }
  std::fprintf(stderr, "gpucts: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
