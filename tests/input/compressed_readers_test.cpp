// GZIP and ZLIB files (docs/semantics.md RD-5, RD-6, RD-8): TFRecord and
// fixed-length files written by Python's own zlib and gzip modules are read
// exactly; every truncation and every single-bit flip of a small compressed
// file is a DATA_LOSS error that names the file, or (a flip in a gzip header
// field nothing checks) the very same records.

#include "input_test_util.hpp"
#include "python_records.hpp"

#include "quern/format/record.hpp"

using namespace quern;
using namespace quern::test;

namespace {

strings some_payloads() {
  strings out{"one", "", "three", std::string("\0\xff\n\r", 4)};
  std::string long_one;
  for (int i = 0; i < 3000; ++i)
    long_one += std::to_string(i * 7919 % 1000) + ",";
  out.push_back(long_one);
  out.push_back("last");
  return out;
}

/// `<file>:<offset>` of each record of a TFRecord stream of `payloads`.
strings offset_keys(const std::string& file, const strings& payloads) {
  strings out;
  size_t offset = 0;
  for (auto& p : payloads) {
    out.push_back(file + ":" + std::to_string(offset));
    offset += 12 + p.size() + 4;
  }
  return out;
}

std::string base_kind(const std::string& kind) {
  return kind.substr(0, 4);
}

} // namespace

TEST_CASE("RD-6 TFRecord: GZIP and ZLIB files written by Python are read exactly",
          "[RD-6]") {
  temp_dir dir;
  auto payloads = some_payloads();
  for (std::string kind :
       {"GZIP", "GZIP-plain", "GZIP-members", "ZLIB", "ZLIB-stored", "ZLIB-flushed"}) {
    INFO("kind " << kind);
    auto f = python_records::write(dir, "tfrecord", kind, payloads, kind + ".tfrecord");
    tf_record_reader r{base_kind(kind)};
    auto rs = read_all(r, work_list({f}));
    CHECK(values_of(rs) == payloads);
    // Keys are offsets in the decompressed stream, as TensorFlow's.
    CHECK(keys_of(rs) == offset_keys(f, payloads));
    CHECK(r.num_work_units_completed() == 1);
  }
}

TEST_CASE("RD-5 fixed length: GZIP and ZLIB files written by Python are read exactly",
          "[RD-5]") {
  temp_dir dir;
  // header "HH", records of 3 bytes, a footer of 2: as on a plain file, the
  // records come from the decompressed bytes.
  strings parts{"HH", "abc", "def", "ghi", "FF"};
  for (std::string kind : {"GZIP", "GZIP-members", "ZLIB", "ZLIB-stored"}) {
    INFO("kind " << kind);
    auto f = python_records::write(dir, "raw", kind, parts, kind + ".bin");
    fixed_length_record_reader r{3, 2, 2, 0, base_kind(kind)};
    auto rs = read_all(r, work_list({f}));
    CHECK(values_of(rs) == strings{"abc", "def", "ghi"});
    CHECK(keys_of(rs) == strings{f + ":0", f + ":1", f + ":2"});
    // hop 2 over the decompressed "HHabcdefghiFF": starts 2, 4, 6, 8, 10.
    fixed_length_record_reader hop{3, 2, 0, 2, base_kind(kind)};
    CHECK(values_of(read_all(hop, work_list({f}))) ==
          strings{"abc", "cde", "efg", "ghi", "iFF"});
  }
}

namespace {

/// What reading every record of one file gives: its values, or the
/// data_loss_error that ended reading (any other exception fails the test).
struct outcome {
  strings values;
  bool lost = false;
  std::string error;
};

template <class Reader>
outcome read_file(Reader&& r, const std::string& file) {
  outcome o;
  try {
    o.values = values_of(read_all(r, work_list({file})));
  } catch (const data_loss_error& e) {
    o.lost = true;
    o.error = e.what();
  }
  return o;
}

outcome read_tf_records(const std::string& file, const std::string& kind) {
  return read_file(tf_record_reader{kind}, file);
}

outcome read_fixed(const std::string& file, const std::string& kind) {
  return read_file(fixed_length_record_reader{3, 2, 2, 0, kind}, file);
}

/// Every prefix of `bytes` (0 to size-1 bytes), written to `file`, read with
/// `read_one`: each must be a data_loss_error naming the file.
template <class Read>
void every_truncation_is_lost(const temp_dir& dir, const std::string& bytes,
                              const std::string& name, Read read_one) {
  auto file = dir.file(name);
  int lost = 0;
  for (size_t size = 0; size < bytes.size(); ++size) {
    dir.write(name, bytes.substr(0, size));
    auto o = read_one(file);
    INFO("cut to " << size << " of " << bytes.size() << " bytes");
    REQUIRE(o.lost);
    CHECK_THAT(o.error, Catch::StartsWith(file + "; "));
    lost += o.lost ? 1 : 0;
  }
  CHECK(lost == static_cast<int>(bytes.size()));
}

/// Every single-bit flip of `bytes`, written to `file`, read with `read_one`:
/// a data_loss_error naming the file, or exactly the records of the
/// undamaged file (a bit nothing checks: a gzip header's time, or the
/// padding after the last deflate block). Never other records.
template <class Read>
void every_bit_flip_is_lost_or_harmless(const temp_dir& dir, const std::string& bytes,
                                        const std::string& name, const strings& want,
                                        Read read_one) {
  auto file = dir.file(name);
  int lost = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto damaged = bytes;
      damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
      dir.write(name, damaged);
      auto o = read_one(file);
      INFO("bit " << bit << " of byte " << i << " of " << bytes.size());
      if (o.lost) {
        CHECK_THAT(o.error, Catch::StartsWith(file + "; "));
        ++lost;
      } else {
        REQUIRE(o.values == want);
      }
    }
  }
  // Most bits are checked: a zlib header's checksum, the deflate codes, the
  // CRC-32 or Adler-32 and length of the data (a gzip header's 6 bytes of
  // time, flags and OS are not).
  CHECK(lost > static_cast<int>(bytes.size() * 8 * 2 / 3));
}

} // namespace

TEST_CASE("RD-8 every truncation of a small GZIP or ZLIB TFRecord file is DATA_LOSS "
          "naming the file",
          "[RD-8][RD-6]") {
  temp_dir dir;
  strings payloads{"alpha", "", "gamma"};
  for (std::string kind : {"GZIP", "GZIP-plain", "ZLIB", "ZLIB-stored"}) {
    INFO("kind " << kind);
    auto f = python_records::write(dir, "tfrecord", kind, payloads, "whole");
    auto bytes = python_records::slurp(f);
    REQUIRE(read_tf_records(f, base_kind(kind)).values == payloads);
    every_truncation_is_lost(dir, bytes, "cut.tfrecord", [&](const std::string& file) {
      return read_tf_records(file, base_kind(kind));
    });
  }
}

TEST_CASE("RD-8 every bit flip of a small GZIP or ZLIB TFRecord file is DATA_LOSS "
          "naming the file, or harmless",
          "[RD-8][RD-6]") {
  temp_dir dir;
  strings payloads{"alpha", "", "gamma"};
  for (std::string kind : {"GZIP-plain", "ZLIB", "ZLIB-stored"}) {
    INFO("kind " << kind);
    auto f = python_records::write(dir, "tfrecord", kind, payloads, "whole");
    auto bytes = python_records::slurp(f);
    every_bit_flip_is_lost_or_harmless(
        dir, bytes, "flip.tfrecord", payloads,
        [&](const std::string& file) { return read_tf_records(file, base_kind(kind)); });
  }
}

TEST_CASE("RD-8 every truncation and bit flip of a small GZIP or ZLIB fixed-length "
          "file is DATA_LOSS naming the file, or harmless",
          "[RD-8][RD-5]") {
  temp_dir dir;
  strings parts{"HH", "abc", "def", "FF"};
  for (std::string kind : {"GZIP-plain", "ZLIB"}) {
    INFO("kind " << kind);
    auto f = python_records::write(dir, "raw", kind, parts, "whole");
    auto bytes = python_records::slurp(f);
    auto read_one = [&](const std::string& file) {
      return read_fixed(file, base_kind(kind));
    };
    REQUIRE(read_one(f).values == strings{"abc", "def"});
    every_truncation_is_lost(dir, bytes, "cut.bin", read_one);
    every_bit_flip_is_lost_or_harmless(dir, bytes, "flip.bin", strings{"abc", "def"},
                                       read_one);
  }
}

TEST_CASE("RD-8 damage says where: compressed offsets, or decompressed record offsets",
          "[RD-8][RD-6][SW-22]") {
  temp_dir dir;
  strings payloads{"one", "two", "three"};
  SECTION("a file that ends inside its stream, an empty file among them") {
    auto f = python_records::write(dir, "tfrecord", "GZIP-plain", payloads, "f.gz");
    auto bytes = python_records::slurp(f);
    dir.write("f.gz", bytes.substr(0, bytes.size() - 4));
    CHECK(read_tf_records(f, "GZIP").error ==
          f + "; truncated GZIP data: the file ends at compressed offset " +
              std::to_string(bytes.size() - 4) + ", inside the compressed stream");
    dir.write("f.gz", "");
    CHECK(read_tf_records(f, "GZIP").error ==
          f + "; truncated GZIP data: the file ends at compressed offset 0, inside the "
              "compressed stream");
  }
  SECTION("not a GZIP stream") {
    auto f = python_records::write(dir, "tfrecord", "ZLIB", payloads, "f.z");
    auto o = read_tf_records(f, "GZIP");
    CHECK(o.error == f + "; corrupt GZIP data at compressed offset 2: inflate() failed "
                         "with error -3: incorrect header check");
  }
  SECTION("a damaged record in sound compressed data: TFRecord's own error, and the "
          "decompressed offset") {
    std::string framed;
    for (auto& p : payloads)
      append_record(framed, p);
    framed[38 + 12] ^= 0x01; // the third payload's first byte (SW-22's example)
    for (std::string kind : {"GZIP", "ZLIB"}) {
      auto f = python_records::write(dir, "raw", kind, {framed}, "bad." + kind);
      tf_record_reader r{kind};
      auto work = work_list({f});
      CHECK(r.read(work).value == "one");
      CHECK(r.read(work).value == "two");
      auto text =
          "corrupted record at 50 (an offset in the decompressed " + kind + " data)";
      CHECK(thrown<data_loss_error>([&] { r.read(work); }) == f + "; " + text);
      // The error sticks, as for a plain file (RD-6).
      CHECK(thrown<data_loss_error>([&] { r.read(work); }) == f + "; " + text);
      auto cut = python_records::write(dir, "raw", kind, {framed.substr(0, 40)}, "cut");
      CHECK(read_tf_records(cut, kind).error ==
            cut + "; truncated record at 38 (an offset in the decompressed " + kind +
                " data)");
    }
  }
}

TEST_CASE("RD-8 GZIP members are one stream, and nothing may follow a ZLIB stream",
          "[RD-8]") {
  temp_dir dir;
  strings payloads{"one", "two", "three", "four"};
  // Two members (gzip(1) and TensorFlow read them as one stream).
  auto two = python_records::write(dir, "tfrecord", "GZIP-members", payloads, "two.gz");
  CHECK(read_tf_records(two, "GZIP").values == payloads);
  auto bytes = python_records::slurp(two);
  SECTION("bytes after the last GZIP member that start no member") {
    dir.write("two.gz", bytes + "junk");
    CHECK(read_tf_records(two, "GZIP").error ==
          two + "; corrupt GZIP data at compressed offset " +
              std::to_string(bytes.size() + 2) +
              ": inflate() failed with error -3: incorrect header check");
  }
  SECTION("bytes after a ZLIB stream") {
    auto z = python_records::write(dir, "tfrecord", "ZLIB", payloads, "one.z");
    auto zbytes = python_records::slurp(z);
    dir.write("one.z", zbytes + zbytes);
    CHECK(read_tf_records(z, "ZLIB").error ==
          z + "; data after the end of the ZLIB stream at compressed offset " +
              std::to_string(zbytes.size()));
  }
}

TEST_CASE("RD-8 a fixed-length GZIP file shorter than its header has no records",
          "[RD-8][RD-5]") {
  temp_dir dir;
  auto f = python_records::write(dir, "raw", "GZIP", {"HH"}, "short.gz");
  auto g = python_records::write(dir, "raw", "GZIP", {"HHHHHxyz"}, "ok.gz");
  fixed_length_record_reader r{3, 5, 0, 0, "GZIP"};
  auto rs = read_all(r, work_list({f, g}));
  CHECK(keys_of(rs) == strings{g + ":0"});
  CHECK(values_of(rs) == strings{"xyz"});
}
