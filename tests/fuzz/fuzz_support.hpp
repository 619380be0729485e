#pragma once

// What the libFuzzer targets of tests/fuzz/ share: the promise check that
// traps with the broken promise's text, the fuzz input read byte by byte,
// the actor system of the targets that need one, and writing files.
//
// Define QUERN_FUZZ_TARGET (the target's name, a string literal) before
// including this header.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <caf/actor_system.hpp>

#include "quern/messages.hpp"

#ifndef QUERN_FUZZ_TARGET
#error "define QUERN_FUZZ_TARGET before including fuzz_support.hpp"
#endif

namespace quern::fuzz {

/// A promise broke: say which, then trap so that libFuzzer keeps the input.
[[noreturn]] inline void broken(const char* what, int line) {
  std::fprintf(stderr, "%s: broken promise at line %d: %s\n", QUERN_FUZZ_TARGET, line,
               what);
  std::fflush(stderr);
  __builtin_trap();
}

/// The fuzz input, read byte by byte; zeros once it is used up.
class input {
public:
  input(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool done() const { return pos_ >= size_; }

  /// sizeof(T) bytes as a T.
  template <class T>
  T raw() {
    T x{};
    unsigned char bytes[sizeof(T)] = {};
    for (auto& b : bytes)
      b = u8();
    std::memcpy(&x, bytes, sizeof(T));
    return x;
  }

  /// A string of up to `max` bytes: its length comes first.
  std::string str(size_t max) {
    auto n = u8() % (max + 1);
    std::string s;
    for (size_t i = 0; i < n && !done(); ++i)
      s += static_cast<char>(u8());
    return s;
  }

private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

/// The actor system of a target: made once, never destroyed (libFuzzer
/// exits without unwinding).
inline caf::actor_system& system() {
  static auto* cfg = new quern::config;
  static auto* sys = new caf::actor_system{*cfg};
  return *sys;
}

/// Writes `bytes` to `path` (an input file, a seed); aborts when it cannot.
inline void write_file(const std::string& path, std::string_view bytes) {
  auto* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::abort();
  }
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(path.c_str());
    std::abort();
  }
  std::fclose(f);
}

} // namespace quern::fuzz

#define PROMISE(cond)                                                                    \
  do {                                                                                   \
    if (!(cond))                                                                         \
      ::quern::fuzz::broken(#cond, __LINE__);                                            \
  } while (false)
