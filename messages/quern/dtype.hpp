#pragma once

// The element types of tensors: quern::dtype, with TensorFlow's DataType numbers and
// names (docs/semantics.md C-2), the C++ type of each (dtype_of_v<T>), and
// visit_dtype(t, f) for code written once for every type. A queue's components are
// declared with them:
//   quern::spawn_fifo_queue(sys, 100, {quern::dtype::float32, quern::dtype::int64});

#include <array>
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

/// Every dtype, in TensorFlow's numbering order.
constexpr std::array<dtype, 7> all_dtypes{dtype::float32, dtype::float64, dtype::int32,
                                          dtype::uint8,   dtype::string,  dtype::int64,
                                          dtype::boolean};

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

/// A C++ value type as a value: what visit_dtype passes.
template <class T>
struct type_tag {
  using type = T;
};

namespace detail {
[[noreturn]] void throw_invalid_dtype(dtype t);
} // namespace detail

/// Calls `f(type_tag<T>{})` with the C++ value type T of `t` (float, double,
/// int32_t, uint8_t, std::string, int64_t, bool) and returns its result:
/// the one place that maps a dtype to a type, for code written once for
/// every type. Throws invalid_argument_error for a value that is no dtype.
///   auto bytes = visit_dtype(t, [](auto tag) {
///     return sizeof(typename decltype(tag)::type);
///   });
template <class F>
decltype(auto) visit_dtype(dtype t, F&& f) {
  switch (t) {
  case dtype::float32:
    return f(type_tag<float>{});
  case dtype::float64:
    return f(type_tag<double>{});
  case dtype::int32:
    return f(type_tag<int32_t>{});
  case dtype::uint8:
    return f(type_tag<uint8_t>{});
  case dtype::string:
    return f(type_tag<std::string>{});
  case dtype::int64:
    return f(type_tag<int64_t>{});
  case dtype::boolean:
    return f(type_tag<bool>{});
  }
  detail::throw_invalid_dtype(t);
}

} // namespace quern
