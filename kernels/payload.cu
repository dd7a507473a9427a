// Fill, expected, poison and the dispatch of the checks (verify_lo.cu / verify_hi.cu).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include <thrust/execution_policy.h>
#include <thrust/tabulate.h>

#include "kernels/payload_impl.cuh"

namespace cts {
namespace detail {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw KernelError(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

void wait_stream(cudaStream_t stream, double timeout_s, const char* what) {
  // Busy-polls the first 5 ms (a check of 1 GiB takes about 0.3 ms; a sleep costs 50-100 us of
  // timer slack each), then sleeps between polls.
  const auto start = std::chrono::steady_clock::now();
  const auto spin_until = start + std::chrono::milliseconds(5);
  const auto deadline = start + std::chrono::duration<double>(timeout_s);
  for (;;) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) cuda_check(e, what);
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline)
      throw KernelError(std::string(what) + ": stream not done after " + std::to_string(timeout_s) + " s");
    if (now > spin_until) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

CheckScratch& check_scratch() {
  static thread_local std::map<int, CheckScratch> per_device;
  int dev = 0;
  cuda_check(cudaGetDevice(&dev), "cudaGetDevice (verify)");
  CheckScratch& s = per_device[dev];
  if (!s.device) {
    cuda_check(cudaMalloc(&s.device, 256), "cudaMalloc (verify scratch)");
    cuda_check(cudaMallocHost(&s.host, 256), "cudaMallocHost (verify scratch)");
  }
  return s;
}

int resident_blocks(const void* kernel, int threads) {
  int n = 0;
  cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0), "occupancy");
  return n < 1 ? 1 : n;
}

unsigned grid_for(std::int64_t work, int threads, int blocks_per_sm) {
  static thread_local std::map<int, int> sms;
  int dev = 0;
  cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
  int& n = sms[dev];
  if (n == 0) cuda_check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev), "SM count");
  const std::int64_t blocks = (work + threads - 1) / threads;
  const std::int64_t cap = static_cast<std::int64_t>(n) * blocks_per_sm;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks < cap ? blocks : cap));
}

CheckSpec make_check_spec(const Pattern& p, const Expectation& e, const void* got, const void* expected) {
  CheckSpec s;
  s.g = p.params();
  s.kind = static_cast<int>(e.kind);
  s.base = e.base;
  s.block = e.block;
  s.src_rank = e.src_rank;
  s.u = unit_roundoff(p.dtype);
  s.denorm = dtype_info(p.dtype).is_float ? dtype_info(p.dtype).denorm_min : 0.0;
  s.got = got;
  s.expected = expected;
  if (e.kind == Expectation::Kind::copy && e.src_rank < 0 && e.block <= 0)
    throw KernelError("Expectation::blocks needs a block size > 0");
  return s;
}

// Rank's input over elements [begin, end) of one segment, 16 bytes per store from vbegin on (the
// misaligned head and the tail element by element).
template <DType D, bool Mixed>
__global__ void __launch_bounds__(256)
    fill_kernel(Exact<D> ex, GenParams g, int rank, storage_t<D>* out, std::int64_t begin,
                std::int64_t vbegin, std::int64_t nvec, std::int64_t end) {
  using S = storage_t<D>;
  using T = device_t<D>;
  constexpr int L = kLanes<D>;
  auto mixed = [&](std::uint32_t h) { return bit_cast_hd<S>(from_double<T>(raw_mixed_bits(g, rank, h))); };
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::uint32_t rank_bits = Exact<D>::rank_offset(rank);
  for_each_unvectorised(begin, vbegin, vbegin + nvec * L, end, tid, stride, [&](std::int64_t i) {
    out[i] = Mixed ? mixed(ex.bits0(i) + rank_bits) : ex.input1(rank, i);
  });
  uint4* vo = reinterpret_cast<uint4*>(out + vbegin);
  for (std::int64_t v = tid; v < nvec; v += stride) {
    const std::int64_t i0 = vbegin + v * L;
    if constexpr (Mixed) {
      const std::uint32_t h = ex.seg_bits(i0) + rank_bits;
      S s[L];
      CTS_UNROLL
      for (int k = 0; k < L; ++k) s[k] = mixed(h + static_cast<std::uint32_t>(k) * kIndexMul);
      vo[v] = pack_vec(s);
    } else {
      vo[v] = ex.fill_vec(rank, i0);
    }
  }
}

// Element-wise generators for Thrust (the materialised expectation, and a fill the vector path
// does not cover).
template <DType D>
struct ExpectedAt {
  Elem<D> e;
  __device__ device_t<D> operator()(std::int64_t i) const {
    double sa, ar;
    return from_double<device_t<D>>(e.reference(i, &sa, &ar));
  }
};
template <DType D>
struct InputAt {
  Elem<D> e;
  int rank;
  __device__ device_t<D> operator()(std::int64_t i) const {
    return from_double<device_t<D>>(e.input(rank, i));
  }
};

// thrust::tabulate on the stream, without a synchronisation; its errors as KernelError.
template <class T, class F>
void tabulate_on(cudaStream_t stream, T* out, std::int64_t n, F f, const char* what) {
  try {
    thrust::tabulate(thrust::cuda::par_nosync.on(stream), out, out + n, f);
  } catch (const std::exception& e) {
    throw KernelError(std::string(what) + ": " + e.what());
  }
  cuda_check(cudaGetLastError(), what);
}

}  // namespace detail

using namespace detail;

void fill_input(const Pattern& p, int rank, void* ptr, std::size_t count, cudaStream_t stream) {
  if (count == 0) return;
  const GenParams g = p.params();
  visit_dtype(p.dtype, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    using T = device_t<D>;
    constexpr int L = kLanes<D>;
    const std::int64_t n = static_cast<std::int64_t>(count);
    Exact<D> ex;
    const bool mixed = g.mode == static_cast<int>(PayloadMode::mixed);
    if (!mixed &&
        !make_exact(g, &ex)) {  // not a range the vector path forms: the reference, element by element
      CheckSpec s;
      s.g = g;
      tabulate_on(stream, static_cast<T*>(ptr), n, InputAt<D>{Elem<D>{s}, rank}, "fill_input");
      return;
    }
    ex.seed_mix = mix32(g.seed);
    auto* out = static_cast<storage_t<D>*>(ptr);
    ex.for_each_segment(n, [&](std::int64_t b, std::int64_t e, std::uint32_t seg) {
      ex.seg = seg;
      const VectorSplit v = vector_split(out + b, e - b, sizeof(T), L);
      const unsigned grid = grid_for(v.nvec + (e - b - v.nvec * L), 256);
      if (mixed)
        fill_kernel<D, true><<<grid, 256, 0, stream>>>(ex, g, rank, out, b, b + v.head, v.nvec, e);
      else
        fill_kernel<D, false><<<grid, 256, 0, stream>>>(ex, g, rank, out, b, b + v.head, v.nvec, e);
      cuda_check(cudaGetLastError(), "fill_input");
    });
  });
}

void fill_expected(const Pattern& p, const Expectation& e, void* ptr, std::size_t count,
                   cudaStream_t stream) {
  if (count == 0) return;
  const CheckSpec s = make_check_spec(p, e, nullptr, nullptr);
  visit_dtype(p.dtype, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    tabulate_on(stream, static_cast<device_t<D>*>(ptr), static_cast<std::int64_t>(count),
                ExpectedAt<D>{Elem<D>{s}}, "fill_expected");
  });
}

KernelBuild kernel_build() {
  cudaFuncAttributes a;
  cuda_check(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(&fill_kernel<DType::f32, false>)),
             "kernel_build");
  return {a.ptxVersion, a.binaryVersion};
}

static double g_kernel_load_s = 0;

double kernel_load_seconds() { return g_kernel_load_s; }

void preload_kernels() {
  const auto t0 = std::chrono::steady_clock::now();
  cudaFuncAttributes a;
  cuda_check(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(&fill_kernel<DType::f32, false>)),
             "preload (fill)");
  cuda_check(cudaFuncGetAttributes(&a, any_check_kernel_lo()), "preload (checks)");
  cuda_check(cudaFuncGetAttributes(&a, any_check_kernel_hi()), "preload (checks)");
  g_kernel_load_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void poison(void* ptr, std::size_t bytes, cudaStream_t stream) {
  if (bytes) cuda_check(cudaMemsetAsync(ptr, 0xFF, bytes, stream), "poison");
}

static CheckFn check_fn(DType d) {
  const auto i = static_cast<std::size_t>(d);
  return i < kCheckSplit ? check_fns_lo()[i] : check_fns_hi()[i - kCheckSplit];
}

VerifyResult verify(const Pattern& p, const Expectation& e, const void* got, std::size_t count,
                    cudaStream_t stream, double timeout_s) {
  if (count == 0) return {};
  return check_fn(p.dtype)(make_check_spec(p, e, got, nullptr), count, stream, timeout_s, CheckStage::full);
}

void enqueue_verify_kernels(const Pattern& p, const Expectation& e, const void* got, std::size_t count,
                            cudaStream_t stream) {
  if (count)
    check_fn(p.dtype)(make_check_spec(p, e, got, nullptr), count, stream, 0, CheckStage::kernels_only);
}

VerifyResult verify_equal(DType d, const void* got, const void* expected, std::size_t count,
                          cudaStream_t stream, double timeout_s) {
  Pattern p;
  p.dtype = d;
  return check_fn(d)(make_check_spec(p, Expectation::copy_from(0), got, expected), count, stream, timeout_s,
                     CheckStage::full);
}

void encode_value(DType d, double v, void* out) {
  visit_dtype(d, [&](auto tag) {
    const auto x = from_double<device_t<decltype(tag)::value>>(v);
    std::memcpy(out, &x, sizeof(x));
  });
}

double decode_value(DType d, const void* in) {
  return visit_dtype(d, [&](auto tag) {
    device_t<decltype(tag)::value> x;
    std::memcpy(&x, in, sizeof(x));
    return to_double(x);
  });
}

bool VerifyResult::unwritten_tail() const {
  return mismatches > 0 && poisoned == mismatches && first_bad >= 0 && last_bad == count - 1 &&
         static_cast<std::int64_t>(mismatches) == count - first_bad;
}

std::string VerifyResult::describe() const {
  if (mismatches == 0) return "no mismatch";
  std::ostringstream o;
  o.precision(17);
  if (unwritten_tail()) {
    o << "elements [" << first_bad << ", " << count << ") never written (poison value): " << mismatches
      << " of " << count << " element(s), the last " << mismatches << "; first expected " << expected;
    return o.str();
  }
  o << mismatches << " element(s) wrong of " << count << ", first at index " << first_bad << ": expected "
    << expected << " got " << got << "; last at index " << last_bad;
  if (poisoned) o << "; " << poisoned << " of them still hold the poison value (never written)";
  if (worst_ratio > 0 && worst_ratio < 1e299)
    o << " (worst |error|/bound " << worst_ratio << " at " << worst_index << ")";
  return o.str();
}

}  // namespace cts
