#pragma once

// Values packed end to end in one string (what reader::read_values_up_to
// returns and decode_csv takes): a batch of text lines costs two allocations
// instead of one per line.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "quern/tensor.hpp"

namespace quern {

/// Value i is text[i == 0 ? 0 : ends[i - 1], ends[i]).
struct packed_values {
  std::string text;
  std::vector<size_t> ends;

  size_t size() const { return ends.size(); }
  bool empty() const { return ends.empty(); }
  std::string_view operator[](size_t i) const {
    size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view{text}.substr(begin, ends[i] - begin);
  }
  /// The values as a string vector tensor (TF's `lines`).
  tensor to_tensor() const {
    std::vector<std::string> xs;
    xs.reserve(size());
    for (size_t i = 0; i < size(); ++i)
      xs.emplace_back((*this)[i]);
    return tensor::vector<std::string>(std::move(xs));
  }
};

} // namespace quern
