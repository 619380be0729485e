// decode_csv (docs/semantics.md CSV-1..CSV-3): dtypes and shapes, splitting and
// quoting, defaults, strict numbers, select_cols, and every error text.

#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "input_test_util.hpp"

#include "quern/input/decode_csv.hpp"

using namespace quern;
using namespace quern::test;

namespace {

template <class T>
tensor def(T value) {
  return tensor::vector<T>({value});
}

template <class T>
tensor required() {
  return tensor::vector<T>({});
}

tensor records(std::vector<std::string> rs) {
  return tensor::vector<std::string>(std::move(rs));
}

template <class F>
std::string csv_error(F&& f) {
  return thrown<invalid_argument_error>(std::forward<F>(f));
}

} // namespace

// -- CSV-1 ------------------------------------------------------------------------

TEST_CASE("CSV-1 one output per default, with its dtype and the records' shape",
          "[CSV-1]") {
  auto recs = tensor::from_values<std::string>(
      tensor_shape{2, 2},
      {"1,2,1.5,2.25,a", "3,4,0.5,-1e3,b", "5,6,,,", "7,8,9,10,\"d\""});
  auto out = decode_csv(recs, {def<int32_t>(0), def<int64_t>(0), def<float>(-1.f),
                               def<double>(-2.0), def<std::string>("zz")});
  REQUIRE(out.size() == 5);
  CHECK(out[0].type() == dtype::int32);
  CHECK(out[1].type() == dtype::int64);
  CHECK(out[2].type() == dtype::float32);
  CHECK(out[3].type() == dtype::float64);
  CHECK(out[4].type() == dtype::string);
  for (auto& t : out)
    CHECK(t.shape() == tensor_shape{2, 2});
  CHECK(out[0].to_vector<int32_t>() == std::vector<int32_t>{1, 3, 5, 7});
  CHECK(out[1].to_vector<int64_t>() == std::vector<int64_t>{2, 4, 6, 8});
  CHECK(out[2].to_vector<float>() == std::vector<float>{1.5f, 0.5f, -1.f, 9.f});
  CHECK(out[3].to_vector<double>() == std::vector<double>{2.25, -1000.0, -2.0, 10.0});
  CHECK(out[4].to_vector<std::string>() == strings{"a", "b", "zz", "d"});
}

TEST_CASE("CSV-1 a single record gives scalars", "[CSV-1]") {
  auto out = decode_csv("7,x", {def<int64_t>(0), def<std::string>("")});
  REQUIRE(out.size() == 2);
  CHECK(out[0].shape() == tensor_shape{});
  CHECK(out[0].scalar_value<int64_t>() == 7);
  CHECK(out[1].scalar_value<std::string>() == "x");
  // A rank-0 default works as well as a one-element vector.
  CHECK(decode_csv(",", {tensor::scalar(int32_t{4}), def<int32_t>(5)})[0]
            .scalar_value<int32_t>() == 4);
  // No records: empty outputs of the records' shape.
  auto none = decode_csv(records({}), {def<float>(0.f)});
  CHECK(none[0].shape() == tensor_shape{0});
}

TEST_CASE("CSV-1 defaults have 0 or 1 elements, field_delim is one char", "[CSV-1]") {
  CHECK(csv_error([] {
          decode_csv("1,2", {def<int32_t>(0), tensor::vector<int32_t>({1, 2})});
        }) == "There should only be 1 default per field but field 1 has 2");
  CHECK(csv_error([] {
          decode_csv("1", {tensor::from_values<int32_t>(tensor_shape{1, 1}, {1})});
        }) == "Each record default should be at most rank 1");
  CHECK(csv_error([] { decode_csv("1", {tensor::vector<uint8_t>({1})}); }) ==
        "csv: data type uint8 not supported in field 0");
  CHECK(csv_error([] { decode_csv("1", {def<int32_t>(0)}, ""); }) ==
        "field_delim should be only 1 char");
  CHECK(csv_error([] { decode_csv("1", {def<int32_t>(0)}, "::"); }) ==
        "field_delim should be only 1 char");
  CHECK(csv_error([] { decode_csv(tensor::scalar(int64_t{1}), {def<int32_t>(0)}); }) ==
        "decode_csv: records must be a string tensor, not int64");
  // Another delimiter.
  auto out = decode_csv("1|2", {def<int32_t>(0), def<int32_t>(0)}, "|");
  CHECK(out[1].scalar_value<int32_t>() == 2);
}

// -- CSV-2 ------------------------------------------------------------------------

TEST_CASE("CSV-2 splitting: trailing delimiter, CR/LF between fields", "[CSV-2]") {
  auto defaults = std::vector<tensor>{def<std::string>("A"), def<std::string>("B"),
                                      def<std::string>("C")};
  auto col = [&](const std::string& rec, size_t i) {
    return decode_csv(rec, defaults)[i].scalar_value<std::string>();
  };
  // A trailing delimiter adds an empty last field, which takes its default.
  CHECK(col("x,y,", 2) == "C");
  CHECK(col(",,", 0) == "A");
  // "\n" and "\r" at the start of a field are skipped.
  CHECK(col("x,\r\ny,\nz", 1) == "y");
  CHECK(col("x,\r\ny,\nz", 2) == "z");
  CHECK(col("\nx,y,z", 0) == "x");
  // A trailing delimiter counts only as the record's last character: in
  // "x,y,\n" the "\n" is skipped and the record has 2 fields (TF).
  CHECK(csv_error([&] { decode_csv("x,y,\n", defaults); }) ==
        "Expect 3 fields but have 2 in record 0");
}

TEST_CASE("CSV-2 quoted fields", "[CSV-2]") {
  auto defaults = std::vector<tensor>{def<std::string>("D"), def<std::string>("E")};
  auto both = [&](const std::string& rec) {
    auto out = decode_csv(rec, defaults);
    return strings{out[0].scalar_value<std::string>(),
                   out[1].scalar_value<std::string>()};
  };
  CHECK(both("\"a,b\",c") == strings{"a,b", "c"});
  CHECK(both("\"say \"\"hi\"\"\",\"\"\"\"") == strings{"say \"hi\"", "\""});
  CHECK(both("\"\",x") == strings{"D", "x"}); // an empty quoted field is empty
  CHECK(both("\"line\nbreak\",\"cr\r\"") == strings{"line\nbreak", "cr\r"});
  // Without use_quote_delim quotes are ordinary characters.
  auto raw = decode_csv("\"a\",b\"", defaults, ",", false);
  CHECK(raw[0].scalar_value<std::string>() == "\"a\"");
  CHECK(raw[1].scalar_value<std::string>() == "b\"");
  // Quoted numbers parse as numbers.
  CHECK(decode_csv("\"12\"", {def<int32_t>(0)})[0].scalar_value<int32_t>() == 12);
}

TEST_CASE("CSV-2 malformed quoting is INVALID_ARGUMENT naming field and record",
          "[CSV-2]") {
  auto defaults = std::vector<tensor>{def<std::string>(""), def<std::string>("")};
  auto bad = [&](const std::string& rec) {
    return csv_error([&] { decode_csv(records({"ok,ok", "ok,ok", rec}), defaults); });
  };
  CHECK(bad("x,\"ab") == "Quoted field has to end with quote followed by delim or end "
                         "(field 1 in record 2)");
  CHECK(bad("x,\"a\"\"") == "Quoted field has to end with quote followed by delim or end "
                            "(field 1 in record 2)");
  CHECK(bad("x,\"ab\"c") ==
        "Quote inside a string has to be escaped by another quote (field 1 in record 2)");
  CHECK(bad("\"abc,d") == "Quoted field has to end with quote followed by delim or end "
                          "(field 0 in record 2)");
  CHECK(bad("\"a\"b\",c") ==
        "Quote inside a string has to be escaped by another quote (field 0 in record 2)");
  CHECK(bad("ab\"c,d") ==
        "Unquoted fields cannot have quotes/CRLFs inside (field 0 in record 2)");
  CHECK(bad("a,b\nc") ==
        "Unquoted fields cannot have quotes/CRLFs inside (field 1 in record 2)");
  CHECK(bad("a,b\r") ==
        "Unquoted fields cannot have quotes/CRLFs inside (field 1 in record 2)");
}

// -- CSV-3 ------------------------------------------------------------------------

TEST_CASE("CSV-3 the field count must equal the number of defaults", "[CSV-3]") {
  auto defaults = std::vector<tensor>{def<int32_t>(0), def<int32_t>(0), def<int32_t>(0)};
  CHECK(csv_error([&] {
          decode_csv(records({"1,2,3", "1,2"}), defaults);
        }) == "Expect 3 fields but have 2 in record 1");
  CHECK(csv_error([&] { decode_csv(records({"1,2,3,4"}), defaults); }) ==
        "Expect 3 fields but have 4 in record 0");
  // An empty record has 0 fields, not one empty field.
  CHECK(csv_error([] { decode_csv("", {def<int32_t>(0)}); }) ==
        "Expect 1 fields but have 0 in record 0");
  CHECK(csv_error([] { decode_csv("\r\n", {def<int32_t>(0)}); }) ==
        "Expect 1 fields but have 0 in record 0");
}

TEST_CASE("CSV-3 empty or na_value fields take the default or are required", "[CSV-3]") {
  auto defaults = std::vector<tensor>{required<int64_t>(), def<double>(0.5)};
  auto out = decode_csv(records({"1,NA", "2,", "3,4"}), defaults, ",", true, "NA");
  CHECK(out[0].to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3});
  CHECK(out[1].to_vector<double>() == std::vector<double>{0.5, 0.5, 4.0});
  CHECK(csv_error([&] {
          decode_csv(records({"1,2", ",2"}), defaults);
        }) == "Field 0 is required but missing in record 1!");
  CHECK(csv_error([&] { decode_csv(records({"NA,2"}), defaults, ",", true, "NA"); }) ==
        "Field 0 is required but missing in record 0!");
  // A required string column refuses empty fields too.
  CHECK(csv_error([] {
          decode_csv("a,", {def<std::string>(""), required<std::string>()});
        }) == "Field 1 is required but missing in record 0!");
}

TEST_CASE("CSV-3 numbers are parsed strictly", "[CSV-3]") {
  auto one = [](const std::string& rec, tensor d) { return decode_csv(rec, {d}); };
  CHECK(csv_error([&] { one("12a", def<int32_t>(0)); }) ==
        "Field 0 in record 0 is not a valid int32: 12a");
  CHECK(csv_error([&] { one("3000000000", def<int32_t>(0)); }) ==
        "Field 0 in record 0 is not a valid int32: 3000000000");
  CHECK(one("3000000000", def<int64_t>(0))[0].scalar_value<int64_t>() == 3000000000);
  CHECK(csv_error([&] { one("99999999999999999999", def<int64_t>(0)); }) ==
        "Field 0 in record 0 is not a valid int64: 99999999999999999999");
  CHECK(csv_error([&] { one("+5", def<int64_t>(0)); }) ==
        "Field 0 in record 0 is not a valid int64: +5");
  CHECK(csv_error([&] { one("1.5", def<int32_t>(0)); }) ==
        "Field 0 in record 0 is not a valid int32: 1.5");
  CHECK(csv_error([&] { one("1.5x", def<float>(0)); }) ==
        "Field 0 in record 0 is not a valid float: 1.5x");
  CHECK(csv_error([&] { one("abc", def<double>(0)); }) ==
        "Field 0 in record 0 is not a valid double: abc");
  CHECK(csv_error([&] { one("1e", def<double>(0)); }) ==
        "Field 0 in record 0 is not a valid double: 1e");
  CHECK(csv_error([&] { one(" ", def<int32_t>(0)); }) ==
        "Field 0 in record 0 is not a valid int32:  ");
  // White space around a number is allowed, as in TF.
  CHECK(one(" -42 ", def<int32_t>(0))[0].scalar_value<int32_t>() == -42);
  CHECK(one("\t2.5 ", def<double>(0))[0].scalar_value<double>() == 2.5);
  CHECK(one("-2147483648", def<int32_t>(0))[0].scalar_value<int32_t>() == INT32_MIN);
  CHECK(std::isinf(one("inf", def<float>(0))[0].scalar_value<float>()));
  CHECK(std::isnan(one("nan", def<double>(0))[0].scalar_value<double>()));
  CHECK(one("1e-3", def<float>(0))[0].scalar_value<float>() == 1e-3f);
  // A long numeric field (longer than the parser's stack buffer).
  std::string long_number = "1." + std::string(200, '0') + "1";
  CHECK(one(long_number, def<double>(0))[0].scalar_value<double>() == 1.0);
  CHECK(csv_error([&] {
          one(long_number + "x", def<double>(0));
        }).find("is not a valid double") != std::string::npos);
}

TEST_CASE("CSV-3 select_cols picks strictly increasing columns", "[CSV-3]") {
  auto defaults = std::vector<tensor>{def<std::string>("-"), def<int32_t>(0)};
  auto out = decode_csv(records({"a,1,b,2", "c,3,d,4,\"never \"parsed"}), defaults, ",",
                        true, "", {2, 3});
  CHECK(out[0].to_vector<std::string>() == strings{"b", "d"});
  CHECK(out[1].to_vector<int32_t>() == std::vector<int32_t>{2, 4});
  // A record needs only as many columns as the last selected one.
  CHECK(decode_csv("x,", defaults, ",", true, "", {0, 1})[1].scalar_value<int32_t>() ==
        0);
  CHECK(csv_error([&] {
          decode_csv("a,1,b", defaults, ",", true, "", {2, 3});
        }) == "Expect 2 fields but have 1 in record 0");
  // Errors name the output index <f>, as TF.
  CHECK(csv_error([&] {
          decode_csv("a,1,b,x", defaults, ",", true, "", {2, 3});
        }) == "Field 1 in record 0 is not a valid int32: x");
  CHECK(csv_error([&] { decode_csv("a,1", defaults, ",", true, "", {1}); }) ==
        "select_cols should match output size (1 select_cols, 2 record_defaults)");
  CHECK(csv_error([&] {
          decode_csv("a,1", defaults, ",", true, "", {1, 1});
        }) == "select_cols should be strictly increasing indices");
  CHECK(csv_error([&] {
          decode_csv("a,1", defaults, ",", true, "", {3, 2});
        }) == "select_cols should be strictly increasing indices");
  CHECK(csv_error([&] {
          decode_csv("a,1", defaults, ",", true, "", {-1, 0});
        }) == "select_cols should be non-negative indices");
}

TEST_CASE("CSV-1 many records decode consistently", "[CSV-1]") {
  std::vector<std::string> rs;
  for (int i = 0; i < 5000; ++i)
    rs.push_back(std::to_string(i) + "," + std::to_string(i * 0.5) + ",\"n" +
                 std::to_string(i) + "\",");
  auto out = decode_csv(records(rs), {def<int64_t>(0), def<float>(0.f),
                                      def<std::string>(""), def<int32_t>(-1)});
  auto ids = out[0].values<int64_t>();
  auto halves = out[1].values<float>();
  auto names = out[2].values<std::string>();
  auto tail = out[3].values<int32_t>();
  for (int i = 0; i < 5000; ++i) {
    REQUIRE(ids[i] == i);
    REQUIRE(halves[i] == static_cast<float>(i * 0.5));
    REQUIRE(names[i] == "n" + std::to_string(i));
    REQUIRE(tail[i] == -1);
  }
}

namespace {

/// The bits of what std::from_chars makes of `s` (the correctly rounded
/// reference); nullopt when it does not take all of `s`.
template <class Float>
std::optional<Float> reference_value(const std::string& s) {
  Float v{};
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (res.ec != std::errc{} || res.ptr != s.data() + s.size())
    return std::nullopt;
  return v;
}

template <class Float>
void check_same_bits_as_from_chars(const std::vector<std::string>& texts) {
  std::vector<std::string> valid;
  for (auto& t : texts)
    if (reference_value<Float>(t))
      valid.push_back(t);
  REQUIRE(valid.size() > texts.size() / 2);
  auto decoded = decode_csv(records(valid), {def<Float>(0)});
  auto out = decoded[0].template values<Float>(); // a view: `decoded` keeps it alive
  for (size_t i = 0; i < valid.size(); ++i) {
    auto want = *reference_value<Float>(valid[i]);
    INFO(valid[i]);
    REQUIRE(std::memcmp(&out[i], &want, sizeof want) == 0);
  }
}

} // namespace

TEST_CASE("CSV-3 plain decimals are read to the same bits as std::from_chars",
          "[CSV-3]") {
  // The short path for [-]digits[.digits] must round exactly as the general
  // one: at and beyond its limits (2^24 and 2^53 digits, 10 and 22
  // fractional digits), signed zeros, and random decimals of every length.
  std::vector<std::string> texts = {"16777216",
                                    "16777217",
                                    "16777218",
                                    "-16777217",
                                    "1677721.7",
                                    "0.0000000001",
                                    "0.00000000001",
                                    "1.2345678901",
                                    "-0",
                                    "-0.000",
                                    "0",
                                    ".5",
                                    "5.",
                                    "-.5",
                                    "9007199254740992",
                                    "9007199254740993",
                                    "0.1",
                                    "0.3",
                                    "3.4028235e38",
                                    "1e-45",
                                    "123456789012345678901234567890",
                                    "0.1000000000000000000000001",
                                    "7.000000"};
  std::mt19937_64 gen{20261127};
  auto digits = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
      s += static_cast<char>('0' + gen() % 10);
    return s;
  };
  for (int i = 0; i < 200000; ++i) {
    std::string s = gen() % 2 ? "-" : "";
    s += digits(static_cast<int>(gen() % 10));
    if (gen() % 4 != 0)
      s += "." + digits(static_cast<int>(gen() % 14));
    texts.push_back(s);
  }
  check_same_bits_as_from_chars<float>(texts);
  check_same_bits_as_from_chars<double>(texts);
  // What the short path refuses is still judged by the general one.
  CHECK(csv_error([] { decode_csv(".", {def<float>(0)}); }) ==
        "Field 0 in record 0 is not a valid float: .");
  CHECK(csv_error([] { decode_csv("1.2.3", {def<float>(0)}); }) ==
        "Field 0 in record 0 is not a valid float: 1.2.3");
  CHECK(csv_error([] { decode_csv("-", {def<double>(0)}); }) ==
        "Field 0 in record 0 is not a valid double: -");
  CHECK(csv_error([] { decode_csv("--1", {def<double>(0)}); }) ==
        "Field 0 in record 0 is not a valid double: --1");
}

TEST_CASE("CSV-2 a record without quotes or CR/LF splits at every delimiter", "[CSV-2]") {
  // Such records take a short path (memchr for the delimiter): against a
  // plain split, with empty fields, a trailing delimiter, '|' as the
  // delimiter, quotes as ordinary characters when they are not special,
  // and random select_cols.
  std::mt19937_64 gen{7};
  for (int i = 0; i < 3000; ++i) {
    const char delim = i % 3 == 0 ? '|' : ',';
    const bool quotes = i % 2 == 0;
    std::string alphabet = std::string("ab1 ") + delim + delim;
    if (!quotes)
      alphabet += '"';
    std::string rec;
    auto len = 1 + gen() % 12;
    for (size_t k = 0; k < len; ++k)
      rec += alphabet[gen() % alphabet.size()];
    std::vector<std::string> want{""};
    for (char c : rec) {
      if (c == delim)
        want.emplace_back();
      else
        want.back() += c;
    }
    std::vector<int64_t> select;
    std::vector<std::string> picked;
    if (gen() % 2 == 0) {
      for (size_t k = 0; k < want.size(); ++k)
        if (gen() % 2 == 0) {
          select.push_back(static_cast<int64_t>(k));
          picked.push_back(want[k]);
        }
      if (select.empty()) {
        select.push_back(0);
        picked.push_back(want[0]);
      }
    } else {
      picked = want;
    }
    std::vector<tensor> defaults(picked.size(), def<std::string>("?"));
    INFO("record '" << rec << "', delimiter '" << delim << "', quotes " << quotes);
    auto out = decode_csv(rec, defaults, std::string(1, delim), quotes, "", select);
    REQUIRE(out.size() == picked.size());
    for (size_t k = 0; k < picked.size(); ++k)
      REQUIRE(out[k].scalar_value<std::string>() ==
              (picked[k].empty() ? "?" : picked[k]));
  }
}

TEST_CASE("CSV-1 packed records decode as the same records in a tensor", "[CSV-1]") {
  packed_values lines;
  for (std::string rec : {"1,0.5,\"a,b\"", "", "2,,c"}) {
    if (rec.empty())
      rec = "3,1e3,d"; // one more record, not an empty one
    lines.text += rec;
    lines.ends.push_back(lines.text.size());
  }
  std::vector<tensor> defaults{def<int64_t>(0), def<double>(-1), def<std::string>("")};
  auto packed = decode_csv(lines, defaults);
  auto unpacked = decode_csv(lines.to_tensor(), defaults);
  REQUIRE(packed.size() == 3);
  CHECK(packed[0].to_vector<int64_t>() == std::vector<int64_t>{1, 3, 2});
  CHECK(packed[1].to_vector<double>() == std::vector<double>{0.5, 1000, -1});
  CHECK(packed[2].to_vector<std::string>() == strings{"a,b", "d", "c"});
  for (size_t i = 0; i < 3; ++i)
    CHECK(packed[i] == unpacked[i]);
  CHECK(decode_csv(packed_values{}, defaults)[0].shape() == tensor_shape{0});
  // The same checks and texts as for a tensor of records.
  CHECK(csv_error([&] { decode_csv(lines, defaults, ";;"); }) ==
        "field_delim should be only 1 char");
  CHECK(csv_error([&] { decode_csv(lines, {def<int64_t>(0)}); }) ==
        "Expect 1 fields but have 3 in record 0");
  // Packed by hand with ends outside the text, or going back: refused.
  packed_values bad{"1,2", {2, 1}};
  CHECK(csv_error([&] { decode_csv(bad, {def<int64_t>(0)}); }) ==
        "decode_csv: packed record 1 ends at 1, outside 2..3 (ends must not decrease and "
        "must lie within the text)");
  bad.ends = {9};
  CHECK(csv_error([&] { decode_csv(bad, {def<int64_t>(0)}); }) ==
        "decode_csv: packed record 0 ends at 9, outside 0..3 (ends must not decrease and "
        "must lie within the text)");
  // Unpacking them into a tensor refuses them the same way.
  CHECK(
      csv_error([&] { bad.to_tensor(); }) ==
      "packed_values::to_tensor: packed record 0 ends at 9, outside 0..3 (ends must not "
      "decrease and must lie within the text)");
}
