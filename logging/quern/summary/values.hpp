#pragma once

// Summary values as TensorFlow's summary ops produce them (docs/semantics.md
// SW-40..SW-43): scalar, histogram with TensorFlow's default buckets, text
// (the text plugin's metadata) and already-encoded images.

#include <cstdint>
#include <string>
#include <vector>

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

} // namespace quern
