#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace quern {

/// Element types of a tensor. The numeric values are TensorFlow's `DataType`
/// numbers, so a dtype can be written into a TensorProto unchanged.
enum class dtype : uint8_t {
  float32 = 1,
  float64 = 2,
  int32 = 3,
  uint8 = 4,
  string = 7,
  int64 = 9,
  boolean = 10,
};

/// TensorFlow's `DataTypeString`: "float", "double", "int32", "uint8",
/// "string", "int64", "bool".
const char* dtype_name(dtype t);

/// Inverse of dtype_name; also accepts "float32"/"float64". Throws
/// invalid_argument_error for an unknown name.
dtype dtype_from_name(const std::string& name);

/// Whether `raw` is the number of one of the dtypes above.
bool is_valid_dtype(uint8_t raw);

/// Size in bytes of one value; 0 for string.
size_t dtype_size(dtype t);

/// Maps a C++ value type to its dtype: float, double, int32_t, int64_t,
/// uint8_t, bool, std::string.
template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr dtype value = dtype::float32;
};
template <>
struct dtype_of<double> {
  static constexpr dtype value = dtype::float64;
};
template <>
struct dtype_of<int32_t> {
  static constexpr dtype value = dtype::int32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr dtype value = dtype::int64;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr dtype value = dtype::uint8;
};
template <>
struct dtype_of<bool> {
  static constexpr dtype value = dtype::boolean;
};
template <>
struct dtype_of<std::string> {
  static constexpr dtype value = dtype::string;
};

template <class T>
constexpr dtype dtype_of_v = dtype_of<T>::value;

} // namespace quern
