// The payload kernels on one GPU, without NCCL: fill, expected and verify agree with each other for
// every dtype, op and mode; poison, a wrong element and one rank's contribution too many are caught.
// Run before the collectives so a kernel fault is not blamed on NCCL.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "fixtures/gtest/require.hpp"
#include "kernels/payload.hpp"

namespace {
using namespace cts;

struct Param {
  DType dtype;
  std::optional<RedOp> op;
  PayloadMode mode;
  int nranks;
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const Param& c, std::ostream* os) {
  *os << name_of(c.dtype) << (c.op ? std::string("_") + name_of(*c.op) : std::string("_copy")) << "_"
      << name_of(c.mode) << "_r" << c.nranks;
}

std::vector<Param> params() {
  std::vector<Param> out;
  for (const auto& t : kDTypes) {
    out.push_back({t.id, std::nullopt, PayloadMode::exact, 4});
    for (const auto& o : kRedOps)
      for (PayloadMode m : {PayloadMode::exact, PayloadMode::mixed})
        if (m == PayloadMode::exact || t.is_float) out.push_back({t.id, o.id, m, 4});
  }
  return out;
}

class DeviceMem {
 public:
  explicit DeviceMem(std::size_t bytes) {
    if (cudaMalloc(&p_, bytes) != cudaSuccess) p_ = nullptr;
  }
  ~DeviceMem() {
    if (p_) cudaFree(p_);
  }
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

class PayloadKernels : public ::testing::TestWithParam<Param> {};

TEST_P(PayloadKernels, FillExpectedAndVerifyAgreeAndCatchErrors) {
  CTS_REQUIRE_GPUS(1);
  const Param& prm = GetParam();
  const std::size_t count = 100003, es = dtype_info(prm.dtype).size;
  Pattern p;
  p.dtype = prm.dtype;
  p.op = prm.op;
  p.mode = prm.mode;
  p.seed = 42;
  p.nranks = prm.nranks;
  p.scalar = op_scalar(prm.op, prm.dtype, prm.mode);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  DeviceMem buf(count * es), other(count * es);
  ASSERT_TRUE(buf.get() && other.get());
  const Expectation e = prm.op ? Expectation::reduce() : Expectation::copy_from(2);
  if (prm.op && prm.mode == PayloadMode::exact && exact_limitation(prm.dtype, *prm.op, prm.nranks))
    GTEST_SKIP() << *exact_limitation(prm.dtype, *prm.op, prm.nranks);

  // The expected buffer (reduction: fp64 reference rounded to the dtype; copy: rank 2's input).
  if (prm.op)
    fill_expected(p, e, buf.get(), count, s);
  else
    fill_input(p, 2, buf.get(), count, s);
  VerifyResult ok = verify(p, e, buf.get(), count, s);
  EXPECT_EQ(ok.mismatches, 0u) << ok.describe();
  if (prm.mode == PayloadMode::mixed) {
    EXPECT_LE(ok.worst_ratio, 1.0);
  }
  // Two copies compare equal; an all-zero buffer does not (the payload is not trivial).
  ASSERT_EQ(cudaMemcpyAsync(other.get(), buf.get(), count * es, cudaMemcpyDeviceToDevice, s), cudaSuccess);
  EXPECT_EQ(verify_equal(prm.dtype, other.get(), buf.get(), count, s).mismatches, 0u);
  ASSERT_EQ(cudaMemsetAsync(other.get(), 0, count * es, s), cudaSuccess);
  EXPECT_GT(verify(p, e, other.get(), count, s).mismatches, count / 100) << "an all-zero output passed";

  // Poison left in one element: caught, at that index, as NaN / all-ones.
  ASSERT_EQ(cudaMemcpyAsync(other.get(), buf.get(), count * es, cudaMemcpyDeviceToDevice, s), cudaSuccess);
  poison(static_cast<char*>(other.get()) + 777 * es, es, s);
  VerifyResult bad = verify(p, e, other.get(), count, s);
  EXPECT_EQ(bad.mismatches, 1u) << bad.describe();
  EXPECT_EQ(bad.first_bad, 777);

  // One element changed to another representable value: caught in exact mode.
  std::vector<unsigned char> host(count * es);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), buf.get(), count * es, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  if (prm.mode == PayloadMode::exact) {
    std::vector<unsigned char> wrong = host;
    const double v = decode_value(prm.dtype, &wrong[1234 * es]);
    encode_value(prm.dtype, v == 1 ? 2 : 1, &wrong[1234 * es]);
    ASSERT_EQ(cudaMemcpyAsync(other.get(), wrong.data(), count * es, cudaMemcpyHostToDevice, s), cudaSuccess);
    VerifyResult w = verify(p, e, other.get(), count, s);
    EXPECT_EQ(w.mismatches, 1u) << w.describe();
    EXPECT_EQ(w.first_bad, 1234);
    EXPECT_EQ(w.got, v == 1 ? 2 : 1);
  }
  // A sum with one rank counted twice: caught on most elements where the precision allows it.
  const bool sums = prm.op && value_shape(op_info(*prm.op).combine) == ValueShape::sums &&
                    op_info(*prm.op).scaling != Scaling::average;
  const bool fine = prm.dtype != DType::f8e4m3 && prm.dtype != DType::f8e5m2;
  if (sums && (prm.mode == PayloadMode::exact || fine)) {
    const GenParams g = p.params();
    std::vector<unsigned char> twice = host;
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < count; ++i) {
      unsigned char x[8];
      encode_value(prm.dtype, raw_value(g, 0, static_cast<std::int64_t>(i)), x);
      const double term = reference_input(op_info(*prm.op).scaling, decode_value(prm.dtype, x), p.scalar);
      const double v = decode_value(prm.dtype, &twice[i * es]) + term;
      // Only where the doubled sum is still an exactly representable in-range value.
      const DTypeInfo& t = dtype_info(prm.dtype);
      if (term == 0 || std::fabs(v) > t.exact_int - 1 || (!t.is_signed && v < 0)) continue;
      ++nonzero;
      encode_value(prm.dtype, v, &twice[i * es]);
    }
    ASSERT_EQ(cudaMemcpyAsync(other.get(), twice.data(), count * es, cudaMemcpyHostToDevice, s), cudaSuccess);
    VerifyResult w = verify(p, e, other.get(), count, s);
    ASSERT_GT(nonzero, count / 4);
    EXPECT_GE(w.mismatches, (prm.mode == PayloadMode::exact ? nonzero : nonzero / 2)) << w.describe();
  }
  cudaStreamDestroy(s);
}

// A build whose kernels carry only PTX of an older architecture still passes every check, but the
// driver JIT-compiles it on first use (15.7 s on a fresh H200): torch's CMake config once did that
// to this build silently (bench/RESULTS.md, device run 19).
TEST(PayloadKernelsBuild, CarryCodeForThisGpuArchitecture) {
  CTS_REQUIRE_GPUS(1);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  const int gpu = prop.major * 10 + prop.minor;
  const KernelBuild k = kernel_build();
  EXPECT_EQ(k.ptx_arch / 10, prop.major)
      << "the payload kernels were compiled from compute_" << k.ptx_arch
      << " PTX and JIT-compiled for this sm_" << gpu
      << " GPU; configure with -DCMAKE_CUDA_ARCHITECTURES=" << gpu << " (or a list that holds it)";
  RecordProperty("kernel_ptx_arch", k.ptx_arch);
  RecordProperty("kernel_binary_arch", k.binary_arch);
}

// The benchmarks' hook: the exact-mode check kernels alone, not waited for; the next verify() still
// starts from a clean verdict, and a pattern without that pass is refused, not half-checked.
TEST(PayloadKernelsBenchHook, EnqueueVerifyKernelsLeavesVerifyExactAndRefusesMixedMode) {
  CTS_REQUIRE_GPUS(1);
  const std::size_t count = 65537;
  Pattern p;
  p.op = RedOp::sum;
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  DeviceMem buf(count * sizeof(float));
  ASSERT_TRUE(buf.get());
  ASSERT_EQ(cudaMemsetAsync(buf.get(), 0, count * sizeof(float), s), cudaSuccess);
  EXPECT_NO_THROW(enqueue_verify_kernels(p, Expectation::reduce(), buf.get(), count, s));
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  fill_input(p, 0, buf.get(), count, s);
  EXPECT_EQ(verify(p, Expectation::reduce(), buf.get(), count, s).mismatches, 0u);
  Pattern m = p;
  m.mode = PayloadMode::mixed;
  EXPECT_THROW(enqueue_verify_kernels(m, Expectation::reduce(), buf.get(), count, s), KernelError);
  cudaStreamDestroy(s);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, PayloadKernels, ::testing::ValuesIn(params()), [](const auto& info) {
  const Param& p = info.param;
  return std::string(name_of(p.dtype)) + (p.op ? std::string("_") + name_of(*p.op) : "_copy") + "_" +
         name_of(p.mode);
});

}  // namespace
