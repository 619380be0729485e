#pragma once

// Summary values as TensorFlow's summary ops produce them (docs/semantics.md
// SW-40..SW-43): scalar, histogram with TensorFlow's default buckets, text
// (the text plugin's metadata) and already-encoded images; and the hparams
// plugin's summaries (SW-45).

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <caf/expected.hpp>

#include "quern/summary.hpp"

namespace quern {

/// Seconds since the epoch, as Event.wall_time carries it (SW-6).
double wall_time_now();

/// A scalar event stamped now, ready for add_scalars (SW-6, SW-40).
scalar_event make_scalar_event(std::string tag, double value, int64_t step = 0);

/// Event{wall_time = now, step, summary{values}}, ready for add_events.
summary_event make_summary_event(std::vector<summary_value> values, int64_t step = 0);

/// SessionLog.status (SW-31).
enum class session_status : int32_t {
  status_unspecified = 0,
  start = 1,
  stop = 2,
  checkpoint = 3,
};

/// Event{wall_time, step, session_log{status, checkpoint_path, msg}}, as
/// FileWriter.add_session_log writes it (SW-7).
summary_event session_log_event(session_status status, std::string checkpoint_path,
                                std::string msg, int64_t step, double wall_time);

/// Value{tag, simple_value}; the value is converted to float32 (SW-40).
summary_value scalar_value(std::string tag, double value);

/// TensorFlow's default histogram bucket limits (SW-41): -DBL_MAX, the
/// negated positive limits in increasing order, 0, the positive limits
/// 1e-12, 1.1e-12, ... (< 1e20), DBL_MAX: 1551 limits.
const std::vector<double>& default_bucket_limits();

/// A histogram of `values` over the default buckets, encoded as TensorFlow
/// encodes it (runs of empty buckets collapsed, SW-41). No checks.
histogram_data make_histogram(const std::vector<double>& values);

/// Value{tag, histo}. Throws invalid_argument_error
/// `Nan in summary histogram for: <tag>` / `Infinity in summary histogram for: <tag>`.
summary_value histogram_value(std::string tag, const std::vector<double>& values);

/// Value{tag, metadata{plugin_data{"text", "{}"}}, tensor{DT_STRING, shape, string_val}}
/// (SW-42); a single string is a scalar tensor (empty shape).
summary_value text_value(std::string tag, std::string text);
/// Throws invalid_argument_error when the shape's element count is not
/// strings.size().
summary_value text_value(std::string tag, std::vector<std::string> strings,
                         std::vector<int64_t> shape);

/// Value{tag, image{height, width, colorspace, encoded_image_string}} for
/// already-encoded image bytes (SW-32).
summary_value image_value(std::string tag, std::string encoded, int32_t height,
                          int32_t width, int32_t colorspace);

/// The same for PNG bytes: height, width and colorspace come from the PNG
/// header. Throws invalid_argument_error when `png` is not a PNG.
summary_value png_image_value(std::string tag, std::string png);

// -- hparams (TensorBoard's hparams plugin, SW-45) --------------------------------

/// One hyper-parameter's value: a string, a number (any integer or floating
/// type, held as a double) or a bool, as google.protobuf.Value holds it.
class hparam_value {
public:
  enum class type : uint8_t { string, number, boolean };
  hparam_value(const char* s) : type_(type::string), string_(s ? s : "") {}
  hparam_value(std::string s) : type_(type::string), string_(std::move(s)) {}
  hparam_value(bool b) : type_(type::boolean), bool_(b) {}
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>,
                                      int> = 0>
  hparam_value(T x) : type_(type::number), number_(static_cast<double>(x)) {}

  type kind() const { return type_; }
  const std::string& string() const { return string_; }
  double number() const { return number_; }
  bool boolean() const { return bool_; }

  friend bool operator==(const hparam_value& a, const hparam_value& b) {
    return a.type_ == b.type_ && a.string_ == b.string_ && a.number_ == b.number_ &&
           a.bool_ == b.bool_;
  }
  friend bool operator!=(const hparam_value& a, const hparam_value& b) {
    return !(a == b);
  }

private:
  type type_;
  std::string string_;
  double number_ = 0;
  bool bool_ = false;
};

/// Hyper-parameters by name, in the order given: `{{"batch_size", 32},
/// {"optimizer", "adam"}, {"learning_rate", 0.01}, {"shuffle", true}}`.
using hparam_list = std::vector<std::pair<std::string, hparam_value>>;

/// The hparams plugin's name and its three tags (SW-45).
constexpr const char* hparams_plugin_name = "hparams";
constexpr const char* hparams_experiment_tag = "_hparams_/experiment";
constexpr const char* hparams_session_start_tag = "_hparams_/session_start_info";
constexpr const char* hparams_session_end_tag = "_hparams_/session_end_info";

/// SessionEndInfo.status (the hparams plugin's Status).
enum class hparams_status : int32_t {
  unknown = 0,
  success = 1,
  failure = 2,
  running = 3,
};

/// A run's hparams as TensorBoard's `hp.hparams(...)` writes them (SW-45):
/// Value{tag "_hparams_/session_start_info", metadata{plugin_data{"hparams",
/// HParamsPluginData{version 0, session_start_info{hparams, start_time_secs}}}},
/// an empty tensor}, preceded, when `metrics` is not empty, by
/// Value{"_hparams_/experiment", ... experiment{hparam_infos (name, type),
/// metric_infos (tag), time_created_secs}} naming the scalar tags to compare
/// runs by. Throws invalid_argument_error naming the problem: an empty or
/// repeated name or metric, a name, metric or string value that is not UTF-8,
/// a number that is not finite.
std::vector<summary_value> hparams_values(const hparam_list& hparams,
                                          const std::vector<std::string>& metrics,
                                          double start_time);

/// Value{tag "_hparams_/session_end_info", ... session_end_info{status,
/// end_time_secs}} (SW-45).
summary_value hparams_end_value(hparams_status status, double end_time);

/// What one hparams summary says, read back from its plugin content.
struct hparams_data {
  enum class kind : uint8_t { experiment, session_start, session_end };
  kind what = kind::session_start;
  /// session_start: names and values; experiment: names with default values
  /// of their types (string, number, boolean).
  hparam_list hparams;
  /// experiment: the metrics' tags.
  std::vector<std::string> metrics;
  /// start_time_secs, time_created_secs or end_time_secs.
  double time = 0;
  hparams_status status = hparams_status::unknown;
};

/// Parses SummaryMetadata.plugin_data.content of plugin "hparams" as
/// TensorBoard's hparams plugin does: data_loss error when it does not parse,
/// is not version 0 or has no data; a session start's hparams come sorted by
/// name.
caf::expected<hparams_data> decode_hparams(std::string_view content);

} // namespace quern
