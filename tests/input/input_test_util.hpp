#pragma once

// Helpers for the input tests: a unique temporary directory (removed at the
// end of the test), files written into it, and exception capture.

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

namespace quern::test {

/// A fresh directory /tmp/quern_input_XXXXXX, removed with its contents.
class temp_dir {
public:
  temp_dir() {
    std::string tmpl = "/tmp/quern_input_XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }

  /// Writes `contents` (bytes as given) to <dir>/<name>; returns the path.
  std::string write(const std::string& name, const std::string& contents) const {
    auto file = path_ + "/" + name;
    std::ofstream out{file, std::ios::binary};
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    REQUIRE(out.good());
    return file;
  }

  std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

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
