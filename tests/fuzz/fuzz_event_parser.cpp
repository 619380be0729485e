// Fuzz target: the Event protocol (quern/summary/event.hpp).
//
// The first byte picks the input's form:
//   even  the rest is an Event payload as a file would hold it;
//   odd   the rest describes a summary_event (every kind of event and of
//         summary value, any bytes in its strings) that is encoded.
//
// Promises checked (a broken one traps, so libFuzzer reports it):
// - decode_event never crashes: it gives an event or data_loss
//   `cannot parse Event`.
// - A parsed event re-encoded parses back equal (floats compared bit for
//   bit), and encoding is then a fixed point (same bytes again).
// - A parsed event passes check_strings: libprotobuf refuses an Event whose
//   `string` fields are not UTF-8, so anything it parsed is writable again.
// - event_encoder::append_event frames exactly encode_event's bytes, and
//   encoded_size_bound is never below the encoded size.
// - For a described event: check_strings refuses it (invalid_argument naming
//   the field and byte) exactly when libprotobuf would refuse to parse its
//   encoding -- quern's UTF-8 check and libprotobuf's agree -- and otherwise
//   it parses back as the event with what protobuf does not write dropped
//   (metadata of empty strings, -0 as 0).
//
// QUERN_FUZZ_SEEDS_OUT=<dir>: writes the seed corpus to <dir> and exits;
// tests/fuzz/make_seeds.sh runs it.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "quern/error.hpp"
#include "quern/format/record.hpp"
#include "quern/summary.hpp"
#include "quern/summary/event.hpp"

#define QUERN_FUZZ_TARGET "fuzz_event_parser"
#include "fuzz_support.hpp"

namespace {

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// A proto3 singular float or double: 0 and -0 are both "not written".
template <class T>
bool same_scalar(T a, T b) {
  return same_bits(a, b) || (a == 0 && b == 0);
}

bool same_doubles(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) // repeated fields keep -0
      return false;
  return true;
}

/// Whether two values of the same alternative are the same, bit for bit
/// where floating point is concerned.
struct same_alternative {
  bool operator()(float a, float b) const { return same_scalar(a, b); }
  bool operator()(const quern::histogram_data& a, const quern::histogram_data& b) const {
    return same_scalar(a.min, b.min) && same_scalar(a.max, b.max) &&
           same_scalar(a.num, b.num) && same_scalar(a.sum, b.sum) &&
           same_scalar(a.sum_squares, b.sum_squares) &&
           same_doubles(a.bucket_limit, b.bucket_limit) &&
           same_doubles(a.bucket, b.bucket);
  }
  bool operator()(const quern::image_data& a, const quern::image_data& b) const {
    return a.height == b.height && a.width == b.width && a.colorspace == b.colorspace &&
           a.encoded == b.encoded;
  }
  bool operator()(const quern::text_tensor& a, const quern::text_tensor& b) const {
    return a.strings == b.strings && a.shape == b.shape;
  }
  template <class A, class B>
  bool operator()(const A&, const B&) const {
    return false; // different kinds
  }
};

bool same_value(const quern::summary_value& a, const quern::summary_value& b) {
  return a.tag == b.tag && a.kind() == b.kind() &&
         caf::visit(same_alternative{}, a.value, b.value) &&
         a.plugin_name == b.plugin_name && a.plugin_content == b.plugin_content &&
         a.display_name == b.display_name && a.description == b.description;
}

/// Whether two members of Event's `what` are the same.
struct same_member {
  using event = quern::summary_event;
  bool operator()(const event::none&, const event::none&) const { return true; }
  bool operator()(const event::file_version& a, const event::file_version& b) const {
    return a.version == b.version;
  }
  bool operator()(const event::graph_def& a, const event::graph_def& b) const {
    return a.bytes == b.bytes;
  }
  bool operator()(const event::summary& a, const event::summary& b) const {
    if (a.values.size() != b.values.size())
      return false;
    for (size_t i = 0; i < a.values.size(); ++i)
      if (!same_value(a.values[i], b.values[i]))
        return false;
    return true;
  }
  bool operator()(const event::log_message& a, const event::log_message& b) const {
    return a.level == b.level && a.message == b.message;
  }
  bool operator()(const event::session_log& a, const event::session_log& b) const {
    return a.status == b.status && a.msg == b.msg &&
           a.checkpoint_path == b.checkpoint_path;
  }
  bool operator()(const event::tagged_run_metadata& a,
                  const event::tagged_run_metadata& b) const {
    return a.tag == b.tag && a.run_metadata == b.run_metadata;
  }
  bool operator()(const event::meta_graph_def& a, const event::meta_graph_def& b) const {
    return a.bytes == b.bytes;
  }
  template <class A, class B>
  bool operator()(const A&, const B&) const {
    return false; // different members
  }
};

bool same_event(const quern::summary_event& a, const quern::summary_event& b) {
  return same_scalar(a.wall_time, b.wall_time) && a.step == b.step &&
         caf::visit(same_member{}, a.what, b.what);
}

/// Reads the description of an event from the input, byte by byte; an
/// exhausted input reads as zeros.
using quern::fuzz::input;

quern::summary_value describe_value(input& in) {
  quern::summary_value v;
  v.tag = in.str(31);
  auto kind = static_cast<quern::summary_kind>(in.u8() % 4);
  auto meta = in.u8();
  if (meta & 1)
    v.plugin_name = in.str(31);
  if (meta & 2)
    v.plugin_content = in.str(31);
  if (meta & 4)
    v.display_name = in.str(31);
  if (meta & 8)
    v.description = in.str(31);
  // Read whatever the kind, as the input's layout has always been.
  auto simple_value = in.raw<float>();
  switch (kind) {
  case quern::summary_kind::scalar:
    v.value = simple_value;
    break;
  case quern::summary_kind::histogram: {
    quern::histogram_data h;
    h.min = in.raw<double>();
    h.max = in.raw<double>();
    h.num = in.raw<double>();
    h.sum = in.raw<double>();
    h.sum_squares = in.raw<double>();
    size_t n = in.u8() % 8u;
    for (size_t i = 0; i < n; ++i) {
      h.bucket_limit.push_back(in.raw<double>());
      h.bucket.push_back(in.raw<double>());
    }
    v.value = std::move(h);
    break;
  }
  case quern::summary_kind::image: {
    quern::image_data img;
    img.height = in.raw<int32_t>();
    img.width = in.raw<int32_t>();
    img.colorspace = in.raw<int32_t>();
    img.encoded = in.str(31);
    v.value = std::move(img);
    break;
  }
  case quern::summary_kind::tensor: {
    quern::text_tensor t;
    size_t rank = in.u8() % 4u;
    for (size_t i = 0; i < rank; ++i)
      t.shape.push_back(in.raw<int64_t>());
    size_t n = in.u8() % 4u;
    for (size_t i = 0; i < n; ++i)
      t.strings.push_back(in.str(31));
    v.value = std::move(t);
    break;
  }
  }
  return v;
}

quern::summary_event describe_event(input& in) {
  using event = quern::summary_event;
  event ev;
  ev.wall_time = in.raw<double>();
  ev.step = in.raw<int64_t>();
  // The member's index, then a number, two strings and values, from which
  // the member takes what it has fields for (the rest is dropped).
  auto what = in.u8() % 8u;
  auto code = in.raw<int32_t>();
  auto data = in.str(31);
  auto text = in.str(31);
  std::vector<quern::summary_value> values;
  size_t n = in.u8() % 4u;
  for (size_t i = 0; i < n; ++i)
    values.push_back(describe_value(in));
  switch (what) {
  case 0:
    ev.what = event::none{};
    break;
  case 1:
    ev.what = event::file_version{data};
    break;
  case 2:
    ev.what = event::graph_def{data};
    break;
  case 3:
    ev.what = event::summary{std::move(values)};
    break;
  case 4:
    ev.what = event::log_message{code, data};
    break;
  case 5:
    ev.what = event::session_log{code, text, data};
    break;
  case 6:
    ev.what = event::tagged_run_metadata{text, data};
    break;
  default:
    ev.what = event::meta_graph_def{data};
    break;
  }
  return ev;
}

/// Promises of any event that is encoded: framing, size bound.
void check_encoding(const quern::summary_event& ev, const std::string& bytes) {
  PROMISE(quern::encoded_size_bound(ev) >= bytes.size());
  quern::event_encoder encoder;
  std::string framed;
  encoder.append_event(framed, ev);
  encoder.append_event(framed, ev); // the encoder's reused Event is cleared
  auto records = quern::read_records(framed);
  PROMISE(!records.error);
  PROMISE(records.records.size() == 2);
  PROMISE(records.records[0] == bytes);
  PROMISE(records.records[1] == bytes);
}

/// A payload as a file would hold it.
void check_payload(std::string_view payload) {
  auto ev = quern::decode_event(payload);
  if (!ev) {
    PROMISE(quern::is(ev.error(), quern::error_code::data_loss));
    PROMISE(quern::message_of(ev.error()) == "cannot parse Event");
    return;
  }
  PROMISE(!quern::check_strings(*ev));
  auto bytes = quern::encode_event(*ev);
  check_encoding(*ev, bytes);
  auto again = quern::decode_event(bytes);
  PROMISE(again.engaged());
  PROMISE(same_event(*ev, *again));
  PROMISE(quern::encode_event(*again) == bytes);
}

/// An event described by the input.
void check_described(input& in) {
  auto ev = describe_event(in);
  auto bytes = quern::encode_event(ev);
  check_encoding(ev, bytes);
  auto refused = quern::check_strings(ev);
  auto back = quern::decode_event(bytes);
  if (refused) {
    PROMISE(quern::is(refused, quern::error_code::invalid_argument));
    PROMISE(quern::message_of(refused).find("is not valid UTF-8 (byte ") !=
            std::string::npos);
    PROMISE(!back); // libprotobuf refuses it too
    return;
  }
  PROMISE(back.engaged()); // libprotobuf takes what quern's check takes
  PROMISE(same_event(*back, ev));
  PROMISE(quern::encode_event(*back) == bytes);
  auto summary = caf::get_if<quern::summary_event::summary>(&ev.what);
  if (summary && summary->values.size() == 1 &&
      summary->values[0].kind() == quern::summary_kind::scalar &&
      !summary->values[0].has_metadata()) {
    // The fast path encodes a scalar event to the same bytes.
    auto& v = summary->values[0];
    quern::scalar_event s{ev.wall_time, ev.step, v.tag, caf::get<float>(v.value)};
    PROMISE(quern::encode_event(s) == bytes);
    PROMISE(!quern::check_strings(s));
    PROMISE(quern::encoded_size_bound(s) >= bytes.size());
  }
}

void write_seed(const std::string& dir, const std::string& name,
                const std::string& bytes) {
  quern::fuzz::write_file(dir + "/" + name, bytes);
}

/// Seeds of both forms: payloads of every kind of event, and descriptions.
void write_seeds(const std::string& dir) {
  using namespace quern;
  auto payload = [&](const std::string& name, const summary_event& ev) {
    write_seed(dir, name, std::string(1, '\0') + encode_event(ev));
  };
  payload("file_version", file_version_event(1.5e9));
  summary_event ev;
  ev.wall_time = 1.5e9;
  ev.step = 3;
  summary_value scalar;
  scalar.tag = "loss";
  scalar.value = 0.5f;
  summary_value histo;
  histo.tag = "w";
  histo.value = histogram_data{-1, 1, 10, 0, 4, {-0.5, 0, 1}, {3, 4, 3}};
  histo.plugin_name = "histograms";
  summary_value image;
  image.tag = "img";
  image.value = image_data{2, 2, 3, "\x89PNG\r\n"};
  summary_value text;
  text.tag = "notes";
  text.value = text_tensor{{"hello", "w\xc3\xb6rld"}, {2}};
  text.plugin_name = "text";
  text.display_name = "Notes";
  text.description = "free text";
  ev.what = summary_event::summary{{scalar, histo, image, text}};
  payload("summary", ev);
  summary_event log;
  log.what = summary_event::log_message{30, "careful"};
  payload("log_message", log);
  summary_event session;
  session.what = summary_event::session_log{3, "saved", "ckpt/model-100"};
  payload("session_log", session);
  summary_event meta;
  meta.what =
      summary_event::tagged_run_metadata{"step_1", std::string("\x00\x01\x02", 3)};
  payload("tagged_run_metadata", meta);
  summary_event graph;
  graph.what = summary_event::graph_def{"\x0a\x03"
                                        "abc"};
  payload("graph_def", graph);
  // Descriptions (odd first byte): a scalar summary, a histogram, a log
  // message whose text is not UTF-8.
  auto bytes = [](std::initializer_list<int> xs) {
    std::string out;
    for (auto x : xs)
      out += static_cast<char>(x);
    return out;
  };
  auto head = [&](int what) {
    // form, wall_time 1.0, step 5, what, code 0
    return bytes(
        {1, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 5, 0, 0, 0, 0, 0, 0, 0, what, 0, 0, 0, 0});
  };
  // data "", text "", one value: tag "loss", scalar, no metadata, 1.0f
  write_seed(dir, "describe_scalar",
             head(3) + bytes({0, 0, 1, 4, 'l', 'o', 's', 's', 0, 0, 0, 0, 0x80, 0x3f}));
  // one value: tag "h", histogram, plugin name "pn", then its numbers
  write_seed(dir, "describe_histogram",
             head(3) + bytes({0, 0, 1, 1, 'h', 1, 1, 2, 'p', 'n'}) + std::string(60, 1));
  // a log message "\xc3\x28" (a broken two-byte sequence)
  write_seed(dir, "describe_bad_utf8", head(4) + bytes({2, 0xc3, 0x28, 0, 0}));
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // libprotobuf logs each refused payload (invalid UTF-8) at ERROR level.
  google::protobuf::SetLogHandler(nullptr);
  if (const char* dir = std::getenv("QUERN_FUZZ_SEEDS_OUT")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  if (data[0] % 2 == 0) {
    check_payload({reinterpret_cast<const char*>(data + 1), size - 1});
    return 0;
  }
  input in{data + 1, size - 1};
  check_described(in);
  return 0;
}
