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
    {"fingerprint", "matrix"},
    {"json"},
    "usage: gpucts check [--fingerprint FILE]... [--matrix DIR] [--json]\n"
    "Checks fingerprints (default: a probe of this machine) against the compatibility matrix\n"
    "(default: the one built in; --matrix DIR loads matrix/data/*.csv from DIR).\n"
    "Several --fingerprint files are each checked alone and all against each other.\n"
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
    if (auto rc = check_over_mpi(*m, a.flag("json"))) return *rc;  // one of several MPI ranks
    fps.push_back(probe_fingerprint());
  }
  return run_check(fps, *m, a.flag("json"), std::cout);
}

}  // namespace cts::cli
