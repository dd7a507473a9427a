// Host API of the payload kernels (gpucts::kernels). Suites include this, never CUB or Thrust.
// Every function is stream-ordered; verify* waits for its result with a deadline.
//
// A payload is a closed form of (seed, rank, index): rank r's input element i is
// raw_value(params, r, i) rounded to the dtype (kernels/payload_rules.hpp), so the expected output
// of any collective is computed on the device without reading other ranks' buffers, and only a
// mismatch count, the first bad index, and expected/got at that index come back to the host.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "kernels/dtypes.hpp"
#include "kernels/payload_rules.hpp"

namespace cts {

// What every rank of a case holds.
struct Pattern {
  DType dtype = DType::f32;
  PayloadMode mode = PayloadMode::exact;
  std::optional<RedOp> op;  // the reduction the values are shaped for; nullopt for copies
  std::uint32_t seed = 1;
  int nranks = 1;
  double scalar = 1;  // premulsum scalar (premul_scalar(dtype, mode))

  GenParams params() const { return make_gen_params(dtype, op, mode, seed, nranks, scalar); }
};

// What one rank's output element i must be, in terms of the inputs of all ranks:
//   reduce: out[i] = op over every rank s of in(s, base + i)
//   copy:   out[i] = in(src, base + j), with (src, j) = (src_rank, i) if src_rank >= 0,
//           otherwise (i / block, i % block) (one block per source rank: gathers, all-to-all).
struct Expectation {
  enum class Kind : int { reduce, copy };
  Kind kind = Kind::copy;
  std::int64_t base = 0;
  std::int64_t block = 0;
  int src_rank = -1;

  static Expectation reduce(std::int64_t base = 0) { return {Kind::reduce, base, 0, -1}; }
  static Expectation copy_from(int src, std::int64_t base = 0) { return {Kind::copy, base, 0, src}; }
  static Expectation blocks(std::int64_t block, std::int64_t base = 0) {
    return {Kind::copy, base, block, -1};
  }
};

struct VerifyResult {
  std::int64_t count = 0;  // elements checked
  std::uint64_t mismatches = 0;
  std::uint64_t poisoned = 0;   // of the mismatches: elements still holding the all-ones poison
  std::int64_t first_bad = -1;  // -1: none
  std::int64_t last_bad = -1;
  double expected = 0, got = 0;  // at first_bad (mixed mode: the fp64 reference)
  double worst_ratio = 0;  // mixed mode: max |got - ref| / bound (float precision; exact mode: 0 or inf)
  std::int64_t worst_index = -1;
  // The bad elements are exactly [first_bad, count) and every one still holds the poison.
  bool unwritten_tail() const;
  // "3 element(s) wrong, first at index 7: expected 4 got nan"; an unwritten tail reads
  // "elements [1048576, 1048577) never written (poison value): 1 of 1048577 ...".
  std::string describe() const;
};

class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Rank `rank`'s input: count elements of p.dtype.
void fill_input(const Pattern& p, int rank, void* ptr, std::size_t count, cudaStream_t stream);
// The expected output (Expectation of one rank), materialised (verify() does not need it).
void fill_expected(const Pattern& p, const Expectation& e, void* ptr, std::size_t count, cudaStream_t stream);
// All-ones bytes: NaN for every float type, -1 / max for integers, never a valid exact result.
void poison(void* ptr, std::size_t bytes, cudaStream_t stream);
// Checks count elements of `got` against the closed-form expectation (nothing else is read).
VerifyResult verify(const Pattern& p, const Expectation& e, const void* got, std::size_t count,
                    cudaStream_t stream, double timeout_s = 60);
// The device work verify() does on a right output (exact mode: the read-only check kernels),
// enqueued and not waited for, its verdict left on the device: benchmarks time it with events
// around it alone. Throws KernelError for a pattern without that pass (mixed mode).
void enqueue_verify_kernels(const Pattern& p, const Expectation& e, const void* got, std::size_t count,
                            cudaStream_t stream);
// Element-wise value comparison of two buffers (NaN never equals).
VerifyResult verify_equal(DType d, const void* got, const void* expected, std::size_t count,
                          cudaStream_t stream, double timeout_s = 60);
// Loads the kernels' modules on the current device now (CUDA loads them lazily, at first launch,
// and a load can wait behind NCCL's work), so the world fixtures call this before they create
// communicators and no case pays it. A load that JIT-compiles (kernels without code for this GPU)
// took 15-23 s here (bench/RESULTS.md, device runs 18-20); kernel_build() tells.
void preload_kernels();
// The architectures the loaded payload kernels were compiled for, as major * 10 + minor
// (cudaFuncAttributes of one kernel on the current device): the PTX they came from and the machine
// code that runs. ptx_arch below the GPU's major means the driver JIT-compiled them.
struct KernelBuild {
  int ptx_arch = 0;
  int binary_arch = 0;
};
KernelBuild kernel_build();
// Seconds spent in preload_kernels() so far in this process (the suites print it beside setup).
double kernel_load_seconds();
// Host encoding of a scalar in the dtype's bits (premulsum scalars); out holds dtype_info(d).size bytes.
void encode_value(DType d, double v, void* out);
double decode_value(DType d, const void* in);

}  // namespace cts
