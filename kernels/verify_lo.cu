// Checks of the first kCheckSplit rows of kDTypes (the integers); verify_hi.cu has the rest, so
// two cores build them in parallel.
#include "kernels/verify_impl.cuh"

namespace cts::detail {
const std::array<CheckFn, kCheckSplit>& check_fns_lo() {
  static const auto table = check_table<0>(std::make_index_sequence<kCheckSplit>{});
  return table;
}
const void* any_check_kernel_lo() {
  return reinterpret_cast<const void*>(&check_exact_kernel<kDTypes[0].id>);
}
}  // namespace cts::detail
