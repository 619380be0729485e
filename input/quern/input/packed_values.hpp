#pragma once

// Values packed end to end in one string (what reader::read_values_up_to
// returns and decode_csv takes): a batch of text lines costs two allocations
// instead of one per line.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "quern/error.hpp"
#include "quern/tensor.hpp"

namespace quern {

/// Value i is text[i == 0 ? 0 : ends[i - 1], ends[i]).
struct packed_values {
  std::string text;
  std::vector<size_t> ends;

  size_t size() const { return ends.size(); }
  bool empty() const { return ends.empty(); }
  /// Throws invalid_argument_error `<who>: packed record <r> ends at <e>,
  /// outside <from>..<size> (...)` when an end goes back or past the text
  /// (values packed by hand); operator[] trusts the ends.
  void check_ends(const std::string& who) const {
    size_t at = 0;
    for (size_t r = 0; r < ends.size(); ++r) {
      if (ends[r] < at || ends[r] > text.size())
        throw invalid_argument_error(
            who + ": packed record " + std::to_string(r) + " ends at " +
            std::to_string(ends[r]) + ", outside " + std::to_string(at) + ".." +
            std::to_string(text.size()) +
            " (ends must not decrease and must lie within the text)");
      at = ends[r];
    }
  }
  std::string_view operator[](size_t i) const {
    size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view{text}.substr(begin, ends[i] - begin);
  }
  /// The values as a string vector tensor (TF's `lines`); throws as
  /// check_ends.
  tensor to_tensor() const {
    check_ends("packed_values::to_tensor");
    std::vector<std::string> xs;
    xs.reserve(size());
    for (size_t i = 0; i < size(); ++i)
      xs.emplace_back((*this)[i]);
    return tensor::vector<std::string>(std::move(xs));
  }
};

} // namespace quern
