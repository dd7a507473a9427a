// What a bundle's verdict rests on, in lines a person reads right under it (the CLI and the
// summary print the same): for FAIL the failed suites, the error findings by id, the bandwidth
// points below threshold; for NO GPU why no GPU was seen; for a waived pass what was waived. And
// the known NCCL defects that `gpucts check` matched by version alone, each with whether this run
// could test its condition.
#pragma once
#include <string>
#include <vector>

#include "report/bundle.hpp"

namespace cts::summary {

// The reasons of the verdict, most important first; none for a plain PASS.
std::vector<std::string> verdict_reasons(const bundle::Bundle& b);

// One line per known defect the check found for this NCCL that is a warning (not judged): its id,
// the library, what this run's cases showed of it, and unless `brief` (the summary, whose table
// has them) its title, the cases it needs and the fix.
std::vector<std::string> defect_warnings(const bundle::Bundle& b, bool brief = false);

// What bounds the proof of some suites' results, one line per kind of run: "simulated hosts
// (gpucts_mp_collectives_sim2, gpucts_torch_c10d_sim2): 2 simulated hosts on one GPU over ...".
std::vector<std::string> run_mode_notes(const bundle::Bundle& b);

// The suites whose every failure was waived (--accept-known): "passed with waivers".
bool suite_passed_with_waivers(const bundle::Bundle& b, const bundle::SuiteRun& s);

}  // namespace cts::summary
