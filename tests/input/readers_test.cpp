// The four reader kinds (docs/semantics.md RD-2..RD-7) over a list of work units:
// keys, values, file boundaries, counters and errors on good and malformed
// files written into a temporary directory.

#include "input_test_util.hpp"

#include "quern/format/record.hpp"

using namespace quern;
using namespace quern::test;

// -- RD-4 TextLineReader ---------------------------------------------------------

TEST_CASE("RD-4 text lines: one record per line, keys are 1-based physical lines",
          "[RD-4]") {
  temp_dir dir;
  auto f = dir.write("a.txt", "first\nsecond\n");
  text_line_reader r;
  auto rs = read_all(r, work_list({f}));
  CHECK(keys_of(rs) == strings{f + ":1", f + ":2"});
  // A final "\n" does not create an extra empty record.
  CHECK(values_of(rs) == strings{"first", "second"});
}

TEST_CASE("RD-4 text lines: CRLF endings, a last line without newline, empty lines",
          "[RD-4]") {
  temp_dir dir;
  SECTION("CRLF: the \\r before \\n is stripped, a \\r inside a line stays") {
    auto f = dir.write("crlf.txt", "a\r\nb\rc\r\nlast\r");
    text_line_reader r;
    auto rs = read_all(r, work_list({f}));
    CHECK(values_of(rs) == strings{"a", "b\rc", "last"});
    CHECK(keys_of(rs) == strings{f + ":1", f + ":2", f + ":3"});
  }
  SECTION("a last line without a newline is still a record") {
    auto f = dir.write("nonl.txt", "x\ny");
    text_line_reader r;
    CHECK(values_of(read_all(r, work_list({f}))) == strings{"x", "y"});
  }
  SECTION("interior empty lines are empty records") {
    auto f = dir.write("empty_lines.txt", "x\n\n\ny\n");
    text_line_reader r;
    auto rs = read_all(r, work_list({f}));
    CHECK(values_of(rs) == strings{"x", "", "", "y"});
    CHECK(keys_of(rs).back() == f + ":4");
  }
  SECTION("a line longer than the read buffer") {
    std::string big(300 * 1024, 'z');
    auto f = dir.write("long.txt", big + "\nend\n");
    text_line_reader r;
    CHECK(values_of(read_all(r, work_list({f}))) == strings{big, "end"});
  }
}

TEST_CASE("RD-4 text lines: keys count skipped header lines", "[RD-4]") {
  temp_dir dir;
  auto f = dir.write("h.csv", "header\nrow1\nrow2\n");
  text_line_reader r{1};
  auto rs = read_all(r, work_list({f}));
  CHECK(keys_of(rs) == strings{f + ":2", f + ":3"});
  CHECK(values_of(rs) == strings{"row1", "row2"});

  // A file with no more lines than the header has no records and is skipped.
  auto short_file = dir.write("short.csv", "h1\nh2\n");
  auto g = dir.write("g.csv", "h1\nh2\nx\n");
  text_line_reader r2{2};
  auto rs2 = read_all(r2, work_list({short_file, g}));
  CHECK(keys_of(rs2) == strings{g + ":3"});
  CHECK(r2.num_work_units_completed() == 2);
}

TEST_CASE("RD-4 text lines: negative skip_header_lines is INVALID_ARGUMENT", "[RD-4]") {
  CHECK(thrown<invalid_argument_error>([] { text_line_reader r{-1}; }) ==
        "skip_header_lines must be >= 0 not -1");
  CHECK(thrown<invalid_argument_error>([] { open_text_line_source("x", -3); }) ==
        "skip_header_lines must be >= 0 not -3");
}

// -- RD-5 FixedLengthRecordReader ------------------------------------------------

TEST_CASE("RD-5 fixed length: header skipped, records need record+footer bytes",
          "[RD-5]") {
  temp_dir dir;
  SECTION("header, two records, footer") {
    auto f = dir.write("fl.bin", "HHabcdefFF");
    fixed_length_record_reader r{3, 2, 2};
    auto rs = read_all(r, work_list({f}));
    CHECK(values_of(rs) == strings{"abc", "def"});
    CHECK(keys_of(rs) == strings{f + ":0", f + ":1"});
  }
  SECTION("the last record lacks its footer: dropped silently") {
    auto f = dir.write("fl.bin", "HHabcdefF");
    fixed_length_record_reader r{3, 2, 2};
    CHECK(values_of(read_all(r, work_list({f}))) == strings{"abc"});
  }
  SECTION("a trailing partial record is dropped silently") {
    auto f = dir.write("fl.bin", "abcdefgh");
    fixed_length_record_reader r{3};
    CHECK(values_of(read_all(r, work_list({f}))) == strings{"abc", "def"});
    CHECK(r.num_work_units_completed() == 1);
  }
  SECTION("a file shorter than the header has no records") {
    auto f = dir.write("tiny.bin", "HH");
    auto g = dir.write("ok.bin", "HHHHHxyz");
    fixed_length_record_reader r{3, 5};
    auto rs = read_all(r, work_list({f, g}));
    CHECK(keys_of(rs) == strings{g + ":0"});
    CHECK(values_of(rs) == strings{"xyz"});
  }
}

TEST_CASE("RD-5 fixed length: record k starts at header + k*hop", "[RD-5]") {
  temp_dir dir;
  SECTION("overlapping records (hop < record)") {
    auto f = dir.write("hop.bin", "abcdefg");
    fixed_length_record_reader r{3, 0, 0, 2};
    auto rs = read_all(r, work_list({f}));
    CHECK(values_of(rs) == strings{"abc", "cde", "efg"});
    CHECK(keys_of(rs) == strings{f + ":0", f + ":1", f + ":2"});
  }
  SECTION("gaps between records (hop > record)") {
    auto f = dir.write("hop.bin", "Habxcdyefz");
    fixed_length_record_reader r{2, 1, 0, 3};
    CHECK(values_of(read_all(r, work_list({f}))) == strings{"ab", "cd", "ef"});
  }
  SECTION("hop with a footer: the footer bytes must follow each record") {
    auto f = dir.write("hop.bin", "abcdef");
    fixed_length_record_reader r{2, 0, 1, 2};
    // Starts 0, 2, 4; the record at 4 needs bytes 4..6, only 4..5 exist.
    CHECK(values_of(read_all(r, work_list({f}))) == strings{"ab", "cd"});
  }
}

TEST_CASE("RD-5 fixed length: negative sizes are INVALID_ARGUMENT, 0 as TF", "[RD-5]") {
  CHECK(thrown<invalid_argument_error>([] { fixed_length_record_reader r{-1}; }) ==
        "record_bytes must be >= 0 not -1");
  CHECK(thrown<invalid_argument_error>([] {
          fixed_length_record_reader r{1, -2};
        }) == "header_bytes must be >= 0 not -2");
  CHECK(thrown<invalid_argument_error>([] {
          fixed_length_record_reader r{1, 0, -3};
        }) == "footer_bytes must be >= 0 not -3");
  CHECK(thrown<invalid_argument_error>([] {
          fixed_length_record_reader r{1, 0, 0, -4};
        }) == "hop_bytes must be >= 0 not -4");
  temp_dir dir;
  auto f = dir.write("zero.bin", "abcd");
  SECTION("record_bytes 0 with a hop: an empty record at each start") {
    fixed_length_record_reader r{0, 0, 0, 2};
    auto rs = read_all(r, work_list({f}));
    CHECK(values_of(rs) == strings{"", "", ""});
    CHECK(keys_of(rs) == strings{f + ":0", f + ":1", f + ":2"});
  }
  SECTION("record_bytes 0 and hop 0 never advance: endless empty records, as TF") {
    fixed_length_record_reader r{0};
    auto rs = r.read_up_to(work_list({f}), 5);
    CHECK(values_of(rs) == strings(5, ""));
    CHECK(keys_of(rs).back() == f + ":4");
    CHECK(r.num_work_units_completed() == 0);
  }
}

TEST_CASE("RD-5 fixed length: encodings \"\", ZLIB and GZIP, others INVALID_ARGUMENT",
          "[RD-5][RD-8]") {
  // ZLIB and GZIP files are read (compressed_readers_test.cpp).
  CHECK_NOTHROW(fixed_length_record_reader{4, 0, 0, 0, "GZIP"});
  CHECK_NOTHROW(fixed_length_record_reader{4, 0, 0, 0, "ZLIB"});
  CHECK_NOTHROW(fixed_length_record_reader{4, 0, 0, 0, ""});
  CHECK(thrown<invalid_argument_error>([] {
          fixed_length_record_reader r{4, 0, 0, 0, "LZ4"};
        }) == "Unsupported encoding \"LZ4\": expected \"\", \"ZLIB\" or \"GZIP\"");
}

// -- RD-6 TFRecordReader ---------------------------------------------------------

namespace {

std::string tf_records(const strings& payloads) {
  std::string out;
  for (auto& p : payloads)
    append_record(out, p);
  return out;
}

} // namespace

TEST_CASE("RD-6 TFRecord: value is the payload, key the record's offset", "[RD-6]") {
  temp_dir dir;
  auto f = dir.write("r.tfrecord", tf_records({"one", "", "three"}));
  tf_record_reader r;
  auto rs = read_all(r, work_list({f}));
  CHECK(values_of(rs) == strings{"one", "", "three"});
  // 12-byte header + payload + 4-byte footer per record.
  CHECK(keys_of(rs) == strings{f + ":0", f + ":19", f + ":35"});
  CHECK(r.num_records_produced() == 3);
  CHECK(r.num_work_units_completed() == 1);
}

TEST_CASE("RD-6 TFRecord: corruption and truncation are DATA_LOSS with the offset",
          "[RD-6][SW-22]") {
  temp_dir dir;
  auto bytes = tf_records({"one", "two", "three"});
  SECTION("payload CRC mismatch: corrupted record at <X+12>, and again on retry") {
    auto damaged = bytes;
    damaged[38 + 12] ^= 0x01; // first payload byte of the third record (offset 38)
    auto f = dir.write("bad.tfrecord", damaged);
    tf_record_reader r;
    auto work = work_list({f});
    CHECK(r.read(work).value == "one");
    CHECK(r.read(work).value == "two");
    CHECK(thrown<data_loss_error>([&] { r.read(work); }) == "corrupted record at 50");
    // TF retries the same read, which fails the same way.
    CHECK(thrown<data_loss_error>([&] { r.read(work); }) == "corrupted record at 50");
    CHECK(r.num_records_produced() == 2);
  }
  SECTION("length CRC mismatch: corrupted record at X") {
    auto damaged = bytes;
    damaged[19 + 9] ^= 0x10; // the second record's length CRC
    auto f = dir.write("bad.tfrecord", damaged);
    tf_record_reader r;
    auto work = work_list({f});
    CHECK(r.read(work).value == "one");
    CHECK(thrown<data_loss_error>([&] { r.read(work); }) == "corrupted record at 19");
  }
  SECTION("truncated payload: truncated record at <X+12>") {
    auto f = dir.write("cut.tfrecord", bytes.substr(0, bytes.size() - 3));
    tf_record_reader r;
    auto work = work_list({f});
    r.read(work);
    r.read(work);
    CHECK(thrown<data_loss_error>([&] { r.read(work); }) == "truncated record at 50");
  }
  SECTION("truncated header: truncated record at X") {
    auto f = dir.write("cut.tfrecord", bytes.substr(0, 19 + 5));
    tf_record_reader r;
    auto work = work_list({f});
    r.read(work);
    CHECK(thrown<data_loss_error>([&] { r.read(work); }) == "truncated record at 19");
  }
  SECTION("read_up_to returns the good records first, the error on the next call") {
    auto damaged = bytes;
    damaged[38 + 12] ^= 0x01;
    auto f = dir.write("bad.tfrecord", damaged);
    tf_record_reader r;
    auto work = work_list({f});
    CHECK(values_of(r.read_up_to(work, 10)) == strings{"one", "two"});
    CHECK(thrown<data_loss_error>([&] { r.read_up_to(work, 10); }) ==
          "corrupted record at 50");
    // reset() drops the damaged file; the work list is used up.
    r.reset();
    CHECK_THROWS_AS(r.read(work), out_of_range_error);
  }
}

TEST_CASE("RD-6 TFRecord: compression \"\", ZLIB and GZIP, others INVALID_ARGUMENT",
          "[RD-6][RD-8]") {
  // ZLIB and GZIP files are read (compressed_readers_test.cpp).
  CHECK_NOTHROW(tf_record_reader{"ZLIB"});
  CHECK_NOTHROW(tf_record_reader{"GZIP"});
  CHECK_NOTHROW(tf_record_reader{""});
  CHECK_THROWS_AS(tf_record_reader{"zip"}, invalid_argument_error);
  CHECK(thrown<invalid_argument_error>([] { tf_record_reader r{"LZ4"}; }) ==
        "Unsupported compression_type \"LZ4\": expected \"\", \"ZLIB\" or \"GZIP\"");
}

// -- RD-7 WholeFileReader --------------------------------------------------------

TEST_CASE("RD-7 whole file: key is the file name, value the entire contents", "[RD-7]") {
  temp_dir dir;
  std::string binary("a\0b\nc\r\n", 7);
  auto f = dir.write("one.bin", binary);
  auto e = dir.write("empty.bin", "");
  auto g = dir.write("two.txt", std::string(600 * 1024, 'q'));
  whole_file_reader r;
  auto work = work_list({f, e, g});
  auto first = r.read(work);
  CHECK(first == record{f, binary});
  // The work unit is complete as soon as its one record is produced.
  CHECK(r.num_work_units_completed() == 1);
  // An empty file still yields its one (empty) record, as TF.
  CHECK(r.read(work) == record{e, ""});
  CHECK(r.read(work).value.size() == 600 * 1024);
  CHECK(r.num_records_produced() == 3);
  CHECK(r.num_work_units_completed() == 3);
  CHECK_THROWS_AS(r.read(work), out_of_range_error);
}

// -- RD-2 read_up_to and counters; RD-3 open errors ------------------------------

TEST_CASE("RD-2 read_up_to never crosses into a new work unit after a record", "[RD-2]") {
  temp_dir dir;
  auto a = dir.write("a.txt", "a1\na2\na3\n");
  auto empty = dir.write("empty.txt", "");
  auto b = dir.write("b.txt", "b1\nb2\n");
  text_line_reader r;
  auto work = work_list({a, empty, b});
  CHECK(values_of(r.read_up_to(work, 2)) == strings{"a1", "a2"});
  CHECK(r.read_up_to(work, 0).empty());                     // reads nothing, as TF
  CHECK(values_of(r.read_up_to(work, 2)) == strings{"a3"}); // a ended: stop there
  CHECK(r.num_work_units_completed() == 1);
  // Nothing produced yet in this call: the empty file is crossed.
  CHECK(values_of(r.read_up_to(work, 10)) == strings{"b1", "b2"});
  CHECK(r.num_records_produced() == 5);
  CHECK(r.num_work_units_completed() == 3);
  CHECK_THROWS_AS(r.read_up_to(work, 10), out_of_range_error);
  CHECK(thrown<invalid_argument_error>([&] { r.read_up_to(work, -1); }) ==
        "num_records must be >= 0 not -1");
}

namespace {

strings unpacked(const packed_values& vs) {
  return vs.to_tensor().to_vector<std::string>();
}

} // namespace

TEST_CASE("RD-2 read_values_up_to is read_up_to without the keys, packed", "[RD-2]") {
  temp_dir dir;
  auto a = dir.write("a.txt", "a1\n\na3\n");
  auto empty = dir.write("empty.txt", "");
  auto b = dir.write("b.txt", "b1\r\nb2\r");
  text_line_reader r;
  auto work = work_list({a, empty, b});
  auto first = r.read_values_up_to(work, 2);
  CHECK(unpacked(first) == strings{"a1", ""}); // an empty line is an empty value
  CHECK(first.text == "a1");
  CHECK(first.ends == std::vector<size_t>{2, 2});
  CHECK(r.read_values_up_to(work, 0).empty());
  CHECK(unpacked(r.read_values_up_to(work, 2)) == strings{"a3"}); // a ended: stop there
  auto last = r.read_values_up_to(work, 10);
  CHECK(unpacked(last) == strings{"b1", "b2"}); // CRLF, and a last line's "\r", dropped
  CHECK(last.to_tensor().to_vector<std::string>() == strings{"b1", "b2"});
  CHECK(r.num_records_produced() == 5);
  CHECK(r.num_work_units_completed() == 3);
  CHECK_THROWS_AS(r.read_values_up_to(work, 10), out_of_range_error);
  CHECK(thrown<invalid_argument_error>([&] { r.read_values_up_to(work, -1); }) ==
        "num_records must be >= 0 not -1");

  // A text reader's line count goes on whichever call read the lines: the
  // keys of a later read_up_to are still the physical lines.
  text_line_reader mixed{1};
  auto more = work_list({a});
  CHECK(unpacked(mixed.read_values_up_to(more, 1)) == strings{""});
  CHECK(keys_of(mixed.read_up_to(more, 5)) == strings{a + ":3"});

  // Kinds whose keys cost nothing append the keyed read's value: the same.
  auto f = dir.write("r.tfrecord", tf_records({"one", "", "three"}));
  tf_record_reader t;
  CHECK(unpacked(t.read_values_up_to(work_list({f}), 10)) == strings{"one", "", "three"});
  CHECK(t.num_work_units_completed() == 1);

  // A read error after values were produced is kept for the next call, and
  // the values read before it are whole.
  auto damaged = tf_records({"one", "two"});
  damaged[19 + 12] ^= 0x01; // the second payload's first byte
  auto g = dir.write("bad.tfrecord", damaged);
  tf_record_reader u;
  auto bad = work_list({g});
  auto before = u.read_values_up_to(bad, 10);
  CHECK(unpacked(before) == strings{"one"});
  CHECK(before.text == "one");
  CHECK(thrown<data_loss_error>([&] { u.read_values_up_to(bad, 10); }) ==
        "corrupted record at 31");
}

TEST_CASE("RD-2 reset() zeroes the counters and drops the current work unit", "[RD-2]") {
  temp_dir dir;
  auto a = dir.write("a.txt", "a1\na2\n");
  auto b = dir.write("b.txt", "b1\n");
  text_line_reader r;
  auto work = work_list({a, b});
  CHECK(r.read(work).value == "a1");
  CHECK(r.num_records_produced() == 1);
  r.reset();
  CHECK(r.num_records_produced() == 0);
  CHECK(r.num_work_units_completed() == 0);
  // a's rest is dropped: the next read takes the next work unit.
  CHECK(r.read(work) == record{b + ":1", "b1"});
  CHECK_THROWS_AS(r.read(work), out_of_range_error);
  CHECK(r.num_records_produced() == 1);
  CHECK(r.num_work_units_completed() == 1);
}

TEST_CASE("RD-3 a missing file is NOT_FOUND with its name and the OS reason", "[RD-3]") {
  temp_dir dir;
  auto missing = dir.file("missing.txt");
  auto b = dir.write("b.txt", "b1\n");
  for (int kind = 0; kind < 4; ++kind) {
    std::unique_ptr<reader> r;
    switch (kind) {
    case 0:
      r = std::make_unique<text_line_reader>();
      break;
    case 1:
      r = std::make_unique<fixed_length_record_reader>(1);
      break;
    case 2:
      r = std::make_unique<tf_record_reader>();
      break;
    default:
      r = std::make_unique<whole_file_reader>();
    }
    auto work = work_list({missing, b});
    CHECK(thrown<not_found_error>([&] { r->read(work); }) ==
          missing + "; No such file or directory");
    CHECK(r->num_work_units_completed() == 0);
    // The failed unit is dropped: the next read goes on with the next file.
    if (kind != 2)
      CHECK(r->read(work).key.rfind(b, 0) == 0);
  }
}

TEST_CASE("RD-3 a directory as work unit is FAILED_PRECONDITION", "[RD-3]") {
  temp_dir dir;
  text_line_reader r;
  CHECK(thrown<failed_precondition_error>([&] { r.read(work_list({dir.path()})); }) ==
        dir.path() + "; Is a directory");
}

TEST_CASE("RD-1 records as queue elements", "[RD-1]") {
  auto e = record_element(record{"k", "v"});
  REQUIRE(e.size() == 2);
  CHECK(e[0].scalar_value<std::string>() == "k");
  CHECK(e[1].scalar_value<std::string>() == "v");
  auto b = record_batch({{"k1", "v1"}, {"k2", "v2"}});
  REQUIRE(b.size() == 2);
  CHECK(b[0].to_vector<std::string>() == strings{"k1", "k2"});
  CHECK(b[1].to_vector<std::string>() == strings{"v1", "v2"});
  CHECK(b.batch_size() == 2);
}

TEST_CASE("RD-5 the per-file sources validate their sizes too", "[RD-5]") {
  fixed_length_options o;
  o.record_bytes = 4;
  o.footer_bytes = -1;
  CHECK(thrown<invalid_argument_error>([&] { open_fixed_length_source("x", o); }) ==
        "footer_bytes must be >= 0 not -1");
  temp_dir dir;
  auto f = dir.write("s.bin", "abcdefgh");
  o.footer_bytes = 0;
  auto src = open_fixed_length_source(f, o);
  record rec;
  REQUIRE(src->next(rec));
  CHECK(rec == record{f + ":0", "abcd"});
  REQUIRE(src->next(rec));
  CHECK(rec == record{f + ":1", "efgh"});
  CHECK_FALSE(src->next(rec));
  CHECK_FALSE(src->next(rec));
}

namespace {

/// A source that makes `n` records out of its work unit's name.
class counting_source : public record_source {
public:
  counting_source(std::string work, int n) : work_(std::move(work)), n_(n) {}
  bool next(record& out) override {
    if (i_ == n_)
      return false;
    out = record{work_ + "#" + std::to_string(i_), std::to_string(i_)};
    ++i_;
    return true;
  }

private:
  std::string work_;
  int n_;
  int i_ = 0;
};

} // namespace

TEST_CASE("RD-1 a reader over a custom record source", "[RD-1][RD-2]") {
  reader r{[](const std::string& work) {
    return std::make_unique<counting_source>(work, work == "none" ? 0 : 2);
  }};
  auto work = work_list({"u", "none", "v"});
  CHECK(r.read(work) == record{"u#0", "0"});
  CHECK(values_of(r.read_up_to(work, 5)) == strings{"1"});
  CHECK(keys_of(r.read_up_to(work, 5)) == strings{"v#0", "v#1"});
  CHECK(r.num_work_units_completed() == 3);
  CHECK_THROWS_AS(r.read(work), out_of_range_error);

  reader broken{[](const std::string&) { return std::unique_ptr<record_source>{}; }};
  CHECK(thrown<internal_error>([&] { broken.read(work_list({"w"})); }) ==
        "reader: no record source for work unit 'w'");
}
