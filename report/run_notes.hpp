// What a person reads under the verdict besides its reasons (report/verdict.hpp decides those):
// the known NCCL defects that `gpucts check` matched by version alone, each with whether this run
// could test its condition, and what bounds the proof of some suites' results.
#pragma once
#include <string>
#include <vector>

#include "report/bundle.hpp"

namespace cts::summary {

// One line per known defect the check found for this NCCL that is a warning (not judged): its id,
// the library, what this run's cases showed of it, and unless `brief` (the summary, whose table
// has them) its title, the cases it needs and the fix.
std::vector<std::string> defect_warnings(const bundle::Bundle& b, bool brief = false);

// What bounds the proof of some suites' results, one line per kind of run: "simulated hosts
// (gpucts_mp_collectives_sim2, gpucts_torch_c10d_sim2): 2 simulated hosts on one GPU over ...".
std::vector<std::string> run_mode_notes(const bundle::Bundle& b);

}  // namespace cts::summary
