// The report of `gpucts check`, shared by the single-process command (cmd_check.cpp) and any
// multi-rank variant that gathers fingerprints itself (for example over MPI) and then calls
// run_check on rank 0.
#pragma once
#include <ostream>
#include <vector>

#include "matrix/fingerprint.hpp"
#include "matrix/matrix.hpp"
#include "matrix/rules.hpp"

namespace cts::cli {

// Evaluates `fps` against `m` and prints the report: with `json` the contract's one object, else a
// table a person reads at a glance (one line per finding, errors first, each with what to do).
// Returns the exit status of the contract: 0 no error finding, 1 at least one.
// With `job_ranks` the fingerprints are the ranks of one job in rank order: the preflight's
// cross-rank comparisons (GPU placement, environment, interfaces) are findings too, and a table says
// when the ranks are simulated hosts (NCCL_HOSTID).
int run_check(const std::vector<Fingerprint>& fps, const Matrix& m, bool json, std::ostream& out,
              const CheckOptions& opts = {}, bool job_ranks = false);

// The human table alone (used by run_check): a header with the verdict, one "checked" line per
// input (the stack it saw), then one line per finding, errors first, each with what to do.
void print_check_table(const CheckResult& r, const Matrix& m, const std::vector<Fingerprint>& fps,
                       std::ostream& out);

}  // namespace cts::cli
