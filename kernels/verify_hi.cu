// Checks of rows kCheckSplit.. of kDTypes (the floating-point types); see verify_lo.cu.
#include "kernels/verify_impl.cuh"

namespace cts::detail {
const std::array<CheckFn, kNumDTypes - kCheckSplit>& check_fns_hi() {
  static const auto table = check_table<kCheckSplit>(std::make_index_sequence<kNumDTypes - kCheckSplit>{});
  return table;
}
const void* any_check_kernel_hi() {
  return reinterpret_cast<const void*>(&check_exact_kernel<kDTypes[kCheckSplit].id>);
}
}  // namespace cts::detail
