#pragma once

#include <cstddef>
#include <cstdint>

namespace quern::detail {

/// The table-driven CRC-32C (slice-by-8), on every CPU.
uint32_t crc32c_portable(uint32_t crc, const void* data, size_t n);

/// Whether crc32c_extend uses the CPU's CRC32 instruction (x86-64 SSE 4.2).
bool crc32c_hardware();

} // namespace quern::detail
