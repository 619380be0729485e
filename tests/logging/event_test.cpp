#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <caf/deep_to_string.hpp>

#include "quern/error.hpp"
#include "quern/format/record.hpp"
#include "quern/summary/event.hpp"
#include "quern/summary/event_file.hpp"
#include "quern/summary/reader.hpp"
#include "quern/summary/values.hpp"
#include "test_util.hpp"

using namespace quern;
using quern::test::from_hex;
using quern::test::golden;
using quern::test::temp_dir;
using quern::test::to_hex;

namespace {

/// The value of alternative T, or T's default when the value is another
/// kind: compares every field of two values, as the tests did when each
/// kind had fields of its own.
template <class T>
T value_or_default(const summary_value& v) {
  auto x = caf::get_if<T>(&v.value);
  return x ? *x : T{};
}

std::string payload_of(const std::string& record) {
  return record.substr(record_header_size,
                       record.size() - record_header_size - record_footer_size);
}

summary_event scalar_event_of(double wall_time, int64_t step, std::string tag, float v) {
  summary_event ev;
  ev.wall_time = wall_time;
  ev.step = step;
  test::values_of(ev).push_back(scalar_value(std::move(tag), v));
  return ev;
}

summary_event golden_histogram_event() {
  summary_event ev;
  ev.wall_time = 1700000001.0;
  ev.step = 7;
  test::values_of(ev).push_back(histogram_value("w", {0.0}));
  return ev;
}

} // namespace

TEST_CASE("SW-12 the file_version record is byte exact", "[SW-12][SW-30]") {
  // 09 <wall_time 1700000000.0 LE> 1a 0d "brain.Event:2"
  auto bytes = encode_event(file_version_event(1700000000.0));
  CHECK(to_hex(bytes) == "09"
                         "00000040fc54d941"
                         "1a0d"
                         "627261696e2e4576656e743a32");
  std::string rec;
  append_record(rec, bytes);
  CHECK(to_hex(rec) == to_hex(golden("file_version.bin")));
  CHECK(std::string(event_file_version) == "brain.Event:2");
}

TEST_CASE("SW-30 SW-40 a scalar event is byte exact", "[SW-30][SW-40]") {
  // Event{wall_time 1700000000.5, step 42, summary{value{tag "loss", simple_value 0.25}}}
  std::string expected = "09"
                         "00002040fc54d941" // wall_time
                         "102a"             // step 42
                         "2a0d"             // summary, 13 bytes
                         "0a0b"             //   value, 11 bytes
                         "0a046c6f7373"     //     tag "loss"
                         "150000803e";      //     simple_value 0.25f
  auto ev = scalar_event_of(1700000000.5, 42, "loss", 0.25f);
  CHECK(to_hex(encode_event(ev)) == expected);
  scalar_event fast{1700000000.5, 42, "loss", 0.25f};
  CHECK(to_hex(encode_event(fast)) == expected);
  CHECK(to_hex(payload_of(golden("scalar.bin"))) == expected);
  // The reusing encoder frames the same bytes, call after call.
  event_encoder enc;
  std::string out;
  enc.append_scalar(out, fast);
  enc.append_scalar(out, fast);
  CHECK(out == golden("scalar.bin") + golden("scalar.bin"));
}

TEST_CASE("SW-35 proto3 presence rules", "[SW-35]") {
  // step 0 and wall_time 0 are not written; simple_value 0 is (oneof member).
  auto bytes = encode_event(scalar_event_of(0, 0, "a", 0.0f));
  CHECK(to_hex(bytes) == "2a0a"
                         "0a08"
                         "0a0161"
                         "1500000000");
  event_encoder enc;
  std::string out;
  enc.append_scalar(out, 0, 0, "a", 0.0f);
  CHECK(to_hex(payload_of(out)) == to_hex(bytes));
  // An empty file_version is still written (oneof member).
  summary_event v;
  v.what = summary_event::file_version{};
  CHECK(to_hex(encode_event(v)) == "1a00");
  // A negative step is a 10-byte varint.
  auto neg = encode_event(scalar_event_of(0, -1, "a", 1.0f));
  CHECK(to_hex(neg.substr(0, 11)) == "10ffffffffffffffffff01");
}

TEST_CASE("SW-30 the direct scalar encoder writes what libprotobuf writes",
          "[SW-30][SW-35]") {
  // append_scalar writes a scalar's Event without libprotobuf (event.cpp);
  // encode_event(scalar_event) serialises it with libprotobuf. Both must give
  // the same bytes for every value, at the edges of proto3's presence rules
  // and of varint lengths.
  const double nan = std::nan("");
  const std::vector<double> walls = {0.0, -0.0, 1700000000.5, -1.0, nan, DBL_MAX, 5e-324};
  const std::vector<int64_t> steps = {0,     1,  127,       128,      16383,
                                      16384, -1, INT64_MIN, INT64_MAX};
  const std::vector<std::string> tags = {
      "",
      "a",
      "thread_0/loss",
      std::string(111, 't'), // Value just under 128 bytes
      std::string(127, 't'),
      std::string(128, 't'),
      std::string(20000, 't'),
      "\xc3\xa9t\xc3\xa9/\xe2\x82\xac"};
  const std::vector<float> values = {0.0f,          -0.0f,    0.25f,  -1e30f,
                                     std::nanf(""), INFINITY, FLT_MIN};
  event_encoder enc;
  size_t compared = 0;
  for (auto wall : walls)
    for (auto step : steps)
      for (auto& tag : tags)
        for (auto value : values) {
          std::string out;
          enc.append_scalar(out, wall, step, tag, value);
          std::string want;
          append_record(want, encode_event(scalar_event{wall, step, tag, value}));
          INFO("wall " << wall << " step " << step << " tag of " << tag.size()
                       << " bytes, value " << value);
          REQUIRE(to_hex(out) == to_hex(want));
          ++compared;
        }
  CHECK(compared == walls.size() * steps.size() * tags.size() * values.size());
}

TEST_CASE("SW-41 default histogram buckets", "[SW-41]") {
  auto& limits = default_bucket_limits();
  REQUIRE(limits.size() == 1551);
  CHECK(limits.front() == -DBL_MAX);
  CHECK(limits.back() == DBL_MAX);
  // 774 negated limits, 0, 774 positive limits (1e-12 * 1.1^k < 1e20).
  CHECK(limits[775] == 0.0);
  CHECK(limits[776] == 1e-12);
  CHECK(limits[774] == -1e-12);
  CHECK(limits[777] == 1e-12 * 1.1);
  CHECK(limits[1] == -limits[1549]);
  CHECK(limits[1549] < 1e20);
  CHECK(limits[1549] * 1.1 >= 1e20);
  CHECK(std::is_sorted(limits.begin(), limits.end()));
  for (size_t i = 1; i < 775; ++i)
    CHECK(limits[i] == -limits[1550 - i]);
}

TEST_CASE("SW-41 SW-33 a histogram event is byte exact", "[SW-41][SW-33]") {
  auto h = make_histogram({0.0});
  // 0.0 falls into the first bucket whose limit is > 0: (0, 1e-12].
  CHECK(h.bucket_limit == std::vector<double>{0.0, 1e-12, DBL_MAX});
  CHECK(h.bucket == std::vector<double>{0, 1, 0});
  CHECK(h.num == 1);
  auto bytes = encode_event(golden_histogram_event());
  CHECK(to_hex(bytes) == to_hex(payload_of(golden("histogram.bin"))));
  CHECK(to_hex(bytes) == "09"
                         "00004040fc54d941"
                         "1007"
                         "2a44"
                         "0a42"
                         "0a0177"
                         "2a3d"
                         "19000000000000f03f" // num 1
                         "3218"
                         "0000000000000000"
                         "11ea2d819997713d"
                         "ffffffffffffef7f" // limits
                         "3a18"
                         "0000000000000000"
                         "000000000000f03f"
                         "0000000000000000"); // counts
}

TEST_CASE("SW-41 the empty histogram", "[SW-41]") {
  auto h = make_histogram({});
  CHECK(h.min == DBL_MAX);
  CHECK(h.max == -DBL_MAX);
  CHECK(h.num == 0);
  CHECK(h.bucket_limit == std::vector<double>{DBL_MAX});
  CHECK(h.bucket == std::vector<double>{0});
  summary_event ev;
  test::values_of(ev).push_back(histogram_value("e", {}));
  CHECK(to_hex(encode_event(ev)) == "2a2d"
                                    "0a2b"
                                    "0a0165"
                                    "2a26"
                                    "09ffffffffffffef7f"   // min DBL_MAX
                                    "11ffffffffffffefff"   // max -DBL_MAX
                                    "3208ffffffffffffef7f" // bucket_limit
                                    "3a080000000000000000");
}

TEST_CASE("SW-41 histogram statistics and bucket runs", "[SW-41]") {
  auto& limits = default_bucket_limits();
  std::vector<double> xs = {-3.5, 1.0, 1.0, 2.0, 1e6};
  auto h = make_histogram(xs);
  CHECK(h.min == -3.5);
  CHECK(h.max == 1e6);
  CHECK(h.num == 5);
  CHECK(h.sum == -3.5 + 1 + 1 + 2 + 1e6);
  CHECK(h.sum_squares == 3.5 * 3.5 + 1 + 1 + 4 + 1e12);
  // Every value counted once, in the bucket whose limit is the first > x.
  double total = 0;
  for (size_t i = 0; i < h.bucket.size(); ++i) {
    total += h.bucket[i];
    if (h.bucket[i] > 0) {
      auto it = std::find(limits.begin(), limits.end(), h.bucket_limit[i]);
      REQUIRE(it != limits.end());
      size_t idx = static_cast<size_t>(it - limits.begin());
      for (auto x : xs)
        if (x < limits[idx] && (idx == 0 || x >= limits[idx - 1]))
          CHECK(h.bucket[i] >= 1);
    }
    if (i > 0) // never two empty runs in a row
      CHECK(!(h.bucket[i] == 0 && h.bucket[i - 1] == 0));
  }
  CHECK(total == 5);
  CHECK(h.bucket_limit.back() == DBL_MAX);
  // NaN and infinities are refused with TensorFlow's texts.
  CHECK_THROWS_WITH(histogram_value("w", {1.0, std::nan("")}),
                    "Nan in summary histogram for: w");
  CHECK_THROWS_AS(histogram_value("w", {HUGE_VAL}), invalid_argument_error);
  CHECK_THROWS_WITH(histogram_value("w", {-HUGE_VAL}),
                    "Infinity in summary histogram for: w");
}

TEST_CASE("SW-42 a text summary is byte exact", "[SW-42]") {
  summary_event ev;
  test::values_of(ev).push_back(text_value("t", "hi"));
  // value{tag "t", tensor{dtype DT_STRING, tensor_shape{} (present, empty),
  // string_val "hi"}, metadata{plugin_data{plugin_name "text", content "{}"}}}
  CHECK(to_hex(encode_event(ev)) == "2a1d"
                                    "0a1b"
                                    "0a0174"
                                    "4208"
                                    "0807"
                                    "1200"
                                    "42026869"
                                    "4a0c"
                                    "0a0a"
                                    "0a0474657874"
                                    "12027b7d");
  auto v = text_value("m", {"a", "b", "c", "d", "e", "f"}, {2, 3});
  CHECK(caf::get<text_tensor>(v.value).shape == std::vector<int64_t>{2, 3});
  CHECK_THROWS_AS(text_value("m", {"a"}, {2}), invalid_argument_error);
}

TEST_CASE("SW-32 an image summary is byte exact", "[SW-32]") {
  summary_event ev;
  test::values_of(ev).push_back(image_value("img", "PNG", 2, 3, 4));
  CHECK(to_hex(encode_event(ev)) == "2a14"
                                    "0a12"
                                    "0a03696d67"
                                    "220b"
                                    "0802"
                                    "1003"
                                    "1804"
                                    "2203504e47");
  // Height, width and colour type are read from a PNG header.
  std::string png = from_hex("89504e470d0a1a0a"
                             "0000000d"
                             "49484452"
                             "00000010"
                             "00000020"
                             "08"
                             "06"
                             "000000"
                             "00000000");
  auto v = png_image_value("p", png);
  auto& img = caf::get<image_data>(v.value);
  CHECK(img.width == 16);
  CHECK(img.height == 32);
  CHECK(img.colorspace == 4); // RGBA
  CHECK(img.encoded == png);
  CHECK_THROWS_AS(png_image_value("p", "not a png"), invalid_argument_error);
}

TEST_CASE("SW-30 SW-31 every event kind round-trips through encode and decode",
          "[SW-30][SW-31]") {
  std::vector<summary_event> events;
  events.push_back(file_version_event(12.0));
  auto s = scalar_event_of(1.5, 3, "a/b", -2.5f);
  test::values_of(s).push_back(histogram_value("h", {1, 2, 3}));
  test::values_of(s).push_back(text_value("t", {"x", "y"}, {2}));
  test::values_of(s).push_back(image_value("i", std::string("\0\1\2", 3), 1, 1, 1));
  test::values_of(s).back().display_name = "shown";
  test::values_of(s).back().description = "described";
  events.push_back(s);
  summary_event log;
  log.what = summary_event::log_message{30, "careful"};
  events.push_back(log);
  summary_event sl;
  sl.what = summary_event::session_log{3, "saved", "/ckpt/model-100"};
  sl.step = 100;
  events.push_back(sl);
  summary_event rm;
  rm.what = summary_event::tagged_run_metadata{"step1", std::string("\x01\x02\x00", 3)};
  events.push_back(rm);
  summary_event g;
  g.what = summary_event::graph_def{"graph bytes"};
  events.push_back(g);
  summary_event mg;
  mg.what = summary_event::meta_graph_def{"graph bytes"};
  events.push_back(mg);
  summary_event empty;
  empty.what = summary_event::none{};
  events.push_back(empty);
  for (auto& ev : events) {
    auto back = decode_event(encode_event(ev));
    REQUIRE(back);
    CHECK(back->what.index() == ev.what.index());
    CHECK(back->wall_time == ev.wall_time);
    CHECK(back->step == ev.step);
    // Every field of the member (a summary's values too, checked one by one
    // below).
    CHECK(caf::deep_to_string(back->what) == caf::deep_to_string(ev.what));
    auto no_values = std::vector<summary_value>{};
    auto& ev_values = caf::holds_alternative<summary_event::summary>(ev.what)
                          ? test::values_of(ev)
                          : no_values;
    auto& back_values = caf::holds_alternative<summary_event::summary>(back->what)
                            ? test::values_of(*back)
                            : no_values;
    REQUIRE(back_values.size() == ev_values.size());
    for (size_t i = 0; i < ev_values.size(); ++i) {
      auto& a = ev_values[i];
      auto& b = back_values[i];
      CHECK(b.tag == a.tag);
      CHECK(b.kind() == a.kind());
      CHECK(value_or_default<float>(b) == value_or_default<float>(a));
      CHECK(value_or_default<histogram_data>(b).bucket ==
            value_or_default<histogram_data>(a).bucket);
      CHECK(value_or_default<histogram_data>(b).bucket_limit ==
            value_or_default<histogram_data>(a).bucket_limit);
      CHECK(value_or_default<histogram_data>(b).sum ==
            value_or_default<histogram_data>(a).sum);
      CHECK(value_or_default<text_tensor>(b).strings ==
            value_or_default<text_tensor>(a).strings);
      CHECK(value_or_default<text_tensor>(b).shape ==
            value_or_default<text_tensor>(a).shape);
      CHECK(value_or_default<image_data>(b).encoded ==
            value_or_default<image_data>(a).encoded);
      CHECK(b.plugin_name == a.plugin_name);
      CHECK(b.plugin_content == a.plugin_content);
      CHECK(b.display_name == a.display_name);
      CHECK(b.description == a.description);
    }
  }
  CHECK(!decode_event("\xff\xff\xff"));
}

TEST_CASE("SW-10 SW-12 event file writer output equals the golden file",
          "[SW-10][SW-12][SW-20]") {
  CHECK(event_file_name(1700000000, "host", "") == "events.out.tfevents.1700000000.host");
  CHECK(event_file_name(42, "h", ".v2") == "events.out.tfevents.0000000042.h.v2");
  temp_dir dir;
  {
    event_file_writer w;
    REQUIRE(!w.create_at(dir / "events.out.tfevents.golden", 1700000000.0, false));
    w.append(scalar_event{1700000000.5, 42, "loss", 0.25f});
    w.append(golden_histogram_event());
    CHECK(w.events() == 2);
    REQUIRE(!w.close(false));
  }
  auto bytes = test::read_file(dir / "events.out.tfevents.golden");
  CHECK(to_hex(bytes) == to_hex(golden("events.bin")));
  auto contents = read_event_file(dir / "events.out.tfevents.golden");
  CHECK(!contents.error);
  REQUIRE(contents.events.size() == 3);
  CHECK(contents.offsets == std::vector<uint64_t>{0, 40, 82});
  CHECK(test::what_of<summary_event::file_version>(contents.events[0]).version ==
        "brain.Event:2");
  CHECK(caf::get<float>(test::values_of(contents.events[1])[0].value) == 0.25f);
  CHECK(caf::get<histogram_data>(test::values_of(contents.events[2])[0].value).num == 1);
}

TEST_CASE("SW-22 event files with damage are read up to the damage", "[SW-22]") {
  temp_dir dir;
  auto gold = golden("events.bin"); // records at 0, 40 and 82
  test::write_file(dir / "trunc.tfevents", gold.substr(0, 100));
  auto t = read_event_file(dir / "trunc.tfevents");
  CHECK(t.events.size() == 2);
  CHECK(message_of(t.error) == "truncated record at 94");
  auto bad = gold;
  bad[60] ^= 1;
  test::write_file(dir / "bad.tfevents", bad);
  auto b = read_event_file(dir / "bad.tfevents");
  CHECK(b.events.size() == 1);
  CHECK(message_of(b.error) == "corrupted record at 52");
  CHECK(is(b.error, error_code::data_loss));
  // A record whose CRCs hold but whose payload is not an Event.
  std::string junk = gold.substr(0, 40);
  append_record(junk, "\xff\xff\xff\xff");
  test::write_file(dir / "junk.tfevents", junk);
  auto j = read_event_file(dir / "junk.tfevents");
  CHECK(j.events.size() == 1);
  CHECK(message_of(j.error) == "cannot parse Event at 40");
}

TEST_CASE("SW-13 a full disk is an error naming the file and the reason", "[SW-13]") {
  event_file_writer w;
  auto err = w.create_at("/dev/full", 1.0, false);
  CHECK(is(err, error_code::resource_exhausted));
  CHECK(message_of(err) ==
        "cannot write to event file '/dev/full': No space left on device");
}

TEST_CASE("SW-6 events for actors are stamped when made", "[SW-6]") {
  auto before = wall_time_now();
  auto s = make_scalar_event("loss", 0.1, 5);
  auto e = make_summary_event({scalar_value("a", 1), text_value("t", "x")}, 6);
  auto after = wall_time_now();
  CHECK(before > 1.6e9);
  CHECK(s.wall_time >= before);
  CHECK(s.wall_time <= after);
  CHECK(s.tag == "loss");
  CHECK(s.value == 0.1f); // float32, as TensorFlow stores it
  CHECK(s.step == 5);
  CHECK(caf::holds_alternative<summary_event::summary>(e.what));
  CHECK(e.step == 6);
  CHECK(test::values_of(e).size() == 2);
  CHECK(e.wall_time >= before);
  CHECK(e.wall_time <= after);
  // The same bytes as the equivalent general event.
  summary_event g;
  g.wall_time = s.wall_time;
  g.step = 5;
  test::values_of(g).push_back(scalar_value("loss", 0.1));
  CHECK(encode_event(s) == encode_event(g));
}
