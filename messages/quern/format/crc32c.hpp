#pragma once

// CRC-32C (docs/semantics.md SW-21) and TFRecord's masking of it: the
// checksums of the TFRecord framing (quern/format/record.hpp, logging/) and of
// checkpoint files (quern/checkpoint_file.hpp, runtime/). It lives in
// messages/, below both.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace quern {

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `n` bytes,
/// continuing from `crc` (0 for a fresh checksum), SW-21.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);

/// CRC-32C of `n` bytes: crc32c("123456789") == 0xE3069283.
inline uint32_t crc32c(const void* data, size_t n) {
  return crc32c_extend(0, data, n);
}
inline uint32_t crc32c(std::string_view s) {
  return crc32c(s.data(), s.size());
}

/// TFRecord's mask: rotate right by 15, add 0xA282EAD8 (mod 2^32).
constexpr uint32_t mask_crc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

/// The inverse of mask_crc.
constexpr uint32_t unmask_crc(uint32_t masked) {
  uint32_t rot = masked - 0xA282EAD8u;
  return (rot >> 17) | (rot << 15);
}

namespace detail {

/// The table-driven CRC-32C (slice-by-8), on every CPU; crc32c_extend uses
/// it where the CPU has no CRC32 instruction. For tests and benchmarks.
uint32_t crc32c_portable(uint32_t crc, const void* data, size_t n);

/// Whether crc32c_extend uses the CPU's CRC32 instruction (x86-64 SSE 4.2).
bool crc32c_hardware();

} // namespace detail

} // namespace quern
