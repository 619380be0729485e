#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "quern/summary.hpp"
#include "temp_dir.hpp"

namespace quern::test {

inline std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

inline std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

/// The golden files of tests/logging/golden (see make_golden.py there).
inline std::string golden(const std::string& name) {
  auto path = std::string(QUERN_LOGGING_GOLDEN_DIR) + "/" + name;
  auto bytes = read_file(path);
  if (bytes.empty())
    FAIL("missing golden file " << path);
  return bytes;
}

/// The event files in `dir`, sorted.
inline std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> result;
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find("tfevents") != std::string::npos)
      result.push_back(e.path().string());
  std::sort(result.begin(), result.end());
  return result;
}

/// The member `T` of an event's `what`; fails the test if it holds another.
template <class T>
const T& what_of(const summary_event& ev) {
  auto* x = caf::get_if<T>(&ev.what);
  REQUIRE(x != nullptr);
  return *x;
}

/// The values of a summary event; fails the test if it is not a summary.
inline const std::vector<summary_value>& values_of(const summary_event& ev) {
  return what_of<summary_event::summary>(ev).values;
}
inline std::vector<summary_value>& values_of(summary_event& ev) {
  return const_cast<summary_event::summary&>(what_of<summary_event::summary>(ev)).values;
}

} // namespace quern::test
