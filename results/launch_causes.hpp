// What a launcher (mpirun, torchrun) printed when it failed before any test process ran: the
// known texts turned into one line naming the cause and its fix, for a suite with no results.
#pragma once
#include <string>
#include <string_view>

namespace cts {

// The cause of a failed launch found in `log` (a suite's output), or "" when none is known.
std::string launcher_cause(std::string_view log);

// The last `max_bytes` of a file (all of it when shorter); "" when it cannot be read.
std::string file_tail(const std::string& path, std::size_t max_bytes);

}  // namespace cts
