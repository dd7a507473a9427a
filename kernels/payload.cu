// Fill, expected, poison and the dispatch of the checks (verify_lo.cu / verify_hi.cu).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include "payload_impl.cuh"

namespace cts {
namespace detail {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw KernelError(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

void wait_stream(cudaStream_t stream, double timeout_s, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (int spin = 0;; ++spin) {
    cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) cuda_check(e, what);
    if (std::chrono::steady_clock::now() > deadline)
      throw KernelError(std::string(what) + ": stream not done after " + std::to_string(timeout_s) + " s");
    if (spin > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
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

// Rank's input, 16 bytes per store: the misaligned head and the tail element by element.
template <DType D, bool Mixed>
__global__ void __launch_bounds__(256) fill_kernel(Exact<D> ex, int rank, storage_t<D>* out, std::int64_t head,
                                                   std::int64_t nvec, std::int64_t count) {
  using S = storage_t<D>;
  using T = device_t<D>;
  constexpr int L = kLanes<D>;
  struct alignas(16) Vec { S s[L]; };
  auto make = [&](auto lanes, std::int64_t i0, S* dst) {
    constexpr int M = decltype(lanes)::value;
    if constexpr (Mixed) {
      ex.template each_bits<M>(rank, i0, [&](int k, std::uint32_t h) {
        dst[k] = bit_cast_hd<S>(from_double<T>(raw_mixed_bits(ex.g, rank, h)));
      });
    } else {
      ex.template input<M>(rank, i0, dst);
    }
  };
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t body_end = head + nvec * L;
  for (std::int64_t i = tid; i < head; i += stride) make(std::integral_constant<int, 1>{}, i, out + i);
  for (std::int64_t i = body_end + tid; i < count; i += stride) make(std::integral_constant<int, 1>{}, i, out + i);
  Vec* vo = reinterpret_cast<Vec*>(out + head);
  for (std::int64_t v = tid; v < nvec; v += stride) {
    Vec x;
    make(std::integral_constant<int, L>{}, head + v * L, x.s);
    vo[v] = x;
  }
}

template <DType D>
struct FillExpected {
  Elem<D> e;
  device_t<D>* out;
  __device__ void operator()(std::int64_t i) const {
    double sa, ar;
    out[i] = from_double<device_t<D>>(e.reference(i, &sa, &ar));
  }
};

template <class Op>
__global__ void __launch_bounds__(256) index_kernel(Op op, std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) op(i);
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
    Exact<D> ex;
    ex.g = g;
    ex.seed_mix = mix32(g.seed);
    const std::int64_t n = static_cast<std::int64_t>(count);
    const VectorSplit v = vector_split(ptr, n, sizeof(T), L);
    const std::int64_t head = v.head, nvec = v.nvec;
    const unsigned grid = grid_for(nvec + (n - nvec * L), 256);
    auto* out = static_cast<storage_t<D>*>(ptr);
    if (g.mode == static_cast<int>(PayloadMode::exact))
      fill_kernel<D, false><<<grid, 256, 0, stream>>>(ex, rank, out, head, nvec, n);
    else
      fill_kernel<D, true><<<grid, 256, 0, stream>>>(ex, rank, out, head, nvec, n);
    cuda_check(cudaGetLastError(), "fill_input");
  });
}

void fill_expected(const Pattern& p, const Expectation& e, void* ptr, std::size_t count, cudaStream_t stream) {
  if (count == 0) return;
  const CheckSpec s = make_check_spec(p, e, nullptr, nullptr);
  visit_dtype(p.dtype, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    const std::int64_t n = static_cast<std::int64_t>(count);
    index_kernel<<<grid_for(n, 256), 256, 0, stream>>>(FillExpected<D>{Elem<D>{s}, static_cast<device_t<D>*>(ptr)}, n);
    cuda_check(cudaGetLastError(), "fill_expected");
  });
}

void poison(void* ptr, std::size_t bytes, cudaStream_t stream) {
  if (bytes) cuda_check(cudaMemsetAsync(ptr, 0xFF, bytes, stream), "poison");
}

static CheckFn check_fn(DType d) {
  const auto i = static_cast<std::size_t>(d);
  return i < kCheckSplit ? check_fns_lo()[i] : check_fns_hi()[i - kCheckSplit];
}

VerifyResult verify(const Pattern& p, const Expectation& e, const void* got, std::size_t count, cudaStream_t stream,
                    double timeout_s) {
  if (count == 0) return {};
  return check_fn(p.dtype)(make_check_spec(p, e, got, nullptr), count, stream, timeout_s);
}

VerifyResult verify_equal(DType d, const void* got, const void* expected, std::size_t count, cudaStream_t stream,
                          double timeout_s) {
  Pattern p;
  p.dtype = d;
  return check_fn(d)(make_check_spec(p, Expectation::copy_from(0), got, expected), count, stream, timeout_s);
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
    o << "elements [" << first_bad << ", " << count << ") never written (poison value): " << mismatches << " of "
      << count << " element(s), the last " << mismatches << "; first expected " << expected;
    return o.str();
  }
  o << mismatches << " element(s) wrong of " << count << ", first at index " << first_bad << ": expected " << expected
    << " got " << got << "; last at index " << last_bad;
  if (poisoned) o << "; " << poisoned << " of them still hold the poison value (never written)";
  if (worst_ratio > 0 && worst_ratio < 1e299) o << " (worst |error|/bound " << worst_ratio << " at " << worst_index << ")";
  return o.str();
}

}  // namespace cts
