#include "quern/summary/event.hpp"

#include <cstring>

#include "event.pb.h"
#include "quern/error.hpp"
#include "quern/format/record.hpp"

namespace quern {

namespace {

void to_proto(const summary_value& x, pb::Summary::Value& v) {
  v.set_tag(x.tag);
  if (x.has_metadata()) {
    auto* md = v.mutable_metadata();
    if (!x.plugin_name.empty() || !x.plugin_content.empty()) {
      md->mutable_plugin_data()->set_plugin_name(x.plugin_name);
      md->mutable_plugin_data()->set_content(x.plugin_content);
    }
    md->set_display_name(x.display_name);
    md->set_summary_description(x.description);
  }
  struct encode {
    pb::Summary::Value& v;
    const std::string& plugin;
    void operator()(float simple_value) { v.set_simple_value(simple_value); }
    void operator()(const histogram_data& x) {
      auto* h = v.mutable_histo();
      h->set_min(x.min);
      h->set_max(x.max);
      h->set_num(x.num);
      h->set_sum(x.sum);
      h->set_sum_squares(x.sum_squares);
      h->mutable_bucket_limit()->Add(x.bucket_limit.begin(), x.bucket_limit.end());
      h->mutable_bucket()->Add(x.bucket.begin(), x.bucket.end());
    }
    void operator()(const image_data& x) {
      auto* img = v.mutable_image();
      img->set_height(x.height);
      img->set_width(x.width);
      img->set_colorspace(x.colorspace);
      img->set_encoded_image_string(x.encoded);
    }
    void operator()(const text_tensor& x) {
      auto* t = v.mutable_tensor();
      // The hparams plugin's summaries carry TensorBoard's null tensor, an
      // empty DT_FLOAT one (SW-45); every other tensor is a string tensor.
      t->set_dtype(plugin == "hparams" ? pb::DT_FLOAT : pb::DT_STRING);
      auto* shape = t->mutable_tensor_shape(); // present even for a scalar (SW-42)
      for (auto d : x.shape)
        shape->add_dim()->set_size(d);
      for (auto& s : x.strings)
        t->add_string_val(s);
    }
  };
  caf::visit(encode{v, x.plugin_name}, x.value);
}

void to_proto(const summary_event& x, pb::Event& ev) {
  ev.set_wall_time(x.wall_time);
  ev.set_step(x.step);
  struct encode {
    pb::Event& ev;
    void operator()(const summary_event::none&) {}
    void operator()(const summary_event::file_version& x) {
      ev.set_file_version(x.version);
    }
    void operator()(const summary_event::graph_def& x) { ev.set_graph_def(x.bytes); }
    void operator()(const summary_event::summary& x) {
      auto* s = ev.mutable_summary();
      for (auto& v : x.values)
        to_proto(v, *s->add_value());
    }
    void operator()(const summary_event::log_message& x) {
      auto* m = ev.mutable_log_message();
      m->set_level(static_cast<pb::LogMessage::Level>(x.level));
      m->set_message(x.message);
    }
    void operator()(const summary_event::session_log& x) {
      auto* s = ev.mutable_session_log();
      s->set_status(static_cast<pb::SessionLog::SessionStatus>(x.status));
      s->set_checkpoint_path(x.checkpoint_path);
      s->set_msg(x.msg);
    }
    void operator()(const summary_event::tagged_run_metadata& x) {
      auto* t = ev.mutable_tagged_run_metadata();
      t->set_tag(x.tag);
      t->set_run_metadata(x.run_metadata);
    }
    void operator()(const summary_event::meta_graph_def& x) {
      ev.set_meta_graph_def(x.bytes);
    }
  };
  caf::visit(encode{ev}, x.what);
}

summary_value from_proto(const pb::Summary::Value& v) {
  summary_value x;
  x.tag = v.tag();
  if (v.has_metadata()) {
    auto& md = v.metadata();
    x.plugin_name = md.plugin_data().plugin_name();
    x.plugin_content = md.plugin_data().content();
    x.display_name = md.display_name();
    x.description = md.summary_description();
  }
  switch (v.value_case()) {
  case pb::Summary::Value::kSimpleValue:
    x.value = v.simple_value();
    break;
  case pb::Summary::Value::kHisto: {
    auto& h = v.histo();
    histogram_data d;
    d.min = h.min();
    d.max = h.max();
    d.num = h.num();
    d.sum = h.sum();
    d.sum_squares = h.sum_squares();
    d.bucket_limit.assign(h.bucket_limit().begin(), h.bucket_limit().end());
    d.bucket.assign(h.bucket().begin(), h.bucket().end());
    x.value = std::move(d);
    break;
  }
  case pb::Summary::Value::kImage: {
    image_data d;
    d.height = v.image().height();
    d.width = v.image().width();
    d.colorspace = v.image().colorspace();
    d.encoded = v.image().encoded_image_string();
    x.value = std::move(d);
    break;
  }
  case pb::Summary::Value::kTensor: {
    text_tensor d;
    for (auto& dim : v.tensor().tensor_shape().dim())
      d.shape.push_back(dim.size());
    d.strings.assign(v.tensor().string_val().begin(), v.tensor().string_val().end());
    x.value = std::move(d);
    break;
  }
  default:
    // Audio and old-style histograms are not modelled: kept as a tensor
    // value without strings so that the tag still shows up.
    x.value = text_tensor{};
    break;
  }
  return x;
}

} // namespace

summary_event file_version_event(double wall_time) {
  summary_event ev;
  ev.wall_time = wall_time;
  ev.what = summary_event::file_version{event_file_version};
  return ev;
}

std::string encode_event(const summary_event& x) {
  pb::Event ev;
  to_proto(x, ev);
  return ev.SerializeAsString();
}

std::string encode_event(const scalar_event& x) {
  pb::Event ev;
  ev.set_wall_time(x.wall_time);
  ev.set_step(x.step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(x.tag);
  v->set_simple_value(x.value);
  return ev.SerializeAsString();
}

caf::expected<summary_event> decode_event(std::string_view payload) {
  pb::Event ev;
  if (!ev.ParseFromArray(payload.data(), static_cast<int>(payload.size())))
    return make_error(error_code::data_loss, "cannot parse Event");
  summary_event x;
  x.wall_time = ev.wall_time();
  x.step = ev.step();
  switch (ev.what_case()) {
  case pb::Event::kFileVersion:
    x.what = summary_event::file_version{ev.file_version()};
    break;
  case pb::Event::kGraphDef:
    x.what = summary_event::graph_def{ev.graph_def()};
    break;
  case pb::Event::kSummary: {
    summary_event::summary s;
    for (auto& v : ev.summary().value())
      s.values.push_back(from_proto(v));
    x.what = std::move(s);
    break;
  }
  case pb::Event::kLogMessage:
    x.what =
        summary_event::log_message{ev.log_message().level(), ev.log_message().message()};
    break;
  case pb::Event::kSessionLog:
    x.what = summary_event::session_log{ev.session_log().status(), ev.session_log().msg(),
                                        ev.session_log().checkpoint_path()};
    break;
  case pb::Event::kTaggedRunMetadata:
    x.what = summary_event::tagged_run_metadata{ev.tagged_run_metadata().tag(),
                                                ev.tagged_run_metadata().run_metadata()};
    break;
  case pb::Event::kMetaGraphDef:
    x.what = summary_event::meta_graph_def{ev.meta_graph_def()};
    break;
  case pb::Event::WHAT_NOT_SET:
    x.what = summary_event::none{};
    break;
  }
  return x;
}

struct event_encoder::impl {
  pb::Event any; // reused: its buffers outlive each event

  void frame(std::string& out, const pb::Event& ev) {
    auto size = ev.ByteSizeLong();
    auto* payload = begin_record(out, size);
    ev.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(payload));
    end_record(payload, size);
  }
};

event_encoder::event_encoder() : impl_(std::make_unique<impl>()) {
  // nop
}

event_encoder::~event_encoder() = default;

// -- the scalar's Event, written directly -----------------------------------------
//
// A scalar is the event a training loop writes most, and its Event has one
// fixed shape. libprotobuf's generic path (sizes of three nested messages, a
// UTF-8 pass, the serialiser) was a third of the writer's time per scalar, so
// this shape is written here, byte for byte as libprotobuf writes it (proto3:
// a zero wall_time or step is left out, simple_value is a oneof member and
// always written; fields in field-number order). event_test.cpp compares the
// two over edge values; every other event goes through libprotobuf.

namespace {

size_t varint_size(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7)
    ++n;
  return n;
}

char* put_varint(char* p, uint64_t v) {
  for (; v >= 0x80; v >>= 7)
    *p++ = static_cast<char>(v | 0x80);
  *p++ = static_cast<char>(v);
  return p;
}

template <class T>
char* put_fixed(char* p, T x) { // little-endian, as the wire format wants
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof(T));
  for (size_t i = 0; i < sizeof(T); ++i)
    *p++ = static_cast<char>(bits >> (8 * i));
  return p;
}

// Wire tags: (field number << 3) | wire type.
constexpr char event_wall_time = 0x09;   // Event.wall_time = 1, fixed64
constexpr char event_step = 0x10;        // Event.step = 2, varint
constexpr char event_summary = 0x2a;     // Event.summary = 5, length-delimited
constexpr char summary_value_tag = 0x0a; // Summary.value = 1, length-delimited
constexpr char value_tag = 0x0a;         // Summary.Value.tag = 1, length-delimited
constexpr char value_simple = 0x15;      // Summary.Value.simple_value = 2, fixed32

} // namespace

void event_encoder::append_scalar(std::string& out, double wall_time, int64_t step,
                                  std::string_view tag, float value) {
  uint64_t wall_bits = 0;
  std::memcpy(&wall_bits, &wall_time, sizeof wall_time); // -0.0 is written, 0.0 not
  auto ustep = static_cast<uint64_t>(step); // a negative step is a 10-byte varint
  size_t value_size = (tag.empty() ? 0 : 1 + varint_size(tag.size()) + tag.size()) + 5;
  size_t summary_size = 1 + varint_size(value_size) + value_size;
  size_t size = (wall_bits != 0 ? 9 : 0) + (step != 0 ? 1 + varint_size(ustep) : 0) + 1 +
                varint_size(summary_size) + summary_size;
  char* payload = begin_record(out, size);
  char* p = payload;
  if (wall_bits != 0) {
    *p++ = event_wall_time;
    p = put_fixed(p, wall_time);
  }
  if (step != 0) {
    *p++ = event_step;
    p = put_varint(p, ustep);
  }
  *p++ = event_summary;
  p = put_varint(p, summary_size);
  *p++ = summary_value_tag;
  p = put_varint(p, value_size);
  if (!tag.empty()) {
    *p++ = value_tag;
    p = put_varint(p, tag.size());
    std::memcpy(p, tag.data(), tag.size());
    p += tag.size();
  }
  *p++ = value_simple;
  put_fixed(p, value);
  end_record(payload, size);
}

void event_encoder::append_event(std::string& out, const summary_event& ev) {
  auto& d = *impl_;
  d.any.Clear();
  to_proto(ev, d.any);
  d.frame(out, d.any);
}

// -- UTF-8 of string fields ------------------------------------------------------

namespace {

// The offset of the first byte that does not belong to a well-formed UTF-8
// sequence (RFC 3629: no overlongs, no surrogates, at most U+10FFFF), or
// npos. Twenty lines here rather than a dependency for one check.
size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80           ? 1
               : (c >> 5) == 0x6  ? 2
               : (c >> 4) == 0xe  ? 3
               : (c >> 3) == 0x1e ? 4
                                  : 0;
    if (n == 0 || (n == 2 && c < 0xc2) || i + n > s.size())
      return i;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2)
        return i;
    auto c1 = static_cast<unsigned char>(n > 1 ? s[i + 1] : 0);
    if ((n == 3 && c == 0xe0 && c1 < 0xa0) || (n == 3 && c == 0xed && c1 > 0x9f) ||
        (n == 4 && c == 0xf0 && c1 < 0x90) ||
        (n == 4 && (c > 0xf4 || (c == 0xf4 && c1 > 0x8f))))
      return i;
    i += n;
  }
  return std::string_view::npos;
}

// `field 'bad\xff'`: printable ASCII as it is, every other byte escaped.
std::string quoted(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "'";
  for (auto ch : s.substr(0, 200)) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += ch;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    }
  }
  return out + (s.size() > 200 ? "...'" : "'");
}

} // namespace

caf::error detail::check_field(const char* field, const std::string& value) {
  if (is_ascii(value)) // most strings: eight bytes at a time
    return caf::none;
  auto at = invalid_utf8_at(value);
  if (at == std::string_view::npos)
    return caf::none;
  return make_error(error_code::invalid_argument,
                    std::string("summary ") + field + " " + quoted(value) +
                        " is not valid UTF-8 (byte " + std::to_string(at) +
                        "): event files need UTF-8 there, and readers would stop at "
                        "the event");
}

caf::error check_strings(const summary_event& ev) {
  struct check {
    caf::error operator()(const summary_event::summary& x) {
      for (auto& v : x.values) {
        for (auto [field, value] :
             {std::pair{"tag", &v.tag}, std::pair{"plugin name", &v.plugin_name},
              std::pair{"display name", &v.display_name},
              std::pair{"description", &v.description}})
          if (auto err = detail::check_field(field, *value))
            return err;
      }
      return caf::none;
    }
    caf::error operator()(const summary_event::file_version& x) {
      return detail::check_field("file version", x.version);
    }
    caf::error operator()(const summary_event::log_message& x) {
      return detail::check_field("log message", x.message);
    }
    caf::error operator()(const summary_event::session_log& x) {
      if (auto err = detail::check_field("checkpoint path", x.checkpoint_path))
        return err;
      return detail::check_field("session log message", x.msg);
    }
    caf::error operator()(const summary_event::tagged_run_metadata& x) {
      return detail::check_field("run metadata tag", x.tag);
    }
    // Bytes fields: graph_def, meta_graph_def, run_metadata.
    caf::error operator()(const summary_event::none&) { return caf::none; }
    caf::error operator()(const summary_event::graph_def&) { return caf::none; }
    caf::error operator()(const summary_event::meta_graph_def&) { return caf::none; }
  };
  return caf::visit(check{}, ev.what);
}

// -- size bound -------------------------------------------------------------------

namespace {

// Tag and length take at most 11 bytes per field; 16 covers both, rounded up.
constexpr size_t field_overhead = 16;

size_t bound_of(const std::string& s) {
  return s.size() + field_overhead;
}

} // namespace

size_t encoded_size_bound(const scalar_event& ev) {
  return bound_of(ev.tag) + 64;
}

size_t encoded_size_bound(const summary_event& ev) {
  // The bytes of the member's string fields, and bounds of its values.
  struct bound {
    size_t operator()(const summary_event::none&) { return 0; }
    size_t operator()(const summary_event::file_version& x) { return x.version.size(); }
    size_t operator()(const summary_event::graph_def& x) { return x.bytes.size(); }
    size_t operator()(const summary_event::summary& x) {
      size_t n = 0;
      for (auto& v : x.values) {
        n += 64 + bound_of(v.tag) + bound_of(v.plugin_name) + bound_of(v.plugin_content) +
             bound_of(v.display_name) + bound_of(v.description);
        if (auto img = caf::get_if<image_data>(&v.value))
          n += bound_of(img->encoded);
        if (auto h = caf::get_if<histogram_data>(&v.value))
          n += (h->bucket_limit.size() + h->bucket.size()) * 9 + 64;
        if (auto t = caf::get_if<text_tensor>(&v.value)) {
          for (auto& s : t->strings)
            n += bound_of(s);
          n += t->shape.size() * 12;
        }
      }
      return n;
    }
    size_t operator()(const summary_event::log_message& x) { return x.message.size(); }
    size_t operator()(const summary_event::session_log& x) {
      return x.msg.size() + x.checkpoint_path.size();
    }
    size_t operator()(const summary_event::tagged_run_metadata& x) {
      return x.tag.size() + x.run_metadata.size();
    }
    size_t operator()(const summary_event::meta_graph_def& x) { return x.bytes.size(); }
  };
  // The wall time, the step, the member's framing, and the tags and lengths
  // of its string fields (two at most) with their bytes.
  return 64 + 2 * field_overhead + caf::visit(bound{}, ev.what);
}

} // namespace quern
