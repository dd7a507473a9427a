// The one definition of the device check; included only by verify_lo.cu and verify_hi.cu, which
// instantiate it for their half of kDTypes.
//
// Memory-bound by construction, in two passes. Pass 1 (exact mode): a read-only stream, each
// thread of a grid sized to the resident capacity keeping kCheckUnroll<D> 16-byte loads in flight
// (the misaligned head and the tail element by element), the expected vector from 32-bit integer
// arithmetic (Exact<D>) compared bit for bit; it only records the range of elements whose bits
// differ. Pass 2, only when that range is not empty (and for mixed mode and verify_equal):
// Elem<D> (the double reference, also run on the CPU) decides every element of it, so a bug in
// the fast path could cost time, never a wrong pass. Per thread: mismatch count, poisoned count,
// first and last bad index; one block reduction and one set of atomics per block that saw any.
// The expected/got pair of the first bad index comes from a one-thread kernel, only when there is
// a mismatch.
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
__device__ inline bool differs(const uint4& x, const V& b) {
  const uint4 y = bit_cast_hd<uint4>(b);
  return ((x.x ^ y.x) | (x.y ^ y.y) | (x.z ^ y.z) | (x.w ^ y.w)) != 0U;
}

template <DType D>
__device__ inline bool is_poison_bits(storage_t<D> b) {
  return b == static_cast<storage_t<D>>(~storage_t<D>(0));
}

// Where the fast check saw differing bits: [~first_inv, last_plus1) in elements (0: nowhere).
struct DeviceRange {
  unsigned long long first_inv;
  unsigned long long last_plus1;
};

// Blocks per SM the fast check is compiled for, and independent 16-byte loads per thread per
// iteration: 4 blocks x 4 loads (64 registers, 1024 threads, 64 KiB of loads in flight per SM,
// 8 MiB over the GPU: twice bandwidth x latency). 1-byte types build 16 lanes per vector and spill
// below ~105 registers, so 2 blocks x 8 loads (128 registers, 512 threads, again 64 KiB); 2-byte
// types spill at 64, so 3 blocks (72 registers, 768 threads, 48 KiB).
template <DType D>
inline constexpr int kCheckMinBlocks = sizeof(device_t<D>) == 1 ? 2 : (sizeof(device_t<D>) == 2 ? 3 : 4);
template <DType D>
inline constexpr int kCheckUnroll = sizeof(device_t<D>) == 1 ? 8 : 4;

// Exact mode, pass 1: a pure read stream. Each thread keeps kCheckUnroll<D> 16-byte loads in flight,
// builds the expected vectors with Exact<D> (integer ops) and only notes the lowest and highest
// element whose bits differ; no call, no address-taken local, so nothing lands in local memory.
// Pass 2 (check_general_kernel on that range, Elem per element) runs only when there is one.
template <DType D>
__global__ void __launch_bounds__(kCheckThreads, kCheckMinBlocks<D>) check_exact_kernel(Exact<D> ex, const storage_t<D>* __restrict__ got,
                                                                       std::int64_t head, std::int64_t nvec,
                                                                       std::int64_t count, DeviceRange* out) {
  using S = storage_t<D>;
  constexpr int L = kLanes<D>;
  struct alignas(16) Vec { S s[L]; };
  long long lo = kNone, hi = -1;
  auto note = [&](std::int64_t first, std::int64_t last) {
    lo = first < lo ? first : lo;
    hi = last > hi ? last : hi;
  };
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t body_end = head + nvec * L;
  for (std::int64_t i = tid; i < count; i += stride) {  // misaligned head and the tail
    const std::int64_t j = i < head ? i : body_end + (i - head);
    if (j >= count) break;
    S e[1];
    ex.template expected<1>(j, e);
    if (got[j] != e[0]) note(j, j);
  }
  const uint4* vg = reinterpret_cast<const uint4*>(got + head);
  std::int64_t v = tid;
  for (; v + (kCheckUnroll<D> - 1) * stride < nvec; v += kCheckUnroll<D> * stride) {
    uint4 x[kCheckUnroll<D>];
#pragma unroll
    for (int u = 0; u < kCheckUnroll<D>; ++u) x[u] = __ldcs(vg + v + u * stride);
#pragma unroll
    for (int u = 0; u < kCheckUnroll<D>; ++u) {
      const std::int64_t i0 = head + (v + u * stride) * L;
      Vec e;
      ex.template expected<L>(i0, e.s);
      if (differs(x[u], e)) note(i0, i0 + L - 1);
    }
  }
  for (; v < nvec; v += stride) {
    const uint4 x = __ldcs(vg + v);
    const std::int64_t i0 = head + v * L;
    Vec e;
    ex.template expected<L>(i0, e.s);
    if (differs(x, e)) note(i0, i0 + L - 1);
  }
  // only in a block that saw a difference: a warp reduction and two atomics per warp
  if (!__syncthreads_or(hi >= 0)) return;
  const unsigned long long inv = warp_max(hi >= 0 ? ~static_cast<unsigned long long>(lo) : 0ULL);
  const unsigned long long last = warp_max(static_cast<unsigned long long>(hi + 1));
  if ((threadIdx.x & 31) == 0 && last) {
    atomicMax(&out->first_inv, inv);
    atomicMax(&out->last_plus1, last);
  }
}

// Mixed mode, verify_equal and anything the fast path does not cover: Elem<D> per element.
template <DType D>
__global__ void __launch_bounds__(kCheckThreads) check_general_kernel(Elem<D> elem, std::int64_t begin, std::int64_t end,
                                                                     DeviceVerdict* out) {
  using S = storage_t<D>;
  const S* got = static_cast<const S*>(elem.s.got);
  ThreadVerdict tv;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = begin + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < end; i += stride)
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
  DeviceRange* d_range = reinterpret_cast<DeviceRange*>(static_cast<char*>(scratch.device) + 128);
  static_assert(sizeof(DeviceVerdict) <= 64 && sizeof(DeviceRange) <= 128, "verify scratch layout");
  cuda_check(cudaMemsetAsync(scratch.device, 0, 128 + sizeof(DeviceRange), stream), "verify (reset)");  // verdict and range
  const std::int64_t n = static_cast<std::int64_t>(count);
  Exact<D> ex;
  std::int64_t begin = 0, end = n;  // what Elem has to decide
  if (make_exact(spec, &ex)) {
    constexpr int L = kLanes<D>;
    const VectorSplit v = vector_split(spec.got, n, sizeof(device_t<D>), L);
    static const int per_sm = resident_blocks(reinterpret_cast<const void*>(&check_exact_kernel<D>), kCheckThreads);
    const std::int64_t want = (v.nvec + kCheckUnroll<D> - 1) / kCheckUnroll<D> + (n - v.nvec * L);  // threads with work
    check_exact_kernel<D><<<grid_for(want, kCheckThreads, per_sm), kCheckThreads, 0, stream>>>(
        ex, static_cast<const storage_t<D>*>(spec.got), v.head, v.nvec, n, d_range);
    cuda_check(cudaGetLastError(), "verify (launch)");
    DeviceRange* hr = reinterpret_cast<DeviceRange*>(static_cast<char*>(scratch.host) + 128);
    cuda_check(cudaMemcpyAsync(hr, d_range, sizeof(DeviceRange), cudaMemcpyDeviceToHost, stream), "verify (range)");
    wait_stream(stream, timeout_s, "verify");
    if (hr->last_plus1 == 0) return r;  // every bit as expected: nothing for Elem to decide
    begin = static_cast<std::int64_t>(~hr->first_inv);
    end = static_cast<std::int64_t>(hr->last_plus1);
  }
  check_general_kernel<D><<<grid_for(end - begin, kCheckThreads), kCheckThreads, 0, stream>>>(elem, begin, end, d_out);
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
