#include "quern/summary/event.hpp"

#include "event.pb.h"
#include "quern/error.hpp"
#include "quern/summary/record.hpp"

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
  switch (x.kind) {
  case summary_kind::scalar:
    v.set_simple_value(x.simple_value);
    break;
  case summary_kind::histogram: {
    auto* h = v.mutable_histo();
    h->set_min(x.histo.min);
    h->set_max(x.histo.max);
    h->set_num(x.histo.num);
    h->set_sum(x.histo.sum);
    h->set_sum_squares(x.histo.sum_squares);
    h->mutable_bucket_limit()->Add(x.histo.bucket_limit.begin(),
                                   x.histo.bucket_limit.end());
    h->mutable_bucket()->Add(x.histo.bucket.begin(), x.histo.bucket.end());
    break;
  }
  case summary_kind::image: {
    auto* img = v.mutable_image();
    img->set_height(x.image.height);
    img->set_width(x.image.width);
    img->set_colorspace(x.image.colorspace);
    img->set_encoded_image_string(x.image.encoded);
    break;
  }
  case summary_kind::tensor: {
    auto* t = v.mutable_tensor();
    t->set_dtype(pb::DT_STRING);
    auto* shape = t->mutable_tensor_shape(); // present even for a scalar (SW-42)
    for (auto d : x.shape)
      shape->add_dim()->set_size(d);
    for (auto& s : x.strings)
      t->add_string_val(s);
    break;
  }
  }
}

void to_proto(const summary_event& x, pb::Event& ev) {
  ev.set_wall_time(x.wall_time);
  ev.set_step(x.step);
  switch (x.what) {
  case event_kind::none:
    break;
  case event_kind::file_version:
    ev.set_file_version(x.data);
    break;
  case event_kind::graph_def:
    ev.set_graph_def(x.data);
    break;
  case event_kind::summary: {
    auto* s = ev.mutable_summary();
    for (auto& v : x.values)
      to_proto(v, *s->add_value());
    break;
  }
  case event_kind::log_message: {
    auto* m = ev.mutable_log_message();
    m->set_level(static_cast<pb::LogMessage::Level>(x.code));
    m->set_message(x.data);
    break;
  }
  case event_kind::session_log: {
    auto* s = ev.mutable_session_log();
    s->set_status(static_cast<pb::SessionLog::SessionStatus>(x.code));
    s->set_checkpoint_path(x.data);
    s->set_msg(x.text);
    break;
  }
  case event_kind::tagged_run_metadata: {
    auto* t = ev.mutable_tagged_run_metadata();
    t->set_tag(x.text);
    t->set_run_metadata(x.data);
    break;
  }
  case event_kind::meta_graph_def:
    ev.set_meta_graph_def(x.data);
    break;
  }
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
    x.kind = summary_kind::scalar;
    x.simple_value = v.simple_value();
    break;
  case pb::Summary::Value::kHisto: {
    x.kind = summary_kind::histogram;
    auto& h = v.histo();
    x.histo.min = h.min();
    x.histo.max = h.max();
    x.histo.num = h.num();
    x.histo.sum = h.sum();
    x.histo.sum_squares = h.sum_squares();
    x.histo.bucket_limit.assign(h.bucket_limit().begin(), h.bucket_limit().end());
    x.histo.bucket.assign(h.bucket().begin(), h.bucket().end());
    break;
  }
  case pb::Summary::Value::kImage:
    x.kind = summary_kind::image;
    x.image.height = v.image().height();
    x.image.width = v.image().width();
    x.image.colorspace = v.image().colorspace();
    x.image.encoded = v.image().encoded_image_string();
    break;
  case pb::Summary::Value::kTensor:
    x.kind = summary_kind::tensor;
    for (auto& d : v.tensor().tensor_shape().dim())
      x.shape.push_back(d.size());
    x.strings.assign(v.tensor().string_val().begin(), v.tensor().string_val().end());
    break;
  default:
    // Audio and old-style histograms are not modelled: kept as a tensor
    // value without strings so that the tag still shows up.
    x.kind = summary_kind::tensor;
    break;
  }
  return x;
}

} // namespace

summary_event file_version_event(double wall_time) {
  summary_event ev;
  ev.wall_time = wall_time;
  ev.what = event_kind::file_version;
  ev.data = event_file_version;
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
    x.what = event_kind::file_version;
    x.data = ev.file_version();
    break;
  case pb::Event::kGraphDef:
    x.what = event_kind::graph_def;
    x.data = ev.graph_def();
    break;
  case pb::Event::kSummary:
    x.what = event_kind::summary;
    for (auto& v : ev.summary().value())
      x.values.push_back(from_proto(v));
    break;
  case pb::Event::kLogMessage:
    x.what = event_kind::log_message;
    x.code = ev.log_message().level();
    x.data = ev.log_message().message();
    break;
  case pb::Event::kSessionLog:
    x.what = event_kind::session_log;
    x.code = ev.session_log().status();
    x.data = ev.session_log().checkpoint_path();
    x.text = ev.session_log().msg();
    break;
  case pb::Event::kTaggedRunMetadata:
    x.what = event_kind::tagged_run_metadata;
    x.text = ev.tagged_run_metadata().tag();
    x.data = ev.tagged_run_metadata().run_metadata();
    break;
  case pb::Event::kMetaGraphDef:
    x.what = event_kind::meta_graph_def;
    x.data = ev.meta_graph_def();
    break;
  case pb::Event::WHAT_NOT_SET:
    x.what = event_kind::none;
    break;
  }
  return x;
}

struct event_encoder::impl {
  pb::Event scalar;          // Event{summary{value{...}}}, reused
  pb::Summary::Value* value; // its only value
  pb::Event any;             // reused for other events

  impl() : value(scalar.mutable_summary()->add_value()) {
    // nop
  }

  void frame(std::string& out, const pb::Event& ev) {
    auto size = ev.ByteSizeLong();
    auto start = out.size();
    out.resize(start + record_header_size + size + record_footer_size);
    auto* p = reinterpret_cast<uint8_t*>(out.data() + start);
    for (int i = 0; i < 8; ++i)
      p[i] = static_cast<uint8_t>((uint64_t{size} >> (8 * i)) & 0xFF);
    auto put32 = [](uint8_t* q, uint32_t v) {
      for (int i = 0; i < 4; ++i)
        q[i] = static_cast<uint8_t>((v >> (8 * i)) & 0xFF);
    };
    put32(p + 8, mask_crc(crc32c(p, 8)));
    auto* payload = p + record_header_size;
    ev.SerializeWithCachedSizesToArray(payload);
    put32(payload + size, mask_crc(crc32c(payload, size)));
  }
};

event_encoder::event_encoder() : impl_(std::make_unique<impl>()) {
  // nop
}

event_encoder::~event_encoder() = default;

void event_encoder::append_scalar(std::string& out, double wall_time, int64_t step,
                                  std::string_view tag, float value) {
  auto& d = *impl_;
  d.scalar.set_wall_time(wall_time);
  d.scalar.set_step(step);
  d.value->mutable_tag()->assign(tag.data(), tag.size());
  d.value->set_simple_value(value);
  d.frame(out, d.scalar);
}

void event_encoder::append_event(std::string& out, const summary_event& ev) {
  auto& d = *impl_;
  d.any.Clear();
  to_proto(ev, d.any);
  d.frame(out, d.any);
}

} // namespace quern
