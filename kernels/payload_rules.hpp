// Host/device rules of the payloads, in plain C++ so the CPU suite tests them without a GPU:
// what each rank holds at each index (a closed form of seed, rank, index), the value ranges that
// keep every reduction exact in any order, and the error bound of the mixed-precision mode.
// The CUDA side (payload.cu) evaluates exactly these functions on the device.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/dtypes.hpp"

namespace cts {

enum class PayloadMode : int {
  exact,  // small integers / powers of two: every reduction exact in any order, compared exactly
  mixed   // random values, fp64 reference, per-element bound from epsilon, op and rank count
};
inline const char* name_of(PayloadMode m) { return m == PayloadMode::exact ? "exact" : "mixed"; }

// Everything a kernel needs to regenerate any rank's input element: plain data, passed by value.
struct GenParams {
  int mode = 0;           // PayloadMode
  int combine = -1;       // the op's Combine, -1: not a reduction (copies)
  int scaling = 0;        // the op's Scaling
  int shape = 0;          // value_shape(combine): ValueShape
  double lo = 0, hi = 0;  // exact mode: integers uniform in [lo, hi]
  int ilo = 0;            // lo and hi - lo + 1 as integers, so the device never converts them
  std::uint32_t span = 1;
  int pow2_levels = 0;   // exact fp8: values +-2^j, j uniform in [0, pow2_levels) (0: ilo + uniform of span)
  int contributors = 1;  // ranks >= contributors hold the neutral element (0 for sums, 1 for prod)
  std::uint32_t seed = 1;
  int nranks = 1;
  double scalar = 1;  // premulsum scalar (already rounded to the dtype)
};

// Exact mode ranges. Sums (sum, avg, premulsum with factor k = scalar): each of `contributors`
// ranks adds an integer of magnitude <= A with k*contributors*A <= exact_int, so every partial
// sum in any order is an integer the type represents. Products: values in {1, 2} on at most
// max_pow2 ranks (powers of two multiply exactly). Integers stay non-negative and below the type's
// maximum so the all-ones poison (-1 / max) is never a valid result; floats take both signs
// (their poison is NaN). Every span hi - lo + 1 is a power of two, so the device forms a value
// from the element bits with one shift (the multiply-high reduction below is then that shift).
// fp8 types take signed powers of two +-2^j instead (every integer of that magnitude is exact in
// them too): their bytes are then linear in the element bits, so the device forms four lanes with
// a few word operations instead of a float conversion each.
struct ValueRange {
  double lo = 0, hi = 0;
  int contributors = 1;
  int pow2_levels = 0;  // > 0: values +-2^j, j in [0, pow2_levels), lo = -hi
};

inline constexpr double kMaxAmplitude = 1000;  // keeps wide types' sums well inside 2^53

// The largest power of two <= x (x >= 1).
inline double floor_pow2(double x) {
  double p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}
// Values of magnitude <= a with a power-of-two span: [-p, p-1] for floats, [0, p-1] for integers.
inline void set_pow2_span(ValueRange& r, const DTypeInfo& t, double a) {
  if (t.is_float && t.size == 1) {  // +-2^j with 2^(levels-1) <= a, levels a power of two (1, 2, 4)
    int levels = 1;
    while (levels < 4 && std::ldexp(1.0, 2 * levels - 1) <= a) levels *= 2;
    r.pow2_levels = levels;
    r.hi = std::ldexp(1.0, levels - 1);
    r.lo = -r.hi;
    return;
  }
  const double p = floor_pow2(t.is_float ? a : a + 1);
  r.lo = t.is_float ? -p : 0;
  r.hi = p - 1;
}

// op: the row of kRedOps (or a row of a test's own table); nullptr: copies.
// The rules below read a dtype's row (its columns, never its id), so a row of a test's own table
// works as one of kDTypes.
inline ValueRange exact_range(const DTypeInfo& t, const RedOpInfo* op, int nranks, double scalar = 1) {
  const double limit = t.is_float ? t.exact_int : t.exact_int - 1;  // ints: keep clear of poison
  ValueRange r;
  auto select = [&] {  // copies and selections: any value of the range, every rank contributing
    set_pow2_span(r, t, std::min(limit, kMaxAmplitude));
    r.contributors = nranks;
    return r;
  };
  if (!op) return select();
  switch (value_shape(op->combine)) {
    case ValueShape::products:
      r.lo = 1;
      r.hi = 2;
      r.contributors = std::max(1, std::min(nranks, t.max_pow2));
      return r;
    case ValueShape::selects:
      return select();
    case ValueShape::sums: {
      const double k = op->scaling == Scaling::premultiply ? std::max(1.0, std::fabs(scalar)) : 1.0;
      // Clamped as a double first: limit / k exceeds INT_MAX for the 32- and 64-bit integer types.
      const int c =
          std::max(1, static_cast<int>(std::min(static_cast<double>(nranks), std::floor(limit / k))));
      set_pow2_span(r, t, std::max(1.0, std::min(kMaxAmplitude, std::floor(limit / (k * c)))));
      r.contributors = c;
      return r;
    }
  }
  detail::unlisted("ValueShape");
}
inline ValueRange exact_range(DType d, const RedOpInfo* op, int nranks, double scalar = 1) {
  return exact_range(dtype_info(d), op, nranks, scalar);
}
inline ValueRange exact_range(DType d, std::optional<RedOp> op, int nranks, double scalar = 1) {
  return exact_range(dtype_info(d), op ? &op_info(*op) : nullptr, nranks, scalar);
}

// The premulsum scalar a case uses: 2 keeps exact mode exact; 0.75 (representable even in
// f8e5m2) makes the mixed mode round.
inline double premul_scalar(const DTypeInfo& t, PayloadMode m) {
  return (m == PayloadMode::mixed && t.is_float) ? 0.75 : 2.0;
}
inline double premul_scalar(DType d, PayloadMode m) { return premul_scalar(dtype_info(d), m); }

// The scalar of an op in a case: premul_scalar for a premultiplying op, 1 otherwise.
inline double op_scalar(const RedOpInfo* op, const DTypeInfo& t, PayloadMode m) {
  return op && op->scaling == Scaling::premultiply ? premul_scalar(t, m) : 1.0;
}
inline double op_scalar(const RedOpInfo* op, DType d, PayloadMode m) {
  return op_scalar(op, dtype_info(d), m);
}
inline double op_scalar(std::optional<RedOp> op, DType d, PayloadMode m) {
  return op_scalar(op ? &op_info(*op) : nullptr, d, m);
}

// Why (dtype, op, nranks) cannot be exact, or nullopt: an average over floats divides by nranks,
// exact only for powers of two (the mixed mode covers the rest).
inline std::optional<std::string> exact_limitation(const DTypeInfo& t, const RedOpInfo& op, int nranks) {
  if (op.scaling == Scaling::average && t.is_float && (nranks & (nranks - 1)) != 0)
    return std::string(op.name) + " of " + t.name + " over " + std::to_string(nranks) +
           " ranks is not exact (1/" + std::to_string(nranks) + " rounds); use mixed mode";
  return std::nullopt;
}
inline std::optional<std::string> exact_limitation(DType d, const RedOpInfo& op, int nranks) {
  return exact_limitation(dtype_info(d), op, nranks);
}
inline std::optional<std::string> exact_limitation(DType d, RedOp op, int nranks) {
  return exact_limitation(dtype_info(d), op_info(op), nranks);
}

// A case's payload seed from its full name ("AllReduce.f32_sum_1048575_inplace"): 64-bit FNV-1a,
// folded to 32 bits, odd. Written out here rather than std::hash, which differs between standard
// libraries, so a case fills the same values, and a failing element's index reproduces, whatever
// built it.
inline constexpr std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}
inline constexpr std::uint32_t payload_seed(std::string_view case_name) {
  const std::uint64_t h = fnv1a64(case_name);
  return static_cast<std::uint32_t>(h ^ (h >> 32)) | 1U;
}

// 32-bit mixing only: 64-bit multiplies and divisions would make fill compute-bound on the GPU.
CTS_HD inline std::uint32_t mix32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}
inline constexpr std::uint32_t kRankStep = 0x9E3779B9U;  // rank r's sequence starts r*kRankStep further on
inline constexpr std::uint32_t kHighStep = 0xC2B2AE35U;  // indices >= 2^32
inline constexpr std::uint32_t kIndexMul = 0x85EBCA6BU;  // odd: a bijection of the 32-bit index
// Element bits: an odd-multiplier Weyl sequence, h(idx) = (idx + key) * kIndexMul mod 2^32, with the
// key from (seed, rank) hashed once. Consecutive elements differ by the constant kIndexMul, so the
// device derives a whole 16-byte vector from one base with one add per element (memory-bound fill
// and verify); the top bits, which the range reduction keeps, still vary from element to element
// and rank to rank. Mixed mode adds one mix32 per element on top (random-looking values).
CTS_HD inline std::uint32_t payload_rank_key(std::uint32_t seed, int rank) {
  return mix32(seed) + static_cast<std::uint32_t>(rank) * kRankStep;
}
CTS_HD inline std::uint32_t payload_bits(std::uint32_t rank_key, std::int64_t idx) {
  const std::uint64_t u = static_cast<std::uint64_t>(idx);
  return (static_cast<std::uint32_t>(u) + rank_key + static_cast<std::uint32_t>(u >> 32) * kHighStep) *
         kIndexMul;
}
CTS_HD inline std::uint32_t payload_hash(std::uint32_t seed, int rank, std::int64_t idx) {
  return payload_bits(payload_rank_key(seed, rank), idx);
}

// Exact mode: rank's input value from its element bits h, an integer of |v| <= 1000 (or 1, 2 for
// products), so the fill converts it to the dtype without a detour through double. The top bits
// of h decide (multiply-high range reduction: no division on the device).
CTS_HD inline int raw_int_bits(const GenParams& g, int rank, std::uint32_t h) {
  if (g.shape == static_cast<int>(ValueShape::products))
    return (rank < g.contributors && (h >> 30) == 0U) ? 2 : 1;
  if (rank >= g.contributors) return 0;  // the identity of a sum (a selection has every rank contributing)
  if (g.pow2_levels > 0) {               // sign from the top bit, j from the bits below it
    int jb = 0;
    while ((1 << jb) < g.pow2_levels) ++jb;
    const int v = 1 << (jb > 0 ? static_cast<int>((h << 1) >> (32 - jb)) : 0);
    return (h >> 31) ? -v : v;
  }
  return g.ilo + static_cast<int>((static_cast<std::uint64_t>(h) * g.span) >> 32);
}
CTS_HD inline int raw_int(const GenParams& g, int rank, std::int64_t idx) {
  return raw_int_bits(g, rank, payload_hash(g.seed, rank, idx));
}

// Mixed mode, from the element bits: uniform in [-1, 1) (products: [1, 2) with a random sign).
CTS_HD inline double raw_mixed_bits(const GenParams& g, int rank, std::uint32_t h0) {
  const std::uint32_t h = mix32(h0);
  const bool prod = g.shape == static_cast<int>(ValueShape::products);
  const double u = static_cast<double>(h >> 1) * (1.0 / 2147483648.0);  // [0, 1)
  if (prod) return rank >= g.contributors ? 1.0 : ((h & 1U) ? -(1.0 + u) : (1.0 + u));
  return 2.0 * u - 1.0;
}

// Element idx of rank's input, before rounding to the dtype (exact mode: already representable).
CTS_HD inline double raw_value(const GenParams& g, int rank, std::int64_t idx) {
  if (g.mode == static_cast<int>(PayloadMode::exact)) return static_cast<double>(raw_int(g, rank, idx));
  return raw_mixed_bits(g, rank, payload_hash(g.seed, rank, idx));
}

// Mixed mode: the largest |got - ref| a correct reduction may show at one element, where ref is
// the fp64 reduction of the (rounded) inputs, sum_abs the sum of |term| and abs_ref = |ref|.
// Recursive summation in any order: gamma_{n-1} * sum|x| (Higham 4.3); premulsum adds one rounding
// per product, avg one for the division (or the 1/n pre-multiplication NCCL uses for floats);
// products: (n-1) roundings relative to the result. Subnormal underflow adds half a step per
// rounding. max/min select an input: bound 0. The fp64 reference rounds too (it matters for f64
// itself), so the dtype's u is widened by double's 2^-53. A (combine, scaling) pair without a
// bound here is not a row of kRedOps (checked at compile time below).
CTS_HD constexpr double mixed_bound(double u_dtype, double denorm_min, Combine c, Scaling s, int n,
                                    double sum_abs, double abs_ref) {
  const double u = u_dtype + 1.1102230246251565e-16;
  const double m = static_cast<double>(n - 1) * u;
  const double gamma = m < 0.5 ? m / (1.0 - m) : 2.0 * m;
  const double under = static_cast<double>(n + 1) * denorm_min;
  switch (c) {
    case Combine::add:
      switch (s) {
        case Scaling::none:
          return gamma * sum_abs + under;
        case Scaling::premultiply:
          return (gamma + u) * sum_abs * (1.0 + u) + under;
        case Scaling::average:
          return ((gamma + 2.0 * u) * sum_abs / n) * (1.0 + u) + under;
      }
      break;
    case Combine::multiply:
      if (s == Scaling::none) return gamma * abs_ref + under;
      break;
    case Combine::max:
    case Combine::min:
      if (s == Scaling::none) return 0.0;  // the result is one of the inputs
      break;
  }
  detail::unlisted("(Combine, Scaling) pair without a mixed-mode bound");
}
namespace detail {
template <std::size_t... I>
constexpr bool op_rows_bounded(std::index_sequence<I...>) {
  return ((mixed_bound(0x1p-24, 0, kRedOps[I].combine, kRedOps[I].scaling, 4, 1, 1) >= 0) && ...);
}
}  // namespace detail
static_assert(detail::op_rows_bounded(std::make_index_sequence<kNumRedOps>{}),
              "a kRedOps row without a mixed-mode bound");

// Parameters of one (dtype, op, mode, nranks) payload.
// op: the row of kRedOps (or of a test's own table), nullptr for copies.
inline GenParams make_gen_params(const DTypeInfo& t, const RedOpInfo* op, PayloadMode mode,
                                 std::uint32_t seed, int nranks, double scalar) {
  GenParams g;
  g.mode = static_cast<int>(mode);
  if (op) {
    g.combine = static_cast<int>(op->combine);
    g.scaling = static_cast<int>(op->scaling);
    g.shape = static_cast<int>(value_shape(op->combine));
  }
  g.seed = seed;
  g.nranks = nranks;
  g.scalar = scalar;
  if (mode == PayloadMode::mixed && t.is_float) {
    const bool products = op && value_shape(op->combine) == ValueShape::products;
    g.contributors = products ? std::max(1, std::min(nranks, t.max_pow2)) : nranks;
  } else {
    g.mode = static_cast<int>(PayloadMode::exact);  // integers are exact in either mode
    ValueRange r = exact_range(t, op, nranks, scalar);
    g.lo = r.lo;
    g.hi = r.hi;
    g.ilo = static_cast<int>(r.lo);
    g.span = static_cast<std::uint32_t>(r.hi - r.lo) + 1U;
    g.contributors = r.contributors;
    g.pow2_levels = r.pow2_levels;
  }
  return g;
}
inline GenParams make_gen_params(DType d, const RedOpInfo* op, PayloadMode mode, std::uint32_t seed,
                                 int nranks, double scalar) {
  return make_gen_params(dtype_info(d), op, mode, seed, nranks, scalar);
}
inline GenParams make_gen_params(DType d, std::optional<RedOp> op, PayloadMode mode, std::uint32_t seed,
                                 int nranks, double scalar) {
  return make_gen_params(dtype_info(d), op ? &op_info(*op) : nullptr, mode, seed, nranks, scalar);
}

}  // namespace cts
