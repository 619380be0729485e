#pragma once
// The scalars node.cpp's `log` role writes, for the test that reads them back.
#include <cstdint>
#include <limits>

namespace quern::test {

/// The value of step `step`: finite, +inf, -inf and NaN in turn (the
/// non-finite ones are what CAF's own float packing cannot send).
inline float log_value(int64_t step) {
  switch (step % 4) {
  case 1:
    return std::numeric_limits<float>::infinity();
  case 2:
    return -std::numeric_limits<float>::infinity();
  case 3:
    return std::numeric_limits<float>::quiet_NaN();
  default:
    return static_cast<float>(step) * 0.5f;
  }
}

} // namespace quern::test
