// Failure classification (fixtures/reliability/failure_class.hpp: out of memory = resource failure of the
// case) and the fault-injection layer (fixtures/gtest/fault_inject.hpp: GPUCTS_INJECT). Host logic runs
// anywhere; the *OnGpu cases allocate, fail and corrupt real device memory and skip without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fixtures/gtest/fault_inject.hpp"
#include "fixtures/gtest/require.hpp"
#include "fixtures/reliability/failure_class.hpp"

#if GPUCTS_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "fixtures/probe/nccl_api.hpp"
#endif

namespace cts {
namespace {

struct TextCase {
  const char* name;
  const char* text;
  bool timed_out;
  FailureKind kind;
  const char* prefix;
};

// Texts as nccl_util's cuda_ok / nccl_check / waits word them, and as NCCL's last error does.
const TextCase kTexts[] = {
    {"cuda_malloc_oom", "cudaMalloc: cudaErrorMemoryAllocation: out of memory", false, FailureKind::resource,
     "resource: out of memory: cudaMalloc"},
    {"nccl_unhandled_cuda_oom",
     "ncclGroupEnd: unhandled cuda error (run with NCCL_DEBUG=INFO for details) (code 1); last error: Cuda "
     "failure 2 'out of memory'",
     false, FailureKind::resource, "resource: out of memory: "},
    {"nccl_calloc",
     "ncclCommInitRank: unhandled cuda error (code 1); last error: Failed to CUDA calloc async 4096 bytes",
     false, FailureKind::resource, "resource: out of memory: "},
    {"shm_full",
     "ncclCommInitRank: unhandled system error (code 2); last error: Call to posix_fallocate failed: No "
     "space left on device",
     false, FailureKind::resource, "resource: out of host memory or /dev/shm: "},
    {"host_enomem", "ncclCommInitRank: unhandled system error (code 2); last error: Cannot allocate memory",
     false, FailureKind::resource, "resource: out of host memory"},
    {"wait_deadline", "ncclAllReduce: GPU work not finished at the deadline (30.000000 s)", false,
     FailureKind::timeout, "TIMEOUT: ncclAllReduce"},
    {"flagged_timeout", "ncclGroupEnd: still in progress", true, FailureKind::timeout, "TIMEOUT: "},
    {"nccl_invalid_argument",
     "ncclAllReduce: invalid argument (run with NCCL_DEBUG=WARN for details) (code 4)", false,
     FailureKind::nccl, "nccl: ncclAllReduce"},
    {"nccl_remote",
     "ncclAllReduce: remote process exited or there was a network error (code 6); last error: Connection "
     "reset by peer",
     false, FailureKind::nccl, "nccl: "},
    {"cuda_illegal_address",
     "graph replay: cudaErrorIllegalAddress: an illegal memory access was encountered", false,
     FailureKind::cuda, "cuda: graph replay"},
    {"other", "the world was never built", false, FailureKind::other, "the world was never built"},
};

void PrintTo(const TextCase& c, std::ostream* os) { *os << c.name; }

class FailureText : public ::testing::TestWithParam<TextCase> {};

TEST_P(FailureText, Classified) {
  const TextCase& c = GetParam();
  const FailureClass f = classify_failure(c.text, c.timed_out);
  EXPECT_EQ(failure_kind_name(f.kind), std::string(failure_kind_name(c.kind))) << f.message;
  EXPECT_EQ(f.message.rfind(c.prefix, 0), 0u) << f.message;
  EXPECT_NE(f.message.find(c.text), std::string::npos) << "the original text is kept: " << f.message;
  EXPECT_EQ(case_failure(c.text, c.timed_out).message, f.message);
}

INSTANTIATE_TEST_SUITE_P(Text, FailureText, ::testing::ValuesIn(kTexts),
                         [](const auto& info) { return std::string(info.param.name); });

#if GPUCTS_HAVE_CUDA
// The typed overloads: the names come from cudart's and NCCL's tables (no device needed).
TEST(FailureCode, CudaMemoryAllocationIsResource) {
  const FailureClass f = classify_failure(cudaErrorMemoryAllocation, "cudaMalloc");
  EXPECT_EQ(f.kind, FailureKind::resource);
  EXPECT_EQ(f.message.rfind("resource: out of memory: cudaMalloc: cudaErrorMemoryAllocation", 0), 0u)
      << f.message;
  EXPECT_EQ(classify_failure(cudaErrorIllegalAddress, "kernel").kind, FailureKind::cuda);
}

TEST(FailureCode, NcclUnhandledCudaErrorIsResourceOnlyWhenTheLastErrorSaysOom) {
  const FailureClass oom = classify_failure(ncclUnhandledCudaError, "Cuda failure 2 'out of memory'");
  EXPECT_EQ(oom.kind, FailureKind::resource) << oom.message;
  EXPECT_NE(oom.message.find("(code 1)"), std::string::npos) << oom.message;
  const FailureClass other =
      classify_failure(ncclUnhandledCudaError, "Cuda failure 700 'an illegal memory access was encountered'");
  EXPECT_EQ(other.kind, FailureKind::nccl) << other.message;
  EXPECT_EQ(classify_failure(ncclInvalidUsage, "out of memory").kind, FailureKind::nccl)
      << "an invalid-usage error is the caller's, whatever the last error says";
}
#endif

// GPUCTS_INJECT values.
TEST(InjectSpec, CorruptIndex) {
  const InjectPlan p = parse_inject_spec(R"(corrupt:^AllReduce\.i32_sum_.*:w1$:7)");
  EXPECT_EQ(p.action, InjectPlan::Action::corrupt_index);
  EXPECT_EQ(p.pattern, R"(^AllReduce\.i32_sum_.*:w1$)") << "the index follows the last colon";
  EXPECT_EQ(p.index, 7u);
  EXPECT_EQ(element_to_corrupt(p, "AllReduce.i32_sum_1024_outofplace:w1", 1024),
            std::optional<std::size_t>(7));
  EXPECT_EQ(element_to_corrupt(p, "AllGather.i32_1024_outofplace:w1", 1024), std::nullopt);
  std::string why;
  EXPECT_EQ(element_to_corrupt(p, "AllReduce.i32_sum_7_outofplace:w1", 7, &why), std::nullopt);
  EXPECT_NE(why.find("element 7 is beyond its 7 element(s)"), std::string::npos) << why;
}

TEST(InjectSpec, CorruptLast) {
  const InjectPlan p = parse_inject_spec("corrupt-last:Broadcast");
  EXPECT_EQ(p.action, InjectPlan::Action::corrupt_last);
  EXPECT_EQ(element_to_corrupt(p, "Broadcast.f32_1048575_inplace_root0_w1", 1048575),
            std::optional<std::size_t>(1048574));
  EXPECT_EQ(element_to_corrupt(p, "Broadcast.f32_0_inplace_root0_w1", 0), std::nullopt);
}

TEST(InjectSpec, OneRankOnly) {
  const InjectPlan p = parse_inject_spec(R"(rank=1:corrupt:^AllReduce\.i32_sum_1021_outofplace_w2$:7)");
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.index, 7u);
  const std::string c = "AllReduce.i32_sum_1021_outofplace_w2";
  EXPECT_EQ(element_to_corrupt(p, c, 1021, nullptr, 1), std::optional<std::size_t>(7));
  EXPECT_EQ(element_to_corrupt(p, c, 1021, nullptr, 0), std::nullopt);
  EXPECT_EQ(element_to_corrupt(p, c, 1021, nullptr, -1), std::nullopt) << "outside a launcher";
  EXPECT_EQ(parse_inject_spec("corrupt:x:7").rank, -1) << "without rank=: every process";
}

TEST(InjectSpec, UnsetDoesNothing) {
  const InjectPlan p = parse_inject_spec("");
  EXPECT_FALSE(p.active());
  EXPECT_EQ(element_to_corrupt(p, "AllReduce.anything", 10), std::nullopt);
}

struct BadSpec {
  const char* name;
  const char* spec;
  const char* why;
};
// Named in listings and JUnit value_param by what it is, not as a byte dump.
void PrintTo(const BadSpec& c, std::ostream* os) { *os << c.name; }

const BadSpec kBadSpecs[] = {
    {"unknown_action", "flip:AllReduce:3", "unknown action"},
    {"no_index", "corrupt:AllReduce", "no ':<index>'"},
    {"index_not_number", "corrupt:AllReduce:x7", "'x7' is not a number"},
    {"negative_index", "corrupt:AllReduce:-1", "'-1' is not a number"},
    {"empty_index", "corrupt:AllReduce:", "'' is not a number"},
    {"empty_regex", "corrupt-last:", "empty case regex"},
    {"bad_regex", "corrupt:AllReduce(:3", "does not compile"},
    {"rank_not_number", "rank=x:corrupt:AllReduce:3", "rank 'x' is not a number"},
    {"rank_without_action", "rank=1", "rank '1' is not a number >= 0 followed by ':'"},
};

class InjectBadSpec : public ::testing::TestWithParam<BadSpec> {};

TEST_P(InjectBadSpec, RefusedWithOneLine) {
  const BadSpec& c = GetParam();
  try {
    parse_inject_spec(c.spec);
    ADD_FAILURE() << "accepted GPUCTS_INJECT=" << c.spec;
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(c.why), std::string::npos) << what;
    EXPECT_NE(what.find(std::string("GPUCTS_INJECT='") + c.spec + "'"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line";
  }
}

INSTANTIATE_TEST_SUITE_P(Spec, InjectBadSpec, ::testing::ValuesIn(kBadSpecs),
                         [](const auto& info) { return std::string(info.param.name); });

#if GPUCTS_HAVE_CUDA
// A real out-of-memory: the allocation fails as a resource failure, and the next one succeeds
// (cudaErrorMemoryAllocation is not sticky: the run goes on).
TEST(FailureOnGpu, OutOfMemoryIsAResourceFailureAndTheProcessGoesOn) {
  CTS_REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  std::size_t free_b = 0, total_b = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, total_b + (std::size_t(64) << 30));
  ASSERT_EQ(e, cudaErrorMemoryAllocation) << cudaGetErrorName(e);
  EXPECT_EQ(classify_failure(e, "cudaMalloc").kind, FailureKind::resource);
  // What the case's catch does: classify the thrown text and clear the last error.
  const FailureClass thrown =
      case_failure(std::string("cudaMalloc: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  EXPECT_EQ(thrown.kind, FailureKind::resource) << thrown.message;
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess) << "case_failure leaves no stale error for the next case";
  ASSERT_EQ(cudaMalloc(&p, 1 << 20), cudaSuccess) << "a failed allocation must not poison the context";
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  // NCCL's allocator: the same exhaustion as ncclUnhandledCudaError with the CUDA error in its text.
  const cts::nccl::Api& nccl = cts::nccl::api();
  if (!nccl.MemAlloc || !nccl.MemFree) GTEST_SKIP() << cts::nccl::absent_reason("ncclMemAlloc");
  void* q = nullptr;
  const ncclResult_t r = nccl.MemAlloc(&q, total_b + (std::size_t(64) << 30));
  if (r == ncclSuccess) {
    nccl.MemFree(q);
    FAIL() << "ncclMemAlloc of more than the GPU's memory succeeded";
  }
  const char* last = ncclGetLastError(nullptr);
  const FailureClass f = classify_failure(r, last ? last : "");
  EXPECT_EQ(f.kind, FailureKind::resource) << f.message;
  case_failure(f.message);
  ASSERT_EQ(cudaMalloc(&p, 1 << 20), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
}

// maybe_corrupt on a real buffer: exactly the selected element changes, every bit of it.
TEST(FaultInjectOnGpu, FlipsExactlyTheSelectedElement) {
  CTS_REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  constexpr std::size_t n = 1000;
  std::vector<std::int32_t> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<std::int32_t>(3 * i + 1);
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, n * sizeof(std::int32_t)), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev, host.data(), n * sizeof(std::int32_t), cudaMemcpyHostToDevice), cudaSuccess);
  for (const char* spec : {"corrupt:^Inject\\.self$:7", "corrupt-last:^Inject\\.self$"}) {
    const InjectPlan plan = parse_inject_spec(spec);
    EXPECT_EQ(maybe_corrupt(plan, "Inject.other", dev, n * sizeof(std::int32_t), sizeof(std::int32_t), s),
              std::nullopt);
    const auto k = maybe_corrupt(plan, "Inject.self", dev, n * sizeof(std::int32_t), sizeof(std::int32_t), s);
    ASSERT_TRUE(k.has_value()) << spec;
    std::vector<std::int32_t> back(n);
    ASSERT_EQ(cudaMemcpy(back.data(), dev, n * sizeof(std::int32_t), cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_EQ(back[i], i == *k ? ~host[i] : host[i]) << spec << " element " << i;
    ASSERT_EQ(cudaMemcpy(dev, host.data(), n * sizeof(std::int32_t), cudaMemcpyHostToDevice), cudaSuccess);
  }
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
}
#endif

}  // namespace
}  // namespace cts
