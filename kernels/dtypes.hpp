// The ONE dtype list and the ONE reduction list. Every mapping (ncclDataType_t, name, size,
// exactness limits, first NCCL release, first SM) is a column here; visit_dtype/visit_op replace
// every switch. Plain C++17: includable by g++ without CUDA (the .cu side maps DType to __half,
// __nv_bfloat16, __nv_fp8_e4m3 ... in device_types.cuh). Adding a dtype is one row of kDTypes;
// adding a reduction is one row of kRedOps (everything an op does derives from its columns).
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#ifndef CTS_HD
#if defined(__CUDACC__)
#define CTS_HD __host__ __device__
#else
#define CTS_HD
#endif
#endif

namespace cts {

enum class DType : int { i8, u8, i32, u32, i64, u64, f16, bf16, f32, f64, f8e4m3, f8e5m2 };

struct DTypeInfo {
  DType id;
  const char* name;  // case names and the matrix data use these
  int nccl;          // ncclDataType_t value (static_assert'ed against nccl.h in kernels/*.cu)
  std::size_t size;  // bytes per element
  bool is_float;
  bool is_signed;
  int fraction_bits;    // explicit mantissa bits (floats); 0 for integers
  double exact_int;     // every integer in [0, exact_int] is representable (integers: the max)
  int max_pow2;         // largest k with 2^k representable (keeps products exact)
  double denorm_min;    // smallest positive subnormal (floats); 1 for integers
  long first_nccl;      // NCCL_VERSION_CODE that added the type (0: every release)
  int first_reduce_sm;  // SM (10*major+minor) NCCL needs to reduce it (0: any)
};

// Sources: nccl.h ncclDataType_t (values), NCCL release notes (bf16 2.10.3, fp8 2.24.3); NCCL
// 2.24 release notes: fp8 reductions need sm_90 (copies work anywhere).
inline constexpr DTypeInfo kDTypes[] = {
    {DType::i8, "i8", 0, 1, false, true, 0, 127.0, 6, 1.0, 0, 0},
    {DType::u8, "u8", 1, 1, false, false, 0, 255.0, 7, 1.0, 0, 0},
    {DType::i32, "i32", 2, 4, false, true, 0, 2147483647.0, 30, 1.0, 0, 0},
    {DType::u32, "u32", 3, 4, false, false, 0, 4294967295.0, 31, 1.0, 0, 0},
    {DType::i64, "i64", 4, 8, false, true, 0, 9007199254740992.0, 62, 1.0, 0, 0},
    {DType::u64, "u64", 5, 8, false, false, 0, 9007199254740992.0, 63, 1.0, 0, 0},
    {DType::f16, "f16", 6, 2, true, true, 10, 2048.0, 15, 5.9604644775390625e-08, 0, 0},
    {DType::bf16, "bf16", 9, 2, true, true, 7, 256.0, 127, 9.183549615799121e-41, 21003, 0},
    {DType::f32, "f32", 7, 4, true, true, 23, 16777216.0, 127, 1.401298464324817e-45, 0, 0},
    {DType::f64, "f64", 8, 8, true, true, 52, 9007199254740992.0, 1023, 4.9406564584124654e-324, 0, 0},
    {DType::f8e4m3, "f8e4m3", 10, 1, true, true, 3, 16.0, 8, 0.001953125, 22403, 90},
    {DType::f8e5m2, "f8e5m2", 11, 1, true, true, 2, 8.0, 15, 1.52587890625e-05, 22403, 90},
};
inline constexpr std::size_t kNumDTypes = sizeof(kDTypes) / sizeof(kDTypes[0]);

enum class RedOp : int { sum, prod, max, min, avg, premulsum };

// How an op folds two partial results.
enum class Combine : int { add, multiply, max, min };
// What an op does around the fold: nothing, each input times the op's scalar first (PreMulSum),
// or the result divided by the number of ranks (NCCL multiplies float inputs by 1/n first;
// integers: the sum, then a truncating division).
enum class Scaling : int { none, premultiply, average };

struct RedOpInfo {
  RedOp id;
  const char* name;
  int nccl;         // built-in ncclRedOp_t value; -1: created per communicator (PreMulSum)
  long first_nccl;  // NCCL_VERSION_CODE that added it (0: every release)
  Combine combine;
  Scaling scaling;
  // Every column is given: a row that leaves one out does not compile (rather than meaning "sum").
  constexpr RedOpInfo(RedOp id_, const char* name_, int nccl_, long first_nccl_, Combine combine_,
                      Scaling scaling_)
      : id(id_), name(name_), nccl(nccl_), first_nccl(first_nccl_), combine(combine_), scaling(scaling_) {}
};

// Sources: nccl.h ncclRedOp_t; NCCL release notes (ncclAvg 2.10.3, ncclRedOpCreatePreMulSum 2.11.4).
// The identity, the device and host fold, the host model of NCCL's order, the exact-mode values
// and the mixed-mode bound of each row derive from (combine, scaling) in the functions below,
// each an exhaustive switch checked for every row at compile time (end of this file).
inline constexpr RedOpInfo kRedOps[] = {
    {RedOp::sum, "sum", 0, 0, Combine::add, Scaling::none},
    {RedOp::prod, "prod", 1, 0, Combine::multiply, Scaling::none},
    {RedOp::max, "max", 2, 0, Combine::max, Scaling::none},
    {RedOp::min, "min", 3, 0, Combine::min, Scaling::none},
    {RedOp::avg, "avg", 4, 21003, Combine::add, Scaling::average},
    {RedOp::premulsum, "premulsum", -1, 21104, Combine::add, Scaling::premultiply},
};
inline constexpr std::size_t kNumRedOps = sizeof(kRedOps) / sizeof(kRedOps[0]);

namespace detail {
// Reached only for a value outside its enumeration. Not constexpr, so a row whose (combine,
// scaling) a switch below does not handle fails the compile-time checks instead of falling back.
[[noreturn]] CTS_HD inline void unlisted(const char* what) {
#if defined(__CUDA_ARCH__)
  (void)what;
  __trap();
#else
  throw std::logic_error(std::string("gpucts: ") + what + " outside its list");
#endif
}
}  // namespace detail

// The fold of two partial results (the device reference, the host model, the fast path's lanes).
template <class V>
CTS_HD constexpr V combine_values(Combine c, V a, V b) {
  switch (c) {
    case Combine::add:
      return a + b;
    case Combine::multiply:
      return a * b;
    case Combine::max:
      return b > a ? b : a;
    case Combine::min:
      return b < a ? b : a;
  }
  detail::unlisted("Combine");
}
// The identity of the fold (where it starts).
CTS_HD constexpr double fold_identity(Combine c) {
  switch (c) {
    case Combine::add:
      return 0.0;
    case Combine::multiply:
      return 1.0;
    case Combine::max:
      return -std::numeric_limits<double>::infinity();
    case Combine::min:
      return std::numeric_limits<double>::infinity();
  }
  detail::unlisted("Combine");
}
// The exact-mode values a fold needs (payload_rules.hpp): integers whose sums stay exact, products
// of {1, 2}, or any value of the range for a selection (whose result is one of the inputs).
enum class ValueShape : int { sums, products, selects };
CTS_HD constexpr ValueShape value_shape(Combine c) {
  switch (c) {
    case Combine::add:
      return ValueShape::sums;
    case Combine::multiply:
      return ValueShape::products;
    case Combine::max:
    case Combine::min:
      return ValueShape::selects;
  }
  detail::unlisted("Combine");
}
// The fp64 reference: an input as it enters the fold, and the folded result at the end.
CTS_HD constexpr double reference_input(Scaling s, double x, double scalar) {
  switch (s) {
    case Scaling::none:
    case Scaling::average:
      return x;
    case Scaling::premultiply:
      return x * scalar;
  }
  detail::unlisted("Scaling");
}
CTS_HD constexpr double reference_result(Scaling s, double acc, int nranks, bool is_float) {
  switch (s) {
    case Scaling::none:
    case Scaling::premultiply:
      return acc;
    case Scaling::average: {
      const double q = acc / nranks;
      return is_float ? q : static_cast<double>(static_cast<long long>(q));  // truncation toward zero
    }
  }
  detail::unlisted("Scaling");
}
// NCCL's own order, for the host model (each step then rounds to the dtype): the factor an input
// is multiplied by before the fold (1: none), and the result after it.
constexpr double nccl_input_factor(Scaling s, double scalar, double inv_n, bool is_float) {
  switch (s) {
    case Scaling::none:
      return 1.0;
    case Scaling::premultiply:
      return scalar;
    case Scaling::average:
      return is_float ? inv_n : 1.0;
  }
  detail::unlisted("Scaling");
}
constexpr double nccl_result(Scaling s, double acc, int nranks, bool is_float) {
  switch (s) {
    case Scaling::none:
    case Scaling::premultiply:
      return acc;
    case Scaling::average:
      return is_float ? acc : static_cast<double>(static_cast<long long>(acc) / nranks);
  }
  detail::unlisted("Scaling");
}
// A result that rounds (the ops with mixed-precision cases); a selection returns an input.
constexpr bool rounds(Combine c) { return value_shape(c) != ValueShape::selects; }

// The table rows are in enum order, so lookup is an index (checked at compile time).
namespace detail {
template <std::size_t... I>
constexpr bool dtypes_in_order(std::index_sequence<I...>) {
  return ((kDTypes[I].id == DType(I)) && ...);
}
template <std::size_t... I>
constexpr bool ops_in_order(std::index_sequence<I...>) {
  return ((kRedOps[I].id == RedOp(I)) && ...);
}
}  // namespace detail
static_assert(detail::dtypes_in_order(std::make_index_sequence<kNumDTypes>{}),
              "kDTypes rows must follow DType order");
static_assert(detail::ops_in_order(std::make_index_sequence<kNumRedOps>{}),
              "kRedOps rows must follow RedOp order");

constexpr const DTypeInfo& dtype_info(DType d) { return kDTypes[static_cast<std::size_t>(d)]; }
constexpr const RedOpInfo& op_info(RedOp o) { return kRedOps[static_cast<std::size_t>(o)]; }
inline const char* name_of(DType d) { return dtype_info(d).name; }
inline const char* name_of(RedOp o) { return op_info(o).name; }

// Unit roundoff 2^-(p) with p = fraction bits + 1 (0 for integers: they are exact).
constexpr double unit_roundoff(const DTypeInfo& t) {
  double u = 1.0;
  for (int i = 0; i <= t.fraction_bits; ++i) u *= 0.5;
  return t.is_float ? u : 0.0;
}
constexpr double unit_roundoff(DType d) { return unit_roundoff(dtype_info(d)); }

inline std::optional<DType> find_dtype(std::string_view name) {
  for (const auto& t : kDTypes)
    if (name == t.name) return t.id;
  return std::nullopt;
}
inline std::optional<RedOp> find_op(std::string_view name) {
  for (const auto& o : kRedOps)
    if (name == o.name) return o.id;
  return std::nullopt;
}

template <DType D>
using dtype_tag = std::integral_constant<DType, D>;
template <RedOp O>
using op_tag = std::integral_constant<RedOp, O>;

namespace detail {
// Calls f with the tag of the row whose id is `v`; one fold instead of a switch per use site.
template <class Tag, auto& Table, class F, std::size_t... I>
auto visit_row(decltype(Table[0].id) v, F&& f, std::index_sequence<I...>) {
  using R = decltype(f(Tag::template at<Table[0].id>()));
  if constexpr (std::is_void_v<R>) {
    bool hit = ((v == Table[I].id ? (f(Tag::template at<Table[I].id>()), true) : false) || ...);
    if (!hit) throw std::invalid_argument("gpucts: value outside its list");
  } else {
    std::optional<R> r;
    bool hit = ((v == Table[I].id ? (r.emplace(f(Tag::template at<Table[I].id>())), true) : false) || ...);
    if (!hit) throw std::invalid_argument("gpucts: value outside its list");
    return R(*std::move(r));  // by value: r is local
  }
}
struct DTypeTagMaker {
  template <DType D>
  static dtype_tag<D> at() {
    return {};
  }
};
struct OpTagMaker {
  template <RedOp O>
  static op_tag<O> at() {
    return {};
  }
};
}  // namespace detail

// f(dtype_tag<D>{}) for the runtime value d.
template <class F>
auto visit_dtype(DType d, F&& f) {
  return detail::visit_row<detail::DTypeTagMaker, kDTypes>(d, std::forward<F>(f),
                                                           std::make_index_sequence<kNumDTypes>{});
}
// f(op_tag<O>{}) for the runtime value o.
template <class F>
auto visit_op(RedOp o, F&& f) {
  return detail::visit_row<detail::OpTagMaker, kRedOps>(o, std::forward<F>(f),
                                                        std::make_index_sequence<kNumRedOps>{});
}

// Every row's (combine, scaling) is handled by every function above: evaluated at compile time,
// a switch without the row's case does not compile (there is no default case to fall into).
namespace detail {
constexpr bool op_row_handled(const RedOpInfo& o) {
  return combine_values(o.combine, 1.0, 2.0) == combine_values(o.combine, 1.0, 2.0) &&
         fold_identity(o.combine) == fold_identity(o.combine) &&
         value_shape(o.combine) == value_shape(o.combine) && reference_input(o.scaling, 3.0, 2.0) > 0 &&
         reference_result(o.scaling, 4.0, 2, true) > 0 && nccl_input_factor(o.scaling, 2.0, 0.5, true) > 0 &&
         nccl_result(o.scaling, 4.0, 2, false) > 0;
}
template <std::size_t... I>
constexpr bool op_rows_handled(std::index_sequence<I...>) {
  return (op_row_handled(kRedOps[I]) && ...);
}
}  // namespace detail
static_assert(detail::op_rows_handled(std::make_index_sequence<kNumRedOps>{}),
              "a kRedOps row that a rule does not handle");

}  // namespace cts
