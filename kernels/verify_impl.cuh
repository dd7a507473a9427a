// The one definition of the device check; included only by verify_lo.cu and verify_hi.cu, which
// instantiate it for their half of kDTypes.
//
// Memory-bound by construction, in two passes. Pass 1 (exact mode): a read-only stream, each
// thread of a grid sized to the resident capacity keeping kCheckUnroll 16-byte loads in flight
// (the misaligned head and the tail element by element), the expected vector from 32-bit integer
// arithmetic (Exact<D>) compared bit for bit; it only records the range of elements whose bits
// differ. Pass 2, only when that range is not empty (and for mixed mode and verify_equal):
// Elem<D> (the double reference, also run on the CPU) decides every element of it, so a bug in
// the fast path could cost time, never a wrong pass. Per thread: mismatch count, poisoned count,
// first and last bad index; one CUB block reduction and one set of atomics per block that saw any.
// The expected/got pair of the first bad index comes from a one-thread kernel, only when there is
// a mismatch.
#pragma once
#include <cub/block/block_reduce.cuh>
#include <cub/thread/thread_load.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cuda/functional>

#include "kernels/payload_impl.cuh"

namespace cts::detail {

// Zeroed before the check; every field only grows (atomicMax / atomicAdd), so one memset resets it.
struct DeviceVerdict {
  unsigned long long bad;
  unsigned long long poisoned;    // bad elements still holding the all-ones poison
  unsigned long long first_inv;   // ~first bad index (max of ~i = min of i); 0: none
  unsigned long long last_plus1;  // last bad index + 1; 0: none
  unsigned long long worst;       // float bits of the worst ratio << 32 | low 32 bits of its index
};

constexpr int kCheckThreads = 256;
struct ThreadVerdict {
  unsigned long long bad, poisoned, first_inv, last_plus1, worst;

  __device__ void add(std::int64_t i, const Acc& a, bool is_poison) {
    if (a.bad) {
      ++bad;
      if (is_poison) ++poisoned;
      const unsigned long long inv = ~static_cast<unsigned long long>(i);
      if (inv > first_inv) first_inv = inv;
      if (static_cast<unsigned long long>(i) + 1 > last_plus1)
        last_plus1 = static_cast<unsigned long long>(i) + 1;
    }
    if (a.worst > 0) {
      const float r = a.worst > 3e38 ? __int_as_float(0x7f800000) : static_cast<float>(a.worst);
      const unsigned long long packed =
          (static_cast<unsigned long long>(__float_as_uint(r)) << 32) | static_cast<std::uint32_t>(i);
      if (packed > worst) worst = packed;
    }
  }
};
// How two threads' verdicts combine: counts add, the index and ratio fields keep the maximum.
struct CombineVerdicts {
  __device__ ThreadVerdict operator()(const ThreadVerdict& a, const ThreadVerdict& b) const {
    const cuda::maximum<unsigned long long> mx;
    return {a.bad + b.bad, a.poisoned + b.poisoned, mx(a.first_inv, b.first_inv),
            mx(a.last_plus1, b.last_plus1), mx(a.worst, b.worst)};
  }
};

// One CUB block reduction per block, and only when some thread of it has something to report.
__device__ inline void publish(const ThreadVerdict& t, DeviceVerdict* out) {
  if (!__syncthreads_or(t.bad != 0 || t.worst != 0)) return;
  using BlockVerdict = cub::BlockReduce<ThreadVerdict, kCheckThreads>;
  __shared__ typename BlockVerdict::TempStorage scratch;
  const ThreadVerdict v = BlockVerdict(scratch).Reduce(t, CombineVerdicts{});
  if (threadIdx.x != 0) return;
  if (v.bad) {
    atomicAdd(&out->bad, v.bad);
    if (v.poisoned) atomicAdd(&out->poisoned, v.poisoned);
    atomicMax(&out->first_inv, v.first_inv);
    atomicMax(&out->last_plus1, v.last_plus1);
  }
  if (v.worst) atomicMax(&out->worst, v.worst);
}

__device__ inline bool differs(const uint4& x, const uint4& y) {
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

// Independent 16-byte loads per thread per iteration and blocks per SM the fast check is compiled
// for: 4 x 4 blocks x 256 threads keep 64 KiB of loads in flight per SM, 8 MiB over an H200 (about
// twice bandwidth x latency), at <= 64 registers; 1-byte types (16 lanes a vector) spill there, so
// 3 blocks (85 registers, 48 KiB in flight).
// The GPUCTS_CHECK_* macros exist for benchmark variants (bench/gpu_session.sh), not for users.
#ifndef GPUCTS_CHECK_UNROLL
#define GPUCTS_CHECK_UNROLL 4
#endif
#ifndef GPUCTS_CHECK_MIN_BLOCKS_1B
#define GPUCTS_CHECK_MIN_BLOCKS_1B 3
#endif
constexpr int kCheckUnroll = GPUCTS_CHECK_UNROLL;
template <DType D>
inline constexpr int kCheckMinBlocks = sizeof(device_t<D>) == 1 ? GPUCTS_CHECK_MIN_BLOCKS_1B : 4;

// Exact mode, pass 1, over elements [begin, end) of one segment: a pure read stream, vectors from
// vbegin on (16-byte aligned), the rest element by element. It only notes the lowest and highest
// element whose bits differ; pass 2 (check_general_kernel on that range) runs only when there is one.
template <DType D>
__global__ void __launch_bounds__(kCheckThreads, kCheckMinBlocks<D>)
    check_exact_kernel(Exact<D> ex, const storage_t<D>* __restrict__ got, std::int64_t begin,
                       std::int64_t vbegin, std::int64_t nvec, std::int64_t end, DeviceRange* out) {
  constexpr int L = kLanes<D>;
  long long lo = kNone, hi = -1;
  auto note = [&](std::int64_t first, std::int64_t last) {
    lo = first < lo ? first : lo;
    hi = last > hi ? last : hi;
  };
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for_each_unvectorised(begin, vbegin, vbegin + nvec * L, end, tid, stride, [&](std::int64_t i) {
    if (got[i] != ex.expected1(i)) note(i, i);
  });
  const uint4* vg = reinterpret_cast<const uint4*>(got + vbegin);
  std::int64_t v = tid;
  for (; v + (kCheckUnroll - 1) * stride < nvec; v += kCheckUnroll * stride) {
    uint4 x[kCheckUnroll];
    CTS_UNROLL
    for (int u = 0; u < kCheckUnroll; ++u) x[u] = cub::ThreadLoad<cub::LOAD_CS>(vg + v + u * stride);
    CTS_UNROLL
    for (int u = 0; u < kCheckUnroll; ++u) {
      const std::int64_t i0 = vbegin + (v + u * stride) * L;
      if (differs(x[u], ex.expected_vec(i0))) note(i0, i0 + L - 1);
    }
  }
  for (; v < nvec; v += stride) {
    const std::int64_t i0 = vbegin + v * L;
    if (differs(cub::ThreadLoad<cub::LOAD_CS>(vg + v), ex.expected_vec(i0))) note(i0, i0 + L - 1);
  }
  // only in a block that saw a difference: a warp reduction and two atomics per warp
  if (!__syncthreads_or(hi >= 0)) return;
  using WarpMax = cub::WarpReduce<unsigned long long>;
  __shared__ typename WarpMax::TempStorage scratch[2][kCheckThreads / 32];
  const int warp = threadIdx.x / 32;
  const cuda::maximum<unsigned long long> mx;
  const unsigned long long inv =
      WarpMax(scratch[0][warp]).Reduce(hi >= 0 ? ~static_cast<unsigned long long>(lo) : 0ULL, mx);
  const unsigned long long last =
      WarpMax(scratch[1][warp]).Reduce(static_cast<unsigned long long>(hi + 1), mx);
  if ((threadIdx.x & 31) == 0 && last) {
    atomicMax(&out->first_inv, inv);
    atomicMax(&out->last_plus1, last);
  }
}

// Mixed mode, verify_equal and anything the fast path does not cover: Elem<D> per element.
template <DType D>
__global__ void __launch_bounds__(kCheckThreads)
    check_general_kernel(Elem<D> elem, std::int64_t begin, std::int64_t end, DeviceVerdict* out) {
  using S = storage_t<D>;
  const S* got = static_cast<const S*>(elem.s.got);
  ThreadVerdict tv{};
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = begin + static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < end;
       i += stride)
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
VerifyResult run_check(const CheckSpec& spec, std::size_t count, cudaStream_t stream, double timeout_s,
                       CheckStage stage) {
  VerifyResult r;
  r.count = static_cast<std::int64_t>(count);
  if (count == 0) return r;
  Elem<D> elem{spec};
  CheckScratch& scratch = check_scratch();
  DeviceVerdict* d_out = static_cast<DeviceVerdict*>(scratch.device);
  double* d_vals = reinterpret_cast<double*>(static_cast<char*>(scratch.device) + 64);
  DeviceRange* d_range = reinterpret_cast<DeviceRange*>(static_cast<char*>(scratch.device) + 128);
  static_assert(sizeof(DeviceVerdict) <= 64 && sizeof(DeviceRange) <= 128, "verify scratch layout");
  cuda_check(cudaMemsetAsync(scratch.device, 0, 128 + sizeof(DeviceRange), stream),
             "verify (reset)");  // verdict and range
  const std::int64_t n = static_cast<std::int64_t>(count);
  Exact<D> ex;
  std::int64_t begin = 0, end = n;  // what Elem has to decide
  const bool fast = make_exact(spec, &ex);
  if (!fast && stage == CheckStage::kernels_only)
    throw KernelError(
        "enqueue_verify_kernels: this pattern has no exact-mode pass (mixed mode, or a range it does not "
        "form)");
  if (fast) {
    constexpr int L = kLanes<D>;
    static const int per_sm =
        resident_blocks(reinterpret_cast<const void*>(&check_exact_kernel<D>), kCheckThreads);
    const auto* got = static_cast<const storage_t<D>*>(spec.got);
    ex.for_each_segment(n, [&](std::int64_t b, std::int64_t e, std::uint32_t seg) {
      Exact<D> piece = ex;
      piece.seg = seg;
      const VectorSplit v = vector_split(got + b, e - b, sizeof(device_t<D>), L);
      const std::int64_t want =
          (v.nvec + kCheckUnroll - 1) / kCheckUnroll + (e - b - v.nvec * L);  // threads with work
      check_exact_kernel<D><<<grid_for(want, kCheckThreads, per_sm), kCheckThreads, 0, stream>>>(
          piece, got, b, b + v.head, v.nvec, e, d_range);
      cuda_check(cudaGetLastError(), "verify (launch)");
    });
    if (stage == CheckStage::kernels_only) return r;
    DeviceRange* hr = reinterpret_cast<DeviceRange*>(static_cast<char*>(scratch.host) + 128);
    cuda_check(cudaMemcpyAsync(hr, d_range, sizeof(DeviceRange), cudaMemcpyDeviceToHost, stream),
               "verify (range)");
    wait_stream(stream, timeout_s, "verify");
    if (hr->last_plus1 == 0) return r;  // every bit as expected: nothing for Elem to decide
    begin = static_cast<std::int64_t>(~hr->first_inv);
    end = static_cast<std::int64_t>(hr->last_plus1);
  }
  check_general_kernel<D>
      <<<grid_for(end - begin, kCheckThreads), kCheckThreads, 0, stream>>>(elem, begin, end, d_out);
  cuda_check(cudaGetLastError(), "verify (launch)");
  DeviceVerdict* h = static_cast<DeviceVerdict*>(scratch.host);
  cuda_check(cudaMemcpyAsync(h, d_out, sizeof(DeviceVerdict), cudaMemcpyDeviceToHost, stream),
             "verify (result)");
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
