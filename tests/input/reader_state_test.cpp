// Reader state (docs/semantics.md RD-9, RD-10): serialize_state /
// restore_state and current_work / continue_work for every reader kind,
// plain and compressed. Broken at every record boundary, a reader restored
// from the state (or continuing the unit of another) produces exactly the
// records, keys and counters of a reader never interrupted.

#include "input_test_util.hpp"
#include "python_records.hpp"

#include <atomic>
#include <deque>
#include <functional>
#include <thread>

#include "quern/input/tf_record.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using make_reader = std::function<std::unique_ptr<reader>()>;

/// A work list whose remaining units survive the reader that took the
/// others: the same list goes on for the restored reader.
struct shared_work {
  explicit shared_work(const strings& files)
      : left(std::make_shared<std::deque<std::string>>(files.begin(), files.end())) {}
  std::shared_ptr<std::deque<std::string>> left;
  reader::work_source source() const {
    return [l = left]() -> std::string {
      if (l->empty())
        throw out_of_range_error("no more work");
      auto f = l->front();
      l->pop_front();
      return f;
    };
  }
};

struct counts {
  int64_t produced, completed;
  bool operator==(const counts& o) const {
    return produced == o.produced && completed == o.completed;
  }
};

counts counts_of(const reader& r) {
  return {r.num_records_produced(), r.num_work_units_completed()};
}

/// The records and final counts of a reader never interrupted; then, for
/// every break point, a reader that read up to it, was serialized and was
/// restored into a new reader (and, separately, whose unit in progress was
/// handed to a new reader with continue_work), checked against them.
void check_every_break(const make_reader& make, const strings& files) {
  auto whole = make();
  auto expected = read_all(*whole, work_list(files));
  auto final_counts = counts_of(*whole);
  REQUIRE(!expected.empty());
  for (size_t i = 0; i <= expected.size(); ++i) {
    INFO("break after " << i << " records");
    shared_work work{files};
    auto first = make();
    for (size_t k = 0; k < i; ++k)
      REQUIRE(first->read(work.source()) == expected[k]);
    auto state = first->serialize_state();
    auto at = first->current_work();
    auto before = counts_of(*first);

    // RD-9: restored from the bytes, on a copy of the remaining work.
    shared_work rest{strings(work.left->begin(), work.left->end())};
    auto restored = make();
    restored->restore_state(state);
    CHECK(counts_of(*restored) == before);
    CHECK(restored->current_work() == at);
    CHECK(restored->serialize_state() == state);
    auto tail = read_all(*restored, rest.source());
    CHECK(tail == std::vector<record>(expected.begin() + static_cast<std::ptrdiff_t>(i),
                                      expected.end()));
    CHECK(counts_of(*restored) == final_counts);

    // RD-10: the unit in progress continued by a new reader.
    auto other = make();
    if (at)
      other->continue_work(*at);
    auto continued = read_all(*other, work.source());
    CHECK(continued ==
          std::vector<record>(expected.begin() + static_cast<std::ptrdiff_t>(i),
                              expected.end()));
    CHECK(other->num_records_produced() == static_cast<int64_t>(expected.size() - i));
  }
}

strings payloads() {
  return {"one", "", "three", std::string("\0\xff\n\r", 4), std::string(300, 'x'),
          "last"};
}

std::string write_tf_records(const temp_dir& dir, const std::string& name,
                             const std::string& compression, const strings& ps) {
  auto path = dir / name;
  tf_record_writer w{path, compression};
  for (auto& p : ps)
    w.write(p);
  w.close();
  return path;
}

} // namespace

TEST_CASE("RD-9 RD-10 text lines resume at every record, keys counting on",
          "[RD-9][RD-10]") {
  temp_dir dir;
  strings files{dir.write("a.csv", "head\na\nb\r\n\nlast"), dir.write("empty.csv", ""),
                dir.write("b.csv", "head\nx\ny\n"), dir.write("only_head.csv", "head")};
  for (int64_t skip : {0, 1, 2}) {
    INFO("skip_header_lines " << skip);
    check_every_break([skip] { return std::make_unique<text_line_reader>(skip); }, files);
  }
}

TEST_CASE("RD-9 RD-10 fixed-length records resume at every record, plain and compressed",
          "[RD-9][RD-10]") {
  temp_dir dir;
  strings plain{dir.write("a.bin", "HHabcdefghiFF"), dir.write("short.bin", "H"),
                dir.write("b.bin", "HHjklmnoFFx")};
  // hop 0: records back to back; 2: windows overlap; 6: gaps between them.
  for (int64_t hop : {0, 2, 6}) {
    INFO("hop " << hop);
    check_every_break(
        [hop] { return std::make_unique<fixed_length_record_reader>(3, 2, 2, hop); },
        plain);
  }
  for (std::string kind : {"GZIP", "ZLIB"}) {
    INFO(kind);
    strings files{python_records::write(dir, "raw", kind,
                                        {"HH", "abc", "def", "ghi", "FF"},
                                        kind + "-a.bin"),
                  python_records::write(dir, "raw", kind, {"HH", "jkl", "mnoFFx"},
                                        kind + "-b.bin")};
    for (int64_t hop : {0, 2, 6}) {
      INFO("hop " << hop);
      check_every_break(
          [hop, kind] {
            return std::make_unique<fixed_length_record_reader>(3, 2, 2, hop, kind);
          },
          files);
    }
  }
}

TEST_CASE("RD-9 RD-10 TFRecord files resume at every record, plain and compressed",
          "[RD-9][RD-10]") {
  temp_dir dir;
  for (std::string kind : {"", "GZIP", "ZLIB"}) {
    INFO("compression \"" << kind << "\"");
    strings files{write_tf_records(dir, kind + "a.tfrecord", kind, payloads()),
                  write_tf_records(dir, kind + "empty.tfrecord", kind, {}),
                  write_tf_records(dir, kind + "b.tfrecord", kind, {"b1", "b2"})};
    check_every_break([kind] { return std::make_unique<tf_record_reader>(kind); }, files);
    // The buffer sizes change no record: a state moves across them.
    tf_record_options small;
    small.compression_type = kind;
    small.input_buffer_size = 7;
    small.output_buffer_size = 5;
    check_every_break([small] { return std::make_unique<tf_record_reader>(small); },
                      files);
  }
}

TEST_CASE("RD-9 RD-10 whole files resume at every file", "[RD-9][RD-10]") {
  temp_dir dir;
  strings files{dir.write("a", "alpha"), dir.write("e", ""), dir.write("b", "beta\n")};
  check_every_break([] { return std::make_unique<whole_file_reader>(); }, files);
}

TEST_CASE("RD-9 a state restores into a reader of the same kind and options only",
          "[RD-9]") {
  temp_dir dir;
  auto f = dir.write("a.csv", "h\n1\n2\n");
  text_line_reader one{1};
  one.read(work_list({f}));
  auto state = one.serialize_state();
  text_line_reader zero{0};
  CHECK(thrown<invalid_argument_error>([&] { zero.restore_state(state); }) ==
        "cannot restore the state of a TextLineReader(skip_header_lines=1) into a "
        "TextLineReader(skip_header_lines=0)");
  whole_file_reader whole;
  CHECK(thrown<invalid_argument_error>([&] { whole.restore_state(state); }) ==
        "cannot restore the state of a TextLineReader(skip_header_lines=1) into a "
        "WholeFileReader()");
  fixed_length_record_reader fixed{3, 2, 2, 0, "GZIP"};
  CHECK(thrown<invalid_argument_error>([&] {
          fixed.restore_state(fixed_length_record_reader{3}.serialize_state());
        }) == "cannot restore the state of a FixedLengthRecordReader(record_bytes=3, "
              "header_bytes=0, footer_bytes=0, hop_bytes=0, encoding=\"\") into a "
              "FixedLengthRecordReader(record_bytes=3, header_bytes=2, footer_bytes=2, "
              "hop_bytes=0, encoding=\"GZIP\")");
  tf_record_reader gz{"GZIP"};
  CHECK(thrown<invalid_argument_error>(
            [&] { gz.restore_state(tf_record_reader{}.serialize_state()); }) ==
        "cannot restore the state of a TFRecordReader(compression_type=\"\") into a "
        "TFRecordReader(compression_type=\"GZIP\")");
  CHECK(zero.num_records_produced() == 0);
  CHECK(!zero.current_work());
}

TEST_CASE("RD-9 a file gone or shorter than the saved position is named, and the reader "
          "stays as it was",
          "[RD-9]") {
  temp_dir dir;
  auto busy = dir.write("busy.csv", "1\n2\n3\n");
  auto make_busy = [&] {
    auto r = std::make_unique<text_line_reader>();
    r->read(work_list({busy}));
    return r;
  };
  auto expect_unchanged = [&](reader& r) {
    CHECK(r.num_records_produced() == 1);
    CHECK(r.current_work() == work_position{busy, 2, 1});
    CHECK(r.read(work_list({})) == record{busy + ":2", "2"});
  };

  SECTION("text line, gone") {
    auto f = dir.write("f.csv", "a\nb\nc\n");
    text_line_reader first;
    first.read(work_list({f}));
    auto state = first.serialize_state();
    std::filesystem::remove(f);
    auto r = make_busy();
    CHECK(thrown<not_found_error>([&] { r->restore_state(state); }) ==
          f + "; No such file or directory");
    expect_unchanged(*r);
  }
  SECTION("text line, shorter") {
    auto f = dir.write("f.csv", "a\nb\nc\n");
    text_line_reader first;
    first.read(work_list({f}));
    first.read(work_list({}));
    auto state = first.serialize_state();
    dir.write("f.csv", "a\n");
    auto r = make_busy();
    CHECK(thrown<data_loss_error>([&] { r->restore_state(state); }) ==
          f + "; shorter than the saved position: 2 bytes, the position is 4");
    expect_unchanged(*r);
    // continue_work says the same.
    auto fresh = std::make_unique<text_line_reader>();
    CHECK(thrown<data_loss_error>([&] { fresh->continue_work(*first.current_work()); }) ==
          f + "; shorter than the saved position: 2 bytes, the position is 4");
    CHECK(!fresh->current_work());
  }
  SECTION("TFRecord, plain and GZIP, shorter") {
    for (std::string kind : {"", "GZIP"}) {
      INFO("compression \"" << kind << "\"");
      auto f = write_tf_records(dir, kind + "f.tfrecord", kind, {"aaaa", "bbbb", "cccc"});
      tf_record_reader first{kind};
      first.read(work_list({f}));
      first.read(work_list({}));
      auto state = first.serialize_state(); // the third record, at 40
      write_tf_records(dir, kind + "f.tfrecord", kind, {"aaaa"}); // 20 bytes
      auto other = write_tf_records(dir, kind + "o.tfrecord", kind, {"o1", "o2"});
      tf_record_reader second{kind};
      second.read(work_list({other}));
      CHECK(thrown<data_loss_error>([&] { second.restore_state(state); }) ==
            f + "; shorter than the saved position: 20 " +
                (kind.empty() ? "bytes" : "decompressed bytes") + ", the position is 40");
      CHECK(second.num_records_produced() == 1);
      CHECK(second.current_work() == work_position{other, 18, 1});
      CHECK(second.read(work_list({})).value == "o2");
    }
  }
}

TEST_CASE("RD-9 state bytes that do not read are data_loss, and a plain reader has no state",
          "[RD-9]") {
  temp_dir dir;
  auto f = dir.write("a.csv", "1\n2\n");
  text_line_reader first;
  first.read(work_list({f}));
  auto state = first.serialize_state();
  for (size_t len = 0; len < state.size(); ++len) {
    INFO("cut at " << len);
    text_line_reader r;
    CHECK_THROWS_AS(r.restore_state(std::string_view(state).substr(0, len)),
                    data_loss_error);
    CHECK(!r.current_work());
  }
  text_line_reader r;
  CHECK(thrown<data_loss_error>([&] {
          r.restore_state(state + "x");
        }).rfind("reader state: 1 trailing bytes at byte ", 0) == 0);
  reader custom{[](const std::string& file) { return open_text_line_source(file); }};
  CHECK(thrown<unimplemented_error>([&] { custom.serialize_state(); }) ==
        "serialize_state: this reader was made from a source_factory, whose record "
        "sources cannot be positioned");
}

TEST_CASE("RD-9 a read error is met again by the restored reader", "[RD-9]") {
  temp_dir dir;
  auto f = write_tf_records(dir, "bad.tfrecord", "", {"good", "damaged", "never"});
  {
    std::fstream io{f, std::ios::in | std::ios::out | std::ios::binary};
    io.seekp(12 + 4 + 4 + 12 + 1); // a payload byte of the second record
    io.put('X');
  }
  tf_record_reader first;
  CHECK(first.read(work_list({f})).value == "good");
  auto why = thrown<data_loss_error>([&] { first.read(work_list({})); });
  auto state = first.serialize_state();
  tf_record_reader restored;
  restored.restore_state(state);
  CHECK(restored.num_records_produced() == 1);
  CHECK(thrown<data_loss_error>([&] { restored.read(work_list({})); }) == why);
}

TEST_CASE("RD-10 continue_work takes one unit at a time", "[RD-10]") {
  temp_dir dir;
  auto f = dir.write("a.csv", "1\n2\n3\n");
  text_line_reader r;
  r.read(work_list({f}));
  CHECK(thrown<failed_precondition_error>([&] {
          r.continue_work({f, 0, 0});
        }) == "continue_work: the reader is in the middle of '" + f +
                  "'; it continues one work unit at a time");
  text_line_reader other;
  CHECK(thrown<invalid_argument_error>([&] {
          other.continue_work({f, 0, -1});
        }) == "continue_work: records must be >= 0 not -1");
  other.continue_work(*r.current_work());
  CHECK(other.num_work_units_completed() == 0);
  CHECK(keys_of(read_all(other, work_list({}))) == strings{f + ":2", f + ":3"});
  CHECK(other.num_work_units_completed() == 1);
  CHECK(other.num_records_produced() == 2);
}

TEST_CASE("RD-9 a state taken while another thread reads is a state between two records",
          "[RD-9]") {
  // The reader's lock serialises serialize_state with read: each state is
  // one a reader could have had between two of its reads.
  temp_dir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text += std::to_string(i) + "\n";
  auto f = dir.write("lines.csv", text);
  text_line_reader whole;
  auto expected = read_all(whole, work_list({f}));
  text_line_reader r;
  auto work = work_list({f});
  std::atomic<bool> done{false};
  std::thread reading{[&] {
    read_all(r, work);
    done = true;
  }};
  std::vector<std::string> states;
  while (!done)
    states.push_back(r.serialize_state());
  reading.join();
  states.push_back(r.serialize_state());
  for (size_t s = 0; s < states.size(); s += std::max<size_t>(1, states.size() / 50)) {
    text_line_reader restored;
    restored.restore_state(states[s]);
    auto produced = static_cast<size_t>(restored.num_records_produced());
    REQUIRE(produced <= expected.size());
    // Taken before the reader dequeued the file, the state has no unit and
    // the file is still to come.
    bool before = produced == 0 && !restored.current_work();
    CHECK(read_all(restored, work_list(before ? strings{f} : strings{})) ==
          std::vector<record>(expected.begin() + static_cast<std::ptrdiff_t>(produced),
                              expected.end()));
  }
}
