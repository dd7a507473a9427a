// The one definition of the device check; included only by verify_lo.cu and verify_hi.cu, which
// instantiate it for their half of kDTypes.
//
// Memory-bound by construction: each thread of a grid sized to the SM count reads 16-byte vectors
// of the output (the misaligned head and the tail element by element), derives the expected
// vector with 32-bit integer arithmetic (Exact<D>) and compares bits. Only a vector that differs
// goes to Elem<D> (the double reference, also run on the CPU) for the verdict, so a bug in the
// fast path could cost time, never a wrong pass. Per thread: mismatch count, poisoned count,
// first and last bad index; one block reduction and one set of atomics per block that saw any.
// The expected/got pair of the first bad index comes from a second one-thread kernel, only when
// there is a mismatch.
#pragma once
#include "payload_impl.cuh"

namespace cts::detail {

// Zeroed before the check; every field only grows (atomicMax / atomicAdd), so one memset resets it.
struct DeviceVerdict {
  unsigned long long bad;
  unsigned long long poisoned;     // bad elements still holding the all-ones poison
  unsigned long long first_inv;    // ~first bad index (max of ~i = min of i); 0: none
  unsigned long long last_plus1;   // last bad index + 1; 0: none
  unsigned long long worst;        // float bits of the worst ratio << 32 | low 32 bits of its index
};

constexpr int kCheckThreads = 256;
// Blocks per SM the exact check is compiled for (registers <= 64K / (256 * blocks)): 4 keeps
// 2048 16-byte loads in flight per SM; 1-byte types need more registers for their 16 lanes and
// would spill at 4, so they run 3.
template <DType D>
inline constexpr int kCheckMinBlocks = sizeof(device_t<D>) == 1 ? 3 : 4;

struct ThreadVerdict {
  unsigned long long bad = 0, poisoned = 0, first_inv = 0, last_plus1 = 0, worst = 0;

  __device__ void add(std::int64_t i, const Acc& a, bool is_poison) {
    if (a.bad) {
      ++bad;
      if (is_poison) ++poisoned;
      const unsigned long long inv = ~static_cast<unsigned long long>(i);
      if (inv > first_inv) first_inv = inv;
      if (static_cast<unsigned long long>(i) + 1 > last_plus1) last_plus1 = static_cast<unsigned long long>(i) + 1;
    }
    if (a.worst > 0) {
      const float r = a.worst > 3e38 ? __int_as_float(0x7f800000) : static_cast<float>(a.worst);
      const unsigned long long packed =
          (static_cast<unsigned long long>(__float_as_uint(r)) << 32) | static_cast<std::uint32_t>(i);
      if (packed > worst) worst = packed;
    }
  }
};

__device__ inline unsigned long long warp_max(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long w = __shfl_xor_sync(0xffffffffU, v, o);
    v = w > v ? w : v;
  }
  return v;
}
__device__ inline unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffU, v, o);
  return v;
}

// One reduction per block, and only when some thread of it has something to report.
__device__ inline void publish(const ThreadVerdict& t, DeviceVerdict* out) {
  if (!__syncthreads_or(t.bad != 0 || t.worst != 0)) return;
  __shared__ unsigned long long sh[5][kCheckThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned long long v[5] = {warp_sum(t.bad), warp_sum(t.poisoned), warp_max(t.first_inv), warp_max(t.last_plus1),
                             warp_max(t.worst)};
  if (lane == 0)
    for (int f = 0; f < 5; ++f) sh[f][warp] = v[f];
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kCheckThreads / 32; ++w) {
      v[0] += sh[0][w];
      v[1] += sh[1][w];
      for (int f = 2; f < 5; ++f) v[f] = sh[f][w] > v[f] ? sh[f][w] : v[f];
    }
    if (v[0]) {
      atomicAdd(&out->bad, v[0]);
      if (v[1]) atomicAdd(&out->poisoned, v[1]);
      atomicMax(&out->first_inv, v[2]);
      atomicMax(&out->last_plus1, v[3]);
    }
    if (v[4]) atomicMax(&out->worst, v[4]);
  }
}

template <class V>
__device__ inline bool differs(const V& a, const V& b) {
  const uint4 x = bit_cast_hd<uint4>(a), y = bit_cast_hd<uint4>(b);
  return ((x.x ^ y.x) | (x.y ^ y.y) | (x.z ^ y.z) | (x.w ^ y.w)) != 0U;
}

template <DType D>
__device__ inline bool is_poison_bits(storage_t<D> b) {
  return b == static_cast<storage_t<D>>(~storage_t<D>(0));
}

// The verdict of n elements whose bits differ somewhere: Elem<D> decides each (a -0 for +0 is
// fine, anything else is not). Out of line, so the rare slow path does not cost the fast loop
// registers (occupancy, hence loads in flight).
template <DType D>
__device__ __noinline__ void check_lanes(const Elem<D>& elem, std::int64_t i0, const storage_t<D>* got,
                                         const storage_t<D>* expected, int n, ThreadVerdict& tv) {
  for (int k = 0; k < n; ++k)
    if (got[k] != expected[k]) tv.add(i0 + k, elem(i0 + k), is_poison_bits<D>(got[k]));
}

// Exact mode: vectors of the output against Exact<D>; Elem<D> only where bits differ.
template <DType D>
__global__ void __launch_bounds__(kCheckThreads, kCheckMinBlocks<D>) check_exact_kernel(Elem<D> elem, Exact<D> ex, std::int64_t head,
                                                                   std::int64_t nvec, std::int64_t count,
                                                                   DeviceVerdict* out) {
  using S = storage_t<D>;
  constexpr int L = kLanes<D>;
  struct alignas(16) Vec { S s[L]; };
  const S* got = static_cast<const S*>(elem.s.got);
  ThreadVerdict tv;
  auto slow = [&](std::int64_t i, S g, S e) {
    if (g != e) check_lanes<D>(elem, i, &g, &e, 1, tv);
  };
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t body_end = head + nvec * L;
  // misaligned head and the tail: element by element
  for (std::int64_t i = tid; i < head; i += stride) {
    S e[1];
    ex.template expected<1>(i, e);
    slow(i, got[i], e[0]);
  }
  for (std::int64_t i = body_end + tid; i < count; i += stride) {
    S e[1];
    ex.template expected<1>(i, e);
    slow(i, got[i], e[0]);
  }
  const Vec* vg = reinterpret_cast<const Vec*>(got + head);
  // two vectors in flight per thread
  for (std::int64_t v = tid; v < nvec; v += 2 * stride) {
    const bool second = v + stride < nvec;
    const Vec a = vg[v];
    Vec b;
    if (second) b = vg[v + stride];
    Vec ea;
    ex.template expected<L>(head + v * L, ea.s);
    if (differs(a, ea)) check_lanes<D>(elem, head + v * L, a.s, ea.s, L, tv);
    if (second) {
      Vec eb;
      ex.template expected<L>(head + (v + stride) * L, eb.s);
      if (differs(b, eb)) check_lanes<D>(elem, head + (v + stride) * L, b.s, eb.s, L, tv);
    }
  }
  publish(tv, out);
}

// Mixed mode, verify_equal and anything the fast path does not cover: Elem<D> per element.
template <DType D>
__global__ void __launch_bounds__(kCheckThreads) check_general_kernel(Elem<D> elem, std::int64_t count,
                                                                     DeviceVerdict* out) {
  using S = storage_t<D>;
  const S* got = static_cast<const S*>(elem.s.got);
  ThreadVerdict tv;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    tv.add(i, elem(i), is_poison_bits<D>(got[i]));
  publish(tv, out);
}

template <DType D>
__global__ void describe_kernel(Elem<D> e, std::int64_t i, double* vals) {
  double bound = 0;
  vals[0] = e.expected_at(i, &bound);
  vals[1] = e.got_at(i);
}

template <DType D>
VerifyResult run_check(const CheckSpec& spec, std::size_t count, cudaStream_t stream, double timeout_s) {
  VerifyResult r;
  r.count = static_cast<std::int64_t>(count);
  if (count == 0) return r;
  Elem<D> elem{spec};
  CheckScratch& scratch = check_scratch();
  DeviceVerdict* d_out = static_cast<DeviceVerdict*>(scratch.device);
  double* d_vals = reinterpret_cast<double*>(static_cast<char*>(scratch.device) + 64);
  cuda_check(cudaMemsetAsync(d_out, 0, sizeof(DeviceVerdict), stream), "verify (reset)");
  const std::int64_t n = static_cast<std::int64_t>(count);
  Exact<D> ex;
  if (make_exact(spec, &ex)) {
    constexpr int L = kLanes<D>;
    const VectorSplit v = vector_split(spec.got, n, sizeof(device_t<D>), L);
    const std::int64_t head = v.head, nvec = v.nvec;
    const std::int64_t want = (nvec + 1) / 2 + (n - nvec * L);  // threads with work
    check_exact_kernel<D><<<grid_for(want, kCheckThreads), kCheckThreads, 0, stream>>>(elem, ex, head, nvec, n, d_out);
  } else {
    check_general_kernel<D><<<grid_for(n, kCheckThreads), kCheckThreads, 0, stream>>>(elem, n, d_out);
  }
  cuda_check(cudaGetLastError(), "verify (launch)");
  DeviceVerdict* h = static_cast<DeviceVerdict*>(scratch.host);
  cuda_check(cudaMemcpyAsync(h, d_out, sizeof(DeviceVerdict), cudaMemcpyDeviceToHost, stream), "verify (result)");
  wait_stream(stream, timeout_s, "verify");
  r.mismatches = h->bad;
  r.poisoned = h->poisoned;
  if (h->worst) {
    const float ratio = bit_cast_hd<float>(static_cast<std::uint32_t>(h->worst >> 32));
    r.worst_ratio = ratio > 3e38f ? 1e300 : ratio;
    r.worst_index = count <= 0xFFFFFFFFULL ? static_cast<std::int64_t>(h->worst & 0xFFFFFFFFULL) : -1;
  }
  if (h->bad > 0) {
    r.first_bad = static_cast<std::int64_t>(~h->first_inv);
    r.last_bad = static_cast<std::int64_t>(h->last_plus1) - 1;
    describe_kernel<D><<<1, 1, 0, stream>>>(elem, r.first_bad, d_vals);
    cuda_check(cudaGetLastError(), "verify (describe)");
    cuda_check(cudaMemcpyAsync(static_cast<char*>(scratch.host) + 64, d_vals, 2 * sizeof(double),
                               cudaMemcpyDeviceToHost, stream),
               "verify (describe result)");
    wait_stream(stream, timeout_s, "verify (describe)");
    const double* vals = reinterpret_cast<const double*>(static_cast<char*>(scratch.host) + 64);
    r.expected = vals[0];
    r.got = vals[1];
  }
  return r;
}

}  // namespace cts::detail
