// CUDA side of the dtype list: the device type of each DType and exact conversions to/from double.
// Only kernels/*.cu include this (suites never see CUDA types).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "dtypes.hpp"

namespace cts {

template <DType D>
struct device_type;
template <> struct device_type<DType::i8>     { using type = std::int8_t; };
template <> struct device_type<DType::u8>     { using type = std::uint8_t; };
template <> struct device_type<DType::i32>    { using type = std::int32_t; };
template <> struct device_type<DType::u32>    { using type = std::uint32_t; };
template <> struct device_type<DType::i64>    { using type = std::int64_t; };
template <> struct device_type<DType::u64>    { using type = std::uint64_t; };
template <> struct device_type<DType::f16>    { using type = __half; };
template <> struct device_type<DType::bf16>   { using type = __nv_bfloat16; };
template <> struct device_type<DType::f32>    { using type = float; };
template <> struct device_type<DType::f64>    { using type = double; };
template <> struct device_type<DType::f8e4m3> { using type = __nv_fp8_e4m3; };
template <> struct device_type<DType::f8e5m2> { using type = __nv_fp8_e5m2; };
template <DType D>
using device_t = typename device_type<D>::type;

// Every row of the list has a device type of the listed size.
namespace detail {
template <std::size_t... I>
constexpr bool device_sizes_match(std::index_sequence<I...>) {
  return ((sizeof(device_t<kDTypes[I].id>) == kDTypes[I].size) && ...);
}
}  // namespace detail
static_assert(detail::device_sizes_match(std::make_index_sequence<kNumDTypes>{}), "device_type size differs from kDTypes");

template <class T>
__host__ __device__ inline double to_double(T v) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(v);
  else return static_cast<double>(static_cast<float>(v));
}
// Round-to-nearest into T (integers: the caller keeps values in range).
template <class T>
__host__ __device__ inline T from_double(double v) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<T>(v);
  else if constexpr (std::is_same_v<T, __half>) return __double2half(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __double2bfloat16(v);
  else return T(v);  // fp8: nearest, saturating to the finite range
}

// Exact small integers (|v| <= 2^11 here) into T, on the conversion units of T's own width.
template <class T>
__host__ __device__ inline T from_int(int v) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<T>(v);
  else if constexpr (std::is_same_v<T, __half>) return __int2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __int2bfloat16_rn(v);
  else return T(static_cast<float>(v));
}

}  // namespace cts
