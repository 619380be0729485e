#pragma once

// Helpers for the input tests: work lists and exception capture (the
// temporary directory is tests/common/temp_dir.hpp).

#include <catch2/catch.hpp>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "quern/error.hpp"
#include "quern/input/readers.hpp"
#include "temp_dir.hpp"

namespace quern::test {

/// A work source over a fixed list; out_of_range_error when it is used up.
inline reader::work_source work_list(std::vector<std::string> files) {
  auto left = std::make_shared<std::deque<std::string>>(files.begin(), files.end());
  return [left]() -> std::string {
    if (left->empty())
      throw out_of_range_error("no more work");
    auto f = left->front();
    left->pop_front();
    return f;
  };
}

/// Every record until the work source ends (out_of_range_error).
inline std::vector<record> read_all(reader& r, const reader::work_source& work) {
  std::vector<record> out;
  for (;;) {
    try {
      out.push_back(r.read(work));
    } catch (const out_of_range_error&) {
      return out;
    }
  }
}

inline std::vector<std::string> keys_of(const std::vector<record>& rs) {
  std::vector<std::string> out;
  for (auto& r : rs)
    out.push_back(r.key);
  return out;
}

inline std::vector<std::string> values_of(const std::vector<record>& rs) {
  std::vector<std::string> out;
  for (auto& r : rs)
    out.push_back(r.value);
  return out;
}

/// The what() of the exception of class E that f throws; fails otherwise.
template <class E, class F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("wrong exception class: " << e.what());
  }
  FAIL("nothing thrown");
  return {};
}

using strings = std::vector<std::string>;

} // namespace quern::test
