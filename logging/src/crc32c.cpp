// CRC-32C (Castagnoli), hand-written: none of the Debian packages quern
// depends on (CAF, protobuf, Boost.Program_options, Catch2) exposes a CRC-32C
// function (Boost.CRC would need a new dependency, and protobuf's internal
// crc32c is not public API), and hardware CRC instructions (SSE 4.2) are not
// available on every target. Slice-by-8 with tables computed at compile time
// processes 8 bytes per step, fast enough that framing costs little next to
// protobuf encoding.
#include "quern/summary/record.hpp"

#include <array>
#include <cstring>

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

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
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
