// tf_record_writer and tf_record_options (docs/semantics.md RD-8): what it
// writes, plain or compressed, reads back through quern's tf_record_reader and
// through Python's own zlib and gzip modules; the buffer sizes change nothing
// but how bytes move; bad options and misuse are refused with clear errors.

#include "input_test_util.hpp"
#include "python_records.hpp"

#include "quern/format/record.hpp"
#include "quern/input/tf_record.hpp"

using namespace quern;
using namespace quern::test;

namespace {

strings mixed_payloads() {
  strings out{"first", "", std::string(1, '\0')};
  std::string big;
  for (int i = 0; big.size() < 300 * 1024; ++i) // larger than the 256 KiB buffers
    big += std::to_string(i * 2654435761u) + ";";
  out.push_back(big);
  for (int i = 0; i < 200; ++i)
    out.push_back("record " + std::to_string(i));
  return out;
}

void write_all(const std::string& path, const tf_record_options& o, const strings& ps) {
  tf_record_writer w{path, o};
  for (auto& p : ps)
    w.write(p);
  w.close();
}

strings read_back(const std::string& path, const tf_record_options& o) {
  tf_record_reader r{o};
  return values_of(read_all(r, work_list({path})));
}

} // namespace

TEST_CASE("RD-8 tf_record_writer: plain, ZLIB and GZIP files read back by quern and "
          "by Python",
          "[RD-8][RD-6]") {
  temp_dir dir;
  auto payloads = mixed_payloads();
  SECTION("plain: the bytes of append_record, nothing else") {
    auto f = dir.file("plain.tfrecord");
    write_all(f, {}, payloads);
    std::string want;
    for (auto& p : payloads)
      append_record(want, p);
    CHECK(python_records::slurp(f) == want);
    CHECK(read_back(f, {}) == payloads);
  }
  for (std::string kind : {"ZLIB", "GZIP"}) {
    SECTION(kind) {
      auto f = dir.file("c.tfrecord");
      tf_record_options o;
      o.compression_type = kind;
      write_all(f, o, payloads);
      CHECK(read_back(f, o) == payloads);
      CHECK(python_records::read(dir, kind, f) == payloads);
      // Compressed: much smaller than the records.
      CHECK(python_records::slurp(f).size() < 200 * 1024);
    }
  }
}

TEST_CASE("RD-8 buffer sizes and compression levels change the bytes, not the records",
          "[RD-8]") {
  temp_dir dir;
  auto payloads = mixed_payloads();
  auto f = dir.file("b.tfrecord");
  for (std::string kind : {"ZLIB", "GZIP"}) {
    for (int level : {-1, 0, 1, 9}) {
      for (int64_t in : {int64_t{1}, int64_t{7}, int64_t{256} << 10}) {
        INFO(kind << " level " << level << " input buffer " << in);
        tf_record_options w;
        w.compression_type = kind;
        w.compression_level = level;
        w.input_buffer_size = in;
        w.output_buffer_size = in < 8 ? 8 : in;
        write_all(f, w, payloads);
        tf_record_options r;
        r.compression_type = kind;
        r.input_buffer_size = in;
        r.output_buffer_size = in == 7 ? 5 : in;
        CHECK(read_back(f, r) == payloads);
      }
    }
    INFO(kind);
    CHECK(python_records::read(dir, kind, f) == payloads);
  }
}

TEST_CASE("RD-8 flush: the file so far decompresses to every record written, and "
          "ends inside its stream until close",
          "[RD-8]") {
  temp_dir dir;
  for (std::string kind : {"ZLIB", "GZIP"}) {
    INFO(kind);
    auto f = dir.file("flushed." + kind);
    tf_record_writer w{f, kind};
    w.write("one");
    w.write("two");
    w.flush();
    CHECK(python_records::read(dir, kind + "-partial", f) == strings{"one", "two"});
    tf_record_reader early{kind};
    auto cut = thrown<data_loss_error>([&] { early.read(work_list({f})); });
    CHECK_THAT(cut, Catch::StartsWith(f + "; truncated " + kind + " data"));
    w.write("three");
    w.close();
    w.close(); // closing again does nothing
    CHECK(read_back(f, tf_record_options{kind}) == strings{"one", "two", "three"});
    CHECK(thrown<failed_precondition_error>([&] { w.write("late"); }) ==
          f + "; write after close");
  }
}

TEST_CASE("RD-8 the destructor closes an open writer: the stream is whole", "[RD-8]") {
  temp_dir dir;
  auto f = dir.file("d.tfrecord.gz");
  {
    tf_record_writer w{f, "GZIP"};
    w.write("kept");
    tf_record_writer moved = std::move(w);
    moved.write("too");
  }
  CHECK(read_back(f, tf_record_options{"GZIP"}) == strings{"kept", "too"});
}

TEST_CASE("RD-8 bad options are INVALID_ARGUMENT, as unknown compressions", "[RD-8]") {
  temp_dir dir;
  auto f = dir.file("x");
  tf_record_options o;
  o.compression_type = "LZ4";
  CHECK(thrown<invalid_argument_error>([&] {
          tf_record_writer w{f, o};
        }) ==
        "Unsupported compression_type \"LZ4\": expected \"\", \"ZLIB\" or \"GZIP\"");
  CHECK(thrown<invalid_argument_error>([&] { tf_record_reader r{o}; }) ==
        "Unsupported compression_type \"LZ4\": expected \"\", \"ZLIB\" or \"GZIP\"");
  CHECK(thrown<invalid_argument_error>([&] { open_tf_record_source(f, o); }) ==
        "Unsupported compression_type \"LZ4\": expected \"\", \"ZLIB\" or \"GZIP\"");
  o.compression_type = "GZIP";
  o.input_buffer_size = 0;
  CHECK(thrown<invalid_argument_error>([&] { tf_record_reader r{o}; }) ==
        "input_buffer_size must be in [1, 1073741824] not 0");
  o.input_buffer_size = 1;
  o.output_buffer_size = -5;
  CHECK(thrown<invalid_argument_error>([&] {
          tf_record_writer w{f, o};
        }) == "output_buffer_size must be in [1, 1073741824] not -5");
  o.output_buffer_size = 7;
  CHECK(thrown<invalid_argument_error>([&] {
          tf_record_writer w{f, o};
        }) == "output_buffer_size must be >= 8 to write GZIP not 7");
  o.output_buffer_size = 8;
  o.compression_level = 10;
  CHECK(thrown<invalid_argument_error>([&] {
          tf_record_writer w{f, o};
        }) == "compression_level must be in [-1, 9] not 10");
  fixed_length_options fo;
  fo.record_bytes = 1;
  fo.encoding = "zip";
  CHECK(thrown<invalid_argument_error>([&] { open_fixed_length_source(f, fo); }) ==
        "Unsupported encoding \"zip\": expected \"\", \"ZLIB\" or \"GZIP\"");
}

TEST_CASE("RD-8 a writer whose file cannot be made throws its I/O error",
          "[RD-8][RD-3]") {
  temp_dir dir;
  auto f = dir.file("missing/x.tfrecord");
  CHECK(thrown<not_found_error>([&] {
          tf_record_writer w{f, "ZLIB"};
        }) == f + "; No such file or directory");
  // A compressed file that cannot be opened is RD-3's error, like a plain one.
  tf_record_reader r{"ZLIB"};
  CHECK(thrown<not_found_error>([&] { r.read(work_list({f})); }) ==
        f + "; No such file or directory");
}
