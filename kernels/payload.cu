// Fill, expected, poison and the dispatch of the checks (verify_lo.cu / verify_hi.cu).
#include <cub/device/device_for.cuh>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
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

void retain_async_pool() {
  static std::mutex m;
  static std::set<int> done;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return;
  std::lock_guard<std::mutex> lock(m);
  if (!done.insert(dev).second) return;
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
    std::uint64_t keep = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  }
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

template <DType D>
struct FillInput {
  GenParams g;
  int rank;
  device_t<D>* out;
  __device__ void operator()(std::int64_t i) const {
    out[i] = g.mode == static_cast<int>(PayloadMode::exact) ? from_int<device_t<D>>(raw_int(g, rank, i))
                                                           : from_double<device_t<D>>(raw_value(g, rank, i));
  }
};

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
void bulk(std::size_t count, const Op& op, cudaStream_t stream, const char* what) {
  if (count == 0) return;
  cuda_check(cub::DeviceFor::Bulk(static_cast<std::int64_t>(count), op, stream), what);
}

}  // namespace detail

using namespace detail;

void fill_input(const Pattern& p, int rank, void* ptr, std::size_t count, cudaStream_t stream) {
  const GenParams g = p.params();
  visit_dtype(p.dtype, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    bulk(count, FillInput<D>{g, rank, static_cast<device_t<D>*>(ptr)}, stream, "fill_input");
  });
}

void fill_expected(const Pattern& p, const Expectation& e, void* ptr, std::size_t count, cudaStream_t stream) {
  const CheckSpec s = make_check_spec(p, e, nullptr, nullptr);
  visit_dtype(p.dtype, [&](auto tag) {
    constexpr DType D = decltype(tag)::value;
    bulk(count, FillExpected<D>{Elem<D>{s}, static_cast<device_t<D>*>(ptr)}, stream, "fill_expected");
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

std::string VerifyResult::describe() const {
  if (mismatches == 0) return "no mismatch";
  std::ostringstream o;
  o.precision(17);
  o << mismatches << " element(s) wrong, first at index " << first_bad << ": expected " << expected << " got "
    << got;
  if (worst_ratio > 0 && worst_ratio < 1e299) o << " (worst |error|/bound " << worst_ratio << " at " << worst_index << ")";
  return o.str();
}

}  // namespace cts
