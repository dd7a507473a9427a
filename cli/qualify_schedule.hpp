#pragma once
// Suites side by side: `gpucts qualify --jobs N` runs up to N entries at once, in list order, while an
// entry that must have the machine to itself (its timings are the result) runs alone.
#include <cstddef>
#include <functional>

namespace cts::qualify {

// Calls run(i) for i in [0, n), each once: up to `jobs` calls at a time on threads of their own,
// except where alone(i), which waits until nothing runs and then runs with nothing beside it.
// Starts follow the order of i. Returns when every call has returned; the first exception a call
// threw is rethrown then.
void run_side_by_side(std::size_t n, int jobs, const std::function<bool(std::size_t)>& alone,
                      const std::function<void(std::size_t)>& run);

}  // namespace cts::qualify
