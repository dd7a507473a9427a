// gpucts_payload_bench: bandwidth of the payload kernels at 1 GiB against cudaMemcpyAsync
// device-to-device, interleaved with them (CUDA events, warm-up excluded, median of repetitions).
// Target: fill and verify each >= 85% of the copy's bandwidth. A benchmark, not a unit test:
// it prints a table and exits 0, or 1 with --require when a kernel misses the target.
//
//   gpucts_payload_bench [--bytes N] [--reps N] [--dtypes f32,bf16,...] [--require]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/payload.hpp"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpucts_payload_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Medians of `reps` interleaved runs of a device-to-device copy of `bytes` and of f on stream s,
// after two warm-up runs of each: each kernel is judged against the copy of the same moments
// (clocks and temperature drift between rows). Events bracket the device work only; for a call that
// waits on the host (verify()), the wait is inside the interval.
struct Timing {
  double copy_ms, ms;
};
Timing time_against_copy(cudaStream_t s, int reps, void* dst, const void* src, std::size_t bytes,
                         const std::function<void()>& f) {
  auto copy = [&] { check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "copy"); };
  cudaEvent_t a, b, c;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  check(cudaEventCreate(&c), "cudaEventCreate");
  for (int i = 0; i < 2; ++i) {
    copy();
    f();
  }
  check(cudaStreamSynchronize(s), "warm-up");
  std::vector<float> tc, tf;
  for (int i = 0; i < reps; ++i) {
    check(cudaEventRecord(a, s), "cudaEventRecord");
    copy();
    check(cudaEventRecord(b, s), "cudaEventRecord");
    f();
    check(cudaEventRecord(c, s), "cudaEventRecord");
    check(cudaEventSynchronize(c), "cudaEventSynchronize");
    float m1 = 0, m2 = 0;
    check(cudaEventElapsedTime(&m1, a, b), "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&m2, b, c), "cudaEventElapsedTime");
    tc.push_back(m1);
    tf.push_back(m2);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaEventDestroy(c);
  auto median = [](std::vector<float>& t) {
    std::sort(t.begin(), t.end());
    return static_cast<double>(t[t.size() / 2]);
  };
  return {median(tc), median(tf)};
}

struct Row {
  std::string what;
  double bytes_moved;
  double ms;
};

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = std::size_t(1) << 30;
  int reps = 21;
  bool require = false;
  std::vector<cts::DType> dtypes = {cts::DType::f32, cts::DType::bf16, cts::DType::u8, cts::DType::f8e4m3,
                                    cts::DType::f64};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpucts_payload_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--bytes")
      bytes = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--reps")
      reps = std::atoi(value().c_str());
    else if (a == "--require")
      require = true;
    else if (a == "--dtypes") {
      dtypes.clear();
      std::stringstream ss(value());
      std::string n;
      while (std::getline(ss, n, ',')) {
        auto d = cts::find_dtype(n);
        if (!d) {
          std::fprintf(stderr, "gpucts_payload_bench: unknown dtype '%s'\n", n.c_str());
          return 2;
        }
        dtypes.push_back(*d);
      }
    } else {
      std::fprintf(stderr,
                   "usage: gpucts_payload_bench [--bytes N] [--reps N] [--dtypes f32,bf16] [--require]\n");
      return 2;
    }
  }
  if (bytes < 1024 || reps < 1) {
    std::fprintf(stderr, "gpucts_payload_bench: --bytes must be >= 1024 and --reps >= 1\n");
    return 2;
  }
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    std::fprintf(stderr, "gpucts_payload_bench: no GPU visible\n");
    return 1;
  }
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  void *x = nullptr, *y = nullptr;
  check(cudaMalloc(&x, bytes), "cudaMalloc");
  check(cudaMalloc(&y, bytes), "cudaMalloc");

  // The reference copy reads x and writes z, so y keeps the payload under test.
  void* z = nullptr;
  check(cudaMalloc(&z, bytes), "cudaMalloc");
  cts::poison(x, bytes, s);
  std::printf("%-38s %9s %9s %9s %8s %s\n", ("kernel, " + std::to_string(bytes >> 20) + " MiB").c_str(), "ms",
              "GB/s", "copy GB/s", "vs copy", "target 85%");
  bool all_ok = true;
  double copy_lo = 1e30, copy_hi = 0;
  auto row = [&](const std::string& what, double moved, bool targeted, const std::function<void()>& f) {
    const Timing t = time_against_copy(s, reps, z, x, bytes, f);
    const double gbs = moved / t.ms / 1e6, copy_gbs = 2.0 * bytes / t.copy_ms / 1e6;
    copy_lo = std::min(copy_lo, copy_gbs);
    copy_hi = std::max(copy_hi, copy_gbs);
    const double ratio = gbs / copy_gbs;
    const bool ok = ratio >= 0.85;
    if (targeted && !ok) all_ok = false;
    std::printf("%-38s %9.3f %9.1f %9.1f %7.1f%% %s\n", what.c_str(), t.ms, gbs, copy_gbs, 100 * ratio,
                targeted ? (ok ? "ok" : "BELOW") : "-");
  };
  auto must_match = [&](const cts::Pattern& p, const void* buf, std::size_t count) {
    const cts::VerifyResult r = cts::verify(p, cts::Expectation::reduce(), buf, count, s);
    if (r.mismatches) {
      std::fprintf(stderr, "gpucts_payload_bench: verify found %s\n", r.describe().c_str());
      std::exit(1);
    }
  };
  row("poison (cudaMemsetAsync)", bytes, false, [&] { cts::poison(y, bytes, s); });
  for (cts::DType d : dtypes) {
    const std::size_t count = bytes / cts::dtype_info(d).size;
    cts::Pattern p;
    p.dtype = d;
    p.op = cts::RedOp::sum;
    const std::string n = cts::name_of(d);
    row("fill_input " + n + " exact", bytes, true, [&] { cts::fill_input(p, 0, y, count, s); });
    must_match(p, y, count);
    // Targeted: the check kernels (read the buffer once; the expected values are recomputed, not
    // read). The verify() call adds the host's wait for the verdict and the result copy.
    row("verify kernels " + n + " exact (1 rank)", bytes, true,
        [&] { cts::enqueue_verify_kernels(p, cts::Expectation::reduce(), y, count, s); });
    row("verify() call " + n + " exact (1 rank)", bytes, false, [&] { must_match(p, y, count); });
    cts::Pattern m = p;
    m.mode = cts::PayloadMode::mixed;
    if (cts::dtype_info(d).is_float) {
      row("fill_input " + n + " mixed", bytes, false, [&] { cts::fill_input(m, 0, y, count, s); });
      row("verify() call " + n + " mixed (1 rank)", bytes, false,
          [&] { cts::verify(m, cts::Expectation::reduce(), y, count, s); });
      cts::fill_input(p, 0, y, count, s);
    }
    cts::Pattern p8 = p;
    p8.nranks = 8;
    row("verify kernels " + n + " exact (8-rank sum)", bytes, false,
        [&] { cts::enqueue_verify_kernels(p8, cts::Expectation::reduce(), y, count, s); });
    row("verify_equal " + n + " (reads 2 buffers)", 2.0 * bytes, false,
        [&] { cts::verify_equal(d, y, y, count, s); });
  }
  std::printf("copy rate over the rows: %.1f - %.1f GB/s (read + write)\n", copy_lo, copy_hi);
  std::printf("%s\n", all_ok ? "gpucts_payload_bench: every targeted kernel >= 85% of copy bandwidth"
                             : "gpucts_payload_bench: some targeted kernels below 85% of copy bandwidth");
  cudaFree(x);
  cudaFree(y);
  cudaFree(z);
  return (require && !all_ok) ? 1 : 0;
}
