#include "quern/summary/values.hpp"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>

#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "hparams.pb.h"
#include "quern/error.hpp"
#include "quern/summary/event.hpp"

namespace quern {

double wall_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

scalar_event make_scalar_event(std::string tag, double value, int64_t step) {
  scalar_event ev;
  ev.wall_time = wall_time_now();
  ev.step = step;
  ev.tag = std::move(tag);
  ev.value = static_cast<float>(value);
  return ev;
}

summary_event make_summary_event(std::vector<summary_value> values, int64_t step) {
  summary_event ev;
  ev.wall_time = wall_time_now();
  ev.step = step;
  ev.what = summary_event::summary{std::move(values)};
  return ev;
}

summary_event session_log_event(session_status status, std::string checkpoint_path,
                                std::string msg, int64_t step, double wall_time) {
  summary_event ev;
  ev.wall_time = wall_time;
  ev.step = step;
  ev.what = summary_event::session_log{static_cast<int32_t>(status), std::move(msg),
                                       std::move(checkpoint_path)};
  return ev;
}

summary_value scalar_value(std::string tag, double value) {
  summary_value v;
  v.tag = std::move(tag);
  v.value = static_cast<float>(value);
  return v;
}

const std::vector<double>& default_bucket_limits() {
  // tensorflow/core/lib/histogram/histogram.cc, InitDefaultBucketsInner.
  static const std::vector<double> limits = [] {
    std::vector<double> pos;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1)
      pos.push_back(v);
    std::vector<double> result;
    result.reserve(2 * pos.size() + 3);
    result.push_back(-DBL_MAX);
    for (auto i = pos.rbegin(); i != pos.rend(); ++i)
      result.push_back(-*i);
    result.push_back(0.0);
    result.insert(result.end(), pos.begin(), pos.end());
    result.push_back(DBL_MAX);
    return result;
  }();
  return limits;
}

histogram_data make_histogram(const std::vector<double>& values) {
  const auto& limits = default_bucket_limits();
  std::vector<double> counts(limits.size(), 0.0);
  histogram_data h;
  h.min = DBL_MAX;
  h.max = -DBL_MAX;
  for (auto x : values) {
    auto b = static_cast<size_t>(std::upper_bound(limits.begin(), limits.end(), x) -
                                 limits.begin());
    if (b == limits.size()) // x == DBL_MAX: TensorFlow would index past the end
      --b;
    counts[b] += 1.0;
    h.min = std::min(h.min, x);
    h.max = std::max(h.max, x);
    h.num += 1.0;
    h.sum += x;
    h.sum_squares += x * x;
  }
  // Histogram::EncodeToProto(preserve_zero_buckets = false): each run of
  // empty buckets becomes one entry with the run's last limit.
  for (size_t i = 0; i < counts.size();) {
    double end = limits[i];
    double count = counts[i];
    ++i;
    if (count <= 0.0) {
      while (i < counts.size() && counts[i] <= 0.0) {
        end = limits[i];
        count = counts[i];
        ++i;
      }
    }
    h.bucket_limit.push_back(end);
    h.bucket.push_back(count);
  }
  if (h.bucket.empty()) {
    h.bucket_limit.push_back(DBL_MAX);
    h.bucket.push_back(0.0);
  }
  return h;
}

summary_value histogram_value(std::string tag, const std::vector<double>& values) {
  for (auto x : values) {
    if (std::isnan(x))
      throw invalid_argument_error("Nan in summary histogram for: " + tag);
    if (std::isinf(x))
      throw invalid_argument_error("Infinity in summary histogram for: " + tag);
  }
  summary_value v;
  v.tag = std::move(tag);
  v.value = make_histogram(values);
  return v;
}

summary_value text_value(std::string tag, std::string text) {
  return text_value(std::move(tag), std::vector<std::string>{std::move(text)}, {});
}

summary_value text_value(std::string tag, std::vector<std::string> strings,
                         std::vector<int64_t> shape) {
  int64_t n = 1;
  for (auto d : shape) {
    if (d < 0)
      throw invalid_argument_error("text summary '" + tag + "': negative dimension " +
                                   std::to_string(d));
    n *= d;
  }
  if (n != static_cast<int64_t>(strings.size()))
    throw invalid_argument_error("text summary '" + tag + "': shape holds " +
                                 std::to_string(n) + " strings, got " +
                                 std::to_string(strings.size()));
  summary_value v;
  v.tag = std::move(tag);
  v.value = text_tensor{std::move(strings), std::move(shape)};
  v.plugin_name = "text";
  v.plugin_content = "{}";
  return v;
}

summary_value image_value(std::string tag, std::string encoded, int32_t height,
                          int32_t width, int32_t colorspace) {
  summary_value v;
  v.tag = std::move(tag);
  v.value = image_data{height, width, colorspace, std::move(encoded)};
  return v;
}

summary_value png_image_value(std::string tag, std::string png) {
  // Signature (8 bytes), then the IHDR chunk: length (4), "IHDR", width and
  // height (big-endian), bit depth, colour type.
  static constexpr unsigned char sig[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (png.size() < 26 ||
      !std::equal(
          std::begin(sig), std::end(sig), png.begin(),
          [](unsigned char a, char b) { return a == static_cast<unsigned char>(b); }) ||
      png.compare(12, 4, "IHDR") != 0)
    throw invalid_argument_error("image summary '" + tag + "': not a PNG image");
  auto be32 = [&](size_t i) {
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k)
      v = (v << 8) | static_cast<unsigned char>(png[i + k]);
    return static_cast<int32_t>(v);
  };
  int32_t width = be32(16);
  int32_t height = be32(20);
  int32_t colorspace = 0;
  switch (static_cast<unsigned char>(png[25])) {
  case 0: // grayscale
    colorspace = 1;
    break;
  case 4: // grayscale + alpha
    colorspace = 2;
    break;
  case 2: // RGB
  case 3: // palette, decoded to RGB
    colorspace = 3;
    break;
  case 6: // RGBA
    colorspace = 4;
    break;
  default:
    throw invalid_argument_error("image summary '" + tag + "': unknown PNG colour type");
  }
  return image_value(std::move(tag), std::move(png), height, width, colorspace);
}

// -- hparams ----------------------------------------------------------------------

namespace {

namespace hp = pb::hparams;

void check_utf8(const char* field, const std::string& value) {
  if (auto err = detail::check_field(field, value))
    throw_error(err);
}

/// Map entries sorted by key: the same hparams give the same bytes.
std::string serialize(const hp::HParamsPluginData& data) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    data.SerializeToCodedStream(&coded);
  }
  return out;
}

summary_value hparams_summary(const char* tag, const hp::HParamsPluginData& data) {
  summary_value v;
  v.tag = tag;
  v.plugin_name = hparams_plugin_name;
  v.plugin_content = serialize(data);
  // TensorBoard writes an empty DT_FLOAT tensor here; the plugin reads only
  // the metadata, and quern's tensors are DT_STRING: an empty one (shape [0]).
  v.value = text_tensor{{}, {0}};
  return v;
}

hp::DataType data_type(const hparam_value& x) {
  switch (x.kind()) {
  case hparam_value::type::string:
    return hp::DATA_TYPE_STRING;
  case hparam_value::type::number:
    return hp::DATA_TYPE_FLOAT64;
  case hparam_value::type::boolean:
    return hp::DATA_TYPE_BOOL;
  }
  return hp::DATA_TYPE_UNSET;
}

} // namespace

std::vector<summary_value> hparams_values(const hparam_list& hparams,
                                          const std::vector<std::string>& metrics,
                                          double start_time) {
  std::set<std::string> names;
  hp::HParamsPluginData start;
  start.set_version(0);
  auto* info = start.mutable_session_start_info();
  info->set_start_time_secs(start_time);
  for (auto& [name, value] : hparams) {
    if (name.empty())
      throw invalid_argument_error("hparams: an hparam has an empty name");
    check_utf8("hparam name", name);
    if (!names.insert(name).second)
      throw invalid_argument_error("hparams: hparam '" + name + "' is given twice");
    auto& out = (*info->mutable_hparams())[name];
    switch (value.kind()) {
    case hparam_value::type::string:
      check_utf8("hparam value", value.string());
      out.set_string_value(value.string());
      break;
    case hparam_value::type::number:
      if (!std::isfinite(value.number()))
        throw invalid_argument_error(
            "hparams: hparam '" + name + "' is " +
            (std::isnan(value.number()) ? "NaN" : "infinite") +
            ": TensorBoard's hparams plugin cannot show a number that is not finite");
      out.set_number_value(value.number());
      break;
    case hparam_value::type::boolean:
      out.set_bool_value(value.boolean());
      break;
    }
  }
  std::vector<summary_value> result;
  if (!metrics.empty()) {
    std::set<std::string> tags;
    hp::HParamsPluginData exp;
    exp.set_version(0);
    auto* e = exp.mutable_experiment();
    e->set_time_created_secs(start_time);
    for (auto& [name, value] : hparams) {
      auto* h = e->add_hparam_infos();
      h->set_name(name);
      h->set_type(data_type(value));
    }
    for (auto& tag : metrics) {
      if (tag.empty())
        throw invalid_argument_error("hparams: a metric has an empty tag");
      check_utf8("metric tag", tag);
      if (!tags.insert(tag).second)
        throw invalid_argument_error("hparams: metric '" + tag + "' is given twice");
      e->add_metric_infos()->mutable_name()->set_tag(tag);
    }
    result.push_back(hparams_summary(hparams_experiment_tag, exp));
  }
  result.push_back(hparams_summary(hparams_session_start_tag, start));
  return result;
}

summary_value hparams_end_value(hparams_status status, double end_time) {
  hp::HParamsPluginData end;
  end.set_version(0);
  auto* info = end.mutable_session_end_info();
  info->set_status(static_cast<hp::Status>(status));
  info->set_end_time_secs(end_time);
  return hparams_summary(hparams_session_end_tag, end);
}

caf::expected<hparams_data> decode_hparams(std::string_view content) {
  hp::HParamsPluginData data;
  if (!data.ParseFromArray(content.data(), static_cast<int>(content.size())))
    return make_error(error_code::data_loss, "cannot parse the hparams plugin's data");
  if (data.version() != 0)
    return make_error(error_code::data_loss, "hparams plugin data of version " +
                                                 std::to_string(data.version()) +
                                                 " (only version 0 is known)");
  hparams_data x;
  auto value_of = [](const hp::Value& v) -> hparam_value {
    switch (v.kind_case()) {
    case hp::Value::kNumberValue:
      return v.number_value();
    case hp::Value::kBoolValue:
      return v.bool_value();
    case hp::Value::kStringValue:
      return v.string_value();
    default: // null, struct and list values: shown as an empty string
      return std::string{};
    }
  };
  switch (data.data_case()) {
  case hp::HParamsPluginData::kExperiment: {
    x.what = hparams_data::kind::experiment;
    auto& e = data.experiment();
    x.time = e.time_created_secs();
    for (auto& h : e.hparam_infos()) {
      hparam_value v = h.type() == hp::DATA_TYPE_FLOAT64 ? hparam_value{0.0}
                       : h.type() == hp::DATA_TYPE_BOOL  ? hparam_value{false}
                                                         : hparam_value{std::string{}};
      x.hparams.emplace_back(h.name(), std::move(v));
    }
    for (auto& m : e.metric_infos())
      x.metrics.push_back(m.name().group().empty()
                              ? m.name().tag()
                              : m.name().group() + "/" + m.name().tag());
    break;
  }
  case hp::HParamsPluginData::kSessionStartInfo: {
    x.what = hparams_data::kind::session_start;
    auto& s = data.session_start_info();
    x.time = s.start_time_secs();
    for (auto& [name, v] : s.hparams())
      x.hparams.emplace_back(name, value_of(v));
    std::sort(x.hparams.begin(), x.hparams.end(),
              [](auto& a, auto& b) { return a.first < b.first; });
    break;
  }
  case hp::HParamsPluginData::kSessionEndInfo:
    x.what = hparams_data::kind::session_end;
    x.time = data.session_end_info().end_time_secs();
    x.status = static_cast<hparams_status>(data.session_end_info().status());
    break;
  case hp::HParamsPluginData::DATA_NOT_SET:
    return make_error(error_code::data_loss, "hparams plugin data without data");
  }
  return x;
}

} // namespace quern
