// The state codec (CK-1): values round-trip, and any bytes, cut or flipped,
// are refused with a data_loss_error that names them and the offset, or
// decode to something -- never a crash, never an allocation the bytes do not
// pay for.

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "quern/error.hpp"
#include "quern/state_bytes.hpp"

using namespace quern;

namespace {

tensor round_trip(const tensor& t) {
  state_writer w;
  w.write_tensor(t);
  state_reader r{w.bytes(), "test state"};
  auto back = r.read_tensor();
  r.expect_end();
  return back;
}

element small_element() {
  return element{tensor::scalar(int64_t{7}), tensor::scalar("ab"),
                 tensor::vector<float>({1.5f, -2.0f})};
}

} // namespace

TEST_CASE("CK-1 integers, doubles and strings round-trip little-endian", "[CK-1]") {
  state_writer w;
  w.write_u8(0xAB)
      .write_u32(0x01020304u)
      .write_u64(0x0102030405060708ull)
      .write_i64(-2)
      .write_f64(-0.0)
      .write_f64(std::numeric_limits<double>::infinity())
      .write_f64(std::nan(""))
      .write_string("")
      .write_string(std::string("a\0b", 3));
  const auto& b = w.bytes();
  // Fixed widths, least significant byte first.
  CHECK(b.substr(0, 5) == std::string("\xAB\x04\x03\x02\x01", 5));
  CHECK(b.substr(5, 8) == std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  CHECK(b.substr(13, 8) == "\xFE" + std::string(7, '\xFF')); // -2
  state_reader r{b, "test state"};
  CHECK(r.read_u8() == 0xAB);
  CHECK(r.read_u32() == 0x01020304u);
  CHECK(r.read_u64() == 0x0102030405060708ull);
  CHECK(r.read_i64() == -2);
  auto z = r.read_f64();
  CHECK(z == 0.0);
  CHECK(std::signbit(z));
  CHECK(r.read_f64() == std::numeric_limits<double>::infinity());
  CHECK(std::isnan(r.read_f64()));
  CHECK(r.read_string().empty());
  CHECK(r.read_string() == std::string("a\0b", 3));
  CHECK(r.remaining() == 0);
  CHECK_NOTHROW(r.expect_end());
}

TEST_CASE("CK-1 tensors of every dtype round-trip, empty and zero-size ones too",
          "[CK-1]") {
  CHECK(round_trip(tensor::scalar(1.25f)) == tensor::scalar(1.25f));
  CHECK(round_trip(tensor::scalar(2.5)) == tensor::scalar(2.5));
  CHECK(round_trip(tensor::scalar(int32_t{-3})) == tensor::scalar(int32_t{-3}));
  CHECK(round_trip(tensor::scalar(uint8_t{250})) == tensor::scalar(uint8_t{250}));
  CHECK(round_trip(tensor::scalar(int64_t{1} << 40)) == tensor::scalar(int64_t{1} << 40));
  CHECK(round_trip(tensor::scalar(true)) == tensor::scalar(true));
  CHECK(round_trip(tensor::scalar("")) == tensor::scalar(""));
  auto strings = tensor::from_values<std::string>(
      {2, 2}, {"x", std::string(1000, 'y'), "", std::string("\0\1", 2)});
  CHECK(round_trip(strings) == strings);
  CHECK(round_trip(strings.row(1)) == strings.row(1)); // a view of a string tensor
  auto floats = tensor::from_values<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(round_trip(floats) == floats);
  CHECK(round_trip(floats.row(1)) == floats.row(1)); // a view writes its own values
  auto bools = tensor::vector<bool>({true, false, true});
  CHECK(round_trip(bools) == bools);
  for (auto type : all_dtypes) {
    INFO(dtype_name(type));
    auto empty = tensor::zeros(type, tensor_shape{0, 3});
    auto back = round_trip(empty);
    CHECK(back == empty);
    CHECK(back.shape() == (tensor_shape{0, 3}));
    CHECK(round_trip(tensor::zeros(type, tensor_shape{0})) ==
          tensor::zeros(type, tensor_shape{0}));
    CHECK(round_trip(tensor::zeros(type, tensor_shape{2, 1})) ==
          tensor::zeros(type, tensor_shape{2, 1}));
  }
}

TEST_CASE("CK-1 elements round-trip, an element of no components too", "[CK-1]") {
  state_writer w;
  w.write_element(small_element()).write_element(element{});
  state_reader r{w.bytes(), "rows"};
  CHECK(r.read_element() == small_element());
  CHECK(r.read_element().size() == 0);
  r.expect_end();
}

TEST_CASE("CK-1 bytes that do not read name what they are, the problem and the offset",
          "[CK-1]") {
  SECTION("cut short") {
    state_writer w;
    w.write_u32(5);
    state_reader r{w.bytes(), "queue 'q' rows"};
    CHECK_THROWS_MATCHES(r.read_u64(), data_loss_error,
                         Catch::Message("queue 'q' rows: cut short: a u64 needs 8 bytes, "
                                        "4 left at byte 0"));
  }
  SECTION("trailing bytes") {
    state_writer w;
    w.write_u32(5).write_u8(1);
    state_reader r{w.bytes(), "reader state"};
    r.read_u32();
    CHECK_THROWS_MATCHES(r.expect_end(), data_loss_error,
                         Catch::Message("reader state: 1 trailing bytes at byte 4"));
  }
  SECTION("an unknown dtype") {
    std::string b(1, '\x63');
    b += std::string(4, '\0');
    state_reader r{b, "s"};
    CHECK_THROWS_MATCHES(r.read_tensor(), data_loss_error,
                         Catch::Message("s: unknown dtype number 99 at byte 0"));
  }
  SECTION("a byte count that is not the shape's") {
    state_writer w;
    w.write_u8(static_cast<uint8_t>(dtype::int32)).write_u32(1).write_i64(3).write_u64(8);
    w.write_u64(0);
    state_reader r{w.bytes(), "s"};
    CHECK_THROWS_MATCHES(
        r.read_tensor(), data_loss_error,
        Catch::Message("s: 8 bytes for 3 values of dtype int32 at byte 13"));
  }
  SECTION("a negative dimension") {
    state_writer w;
    w.write_u8(static_cast<uint8_t>(dtype::int32))
        .write_u32(1)
        .write_i64(-1)
        .write_u64(0);
    state_reader r{w.bytes(), "s"};
    CHECK_THROWS_MATCHES(r.read_tensor(), data_loss_error,
                         Catch::Message("s: negative dimension -1 at byte 5"));
  }
  SECTION("a bool that is neither 0 nor 1") {
    state_writer w;
    w.write_tensor(tensor::vector<bool>({true, false}));
    auto b = w.bytes();
    b.back() = 2;
    state_reader r{b, "s"};
    CHECK_THROWS_MATCHES(r.read_tensor(), data_loss_error,
                         Catch::Message("s: bool value 2 at byte 22"));
  }
}

TEST_CASE("CK-1 lengths larger than the bytes left are refused before any allocation",
          "[CK-1]") {
  // Each of these would ask for exabytes if its claim were believed.
  state_writer huge_string;
  huge_string.write_u64(uint64_t{1} << 62);
  state_reader a{huge_string.bytes(), "s"};
  CHECK_THROWS_MATCHES(
      a.read_string(), data_loss_error,
      Catch::Message(
          "s: a string of 4611686018427387904 bytes claimed, 0 left at byte 0"));

  state_writer many_strings;
  many_strings.write_u8(static_cast<uint8_t>(dtype::string)).write_u32(2);
  many_strings.write_i64(int64_t{1} << 31).write_i64(int64_t{1} << 31).write_u64(0);
  state_reader b{many_strings.bytes(), "s"};
  CHECK_THROWS_AS(b.read_tensor(), data_loss_error);

  state_writer many_values;
  many_values.write_u8(static_cast<uint8_t>(dtype::float64)).write_u32(1);
  many_values.write_i64(int64_t{1} << 60).write_u64(uint64_t{1} << 63);
  state_reader c{many_values.bytes(), "s"};
  CHECK_THROWS_AS(c.read_tensor(), data_loss_error);

  state_writer overflow;
  overflow.write_u8(static_cast<uint8_t>(dtype::uint8)).write_u32(2);
  overflow.write_i64(int64_t{1} << 40).write_i64(int64_t{1} << 40).write_u64(0);
  state_reader d{overflow.bytes(), "s"};
  CHECK_THROWS_WITH(d.read_tensor(),
                    "s: a shape with more elements than int64 counts at byte 13");

  state_writer high_rank;
  high_rank.write_u8(static_cast<uint8_t>(dtype::uint8)).write_u32(0xFFFFFFFFu);
  state_reader e{high_rank.bytes(), "s"};
  CHECK_THROWS_WITH(e.read_tensor(),
                    "s: a rank of 4294967295 claimed, 0 bytes left at byte 1");

  state_writer components;
  components.write_u32(0xFFFFFFFFu);
  state_reader f{components.bytes(), "s"};
  CHECK_THROWS_AS(f.read_element(), data_loss_error);
}

TEST_CASE("CK-1 every cut and every single-bit flip of an encoded element is refused "
          "or decodes, never crashes",
          "[CK-1]") {
  state_writer w;
  w.write_element(small_element());
  const auto good = w.bytes();
  for (size_t len = 0; len < good.size(); ++len) {
    INFO("cut at " << len);
    state_reader r{std::string_view(good).substr(0, len), "cut"};
    CHECK_THROWS_AS(r.read_element(), data_loss_error);
  }
  size_t refused = 0, decoded = 0;
  for (size_t bit = 0; bit < good.size() * 8; ++bit) {
    auto b = good;
    b[bit / 8] = static_cast<char>(b[bit / 8] ^ (1 << (bit % 8)));
    state_reader r{b, "flipped"};
    try {
      auto e = r.read_element();
      r.expect_end();
      ++decoded; // a value bit: a different element, which is all bytes can say
      CHECK(e != small_element());
    } catch (const data_loss_error& e) {
      ++refused;
      CHECK(std::string(e.what()).rfind("flipped: ", 0) == 0);
    }
  }
  CHECK(refused + decoded == good.size() * 8);
  CHECK(refused > 0);
  CHECK(decoded > 0);
}
