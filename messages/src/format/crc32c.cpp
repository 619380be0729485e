// CRC-32C (Castagnoli), hand-written: none of the Debian packages quern
// depends on (CAF, protobuf, Boost.Program_options, Catch2) exposes a CRC-32C
// function (Boost.CRC would need a new dependency, and protobuf's internal
// crc32c is not public API). Two implementations with the same results:
// slice-by-8 with tables computed at compile time (8 bytes per step, every
// CPU), and the SSE 4.2 CRC32 instruction, which computes exactly this CRC,
// chosen at run time on x86-64 CPUs that have it.
#include "quern/format/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QUERN_CRC32C_SSE42 1
#include <nmmintrin.h>
#endif

namespace quern {

namespace {

constexpr uint32_t poly = 0x82F63B78u; // reflected Castagnoli polynomial

struct crc_tables {
  uint32_t t[8][256];
};

constexpr crc_tables make_tables() {
  crc_tables tab{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
    tab.t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (int s = 1; s < 8; ++s)
      tab.t[s][i] = (tab.t[s - 1][i] >> 8) ^ tab.t[0][tab.t[s - 1][i] & 0xFF];
  return tab;
}

constexpr crc_tables tables = make_tables();

inline uint32_t load_le32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}

} // namespace

namespace {

#ifdef QUERN_CRC32C_SSE42
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const void* data,
                                                        size_t n) {
  auto p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8); // little-endian, as the reflected CRC wants it
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n-- > 0)
    c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

const bool have_sse42 = (__builtin_cpu_init(), __builtin_cpu_supports("sse4.2"));
#endif

} // namespace

bool detail::crc32c_hardware() {
#ifdef QUERN_CRC32C_SSE42
  return have_sse42;
#else
  return false;
#endif
}

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
#ifdef QUERN_CRC32C_SSE42
  if (have_sse42)
    return crc32c_sse42(crc, data, n);
#endif
  return detail::crc32c_portable(crc, data, n);
}

uint32_t detail::crc32c_portable(uint32_t crc, const void* data, size_t n) {
  auto p = static_cast<const unsigned char*>(data);
  const auto& t = tables.t;
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo = load_le32(p) ^ c;
    uint32_t hi = load_le32(p + 4);
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^
        t[4][lo >> 24] ^ t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^
        t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0)
    c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
  return ~c;
}

} // namespace quern
