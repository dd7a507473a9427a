// Device functors shared by the kernels' translation units: regenerate inputs, compute the
// expected element (closed form over all ranks), and check one element. Instantiated once per
// dtype, in payload.cu (fill, expected) and verify_lo.cu / verify_hi.cu (the checks).
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "device_types.cuh"
#include "payload.hpp"

namespace cts::detail {

// Host-built description of one check; passed by value into the kernels.
struct CheckSpec {
  GenParams g;
  int kind = 0;               // Expectation::Kind
  std::int64_t base = 0, block = 0;
  int src_rank = -1;
  double u = 0, denorm = 0;   // dtype's unit roundoff and smallest subnormal (mixed mode)
  const void* got = nullptr;
  const void* expected = nullptr;  // verify_equal: compare with this buffer instead
};

// Per-element verdict of the reference check (the kernels fold it into DeviceVerdict).
struct Acc {
  unsigned long long bad;
  long long first;   // INT64_MAX: none
  double worst;
  long long worst_idx;
};
inline constexpr long long kNone = 0x7fffffffffffffffLL;

template <DType D>
struct Elem {
  using T = device_t<D>;
  CheckSpec s;

  // Exact mode values are representable by construction: no round trip through T.
  __host__ __device__ double input(int rank, std::int64_t idx) const {
    if (s.g.mode == static_cast<int>(PayloadMode::exact)) return static_cast<double>(raw_int(s.g, rank, idx));
    return to_double(from_double<T>(raw_value(s.g, rank, idx)));
  }
  // fp64 reference of output element i (exact mode: exactly representable in T).
  __host__ __device__ double reference(std::int64_t i, double* sum_abs, double* abs_ref) const {
    const int op = s.g.op;
    const int n = s.g.nranks;
    if (s.kind == static_cast<int>(Expectation::Kind::copy)) {
      const int src = s.src_rank >= 0 ? s.src_rank : static_cast<int>(i / s.block);
      const std::int64_t j = s.src_rank >= 0 ? i : i % s.block;
      const double v = input(src, s.base + j);
      *sum_abs = v < 0 ? -v : v;
      *abs_ref = *sum_abs;
      return v;
    }
    double acc = (op == static_cast<int>(RedOp::prod)) ? 1.0 : 0.0;
    double sa = 0;
    for (int r = 0; r < n; ++r) {
      double x = input(r, s.base + i);
      if (op == static_cast<int>(RedOp::premulsum)) x *= s.g.scalar;
      sa += x < 0 ? -x : x;
      if (op == static_cast<int>(RedOp::prod)) acc *= x;
      else if (op == static_cast<int>(RedOp::max)) acc = (r == 0 || x > acc) ? x : acc;
      else if (op == static_cast<int>(RedOp::min)) acc = (r == 0 || x < acc) ? x : acc;
      else acc += x;
    }
    if (op == static_cast<int>(RedOp::avg)) {
      acc /= n;
      if (!dtype_info_is_float()) acc = acc < 0 ? -static_cast<double>(static_cast<long long>(-acc))
                                                : static_cast<double>(static_cast<long long>(acc));
    }
    *sum_abs = sa;
    *abs_ref = acc < 0 ? -acc : acc;
    return acc;
  }
  static constexpr bool dtype_info_is_float() { return kDTypes[static_cast<std::size_t>(D)].is_float; }

  __host__ __device__ double got_at(std::int64_t i) const { return to_double(static_cast<const T*>(s.got)[i]); }

  // expected value at i as the check sees it (mixed: the fp64 reference)
  __host__ __device__ double expected_at(std::int64_t i, double* bound) const {
    double sum_abs = 0, abs_ref = 0;
    if (s.expected) {
      *bound = 0;
      return to_double(static_cast<const T*>(s.expected)[i]);
    }
    const double ref = reference(i, &sum_abs, &abs_ref);
    if (s.g.mode == static_cast<int>(PayloadMode::mixed)) {
      *bound = mixed_bound(s.u, s.denorm, s.kind == static_cast<int>(Expectation::Kind::copy) ? -1 : s.g.op,
                           s.g.nranks, sum_abs, abs_ref);
      return ref;
    }
    *bound = 0;
    return ref;  // exact: representable, so a correct NCCL wrote exactly this
  }

  __host__ __device__ Acc operator()(std::int64_t i) const {
    double bound = 0;
    const double e = expected_at(i, &bound);
    const double g = got_at(i);
    double ratio;
    if (g == e) ratio = 0;
    else if (g != g || e != e) ratio = 1e300;  // NaN: poison left behind, or garbage
    else {
      const double err = g > e ? g - e : e - g;
      ratio = bound > 0 ? err / bound : 1e300;
    }
    const bool bad = ratio > 1.0;
    return Acc{bad ? 1ULL : 0ULL, bad ? static_cast<long long>(i) : kNone, ratio, static_cast<long long>(i)};
  }
};

CheckSpec make_check_spec(const Pattern& p, const Expectation& e, const void* got, const void* expected);

// ---- The fast exact path of the kernels: 16-byte vectors, 32-bit integer arithmetic only ----
// Everything below is __host__ __device__ so gpucts_payload_host runs exactly this code on the CPU
// against Elem (the double reference): same values, lane by lane, wrap-around at 2^32 included.

template <std::size_t N> struct bits_of_size;
template <> struct bits_of_size<1> { using type = std::uint8_t; };
template <> struct bits_of_size<2> { using type = std::uint16_t; };
template <> struct bits_of_size<4> { using type = std::uint32_t; };
template <> struct bits_of_size<8> { using type = std::uint64_t; };
template <DType D>
using storage_t = typename bits_of_size<sizeof(device_t<D>)>::type;
template <DType D>
inline constexpr int kLanes = static_cast<int>(16 / sizeof(device_t<D>));  // elements per 16-byte vector

template <class To, class From>
__host__ __device__ inline To bit_cast_hd(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast of different sizes");
  To t;
  std::memcpy(&t, &f, sizeof(To));
  return t;
}

// float(v) for |v| < 2^22 without an int-to-float conversion (quarter-rate on the GPU): v ulps
// added to 1.5*2^23, whose ulp is 1, then the offset subtracted (exact, Sterbenz).
__host__ __device__ inline float exact_float(int v) {
  return bit_cast_hd<float>(0x4B400000U + static_cast<std::uint32_t>(v)) - 12582912.0f;
}

// The arithmetic type a dtype's exact values are formed in: long long, double (f64), float (rest).
template <DType D>
using exact_num_t = std::conditional_t<!kDTypes[static_cast<std::size_t>(D)].is_float, long long,
                                       std::conditional_t<D == DType::f64, double, float>>;

template <DType D>
struct Exact {
  using T = device_t<D>;
  using S = storage_t<D>;
  using Num = exact_num_t<D>;
  static constexpr bool kFloat = kDTypes[static_cast<std::size_t>(D)].is_float;

  GenParams g;
  int kind = 0;                 // Expectation::Kind
  std::int64_t base = 0, block = 0;
  int src_rank = -1;
  int iscale = 1;               // premulsum: the (integral) scalar
  std::uint32_t seed_mix = 0;   // mix32(seed): rank r's key is seed_mix + r * kRankStep

  __host__ __device__ static Num from_int(long long v) {
    if constexpr (!kFloat) return v;
    else if constexpr (D == DType::f64) return static_cast<double>(v);
    else return exact_float(static_cast<int>(v));
  }
  __host__ __device__ static Num pow2(int j) {
    if constexpr (!kFloat) return 1LL << j;
    else if constexpr (D == DType::f64) return bit_cast_hd<double>(static_cast<std::uint64_t>(1023 + j) << 52);
    else return bit_cast_hd<float>(static_cast<std::uint32_t>(127 + j) << 23);
  }
  __host__ __device__ static S bits(Num v) {
    if constexpr (!kFloat) return static_cast<S>(static_cast<T>(v));
    else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) return bit_cast_hd<S>(v);
    else if constexpr (std::is_same_v<T, __half>) return bit_cast_hd<S>(__float2half_rn(v));
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return bit_cast_hd<S>(__float2bfloat16_rn(v));
    else return bit_cast_hd<S>(T(v));  // fp8: nearest (exact here)
  }

  // Bits of an integer v that T represents exactly (every exact-mode input and every sum, max,
  // min and premulsum result is one), from 32-bit integer and fp32 add/fma ops only: the fp8
  // conversion instructions cost the fill and the check most of their bandwidth. biased_bits
  // takes kBias + v, so a caller can fold the bias into an add it does anyway.
  static constexpr bool kTrick = kFloat && D != DType::f64;  // fp32 1.5*2^23 trick, then narrowed
  static constexpr std::uint32_t kBias = kTrick ? 0x4B400000U : 0U;
  __host__ __device__ static S int_bits(int v) { return biased_bits(kBias + static_cast<std::uint32_t>(v)); }
  __host__ __device__ static S biased_bits(std::uint32_t x) {
    if constexpr (!kTrick) return bits(from_int(static_cast<int>(x)));
    else {
      const float f = bit_cast_hd<float>(x);  // 1.5*2^23 + v
      if constexpr (D == DType::f32) return bit_cast_hd<S>(f - 12582912.0f);
      else if constexpr (D == DType::bf16) return static_cast<S>(bit_cast_hd<std::uint32_t>(f - 12582912.0f) >> 16);
      else if constexpr (D == DType::f8e4m3) return small_float_byte<120, 20>(f);
      else if constexpr (D == DType::f8e5m2) return small_float_byte<112, 21>(f);
      else return bits(f - 12582912.0f);
    }
  }
  // An fp8 byte from fp32: v * 2^-Rebias has the fp8 exponent bias, so its sign and its
  // exponent+mantissa bits (from bit Shift on) are the fp8 encoding for every v it represents;
  // one fma forms it exactly from x = 1.5*2^23 + v (scaling by a power of two and the offset are exact).
  template <int Rebias, int Shift>
  __host__ __device__ static S small_float_byte(float x) {
    const float scale = bit_cast_hd<float>(static_cast<std::uint32_t>(127 - Rebias) << 23);
    const std::uint32_t b = bit_cast_hd<std::uint32_t>(fmaf(x, scale, -12582912.0f * scale));
    // exponent+mantissa moved up to the sign's byte, then that byte (a byte pick when packed)
    return static_cast<S>((((b << (24 - Shift)) & 0x7F000000U) | (b & 0x80000000U)) >> 24);
  }

  // ilo + the multiply-high range reduction of h, the add folded into the 64-bit multiply-add
  // (one IMAD.WIDE with ilo in the high addend; the low 32 bits of the sum are ilo + hi mod 2^32).
  __host__ __device__ static int reduce(std::uint32_t h, std::uint32_t span, std::uint64_t ilo_hi) {
    return static_cast<int>(static_cast<std::uint32_t>((static_cast<std::uint64_t>(h) * span + ilo_hi) >> 32));
  }
  __host__ __device__ static std::uint64_t ilo_high(int ilo) { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(ilo)) << 32; }

  // L consecutive elements' bits of `rank` from index idx0 on: one add each, unless the 32-bit
  // index wraps inside the run.
  template <int L, class F>
  __host__ __device__ void each_bits(int rank, std::int64_t idx0, F&& f) const {
    const std::uint32_t key = seed_mix + static_cast<std::uint32_t>(rank) * kRankStep;
    const std::uint32_t lo = static_cast<std::uint32_t>(static_cast<std::uint64_t>(idx0));
    if (lo <= 0xFFFFFFFFU - static_cast<std::uint32_t>(L - 1)) {
      const std::uint32_t h0 = payload_bits(key, idx0);
#pragma unroll
      for (int k = 0; k < L; ++k) f(k, h0 + static_cast<std::uint32_t>(k) * kIndexMul);
    } else {
#pragma unroll
      for (int k = 0; k < L; ++k) f(k, payload_bits(key, idx0 + k));
    }
  }

  // Rank's input at idx0 .. idx0+L-1 (the fill), in T's bits.
  template <int L>
  __host__ __device__ void input(int rank, std::int64_t idx0, S* out) const {
    if (g.op == static_cast<int>(RedOp::prod)) {
      const bool contributes = rank < g.contributors;
      each_bits<L>(rank, idx0, [&](int k, std::uint32_t h) { out[k] = int_bits(contributes && (h >> 30) == 0U ? 2 : 1); });
    } else if (rank >= g.contributors) {
#pragma unroll
      for (int k = 0; k < L; ++k) out[k] = int_bits(0);
    } else {
      const std::uint64_t biased_hi = ilo_high(g.ilo + static_cast<int>(kBias));  // kBias + ilo + hi in one IMAD.WIDE
      const std::uint32_t span = g.span;
      each_bits<L>(rank, idx0, [&](int k, std::uint32_t h) {
        out[k] = biased_bits(static_cast<std::uint32_t>(reduce(h, span, biased_hi)));
      });
    }
  }

  // What a correct collective leaves at output elements i0 .. i0+L-1, in T's bits.
  template <int L>
  __host__ __device__ void expected(std::int64_t i0, S* out) const {
    if (kind == static_cast<int>(Expectation::Kind::copy)) {
      if (src_rank >= 0) {
        input<L>(src_rank, base + i0, out);
        return;
      }
      std::int64_t q = i0 / block, r = i0 % block;  // once per vector, then stepped
#pragma unroll
      for (int k = 0; k < L; ++k) {
        S one[1];
        input<1>(static_cast<int>(q), base + r, one);
        out[k] = one[0];
        if (++r == block) r = 0, ++q;
      }
      return;
    }
    const int op = g.op, n = g.nranks;
    const std::int64_t idx0 = base + i0;
    int acc[L];
    if (op == static_cast<int>(RedOp::prod)) {
      // the number of factors 2 (ranks beyond `contributors` hold 1)
#pragma unroll
      for (int k = 0; k < L; ++k) acc[k] = 0;
      for (int r = 0; r < g.contributors && r < n; ++r)
        each_bits<L>(r, idx0, [&](int k, std::uint32_t h) { acc[k] += (h >> 30) == 0U ? 1 : 0; });
#pragma unroll
      for (int k = 0; k < L; ++k) out[k] = bits(pow2(acc[k]));
      return;
    }
    const std::uint64_t ilo_hi = ilo_high(g.ilo);
    const std::uint32_t span = g.span;
    const int c = g.contributors < n ? g.contributors : n;
    auto value = [&](std::uint32_t h) { return reduce(h, span, ilo_hi); };
    const std::uint32_t sum_bias = (op == static_cast<int>(RedOp::sum) && c > 0) ? kBias : 0U;
    if (op == static_cast<int>(RedOp::max) || op == static_cast<int>(RedOp::min)) {
      const bool mx = op == static_cast<int>(RedOp::max);
      each_bits<L>(0, idx0, [&](int k, std::uint32_t h) { acc[k] = c > 0 ? value(h) : 0; });
      for (int r = 1; r < n; ++r) {
        if (r >= c) {  // neutral 0 (raw_int of a non-contributor)
#pragma unroll
          for (int k = 0; k < L; ++k) acc[k] = mx ? (acc[k] > 0 ? acc[k] : 0) : (acc[k] < 0 ? acc[k] : 0);
          continue;
        }
        each_bits<L>(r, idx0, [&](int k, std::uint32_t h) {
          const int v = value(h);
          acc[k] = mx ? (v > acc[k] ? v : acc[k]) : (v < acc[k] ? v : acc[k]);
        });
      }
    } else {  // sum, avg, premulsum
#pragma unroll
      for (int k = 0; k < L; ++k) acc[k] = 0;
      // a plain sum carries kBias from rank 0's multiply-add on, so the result needs no add of its own
      const std::uint64_t first_hi = ilo_high(g.ilo + static_cast<int>(sum_bias));
      for (int r = 0; r < c; ++r) {
        const std::uint64_t hi = r == 0 ? first_hi : ilo_hi;
        each_bits<L>(r, idx0, [&](int k, std::uint32_t h) { acc[k] += reduce(h, span, hi); });
      }
    }
    // the op decided once per vector, not per lane
    if (op == static_cast<int>(RedOp::premulsum)) {
#pragma unroll
      for (int k = 0; k < L; ++k) out[k] = int_bits(acc[k] * iscale);
    } else if (op == static_cast<int>(RedOp::avg)) {
      if constexpr (!kFloat) {
#pragma unroll
        for (int k = 0; k < L; ++k) out[k] = bits(static_cast<long long>(acc[k] / n));  // acc >= 0: truncation, as the reference
      } else {
        const Num inv = Num(1) / Num(n);  // n is a power of two here: exact
#pragma unroll
        for (int k = 0; k < L; ++k) out[k] = bits(from_int(acc[k]) * inv);
      }
    } else if (sum_bias != 0U) {
#pragma unroll
      for (int k = 0; k < L; ++k) out[k] = biased_bits(static_cast<std::uint32_t>(acc[k]));
    } else {
#pragma unroll
      for (int k = 0; k < L; ++k) out[k] = int_bits(acc[k]);
    }
  }
};

// How a buffer of n elements of `size` bytes splits into an element-wise head up to the first
// 16-byte boundary, 16-byte vectors of `lanes` elements, and an element-wise tail.
struct VectorSplit {
  std::int64_t head = 0, nvec = 0;
};
inline VectorSplit vector_split(const void* p, std::int64_t n, std::size_t size, int lanes) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  VectorSplit v;
  v.head = addr % size != 0 ? n : static_cast<std::int64_t>(((16 - addr % 16) % 16) / size);  // no vectors if not element-aligned
  if (v.head > n) v.head = n;
  v.nvec = (n - v.head) / lanes;
  return v;
}

// The fast path applies when every value involved is a small integer (or a power of two) that
// the formulas above produce exactly; otherwise the kernels use Elem for every element.
template <DType D>
bool make_exact(const CheckSpec& s, Exact<D>* out) {
  if (s.g.mode != static_cast<int>(PayloadMode::exact) || s.expected) return false;
  Exact<D> e;
  e.g = s.g;
  e.kind = s.kind;
  e.base = s.base;
  e.block = s.block;
  e.src_rank = s.src_rank;
  e.seed_mix = mix32(s.g.seed);
  const int n = s.g.nranks;
  if (n < 1 || n > 1024) return false;
  if (s.kind == static_cast<int>(Expectation::Kind::copy)) {
    if (s.src_rank < 0 && s.block <= 0) return false;
  } else if (s.g.op == static_cast<int>(RedOp::premulsum)) {
    const double k = s.g.scalar;
    if (!(k == static_cast<double>(static_cast<int>(k))) || k < -16 || k > 16) return false;
    e.iscale = static_cast<int>(k);
  } else if (s.g.op == static_cast<int>(RedOp::avg)) {
    if (Exact<D>::kFloat && (n & (n - 1)) != 0) return false;
  } else if (s.g.op < 0) {
    return false;
  }
  // |every partial result| < 2^22 (exact_float), products within the type's powers of two
  if (static_cast<double>(n) * kMaxAmplitude * 16 >= 4194304.0 || s.g.ilo < -1000 || s.g.span > 2001U) return false;
  *out = e;
  return true;
}

using CheckFn = VerifyResult (*)(const CheckSpec&, std::size_t, cudaStream_t, double);
template <DType D>
VerifyResult run_check(const CheckSpec& spec, std::size_t count, cudaStream_t stream, double timeout_s);

// Per thread and device: a small device block (verdict at 0, described values at 64) and its
// pinned host mirror, allocated once (no allocation per verify).
struct CheckScratch {
  void* device = nullptr;
  void* host = nullptr;
};
CheckScratch& check_scratch();
// Blocks for a grid-stride kernel with `work` threads' worth of items: at most blocks_per_sm per
// SM of the current device (the loop covers the rest), at least one.
unsigned grid_for(std::int64_t work, int threads, int blocks_per_sm = 8);
// How many blocks of `kernel` (at `threads` each) one SM of the current device holds at once.
int resident_blocks(const void* kernel, int threads);

// Waits for the stream with a deadline; throws KernelError on timeout or error.
void wait_stream(cudaStream_t stream, double timeout_s, const char* what);
void cuda_check(cudaError_t e, const char* what);

// The check functions of kDTypes[First .. First+N), one table per translation unit.
template <std::size_t First, std::size_t... I>
std::array<CheckFn, sizeof...(I)> check_table(std::index_sequence<I...>) {
  return {&run_check<kDTypes[First + I].id>...};
}
inline constexpr std::size_t kCheckSplit = 6;  // verify_lo.cu: integers, verify_hi.cu: floats
const std::array<CheckFn, kCheckSplit>& check_fns_lo();
const std::array<CheckFn, kNumDTypes - kCheckSplit>& check_fns_hi();

}  // namespace cts::detail
