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

#include <vector_functions.h>

#include "kernels/device_types.cuh"
#include "kernels/payload.hpp"

namespace cts::detail {

// Host-built description of one check; passed by value into the kernels.
struct CheckSpec {
  GenParams g;
  int kind = 0;  // Expectation::Kind
  std::int64_t base = 0, block = 0;
  int src_rank = -1;
  double u = 0, denorm = 0;  // dtype's unit roundoff and smallest subnormal (mixed mode)
  const void* got = nullptr;
  const void* expected = nullptr;  // verify_equal: compare with this buffer instead
};

// Per-element verdict of the reference check (the kernels fold it into DeviceVerdict).
struct Acc {
  unsigned long long bad;
  long long first;  // INT64_MAX: none
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
    const int n = s.g.nranks;
    if (s.kind == static_cast<int>(Expectation::Kind::copy)) {
      const int src = s.src_rank >= 0 ? s.src_rank : static_cast<int>(i / s.block);
      const std::int64_t j = s.src_rank >= 0 ? i : i % s.block;
      const double v = input(src, s.base + j);
      *sum_abs = v < 0 ? -v : v;
      *abs_ref = *sum_abs;
      return v;
    }
    // The op's rules (dtypes.hpp): its identity, its input scaling, its fold, its result.
    const Combine c = static_cast<Combine>(s.g.combine);
    const Scaling sc = static_cast<Scaling>(s.g.scaling);
    double acc = fold_identity(c);
    double sa = 0;
    for (int r = 0; r < n; ++r) {
      const double x = reference_input(sc, input(r, s.base + i), s.g.scalar);
      sa += x < 0 ? -x : x;
      acc = combine_values(c, acc, x);
    }
    acc = reference_result(sc, acc, n, dtype_info_is_float());
    *sum_abs = sa;
    *abs_ref = acc < 0 ? -acc : acc;
    return acc;
  }
  static constexpr bool dtype_info_is_float() { return kDTypes[static_cast<std::size_t>(D)].is_float; }

  __host__ __device__ double got_at(std::int64_t i) const {
    return to_double(static_cast<const T*>(s.got)[i]);
  }

  // expected value at i as the check sees it (mixed: the fp64 reference)
  __host__ __device__ double expected_at(std::int64_t i, double* bound) const {
    double sum_abs = 0, abs_ref = 0;
    if (s.expected) {
      *bound = 0;
      return to_double(static_cast<const T*>(s.expected)[i]);
    }
    const double ref = reference(i, &sum_abs, &abs_ref);
    if (s.g.mode == static_cast<int>(PayloadMode::mixed)) {
      *bound = s.kind == static_cast<int>(Expectation::Kind::copy)
                   ? 0.0
                   : mixed_bound(s.u, s.denorm, static_cast<Combine>(s.g.combine),
                                 static_cast<Scaling>(s.g.scaling), s.g.nranks, sum_abs, abs_ref);
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
    if (g == e)
      ratio = 0;
    else if (g != g || e != e)
      ratio = 1e300;  // NaN: poison left behind, or garbage
    else {
      const double err = g > e ? g - e : e - g;
      ratio = bound > 0 ? err / bound : 1e300;
    }
    const bool bad = ratio > 1.0;
    return Acc{bad ? 1ULL : 0ULL, bad ? static_cast<long long>(i) : kNone, ratio, static_cast<long long>(i)};
  }
};

CheckSpec make_check_spec(const Pattern& p, const Expectation& e, const void* got, const void* expected);

// ---- The fast exact path of the kernels: 16-byte vectors, 32-bit integer arithmetic ----
// Everything below is __host__ __device__ so gpucts_payload_host runs exactly this code on the CPU
// against Elem (the double reference): same values, lane by lane, wrap-around at 2^32 included.
//
// Why it is cheap: exact-mode spans are powers of two (payload_rules.hpp), so rank r's value at
// element bits h is ilo + (h >> shift), one shift-add; and within a segment of indices whose high
// 32 bits agree, rank r's bits at element i are u32(i) * kIndexMul + seg + r * kRankMul, so a lane
// costs one add. Floats are formed with the 1.5*2^23 trick (one subtract, no int-to-float
// conversion) and narrowed two lanes per instruction (bf16: a byte permute; f16, fp8: the packed
// conversions). The profile of the previous version (10.5 instructions per u8 element, 25 per f32
// one, most of it 64-bit index arithmetic per vector) is in bench/RESULTS.md.

template <std::size_t N>
struct bits_of_size;
template <>
struct bits_of_size<1> {
  using type = std::uint8_t;
};
template <>
struct bits_of_size<2> {
  using type = std::uint16_t;
};
template <>
struct bits_of_size<4> {
  using type = std::uint32_t;
};
template <>
struct bits_of_size<8> {
  using type = std::uint64_t;
};
template <DType D>
using storage_t = typename bits_of_size<sizeof(device_t<D>)>::type;
template <DType D>
inline constexpr int kLanes = static_cast<int>(16 / sizeof(device_t<D>));  // elements per 16-byte vector

template <class To, class From>
__host__ __device__ inline To bit_cast_hd(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast of different sizes");
  To t;
  std::memcpy(static_cast<void*>(&t), &f,
              sizeof(To));  // void*: __half's bits are protected, it is trivially copyable
  return t;
}

#if defined(__CUDACC__)
#define CTS_NOINLINE __noinline__
#else
#define CTS_NOINLINE __attribute__((noinline))
#endif
// "#pragma unroll" for the device compiler only: a host compiler (nvcc's host pass, g++ for
// gpucts_payload_host) does not know it and warns.
#if defined(__CUDA_ARCH__)
#define CTS_UNROLL _Pragma("unroll")
#else
#define CTS_UNROLL
#endif

// fp8 lanes of the lane-by-lane path through the packed conversion instructions (1) or integer
// ops (0). On an H200 the conversions ran at 12% of copy and the integer ops at 61%
// (bench/RESULTS.md, run 11); both pass gpucts_payload_host, but only 1 has run the GPU suites,
// so it stays the default until 0 has. The word path of simd_bytes needs neither.
#ifndef GPUCTS_FP8_PACKED_CVT
#define GPUCTS_FP8_PACKED_CVT 1
#endif

inline constexpr std::uint32_t kRankMul = kRankStep * kIndexMul;  // rank r's bits are r * kRankMul further on
inline constexpr std::uint32_t kFloatBias = 0x4B400000U;          // 1.5*2^23, whose ulp is 1
inline constexpr float kFloatBiasValue = 12582912.0f;

// Two 16-bit or four 8-bit lanes into one word (byte permutes on the device).
__host__ __device__ inline std::uint32_t pack2(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(a, b, 0x5410);
#else
  return (a & 0xFFFFU) | (b << 16);
#endif
}
__host__ __device__ inline std::uint32_t pack4(std::uint32_t a, std::uint32_t b, std::uint32_t c,
                                               std::uint32_t d) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(__byte_perm(a, b, 0x0040), __byte_perm(c, d, 0x0040), 0x5410);
#else
  return (a & 0xFFU) | ((b & 0xFFU) << 8) | ((c & 0xFFU) << 16) | (d << 24);
#endif
}
template <class S>
__host__ __device__ inline uint4 pack_vec(const S* s) {
  std::uint32_t w[4];
  CTS_UNROLL
  for (int j = 0; j < 4; ++j) {
    if constexpr (sizeof(S) == 8)
      w[j] = static_cast<std::uint32_t>(s[j / 2] >> (32 * (j % 2)));
    else if constexpr (sizeof(S) == 4)
      w[j] = s[j];
    else if constexpr (sizeof(S) == 2)
      w[j] = pack2(s[2 * j], s[2 * j + 1]);
    else
      w[j] = pack4(s[4 * j], s[4 * j + 1], s[4 * j + 2], s[4 * j + 3]);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <DType D>
struct Exact {
  using T = device_t<D>;
  using S = storage_t<D>;
  static constexpr bool kFloat = kDTypes[static_cast<std::size_t>(D)].is_float;
  static constexpr int L = kLanes<D>;
  // The arithmetic type of a lane: float (double for f64) or int (long long for 8-byte integers).
  using Num = std::conditional_t<kFloat, std::conditional_t<std::is_same_v<T, double>, double, float>,
                                 std::conditional_t<sizeof(T) == 8, long long, int>>;
  static constexpr std::uint32_t kBias = (kFloat && !std::is_same_v<T, double>) ? kFloatBias : 0U;
  static constexpr bool kPow2 = kFloat && sizeof(T) == 1;  // fp8: signed powers of two (payload_rules.hpp)
  static constexpr int kMantBits = std::is_same_v<T, __nv_fp8_e4m3> ? 3 : 2;
  static constexpr std::uint32_t kExpBias = std::is_same_v<T, __nv_fp8_e4m3> ? 7U : 15U;

  // Rank's value at element bits h (raw_int_bits of a contributor, not prod).
  __host__ __device__ int value_of(std::uint32_t h) const {
    if constexpr (kPow2) {
      const int v = 1 << (jb > 0 ? static_cast<int>((h << 1) >> (32 - jb)) : 0);
      return static_cast<std::int32_t>(h) < 0 ? -v : v;
    } else {
      return ilo + static_cast<int>(h >> shift);
    }
  }

  // The top bytes of four words, in one word (byte permutes on the device).
  __host__ __device__ static std::uint32_t top_bytes(std::uint32_t a, std::uint32_t b, std::uint32_t c,
                                                     std::uint32_t d) {
#if defined(__CUDA_ARCH__)
    return __byte_perm(__byte_perm(a, b, 0x0073), __byte_perm(c, d, 0x0073), 0x5410);
#else
    return (a >> 24) | ((b >> 24) << 8) | ((c >> 24) << 16) | (d & 0xFF000000U);
#endif
  }
  // 1-byte types, 16 lanes of a contributor's input from h (its bits of lane 0), four at a time:
  // byte k of a word is the top byte of lane k's bits, and both byte encodings are linear in it:
  // integers (ilo = 0) take its top bits; fp8 takes the sign bit and j moved onto the exponent
  // field, plus the exponent bias (no carry between bytes: every field stays in its byte).
  __host__ __device__ uint4 simd_bytes(std::uint32_t h) const {
    std::uint32_t w[4];
    CTS_UNROLL
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t g = h + static_cast<std::uint32_t>(4 * j) * kIndexMul;
      const std::uint32_t t = top_bytes(g, g + kIndexMul, g + 2 * kIndexMul, g + 3 * kIndexMul);
      if constexpr (kPow2) {
        const std::uint32_t jmask = ((1U << jb) - 1U) << kMantBits;
        w[j] = (((t >> (7 - jb - kMantBits)) & (jmask * 0x01010101U)) | (t & 0x80808080U)) +
               (kExpBias << kMantBits) * 0x01010101U;
      } else {
        w[j] = (t >> (shift - 24)) & ((0xFFU >> (shift - 24)) * 0x01010101U);
      }
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
  // Those bytes times 2 (premulsum's scalar): integers shift (values < 128), fp8 exponents add one.
  __host__ __device__ static uint4 simd_times2(uint4 v) {
    if constexpr (kPow2) {
      constexpr std::uint32_t one = (1U << kMantBits) * 0x01010101U;
      return make_uint4(v.x + one, v.y + one, v.z + one, v.w + one);
    } else {
      return make_uint4(v.x << 1, v.y << 1, v.z << 1, v.w << 1);
    }
  }

  int kind = 0;             // Expectation::Kind
  int combine = -1;         // the op's Combine, -1: copies
  int scaling = 0;          // the op's Scaling
  int shape = 0;            // the op's ValueShape
  int n = 1, c = 1;         // ranks, contributors
  int ilo = 0, shift = 31;  // value = ilo + (bits >> shift)
  int jb = 0;               // fp8 (kPow2): value = +-2^j, j from the jb bits below the sign
  bool bytewise = false;    // 1-byte types: the word path (simd_bytes) forms these values
  int iscale = 1;           // premulsum: the (integral) scalar
  int src_rank = -1;
  std::int64_t base = 0, block = 0;
  std::uint32_t seed_mix = 0;  // mix32(seed): rank 0's key
  std::uint32_t seg = 0;       // the current segment's constant (for_each_segment)

  // Rank 0's element bits at hash index idx (any idx).
  __host__ __device__ std::uint32_t bits0(std::int64_t idx) const { return payload_bits(seed_mix, idx); }
  // The same at element i of the current segment: one multiply-add (for_each_segment).
  __host__ __device__ std::uint32_t seg_bits(std::int64_t i) const {
    return static_cast<std::uint32_t>(i) * kIndexMul + seg;
  }
  // How far rank r's bits lie from rank 0's.
  __host__ __device__ static std::uint32_t rank_offset(int r) {
    return static_cast<std::uint32_t>(r) * kRankMul;
  }

  // x - kBias as a lane value (floats: one exact subtract).
  __host__ __device__ static Num from_biased(std::uint32_t x) {
    if constexpr (!kFloat)
      return static_cast<Num>(static_cast<int>(x));
    else if constexpr (std::is_same_v<T, double>)
      return static_cast<double>(static_cast<int>(x));
    else
      return bit_cast_hd<float>(x) - kFloatBiasValue;
  }
  __host__ __device__ static Num pow2(int j) {
    if constexpr (!kFloat)
      return static_cast<Num>(1LL << j);
    else if constexpr (std::is_same_v<T, double>)
      return bit_cast_hd<double>(static_cast<std::uint64_t>(1023 + j) << 52);
    else
      return bit_cast_hd<float>(static_cast<std::uint32_t>(127 + j) << 23);
  }
  // T's bits of an exactly representable lane value.
  __host__ __device__ static S bits(Num v) {
    if constexpr (!kFloat)
      return static_cast<S>(static_cast<T>(v));
    else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      return bit_cast_hd<S>(v);
    else if constexpr (std::is_same_v<T, __half>)
      return bit_cast_hd<S>(__float2half_rn(v));
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
      return static_cast<S>(bit_cast_hd<std::uint32_t>(v) >> 16);
    else if constexpr (!GPUCTS_FP8_PACKED_CVT && std::is_same_v<T, __nv_fp8_e4m3>)
      return small_float_byte<120, 20>(v);
    else if constexpr (!GPUCTS_FP8_PACKED_CVT && std::is_same_v<T, __nv_fp8_e5m2>)
      return small_float_byte<112, 21>(v);
    else
      return bit_cast_hd<S>(T(v));  // fp8: nearest (exact here)
  }
  // The fp8 byte of an exactly representable float from integer ops (the encoding without the
  // conversion instructions, GPUCTS_FP8_PACKED_CVT=0): v * 2^-Rebias carries the fp8 exponent bias,
  // so its sign and its exponent+mantissa bits from bit Shift on are the fp8 encoding.
  template <int Rebias, int Shift>
  __host__ __device__ static S small_float_byte(float v) {
    const std::uint32_t b =
        bit_cast_hd<std::uint32_t>(v * bit_cast_hd<float>(static_cast<std::uint32_t>(127 - Rebias) << 23));
    return static_cast<S>((((b << (24 - Shift)) & 0x7F000000U) | (b & 0x80000000U)) >> 24);
  }
  // A whole vector's bits; the narrow floats two lanes per instruction.
  __host__ __device__ static uint4 encode(const Num* v) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      std::uint32_t w[4];
      CTS_UNROLL
      for (int j = 0; j < 4; ++j) {
        const std::uint32_t a = bit_cast_hd<std::uint32_t>(v[2 * j]),
                            b = bit_cast_hd<std::uint32_t>(v[2 * j + 1]);
#if defined(__CUDA_ARCH__)
        w[j] = __byte_perm(a, b, 0x7632);  // the high halves: exact values truncate exactly
#else
        w[j] = (a >> 16) | (b & 0xFFFF0000U);
#endif
      }
      return make_uint4(w[0], w[1], w[2], w[3]);
    } else if constexpr (std::is_same_v<T, __half>) {
      std::uint32_t w[4];
      CTS_UNROLL
      for (int j = 0; j < 4; ++j)
        w[j] = bit_cast_hd<std::uint32_t>(__floats2half2_rn(v[2 * j], v[2 * j + 1]));
      return make_uint4(w[0], w[1], w[2], w[3]);
    } else if constexpr ((std::is_same_v<T, __nv_fp8_e4m3> ||
                          std::is_same_v<T, __nv_fp8_e5m2>)&&GPUCTS_FP8_PACKED_CVT) {
      constexpr __nv_fp8_interpretation_t kind = std::is_same_v<T, __nv_fp8_e4m3> ? __NV_E4M3 : __NV_E5M2;
      std::uint32_t w[4];
      CTS_UNROLL
      for (int j = 0; j < 4; ++j) {
        const std::uint32_t lo =
            __nv_cvt_float2_to_fp8x2(make_float2(v[4 * j], v[4 * j + 1]), __NV_SATFINITE, kind);
        const std::uint32_t hi =
            __nv_cvt_float2_to_fp8x2(make_float2(v[4 * j + 2], v[4 * j + 3]), __NV_SATFINITE, kind);
        w[j] = pack2(lo, hi);
      }
      return make_uint4(w[0], w[1], w[2], w[3]);
    } else {
      S s[L];
      CTS_UNROLL
      for (int k = 0; k < L; ++k) s[k] = bits(v[k]);
      return pack_vec(s);
    }
  }

  // Rank r's input at M consecutive elements; h: rank r's bits of the first.
  template <int M>
  __host__ __device__ void input(int r, std::uint32_t h, Num* out) const {
    if (shape == static_cast<int>(ValueShape::products)) {
      const bool on = r < c;
      CTS_UNROLL
      for (int k = 0; k < M; ++k)
        out[k] = (on && h + static_cast<std::uint32_t>(k) * kIndexMul < 0x40000000U) ? Num(2) : Num(1);
    } else if (r >= c) {
      CTS_UNROLL
      for (int k = 0; k < M; ++k) out[k] = Num(0);
    } else if constexpr (kPow2) {
      CTS_UNROLL
      for (int k = 0; k < M; ++k)
        out[k] = from_biased(
            kBias + static_cast<std::uint32_t>(value_of(h + static_cast<std::uint32_t>(k) * kIndexMul)));
    } else {
      const std::uint32_t b = kBias + static_cast<std::uint32_t>(ilo);
      CTS_UNROLL
      for (int k = 0; k < M; ++k)
        out[k] = from_biased(b + ((h + static_cast<std::uint32_t>(k) * kIndexMul) >> shift));
    }
  }

  // What a correct reduction leaves at M consecutive elements; h: rank 0's bits of the first.
  template <int M>
  __host__ __device__ void reduced(std::uint32_t h, Num* out) const {
    const int cc = c < n ? c : n;
    if (shape ==
        static_cast<int>(ValueShape::products)) {  // the number of factors 2 (the other ranks hold 1)
      int twos[M];
      CTS_UNROLL
      for (int k = 0; k < M; ++k) twos[k] = 0;
      for (int r = 0; r < cc; ++r) {
        const std::uint32_t hr = h + rank_offset(r);
        CTS_UNROLL
        for (int k = 0; k < M; ++k)
          twos[k] += hr + static_cast<std::uint32_t>(k) * kIndexMul < 0x40000000U ? 1 : 0;
      }
      CTS_UNROLL
      for (int k = 0; k < M; ++k) out[k] = pow2(twos[k]);
      return;
    }
    if (shape == static_cast<int>(ValueShape::selects)) {  // max, min: the op's own fold on the values
      const Combine cb = static_cast<Combine>(combine);
      int acc[M];
      CTS_UNROLL
      for (int k = 0; k < M; ++k)
        acc[k] = cc > 0 ? value_of(h + static_cast<std::uint32_t>(k) * kIndexMul) : 0;
      for (int r = 1; r < cc; ++r) {
        const std::uint32_t hr = h + rank_offset(r);
        CTS_UNROLL
        for (int k = 0; k < M; ++k) {
          acc[k] = combine_values(cb, acc[k], value_of(hr + static_cast<std::uint32_t>(k) * kIndexMul));
        }
      }
      if (cc < n) {  // the others hold 0 (raw_int of a non-contributor)
        CTS_UNROLL
        for (int k = 0; k < M; ++k) acc[k] = combine_values(cb, acc[k], 0);
      }
      CTS_UNROLL
      for (int k = 0; k < M; ++k) out[k] = from_biased(kBias + static_cast<std::uint32_t>(acc[k]));
      return;
    }
    // sum, avg, premulsum: the bias and every contributor's ilo in the start value, then one
    // shift-add per rank and lane
    std::uint32_t acc[M];
    CTS_UNROLL
    for (int k = 0; k < M; ++k) acc[k] = kBias + static_cast<std::uint32_t>(kPow2 ? 0 : cc * ilo);
    for (int r = 0; r < cc; ++r) {
      const std::uint32_t hr = h + rank_offset(r);
      CTS_UNROLL
      for (int k = 0; k < M; ++k) {
        const std::uint32_t hk = hr + static_cast<std::uint32_t>(k) * kIndexMul;
        acc[k] += kPow2 ? static_cast<std::uint32_t>(value_of(hk)) : hk >> shift;
      }
    }
    switch (static_cast<Scaling>(scaling)) {
      case Scaling::premultiply:
        CTS_UNROLL
        for (int k = 0; k < M; ++k) out[k] = from_biased(acc[k]) * static_cast<Num>(iscale);
        return;
      case Scaling::average:
        if constexpr (!kFloat) {
          CTS_UNROLL
          for (int k = 0; k < M; ++k)
            out[k] = static_cast<Num>(static_cast<int>(acc[k]) / n);  // >= 0: truncation, as the reference
        } else {
          const Num inv = Num(1) / Num(n);  // n is a power of two here: exact
          CTS_UNROLL
          for (int k = 0; k < M; ++k) out[k] = from_biased(acc[k]) * inv;
        }
        return;
      case Scaling::none:
        break;
    }
    CTS_UNROLL
    for (int k = 0; k < M; ++k) out[k] = from_biased(acc[k]);
  }

  // Element i, any i (the misaligned head, the tail, a vector across a block boundary).
  __host__ __device__ S expected1(std::int64_t i) const {
    Num v[1];
    if (kind == static_cast<int>(Expectation::Kind::copy)) {
      const int src = src_rank >= 0 ? src_rank : static_cast<int>(i / block);
      const std::int64_t j = src_rank >= 0 ? i : i % block;
      input<1>(src, bits0(base + j) + rank_offset(src), v);
    } else {
      reduced<1>(bits0(base + i), v);
    }
    return bits(v[0]);
  }
  __host__ __device__ S input1(int rank, std::int64_t i) const {
    Num v[1];
    input<1>(rank, bits0(i) + rank_offset(rank), v);
    return bits(v[0]);
  }

  // The vector at elements i .. i+L-1, all inside the current segment.
  __host__ __device__ uint4 expected_vec(std::int64_t i) const {
    if (kind == static_cast<int>(Expectation::Kind::copy)) {
      if (src_rank >= 0) {
        return input_vec(src_rank, i);
      } else {
        const bool narrow = ((i | block) >> 32) == 0;  // 32-bit division where it will do
        const std::int64_t q =
            narrow ? static_cast<std::uint32_t>(i) / static_cast<std::uint32_t>(block) : i / block;
        const std::int64_t j = i - q * block;
        if (j + L > block) {  // crosses into the next rank's block
          S s[L];
          CTS_UNROLL
          for (int k = 0; k < L; ++k) s[k] = expected1(i + k);
          return pack_vec(s);
        }
        return input_at(static_cast<int>(q), seg_bits(j) + rank_offset(static_cast<int>(q)));
      }
    }
    const std::uint32_t h = seg_bits(i);
    if constexpr (sizeof(S) ==
                  1) {  // one rank: the reduction of a single input is that input (x2 for premulsum)
      const bool premul = scaling == static_cast<int>(Scaling::premultiply);
      if (bytewise && n == 1 && shape != static_cast<int>(ValueShape::products) && (!premul || iscale == 2)) {
        const uint4 w = simd_bytes(h);
        return premul ? simd_times2(w) : w;
      }
    }
    return lanes_reduced(h);
  }
  __host__ __device__ uint4 input_vec(int rank, std::int64_t i) const {
    return input_at(rank, seg_bits(i) + rank_offset(rank));
  }
  // Rank's input vector from its bits h of lane 0 (Inline: the fill's one vector a loop keeps the
  // lane path inline, which measured faster there; the check's unrolled loop calls it out of line).
  template <bool Inline = false>
  __host__ __device__ uint4 input_at(int rank, std::uint32_t h) const {
    if constexpr (sizeof(S) == 1)
      if (bytewise && shape != static_cast<int>(ValueShape::products) && rank < c) return simd_bytes(h);
    if constexpr (Inline)
      return lanes_input_inline(rank, h);
    else
      return lanes_input(rank, h);
  }
  __host__ __device__ uint4 fill_vec(int rank, std::int64_t i) const {
    return input_at<true>(rank, seg_bits(i) + rank_offset(rank));
  }

  // The lane-by-lane forms. For 1-byte types they are out of line: the check's unrolled loop then
  // holds only the word path, whose code stays small (the fp8 check, whose lane path is the
  // largest, ran at 54% of copy with everything inline while its fill, one vector a loop, ran at 100%).
  __host__ __device__ uint4 lanes_reduced_inline(std::uint32_t h) const {
    Num v[L];
    reduced<L>(h, v);
    return encode(v);
  }
  __host__ __device__ uint4 lanes_input_inline(int rank, std::uint32_t h) const {
    Num v[L];
    input<L>(rank, h, v);
    return encode(v);
  }
  // (by value: the kernel's own copy of the plan stays in registers and constant memory)
  __host__ __device__ CTS_NOINLINE static uint4 lanes_reduced_outline(Exact e, std::uint32_t h) {
    return e.lanes_reduced_inline(h);
  }
  __host__ __device__ CTS_NOINLINE static uint4 lanes_input_outline(Exact e, int rank, std::uint32_t h) {
    return e.lanes_input_inline(rank, h);
  }
  __host__ __device__ uint4 lanes_reduced(std::uint32_t h) const {
    if constexpr (sizeof(S) == 1)
      return lanes_reduced_outline(*this, h);
    else
      return lanes_reduced_inline(h);
  }
  __host__ __device__ uint4 lanes_input(int rank, std::uint32_t h) const {
    if constexpr (sizeof(S) == 1)
      return lanes_input_outline(*this, rank, h);
    else
      return lanes_input_inline(rank, h);
  }

  // Calls f(begin, end, seg) for the pieces of elements [0, count) inside which the vector formulas
  // hold: where the high 32 bits of the hash index (base + i) agree (block copies: one piece,
  // make_exact checked that one block does not cross them). Below 2^32 elements: one or two pieces.
  template <class F>
  void for_each_segment(std::int64_t count, F&& f) const {
    if (kind == static_cast<int>(Expectation::Kind::copy) && src_rank < 0) {
      f(std::int64_t{0}, count, bits0(base));
      return;
    }
    for (std::int64_t b = 0; b < count;) {
      const std::int64_t next = (((base + b) >> 32) + 1) * (std::int64_t{1} << 32) - base;
      const std::int64_t e = next < count ? next : count;
      f(b, e, bits0(base + b) - static_cast<std::uint32_t>(b) * kIndexMul);
      b = e;
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
  v.head =
      addr % size != 0
          ? n
          : static_cast<std::int64_t>(((16 - addr % 16) % 16) / size);  // no vectors if not element-aligned
  if (v.head > n) v.head = n;
  v.nvec = (n - v.head) / lanes;
  return v;
}

// Grid-strided f(i) over the elements of [begin, end) outside the vectors [vbegin, vend): the
// misaligned head and the tail of a segment, which the fill and the check take element by element.
template <class F>
__device__ inline void for_each_unvectorised(std::int64_t begin, std::int64_t vbegin, std::int64_t vend,
                                             std::int64_t end, std::int64_t tid, std::int64_t stride, F&& f) {
  const std::int64_t nhead = vbegin - begin;
  for (std::int64_t k = tid;; k += stride) {
    const std::int64_t i = k < nhead ? begin + k : vend + (k - nhead);
    if (i >= end) break;
    f(i);
  }
}

// log2 of a power of two, or -1.
inline int log2_exact(std::uint32_t x) {
  if (x == 0 || (x & (x - 1)) != 0) return -1;
  int l = 0;
  while ((1U << l) != x) ++l;
  return l;
}

// The fill's and the check's plan, when every value involved is a small integer (or a power of
// two) with a power-of-two span; otherwise the kernels use Elem for every element.
template <DType D>
bool make_exact(const GenParams& g, Exact<D>* out) {
  if (g.mode != static_cast<int>(PayloadMode::exact)) return false;
  const int span_log2 = Exact<D>::kPow2 ? 1 : log2_exact(g.span);
  const int levels_log2 = log2_exact(static_cast<std::uint32_t>(g.pow2_levels));
  if (Exact<D>::kPow2 ? (levels_log2 < 0 || levels_log2 > 2)
                      : (g.pow2_levels != 0 || span_log2 < 1 || span_log2 > 11))
    return false;
  if (g.nranks < 1 || g.nranks > 1024) return false;
  // |every partial result| < 2^22 (the float trick), products within the type's powers of two
  if (static_cast<double>(g.nranks) * kMaxAmplitude * 16 >= 4194304.0 || g.ilo < -1024) return false;
  Exact<D> e;
  e.combine = g.combine;
  e.scaling = g.scaling;
  e.shape = g.shape;
  e.n = g.nranks;
  e.c = g.contributors;
  e.ilo = g.ilo;
  e.shift = 32 - span_log2;
  e.jb = levels_log2 > 0 ? levels_log2 : 0;
  e.bytewise = sizeof(device_t<D>) == 1 && (Exact<D>::kPow2 || (g.ilo == 0 && e.shift >= 24));
  e.seed_mix = mix32(g.seed);
  *out = e;
  return true;
}
template <DType D>
bool make_exact(const CheckSpec& s, Exact<D>* out) {
  if (s.expected) return false;
  Exact<D> e;
  if (!make_exact(s.g, &e)) return false;
  e.kind = s.kind;
  e.base = s.base;
  e.block = s.block;
  e.src_rank = s.src_rank;
  if (s.kind == static_cast<int>(Expectation::Kind::copy)) {
    if (s.src_rank < 0 && (s.block <= 0 || (s.base >> 32) != ((s.base + s.block - 1) >> 32))) return false;
  } else if (s.g.combine < 0) {
    return false;  // a reduction check needs an op
  } else {
    switch (static_cast<Scaling>(s.g.scaling)) {
      case Scaling::none:
        break;
      case Scaling::premultiply: {
        const double k = s.g.scalar;
        if (!(k == static_cast<double>(static_cast<int>(k))) || k < -16 || k > 16) return false;
        e.iscale = static_cast<int>(k);
        break;
      }
      case Scaling::average:
        if (Exact<D>::kFloat && (s.g.nranks & (s.g.nranks - 1)) != 0) return false;
        break;
    }
  }
  *out = e;
  return true;
}

// full: verify() (both passes, the host waits for the verdict). kernels_only: the exact-mode pass
// enqueued and not waited for (enqueue_verify_kernels, for benchmarks).
enum class CheckStage { full, kernels_only };
using CheckFn = VerifyResult (*)(const CheckSpec&, std::size_t, cudaStream_t, double, CheckStage);
template <DType D>
VerifyResult run_check(const CheckSpec& spec, std::size_t count, cudaStream_t stream, double timeout_s,
                       CheckStage stage);

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
// verify_lo.cu: the rows before the first float row (the integers), verify_hi.cu: the rest. Any
// split is correct; this one halves the build time of the two.
constexpr std::size_t first_float_row() {
  std::size_t i = 0;
  while (i < kNumDTypes && !kDTypes[i].is_float) ++i;
  return i;
}
inline constexpr std::size_t kCheckSplit = first_float_row();
static_assert(kCheckSplit > 0 && kCheckSplit < kNumDTypes,
              "each of verify_lo.cu and verify_hi.cu checks some rows");
const std::array<CheckFn, kCheckSplit>& check_fns_lo();
const std::array<CheckFn, kNumDTypes - kCheckSplit>& check_fns_hi();
// One kernel of verify_lo.cu / verify_hi.cu (preload_kernels).
const void* any_check_kernel_lo();
const void* any_check_kernel_hi();

}  // namespace cts::detail
