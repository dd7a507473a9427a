// CPU seconds this process has used: the measure of the complexity guards (a computation that must
// stay near linear in its input). Other programs loading the machine stretch wall time, not this.
#pragma once

#include <time.h>

namespace cts::test {

inline double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace cts::test
