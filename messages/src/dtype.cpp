#include "quern/dtype.hpp"

#include <type_traits>

#include "quern/error.hpp"

namespace quern {

const char* dtype_name(dtype t) {
  switch (t) {
  case dtype::float32:
    return "float";
  case dtype::float64:
    return "double";
  case dtype::int32:
    return "int32";
  case dtype::uint8:
    return "uint8";
  case dtype::string:
    return "string";
  case dtype::int64:
    return "int64";
  case dtype::boolean:
    return "bool";
  }
  return "invalid";
}

bool is_valid_dtype(uint8_t raw) {
  for (auto t : all_dtypes)
    if (static_cast<uint8_t>(t) == raw)
      return true;
  return false;
}

dtype dtype_from_name(const std::string& name) {
  for (auto t : all_dtypes)
    if (name == dtype_name(t))
      return t;
  if (name == "float32")
    return dtype::float32;
  if (name == "float64")
    return dtype::float64;
  throw invalid_argument_error("unknown dtype '" + name +
                               "' (expected float, double, int32, int64, uint8, bool or "
                               "string)");
}

size_t dtype_size(dtype t) {
  return visit_dtype(t, [](auto tag) -> size_t {
    using T = typename decltype(tag)::type;
    return std::is_same_v<T, std::string> ? 0 : sizeof(T);
  });
}

void detail::throw_invalid_dtype(dtype t) {
  throw invalid_argument_error("invalid dtype " + std::to_string(static_cast<int>(t)));
}

} // namespace quern
