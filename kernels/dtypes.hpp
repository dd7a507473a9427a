// The ONE dtype list and the ONE reduction list. Every mapping (ncclDataType_t, name, size,
// exactness limits, first NCCL release, first SM) is a column here; visit_dtype/visit_op replace
// every switch. Plain C++17: includable by g++ without CUDA (the .cu side maps DType to __half,
// __nv_bfloat16, __nv_fp8_e4m3 ... in device_types.cuh). Adding a dtype is one row of kDTypes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace cts {

enum class DType : int { i8, u8, i32, u32, i64, u64, f16, bf16, f32, f64, f8e4m3, f8e5m2 };

struct DTypeInfo {
  DType id;
  const char* name;        // case names and the matrix data use these
  int nccl;                // ncclDataType_t value (static_assert'ed against nccl.h in kernels/*.cu)
  std::size_t size;        // bytes per element
  bool is_float;
  bool is_signed;
  int fraction_bits;       // explicit mantissa bits (floats); 0 for integers
  double exact_int;        // every integer in [0, exact_int] is representable (integers: the max)
  int max_pow2;            // largest k with 2^k representable (keeps products exact)
  double denorm_min;       // smallest positive subnormal (floats); 1 for integers
  long first_nccl;         // NCCL_VERSION_CODE that added the type (0: every release)
  int first_reduce_sm;     // SM (10*major+minor) NCCL needs to reduce it (0: any)
};

// Sources: nccl.h ncclDataType_t (values), compat-facts.md 3b (bf16 2.10.3, fp8 2.24.3); NCCL
// 2.24 release notes: fp8 reductions need sm_90 (copies work anywhere).
inline constexpr DTypeInfo kDTypes[] = {
    {DType::i8,     "i8",     0,  1, false, true,  0,  127.0,                 6,    1.0,                     0,     0},
    {DType::u8,     "u8",     1,  1, false, false, 0,  255.0,                 7,    1.0,                     0,     0},
    {DType::i32,    "i32",    2,  4, false, true,  0,  2147483647.0,          30,   1.0,                     0,     0},
    {DType::u32,    "u32",    3,  4, false, false, 0,  4294967295.0,          31,   1.0,                     0,     0},
    {DType::i64,    "i64",    4,  8, false, true,  0,  9007199254740992.0,    62,   1.0,                     0,     0},
    {DType::u64,    "u64",    5,  8, false, false, 0,  9007199254740992.0,    63,   1.0,                     0,     0},
    {DType::f16,    "f16",    6,  2, true,  true,  10, 2048.0,                15,   5.9604644775390625e-08,  0,     0},
    {DType::bf16,   "bf16",   9,  2, true,  true,  7,  256.0,                 127,  9.183549615799121e-41,   21003, 0},
    {DType::f32,    "f32",    7,  4, true,  true,  23, 16777216.0,            127,  1.401298464324817e-45,   0,     0},
    {DType::f64,    "f64",    8,  8, true,  true,  52, 9007199254740992.0,    1023, 4.9406564584124654e-324, 0,     0},
    {DType::f8e4m3, "f8e4m3", 10, 1, true,  true,  3,  16.0,                  8,    0.001953125,             22403, 90},
    {DType::f8e5m2, "f8e5m2", 11, 1, true,  true,  2,  8.0,                   15,   1.52587890625e-05,       22403, 90},
};
inline constexpr std::size_t kNumDTypes = sizeof(kDTypes) / sizeof(kDTypes[0]);

enum class RedOp : int { sum, prod, max, min, avg, premulsum };

struct RedOpInfo {
  RedOp id;
  const char* name;
  int nccl;                // built-in ncclRedOp_t value; -1: created per communicator (PreMulSum)
  long first_nccl;         // NCCL_VERSION_CODE that added it (0: every release)
};

// Sources: nccl.h ncclRedOp_t; compat-facts.md 3b (ncclAvg 2.10.3, ncclRedOpCreatePreMulSum 2.11.4).
inline constexpr RedOpInfo kRedOps[] = {
    {RedOp::sum,       "sum",       0,  0},
    {RedOp::prod,      "prod",      1,  0},
    {RedOp::max,       "max",       2,  0},
    {RedOp::min,       "min",       3,  0},
    {RedOp::avg,       "avg",       4,  21003},
    {RedOp::premulsum, "premulsum", -1, 21104},
};
inline constexpr std::size_t kNumRedOps = sizeof(kRedOps) / sizeof(kRedOps[0]);

// The table rows are in enum order, so lookup is an index (checked at compile time).
namespace detail {
template <std::size_t... I>
constexpr bool dtypes_in_order(std::index_sequence<I...>) { return ((kDTypes[I].id == DType(I)) && ...); }
template <std::size_t... I>
constexpr bool ops_in_order(std::index_sequence<I...>) { return ((kRedOps[I].id == RedOp(I)) && ...); }
}  // namespace detail
static_assert(detail::dtypes_in_order(std::make_index_sequence<kNumDTypes>{}), "kDTypes rows must follow DType order");
static_assert(detail::ops_in_order(std::make_index_sequence<kNumRedOps>{}), "kRedOps rows must follow RedOp order");

constexpr const DTypeInfo& dtype_info(DType d) { return kDTypes[static_cast<std::size_t>(d)]; }
constexpr const RedOpInfo& op_info(RedOp o) { return kRedOps[static_cast<std::size_t>(o)]; }
inline const char* name_of(DType d) { return dtype_info(d).name; }
inline const char* name_of(RedOp o) { return op_info(o).name; }

// Unit roundoff 2^-(p) with p = fraction bits + 1 (0 for integers: they are exact).
constexpr double unit_roundoff(DType d) {
  double u = 1.0;
  for (int i = 0; i <= dtype_info(d).fraction_bits; ++i) u *= 0.5;
  return dtype_info(d).is_float ? u : 0.0;
}

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
struct DTypeTagMaker { template <DType D> static dtype_tag<D> at() { return {}; } };
struct OpTagMaker { template <RedOp O> static op_tag<O> at() { return {}; } };
}  // namespace detail

// f(dtype_tag<D>{}) for the runtime value d.
template <class F>
auto visit_dtype(DType d, F&& f) {
  return detail::visit_row<detail::DTypeTagMaker, kDTypes>(d, std::forward<F>(f), std::make_index_sequence<kNumDTypes>{});
}
// f(op_tag<O>{}) for the runtime value o.
template <class F>
auto visit_op(RedOp o, F&& f) {
  return detail::visit_row<detail::OpTagMaker, kRedOps>(o, std::forward<F>(f), std::make_index_sequence<kNumRedOps>{});
}

}  // namespace cts
