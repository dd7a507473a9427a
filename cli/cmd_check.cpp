#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/args.hpp"
#include "cli/check_mpi.hpp"
#include "cli/check_report.hpp"
#include "cli/commands.hpp"
#include "fixtures/probe/probe.hpp"

namespace cts::cli {

const CommandSpec kCheckSpec = {
    {{"fingerprint", "FILE", "a fingerprint probed elsewhere (repeatable; default: probe this machine)"},
     {"matrix", "DIR", "load matrix/data/*.csv from DIR instead of the built-in matrix"}},
    {{"json", "print the result as one JSON object (gpucts.check)"},
     {"strict-defects", "a known NCCL defect of the loaded release is an error, not a warning"},
     {"no-python", "do not probe torch and Lightning through python (a Slurm prolog, a node without torch)"}},
    "usage: gpucts check [OPTIONS]\n"
    "Checks fingerprints (default: a probe of this machine) against the compatibility matrix\n"
    "(default: the one built in). Several --fingerprint files are each checked alone and all against\n"
    "each other. A known NCCL defect matched by the library's version alone is a warning that names the\n"
    "cases it hits and its fix (most work never meets the condition); --strict-defects makes it an error.\n"
    "Exit status: 0 no error finding, 1 at least one error finding, 2 bad input."};

int cmd_check(const Args& a) {
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional().front() + "'");
  // Everything is read and parsed before anything is evaluated: bad input never half-reports.
  Matrix loaded;
  const Matrix* m = nullptr;
  try {
    if (auto dir = a.value("matrix")) {
      loaded = load_matrix_dir(*dir);
      m = &loaded;
    } else {
      m = &builtin_matrix();
    }
  } catch (const MatrixError& e) {
    throw UsageError(std::string("matrix: ") + e.what());
  }
  CheckOptions opts;
  opts.strict_defects = a.flag("strict-defects");
  std::vector<Fingerprint> fps;
  for (const auto& file : a.values("fingerprint")) {
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec))
      throw UsageError(file + ": is a directory, not a fingerprint file");
    try {
      fps.push_back(load_fingerprint_file(file));
    } catch (const FingerprintError& e) {
      throw UsageError(e.what());
    }
  }
  if (a.values("fingerprint").empty()) {
    ProbeOptions probe;
    probe.python = !a.flag("no-python");
    if (auto rc = check_over_mpi(*m, a.flag("json"), opts, probe.python)) return *rc;  // one of several ranks
    fps.push_back(probe_fingerprint(probe));
  }
  return run_check(fps, *m, a.flag("json"), std::cout, opts);
}

}  // namespace cts::cli
