#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/args.hpp"
#include "cli/check_mpi.hpp"
#include "cli/check_report.hpp"
#include "cli/commands.hpp"
#include "fixtures/probe/probe.hpp"
#include "fixtures/probe/visible_devices.hpp"
#include "matrix/input.hpp"
#include "results/bandwidth.hpp"

namespace cts::cli {

const CommandSpec kCheckSpec = {
    {repeatable({"fingerprint", "FILE",
                 "a fingerprint probed elsewhere (repeatable; default: probe this machine)", Kind::file}),
     {"matrix", "DIR", "load matrix/data/*.csv from DIR instead of the built-in matrix", Kind::dir},
     {"python", "EXE", kPythonHelp}},
    {{"json", "print the result as one JSON object (gpucts.check)"},
     {"strict-defects", "a known NCCL or torch defect of the releases in use is an error, not a warning"},
     {"job-ranks",
      "the fingerprints are the ranks of one job, in rank order: also compare GPU placement, "
      "environment and interfaces across them (gpucts' preflight)"},
     {"no-python", "do not probe torch and Lightning through python (a Slurm prolog, a node without torch)"}},
    "usage: gpucts check [OPTIONS]\n"
    "Checks fingerprints (default: a probe of this machine) against the compatibility matrix\n"
    "(default: the one built in). Several --fingerprint files are each checked alone and all against\n"
    "each other. A known NCCL or torch defect matched by version alone is a warning that names the\n"
    "cases it hits and its fix (most work never meets the condition); --strict-defects makes it an error.\n"
    "With --job-ranks the fingerprints are the ranks of one job (annotated by gpucts_check_ranks or the\n"
    "gpucts_preflight package): two ranks on one GPU, more ranks than GPUs, NCCL_* settings that differ,\n"
    "an NCCL_SOCKET_IFNAME selecting nothing are findings too. Under an MPI launcher with several ranks\n"
    "every rank probes itself and rank 0 prints one report (gpucts_check_ranks).\n"
    "Exit status: 0 no error finding, 1 at least one error finding, 2 bad input."};

namespace {

// A data folder given with --matrix is checked whole: its bandwidth thresholds (no matrix file,
// read by the perf suite) too, so an edit there is refused here, naming file and line, not first
// met by a GPU run. A folder without them is fine: the thresholds built in stay in force.
void check_thresholds_beside(const std::string& dir) {
  const std::string path = dir + "/bandwidth_thresholds.csv";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return;
  try {
    bw::parse_thresholds(read_input_file(path, std::size_t{16} << 20), path);
  } catch (const InputError& e) {
    throw UsageError(std::string("matrix: ") + e.what());
  } catch (const bw::BandwidthError& e) {
    throw UsageError(std::string("matrix: ") + e.what());
  }
}

}  // namespace

int cmd_check(const Args& a) {
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional().front() + "'");
  // Refused before anything else, driver or none: a count that cannot be judged is no promise kept.
  if (auto why = expected_gpus_refusal()) throw UsageError(*why);
  // Everything is read and parsed before anything is evaluated: bad input never half-reports.
  Matrix loaded;
  const Matrix* m = nullptr;
  try {
    if (auto dir = a.value("matrix")) {
      loaded = load_matrix_dir(*dir);
      m = &loaded;
      check_thresholds_beside(*dir);
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
  const ProbeOptions probe = python_probe_options(a);
  if (a.values("fingerprint").empty()) {
    std::vector<std::string> pass;  // one of several MPI ranks: gpucts_check_ranks gathers them
    if (a.flag("json")) pass.push_back("--json");
    if (a.flag("strict-defects")) pass.push_back("--strict-defects");
    if (!probe.python) pass.push_back("--no-python");
    if (!probe.python_exe.empty()) pass.insert(pass.end(), {"--python", probe.python_exe});
    if (auto dir = a.value("matrix")) pass.insert(pass.end(), {"--matrix", *dir});
    exec_check_ranks_under_mpi(pass);
    fps.push_back(probe_fingerprint(probe));
  }
  return run_check(fps, *m, a.flag("json"), std::cout, opts, a.flag("job-ranks"));
}

}  // namespace cts::cli
