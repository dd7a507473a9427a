// gpucts_payload_bench: bandwidth of the payload kernels at 1 GiB against cudaMemcpyAsync
// device-to-device in the same run (CUDA events, warm-up excluded, median of repetitions).
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

#include "payload.hpp"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpucts_payload_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Median milliseconds of `reps` runs of f on stream s, after two warm-up runs.
double median_ms(cudaStream_t s, int reps, const std::function<void()>& f) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  for (int i = 0; i < 2; ++i) f();
  check(cudaStreamSynchronize(s), "warm-up");
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    check(cudaEventRecord(a, s), "cudaEventRecord");
    f();
    check(cudaEventRecord(b, s), "cudaEventRecord");
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
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
  std::vector<cts::DType> dtypes = {cts::DType::f32, cts::DType::bf16, cts::DType::u8, cts::DType::f8e4m3, cts::DType::f64};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpucts_payload_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--bytes") bytes = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--reps") reps = std::atoi(value().c_str());
    else if (a == "--require") require = true;
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
      std::fprintf(stderr, "usage: gpucts_payload_bench [--bytes N] [--reps N] [--dtypes f32,bf16] [--require]\n");
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

  // The reference: a device-to-device copy reads and writes `bytes`.
  const double copy_ms = median_ms(s, reps, [&] { check(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, s), "copy"); });
  const double copy_gbs = 2.0 * bytes / copy_ms / 1e6;
  std::printf("cudaMemcpyAsync D2D %zu MiB: %.3f ms, %.1f GB/s (read + write)\n", bytes >> 20, copy_ms, copy_gbs);
  std::printf("%-34s %10s %10s %8s %s\n", "kernel", "ms", "GB/s", "vs copy", "target 85%");

  bool all_ok = true;
  auto report = [&](const std::string& what, double moved, double ms, bool targeted) {
    const double gbs = moved / ms / 1e6;
    const double ratio = gbs / copy_gbs;
    const bool ok = ratio >= 0.85;
    if (targeted && !ok) all_ok = false;
    std::printf("%-34s %10.3f %10.1f %7.1f%% %s\n", what.c_str(), ms, gbs, 100 * ratio, targeted ? (ok ? "ok" : "BELOW") : "-");
  };
  report("poison (cudaMemsetAsync)", bytes, median_ms(s, reps, [&] { cts::poison(y, bytes, s); }), false);
  for (cts::DType d : dtypes) {
    const std::size_t count = bytes / cts::dtype_info(d).size;
    cts::Pattern p;
    p.dtype = d;
    p.op = cts::RedOp::sum;
    const std::string n = cts::name_of(d);
    report("fill_input " + n + " exact", bytes, median_ms(s, reps, [&] { cts::fill_input(p, 0, x, count, s); }), true);
    cts::fill_input(p, 0, y, count, s);
    // verify reads the buffer once; the expected values are recomputed, not read.
    double vms = median_ms(s, reps, [&] {
      cts::VerifyResult r = cts::verify(p, cts::Expectation::reduce(), y, count, s);
      if (r.mismatches) {
        std::fprintf(stderr, "gpucts_payload_bench: verify found %s\n", r.describe().c_str());
        std::exit(1);
      }
    });
    report("verify " + n + " exact (1 rank)", bytes, vms, true);
    cts::Pattern m = p;
    m.mode = cts::PayloadMode::mixed;
    if (cts::dtype_info(d).is_float) {
      report("fill_input " + n + " mixed", bytes, median_ms(s, reps, [&] { cts::fill_input(m, 0, x, count, s); }), false);
      cts::fill_input(m, 0, y, count, s);
      report("verify " + n + " mixed (1 rank)", bytes,
             median_ms(s, reps, [&] { cts::verify(m, cts::Expectation::reduce(), y, count, s); }), false);
    }
    p.nranks = 8;
    report("verify " + n + " exact (8-rank sum)", bytes, median_ms(s, reps, [&] { cts::verify(p, cts::Expectation::reduce(), y, count, s); }), false);
    report("verify_equal " + n + " (reads 2 buffers)", 2.0 * bytes,
           median_ms(s, reps, [&] { cts::verify_equal(d, y, y, count, s); }), false);
  }
  std::printf("%s\n", all_ok ? "gpucts_payload_bench: every targeted kernel >= 85% of copy bandwidth"
                             : "gpucts_payload_bench: some targeted kernels below 85% of copy bandwidth");
  cudaFree(x);
  cudaFree(y);
  return (require && !all_ok) ? 1 : 0;
}
