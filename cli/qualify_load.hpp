// Whether a suite's programs load on this machine before `gpucts qualify` runs them: an install
// tree copied to another machine may lack a library its suites were linked against (a libtorch of
// the build machine). Such an entry is not run, with the library and what it came from named.
#pragma once
#include <map>
#include <string>

#include "cli/qualify_run.hpp"

namespace cts::qualify {

// "<library name prefix>=<what the build linked>" lines, e.g. "libtorch=libtorch 1.13.0", written
// by the build (gpucts_built_against.txt beside gpucts_gpu_needs.txt). Missing file: empty map.
std::map<std::string, std::string> read_built_against(const std::string& file);
// Where the tree keeps that file: <build>/ or <prefix>/share/gpucts/ (beside tests.json).
std::string built_against_file(const Tree& t);

// The libraries the dynamic loader cannot find for `program`, in order ("libx.so.1"), read from
// the loader's own listing (LD_TRACE_LOADED_OBJECTS, what ldd does). Empty when it loads, when it
// is not a dynamically linked ELF program, or when the listing cannot be had.
std::vector<std::string> missing_libraries(const std::string& program);

// "" when every program the entry starts (its command and any argument naming an executable file,
// the suite under mpiexec) loads here; else "needs libtorch_cpu.so.1.13 (built against libtorch
// 1.13.0), absent here", the bracket from `built_against` (longest prefix of the library's name).
std::string unloadable_reason(const TestEntry& e, const std::map<std::string, std::string>& built_against);

}  // namespace cts::qualify
