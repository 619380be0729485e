#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "quern/error.hpp"
#include "quern/format/crc32c.hpp"
#include "quern/format/record.hpp"
#include "quern/summary/reader.hpp"
#include "test_util.hpp"

using namespace quern;
using quern::test::from_hex;
using quern::test::golden;
using quern::test::temp_dir;
using quern::test::to_hex;

TEST_CASE("SW-21 crc32c test vectors", "[SW-21]") {
  CHECK(crc32c(std::string_view{"123456789"}) == 0xE3069283u);
  std::string zeros(32, '\0');
  CHECK(crc32c(zeros) == 0x8A9136AAu);
  std::string ones(32, '\xff');
  CHECK(crc32c(ones) == 0x62A8AB43u); // RFC 3720 B.4
  CHECK(crc32c(std::string_view{}) == 0u);
  // Extending piece by piece gives the same checksum, whatever the split
  // (the slice-by-8 loop and the byte loop agree).
  std::string text = "The quick brown fox jumps over the lazy dog, 0123456789";
  for (size_t split = 0; split <= text.size(); ++split) {
    auto c = crc32c_extend(crc32c(text.data(), split), text.data() + split,
                           text.size() - split);
    CHECK(c == crc32c(text));
  }
}

TEST_CASE("SW-21 mask and unmask", "[SW-21]") {
  // mask = rotate right by 15, plus 0xA282EAD8 (mod 2^32)
  CHECK(mask_crc(0u) == 0xA282EAD8u);
  CHECK(mask_crc(0xE3069283u) == ((0xE3069283u >> 15 | 0xE3069283u << 17) + 0xA282EAD8u));
  CHECK(mask_crc(0x00008000u) == 0xA282EAD9u); // bit 15 rotates to bit 0
  CHECK(mask_crc(0x00000001u) == 0xA284EAD8u); // bit 0 rotates to bit 17
  CHECK(mask_crc(0xFFFFFFFFu) == 0xA282EAD7u); // wraps modulo 2^32
  for (uint32_t c : {0u, 1u, 0xE3069283u, 0x8A9136AAu, 0xFFFFFFFFu, 0x5D7E2B3Cu})
    CHECK(unmask_crc(mask_crc(c)) == c);
}

TEST_CASE("SW-20 record framing is byte exact", "[SW-20]") {
  // An empty payload: length 0, masked crc of eight zero bytes, masked crc of
  // nothing (crc32c("") = 0, masked 0xA282EAD8).
  std::string out;
  append_record(out, "");
  std::string zeros(8, '\0');
  auto hcrc = mask_crc(crc32c(zeros));
  std::string expected(8, '\0');
  for (int i = 0; i < 4; ++i)
    expected.push_back(static_cast<char>((hcrc >> (8 * i)) & 0xFF));
  expected += from_hex("d8ea82a2");
  CHECK(to_hex(out) == to_hex(expected));
  // The golden file_version record (hand-computed, see golden/make_golden.py).
  auto gold = golden("file_version.bin");
  std::string payload = gold.substr(12, gold.size() - 16);
  std::string framed;
  append_record(framed, payload);
  CHECK(to_hex(framed) == to_hex(gold));
  CHECK(to_hex(gold.substr(0, 12)) == "1800000000000000a37f4b22"); // len 24, masked crc
  CHECK(to_hex(gold.substr(gold.size() - 4)) == "eced8f9d");
}

namespace {

std::string three_records() {
  std::string buf;
  append_record(buf, "alpha");
  append_record(buf, "");
  append_record(buf, std::string(300, 'z'));
  return buf;
}

std::string error_text(const caf::error& e) {
  return message_of(e);
}

} // namespace

TEST_CASE("SW-22 reader reads every record and stops cleanly at eof", "[SW-22]") {
  auto buf = three_records();
  auto r = read_records(buf);
  CHECK(!r.error);
  REQUIRE(r.records.size() == 3);
  CHECK(r.records[0] == "alpha");
  CHECK(r.records[1].empty());
  CHECK(r.records[2] == std::string(300, 'z'));
  CHECK(r.offsets == std::vector<uint64_t>{0, 21, 37});
  temp_dir dir;
  test::write_file(dir / "f", buf);
  auto f = read_record_file(dir / "f");
  CHECK(!f.error);
  CHECK(f.records == r.records);
  CHECK(f.offsets == r.offsets);
  // The streaming reader reports out_of_range "eof" at the end, again and again.
  record_reader reader{dir / "f"};
  std::string payload;
  for (int i = 0; i < 3; ++i)
    REQUIRE(!reader.next(payload));
  auto err = reader.next(payload);
  CHECK(is(err, error_code::out_of_range));
  CHECK(error_text(err) == "eof");
  CHECK(is(reader.next(payload), error_code::out_of_range));
}

TEST_CASE("SW-22 a reader started at a record's offset reads on from it, offsets counted "
          "from the start of the file",
          "[SW-22]") {
  auto buf = three_records(); // at 0, 21, 37
  temp_dir dir;
  test::write_file(dir / "f", buf);
  record_reader file{dir / "f", 21};
  CHECK(file.offset() == 21);
  std::string payload;
  REQUIRE(!file.next(payload));
  CHECK(payload.empty());
  CHECK(file.offset() == 37);
  REQUIRE(!file.next(payload));
  CHECK(payload == std::string(300, 'z'));
  CHECK(is(file.next(payload), error_code::out_of_range));
  // Over a byte source that starts at 37; damage there says its offset in
  // the whole data.
  auto tail = buf.substr(37, 20);
  size_t at = 0;
  record_reader bytes{[&](char* dst, size_t n, size_t& got) -> caf::error {
                        got = std::min(n, tail.size() - at);
                        std::copy_n(tail.data() + at, got, dst);
                        at += got;
                        return caf::none;
                      },
                      37};
  auto err = bytes.next(payload);
  CHECK(is(err, error_code::data_loss));
  CHECK(error_text(err) == "truncated record at 49");
}

TEST_CASE("SW-22 truncated records are reported with the offset of the failing read",
          "[SW-22]") {
  auto buf = three_records();
  // Record 2 ("" payload) starts at 21, record 3 at 37 (payload at 49).
  struct cut_case {
    size_t size;
    std::string message;
    size_t records;
  };
  std::vector<cut_case> cases = {
      {5, "truncated record at 0", 0},   // partial header
      {12, "truncated record at 0", 0},  // header, no payload bytes at all
      {14, "truncated record at 12", 0}, // partial payload
      {20, "truncated record at 12", 0}, // payload without its full footer
      {21 + 11, "truncated record at 21", 1},
      {21 + 12, "truncated record at 21", 1}, // empty payload: footer missing entirely
      {21 + 14, "truncated record at 33", 1}, // partial footer of the empty record
      {37 + 12, "truncated record at 37", 2},
      {37 + 12 + 299, "truncated record at 49", 2},
      {37 + 12 + 300 + 3, "truncated record at 49", 2},
  };
  temp_dir dir;
  for (auto& c : cases) {
    INFO("cut at " << c.size);
    auto part = buf.substr(0, c.size);
    auto r = read_records(part);
    CHECK(is(r.error, error_code::data_loss));
    CHECK(error_text(r.error) == c.message);
    CHECK(r.records.size() == c.records);
    test::write_file(dir / "cut", part);
    auto f = read_record_file(dir / "cut");
    CHECK(is(f.error, error_code::data_loss));
    CHECK(error_text(f.error) == c.message);
    CHECK(f.records.size() == c.records);
  }
  // Cutting exactly at a record boundary is a clean end.
  for (size_t size : {size_t{0}, size_t{21}, size_t{37}}) {
    auto r = read_records(buf.substr(0, size));
    CHECK(!r.error);
  }
}

TEST_CASE("SW-22 corrupted records are reported with the offset of the failing read",
          "[SW-22]") {
  auto buf = three_records();
  struct flip_case {
    size_t pos;
    std::string message;
    size_t records;
  };
  std::vector<flip_case> cases = {
      {0, "corrupted record at 0", 0},   // length byte
      {9, "corrupted record at 0", 0},   // length crc
      {13, "corrupted record at 12", 0}, // payload
      {18, "corrupted record at 12", 0}, // payload crc
      {25, "corrupted record at 21", 1},
      {34, "corrupted record at 33", 1}, // crc of the empty payload
      {37 + 3, "corrupted record at 37", 2},
      {37 + 12 + 150, "corrupted record at 49", 2},
  };
  temp_dir dir;
  for (auto& c : cases) {
    INFO("byte " << c.pos << " flipped");
    auto bad = buf;
    bad[c.pos] = static_cast<char>(bad[c.pos] ^ 0x40);
    auto r = read_records(bad);
    CHECK(is(r.error, error_code::data_loss));
    CHECK(error_text(r.error) == c.message);
    CHECK(r.records.size() == c.records);
    test::write_file(dir / "bad", bad);
    auto f = read_record_file(dir / "bad");
    CHECK(error_text(f.error) == c.message);
    CHECK(f.records.size() == c.records);
    CHECK(render(f.error) == "DataLoss: " + c.message);
  }
}

TEST_CASE("SW-22 a missing file is an error naming it", "[SW-22]") {
  auto f = read_record_file("/nonexistent/quern/file");
  CHECK(is(f.error, error_code::not_found));
  CHECK(message_of(f.error) ==
        "cannot open '/nonexistent/quern/file': No such file or directory");
}

TEST_CASE("SW-21 the hardware and the table CRC-32C agree", "[SW-21]") {
  // crc32c_extend uses the CPU's CRC32 instruction where there is one; the
  // slice-by-8 tables must give the same checksums, for every length and
  // alignment.
  INFO("hardware crc32c: " << detail::crc32c_hardware());
  CHECK(detail::crc32c_portable(0, "123456789", 9) == 0xE3069283u);
  std::string data;
  uint32_t x = 12345;
  for (int i = 0; i < 300; ++i) {
    x = x * 1103515245u + 12345u;
    data.push_back(static_cast<char>(x >> 24));
  }
  for (size_t start = 0; start < 9; ++start)
    for (size_t len = 0; start + len <= data.size(); len += 7)
      REQUIRE(crc32c_extend(0x1234u, data.data() + start, len) ==
              detail::crc32c_portable(0x1234u, data.data() + start, len));
}

TEST_CASE("reading a directory as an event file is an error, not an empty file",
          "[SW-22][reader]") {
  temp_dir dir;
  auto c = read_event_file(dir.path());
  CHECK(c.events.empty());
  REQUIRE(c.error);
  CHECK(message_of(c.error) == "cannot open '" + dir.path() + "': Is a directory");
}
