#pragma once

// Events in TensorBoard's protobuf encoding (docs/semantics.md SW-30..SW-35). The
// encoding is libprotobuf's, behind this header: the generated protobuf
// classes stay private to logging/.

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

#include "quern/summary.hpp"

namespace quern {

/// The file_version of every event file's first record (SW-12).
constexpr const char* event_file_version = "brain.Event:2";

/// Event{wall_time, file_version = "brain.Event:2"}.
summary_event file_version_event(double wall_time);

/// The Event payload bytes of `ev` (proto3 presence rules, SW-35).
std::string encode_event(const summary_event& ev);

/// The first string field of `ev` that protobuf declares `string` (tags,
/// names, messages, paths) and that is not valid UTF-8, as an
/// invalid_argument error naming the field and the byte; none if all are
/// valid. libprotobuf refuses to parse an Event with such a field, and every
/// reader then stops at it, hiding every later event of the file: the writer
/// refuses such events instead of writing them.
caf::error check_strings(const summary_event& ev);

/// True when `s` is plain ASCII (then valid UTF-8): the quick test that the
/// scalar path runs for every event, inline, before the full check. Eight
/// bytes at a time.
inline bool is_ascii(std::string_view s) noexcept {
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, s.data() + i, 8);
    if ((word & 0x8080808080808080u) != 0)
      return false;
  }
  for (; i < s.size(); ++i)
    if (static_cast<unsigned char>(s[i]) >= 0x80)
      return false;
  return true;
}

namespace detail {
/// check_strings for one field: the UTF-8 check and its error.
caf::error check_field(const char* field, const std::string& value);
} // namespace detail

/// check_strings for a tag alone. Inline, so that the writer and the handle
/// pay a call and an error only for a tag that is not ASCII (the check runs
/// once per scalar on both sides: out of line it was a fifth of the writer's
/// time).
inline caf::error check_tag(const std::string& tag) {
  return is_ascii(tag) ? caf::error{} : detail::check_field("tag", tag);
}

/// check_strings for a scalar: its tag.
inline caf::error check_strings(const scalar_event& ev) {
  return check_tag(ev.tag);
}

/// An upper bound of the bytes `ev` encodes to (a few bytes of framing per
/// field over the payloads), without encoding it.
size_t encoded_size_bound(const summary_event& ev);
size_t encoded_size_bound(const scalar_event& ev);

/// The Event payload bytes of one scalar event.
std::string encode_event(const scalar_event& ev);

/// Parses an Event payload. Fields quern does not model (graph bytes are
/// kept as bytes) are dropped; a payload that is not an Event gives
/// data_loss `cannot parse Event`.
caf::expected<summary_event> decode_event(std::string_view payload);

/// Appends framed event records to a buffer, reusing one protobuf Event (and
/// its memory) from call to call: the fast path of the summary writer and of
/// its benchmark baseline. Not thread-safe; one per writer.
class event_encoder {
public:
  event_encoder();
  ~event_encoder();
  event_encoder(const event_encoder&) = delete;
  event_encoder& operator=(const event_encoder&) = delete;

  /// Appends the record of Event{wall_time, step, summary{value{tag, simple_value}}}.
  void append_scalar(std::string& out, double wall_time, int64_t step,
                     std::string_view tag, float value);
  void append_scalar(std::string& out, const scalar_event& ev) {
    append_scalar(out, ev.wall_time, ev.step, ev.tag, ev.value);
  }

  /// Appends the record of any event.
  void append_event(std::string& out, const summary_event& ev);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace quern
