// Device functors shared by the kernels' translation units: regenerate inputs, compute the
// expected element (closed form over all ranks), and check one element. Instantiated once per
// dtype, in payload.cu (fill, expected) and verify_lo.cu / verify_hi.cu (the checks).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "device_types.cuh"
#include "payload.hpp"

namespace cts::detail {

// Host-built description of one check; passed by value into the kernels.
struct CheckSpec {
  GenParams g;
  int kind = 0;               // Expectation::Kind
  std::int64_t base = 0, block = 0;
  int src_rank = -1;
  double u = 0, denorm = 0;   // dtype's unit roundoff and smallest subnormal (mixed mode)
  const void* got = nullptr;
  const void* expected = nullptr;  // verify_equal: compare with this buffer instead
};

// Per-element verdict, reduced over the buffer by cub::DeviceReduce::TransformReduce.
struct Acc {
  unsigned long long bad;
  long long first;   // INT64_MAX: none
  double worst;
  long long worst_idx;
};
struct AccJoin {
  __host__ __device__ Acc operator()(const Acc& a, const Acc& b) const {
    Acc r;
    r.bad = a.bad + b.bad;
    r.first = a.first < b.first ? a.first : b.first;
    const bool bw = b.worst > a.worst;
    r.worst = bw ? b.worst : a.worst;
    r.worst_idx = bw ? b.worst_idx : a.worst_idx;
    return r;
  }
};
inline constexpr long long kNone = 0x7fffffffffffffffLL;

template <DType D>
struct Elem {
  using T = device_t<D>;
  CheckSpec s;

  // Exact mode values are representable by construction: no round trip through T.
  __host__ __device__ double input(int rank, std::int64_t idx) const {
    if (s.g.mode == static_cast<int>(PayloadMode::exact)) return static_cast<double>(raw_int(s.g, rank, idx));
    return to_double(from_double<T>(raw_value(s.g, rank, idx)));
  }
  // fp64 reference of output element i (exact mode: exactly representable in T).
  __host__ __device__ double reference(std::int64_t i, double* sum_abs, double* abs_ref) const {
    const int op = s.g.op;
    const int n = s.g.nranks;
    if (s.kind == static_cast<int>(Expectation::Kind::copy)) {
      const int src = s.src_rank >= 0 ? s.src_rank : static_cast<int>(i / s.block);
      const std::int64_t j = s.src_rank >= 0 ? i : i % s.block;
      const double v = input(src, s.base + j);
      *sum_abs = v < 0 ? -v : v;
      *abs_ref = *sum_abs;
      return v;
    }
    double acc = (op == static_cast<int>(RedOp::prod)) ? 1.0 : 0.0;
    double sa = 0;
    for (int r = 0; r < n; ++r) {
      double x = input(r, s.base + i);
      if (op == static_cast<int>(RedOp::premulsum)) x *= s.g.scalar;
      sa += x < 0 ? -x : x;
      if (op == static_cast<int>(RedOp::prod)) acc *= x;
      else if (op == static_cast<int>(RedOp::max)) acc = (r == 0 || x > acc) ? x : acc;
      else if (op == static_cast<int>(RedOp::min)) acc = (r == 0 || x < acc) ? x : acc;
      else acc += x;
    }
    if (op == static_cast<int>(RedOp::avg)) {
      acc /= n;
      if (!dtype_info_is_float()) acc = acc < 0 ? -static_cast<double>(static_cast<long long>(-acc))
                                                : static_cast<double>(static_cast<long long>(acc));
    }
    *sum_abs = sa;
    *abs_ref = acc < 0 ? -acc : acc;
    return acc;
  }
  static constexpr bool dtype_info_is_float() { return kDTypes[static_cast<std::size_t>(D)].is_float; }

  __host__ __device__ double got_at(std::int64_t i) const { return to_double(static_cast<const T*>(s.got)[i]); }

  // expected value at i as the check sees it (mixed: the fp64 reference)
  __host__ __device__ double expected_at(std::int64_t i, double* bound) const {
    double sum_abs = 0, abs_ref = 0;
    if (s.expected) {
      *bound = 0;
      return to_double(static_cast<const T*>(s.expected)[i]);
    }
    const double ref = reference(i, &sum_abs, &abs_ref);
    if (s.g.mode == static_cast<int>(PayloadMode::mixed)) {
      *bound = mixed_bound(s.u, s.denorm, s.kind == static_cast<int>(Expectation::Kind::copy) ? -1 : s.g.op,
                           s.g.nranks, sum_abs, abs_ref);
      return ref;
    }
    *bound = 0;
    return ref;  // exact: representable, so a correct NCCL wrote exactly this
  }

  __host__ __device__ Acc operator()(std::int64_t i) const {
    double bound = 0;
    const double e = expected_at(i, &bound);
    const double g = got_at(i);
    double ratio;
    if (g == e) ratio = 0;
    else if (g != g || e != e) ratio = 1e300;  // NaN: poison left behind, or garbage
    else {
      const double err = g > e ? g - e : e - g;
      ratio = bound > 0 ? err / bound : 1e300;
    }
    const bool bad = ratio > 1.0;
    return Acc{bad ? 1ULL : 0ULL, bad ? static_cast<long long>(i) : kNone, ratio, static_cast<long long>(i)};
  }
};

CheckSpec make_check_spec(const Pattern& p, const Expectation& e, const void* got, const void* expected);

using CheckFn = VerifyResult (*)(const CheckSpec&, std::size_t, cudaStream_t, double);
template <DType D>
VerifyResult run_check(const CheckSpec& spec, std::size_t count, cudaStream_t stream, double timeout_s);

// Waits for the stream with a deadline; throws KernelError on timeout or error.
void wait_stream(cudaStream_t stream, double timeout_s, const char* what);
void cuda_check(cudaError_t e, const char* what);
// Keeps the current device's stream-ordered pool from returning memory at every synchronisation,
// so the per-verify cudaMallocAsync of CUB's scratch stays cheap. Once per device.
void retain_async_pool();

// The check functions of kDTypes[First .. First+N), one table per translation unit.
template <std::size_t First, std::size_t... I>
std::array<CheckFn, sizeof...(I)> check_table(std::index_sequence<I...>) {
  return {&run_check<kDTypes[First + I].id>...};
}
inline constexpr std::size_t kCheckSplit = 6;  // verify_lo.cu: integers, verify_hi.cu: floats
const std::array<CheckFn, kCheckSplit>& check_fns_lo();
const std::array<CheckFn, kNumDTypes - kCheckSplit>& check_fns_hi();

}  // namespace cts::detail
