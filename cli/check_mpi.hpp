// `gpucts check` under an MPI launcher (mpirun -np N gpucts check, srun, Open MPI's ':' form). `gpucts`
// links no MPI, so it starts where MPI is absent: when an MPI launcher started it with several ranks it
// execs gpucts_check_ranks (libexec, built with the MPI bootstrap), which gathers every rank's
// fingerprint over MPI and has rank 0 run `gpucts check --fingerprint F... --job-ranks`.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace cts::cli {

// gpucts_check_ranks beside gpucts (build tree: ../fixtures/mpi; install tree: ../libexec/gpucts), or
// nullopt (a build without MPI).
std::optional<std::string> find_check_ranks();

// Execs gpucts_check_ranks with `check_args` (the options of `gpucts check` to pass on) when this
// process is one of several MPI ranks and the program is there; returns only when it does not exec
// (not under MPI, one rank, no such program: the caller runs the single-process check).
void exec_check_ranks_under_mpi(const std::vector<std::string>& check_args);

}  // namespace cts::cli
