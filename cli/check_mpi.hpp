// `gpucts check` under an MPI launcher (mpirun -np N gpucts check, srun, Open MPI's ':' form):
// every rank probes itself, rank 0 gathers the fingerprints, evaluates them together (the matrix
// rules incl. cross-host-mismatch, plus the preflight's GPU/placement/environment comparisons),
// prints the one report, and every rank exits with the same status.
#pragma once
#include <optional>

#include "matrix/matrix.hpp"
#include "matrix/rules.hpp"

namespace cts::cli {

// The exit status every rank returns, or nullopt when this process is not one of several MPI
// ranks (or the build has no MPI): then the caller runs the single-process check.
// `python`: whether each rank's probe asks python3 for torch and Lightning (--no-python: no).
std::optional<int> check_over_mpi(const Matrix& m, bool json, const CheckOptions& opts = {},
                                  bool python = true);

}  // namespace cts::cli
