#include "quern/dtype.hpp"

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
  switch (static_cast<dtype>(raw)) {
  case dtype::float32:
  case dtype::float64:
  case dtype::int32:
  case dtype::uint8:
  case dtype::string:
  case dtype::int64:
  case dtype::boolean:
    return true;
  }
  return false;
}

dtype dtype_from_name(const std::string& name) {
  for (auto t : {dtype::float32, dtype::float64, dtype::int32, dtype::uint8,
                 dtype::string, dtype::int64, dtype::boolean})
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
  switch (t) {
  case dtype::float32:
  case dtype::int32:
    return 4;
  case dtype::float64:
  case dtype::int64:
    return 8;
  case dtype::uint8:
  case dtype::boolean:
    return 1;
  case dtype::string:
    return 0;
  }
  return 0;
}

} // namespace quern
