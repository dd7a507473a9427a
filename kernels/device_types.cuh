// CUDA side of the dtype list: the device type of each DType and exact conversions to/from double.
// Only kernels/*.cu include this (suites never see CUDA types).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "kernels/dtypes.hpp"

namespace cts {

// The device type of a row, from its columns (size, float or not, signed, fraction bits): a new
// row of an existing representation needs nothing here. A representation without a CUDA type
// below does not compile (no primary definition).
template <std::size_t Size, bool Float, bool Signed, int FractionBits>
struct device_type_of;
template <bool Signed>
struct device_type_of<1, false, Signed, 0> {
  using type = std::conditional_t<Signed, std::int8_t, std::uint8_t>;
};
template <bool Signed>
struct device_type_of<2, false, Signed, 0> {
  using type = std::conditional_t<Signed, std::int16_t, std::uint16_t>;
};
template <bool Signed>
struct device_type_of<4, false, Signed, 0> {
  using type = std::conditional_t<Signed, std::int32_t, std::uint32_t>;
};
template <bool Signed>
struct device_type_of<8, false, Signed, 0> {
  using type = std::conditional_t<Signed, std::int64_t, std::uint64_t>;
};
template <>
struct device_type_of<2, true, true, 10> {
  using type = __half;
};
template <>
struct device_type_of<2, true, true, 7> {
  using type = __nv_bfloat16;
};
template <>
struct device_type_of<4, true, true, 23> {
  using type = float;
};
template <>
struct device_type_of<8, true, true, 52> {
  using type = double;
};
template <>
struct device_type_of<1, true, true, 3> {
  using type = __nv_fp8_e4m3;
};
template <>
struct device_type_of<1, true, true, 2> {
  using type = __nv_fp8_e5m2;
};

// The device type of a row (a row of kDTypes or of a test's own table).
template <const DTypeInfo& Row>
using device_type_for =
    typename device_type_of<Row.size, Row.is_float, Row.is_signed, Row.fraction_bits>::type;
template <DType D>
using device_t = typename device_type_of<
    kDTypes[static_cast<std::size_t>(D)].size, kDTypes[static_cast<std::size_t>(D)].is_float,
    kDTypes[static_cast<std::size_t>(D)].is_signed, kDTypes[static_cast<std::size_t>(D)].fraction_bits>::type;

// Every row of the list has a device type of the listed size.
namespace detail {
template <std::size_t... I>
constexpr bool device_sizes_match(std::index_sequence<I...>) {
  return ((sizeof(device_t<kDTypes[I].id>) == kDTypes[I].size) && ...);
}
}  // namespace detail
static_assert(detail::device_sizes_match(std::make_index_sequence<kNumDTypes>{}),
              "device_type size differs from kDTypes");

template <class T>
__host__ __device__ inline double to_double(T v) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<double>(v);
  else
    return static_cast<double>(static_cast<float>(v));
}
// Round-to-nearest into T (integers: the caller keeps values in range).
template <class T>
__host__ __device__ inline T from_double(double v) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<T>(v);
  else if constexpr (std::is_same_v<T, __half>)
    return __double2half(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __double2bfloat16(v);
  else
    return T(v);  // fp8: nearest, saturating to the finite range
}

// Exact small integers (|v| <= 2^11 here) into T, on the conversion units of T's own width.
template <class T>
__host__ __device__ inline T from_int(int v) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<T>(v);
  else if constexpr (std::is_same_v<T, __half>)
    return __int2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __int2bfloat16_rn(v);
  else
    return T(static_cast<float>(v));
}

}  // namespace cts
