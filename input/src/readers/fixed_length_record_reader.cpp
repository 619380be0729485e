// FixedLengthRecordReader: records of a fixed size between a header and a
// footer, hop_bytes apart (RD-5), in a plain file or in the decompressed bytes
// of a GZIP or ZLIB one (RD-8).

#include "quern/input/readers.hpp"

#include <algorithm>

#include "inflating_file.hpp"
#include "quern/error.hpp"
#include "reader_files.hpp"

namespace quern {

using namespace detail;

namespace {

/// Over a buffered_file or an inflating_file (made of `args`), which read,
/// skip and seek alike.
template <class File>
class fixed_length_source : public record_source {
public:
  /// From the start of the file, or at `at` when given (RD-9).
  template <class... Args>
  fixed_length_source(const fixed_length_options& o, const work_position* at,
                      Args&&... args)
      : file_(std::forward<Args>(args)...),
        header_(static_cast<uint64_t>(o.header_bytes)),
        record_(static_cast<uint64_t>(o.record_bytes)),
        window_size_(static_cast<uint64_t>(o.record_bytes + o.footer_bytes)),
        hop_(static_cast<uint64_t>(o.hop_bytes == 0 ? o.record_bytes : o.hop_bytes)),
        next_start_(header_) {
    if (at) {
      position_at(*at);
      return;
    }
    pos_ = file_.skip(header_);
    if (pos_ < header_)
      done_ = true;
    resume_ = pos_;
  }

  std::optional<uint64_t> offset() const override { return resume_; }

  bool next(record& out) override {
    if (done_)
      return false;
    // The window holds record + footer bytes, up to pos_. Move it to the
    // next record's start, keeping the bytes the windows share (TF's
    // lookahead cache), or skipping the gap when they share none.
    auto window_start = pos_ - window_.size();
    if (next_start_ <= pos_) {
      window_.erase(0, static_cast<size_t>(next_start_ - window_start));
    } else {
      window_.clear();
      auto gap = next_start_ - pos_;
      auto skipped = file_.skip(gap);
      pos_ += skipped;
      if (skipped < gap)
        return finish();
    }
    auto missing = window_size_ - window_.size();
    auto got = file_.read(static_cast<size_t>(missing), window_);
    pos_ += got;
    if (got < missing)
      return finish(); // a trailing partial record is dropped
    out.value.assign(window_, 0, static_cast<size_t>(record_));
    set_key(out.key, file_.name(), static_cast<uint64_t>(number_));
    ++number_;
    next_start_ += hop_;
    resume_ = std::min(next_start_, pos_);
    return true;
  }

private:
  /// Record `at.records` is next, and the file is read from `at.offset`:
  /// where that record starts or, when records are further apart than a
  /// window, where the last window ended (never after the record's start).
  void position_at(const work_position& at) {
    auto k = static_cast<uint64_t>(at.records);
    uint64_t start = 0;
    if (__builtin_mul_overflow(k, hop_, &start) ||
        __builtin_add_overflow(start, header_, &start) || at.offset > start)
      throw data_loss_error(file_.name() + "; no record " + std::to_string(k) +
                            " starts at or after offset " + std::to_string(at.offset));
    file_.seek(at.offset);
    pos_ = resume_ = at.offset;
    number_ = at.records;
    next_start_ = start;
  }

  bool finish() {
    done_ = true;
    window_.clear();
    return false;
  }

  File file_;
  uint64_t header_;
  uint64_t record_;
  uint64_t window_size_;
  uint64_t hop_;
  uint64_t next_start_; // where record number_ starts
  uint64_t pos_ = 0;    // bytes of the file read or skipped; the window ends here
  uint64_t resume_ = 0; // where a resumed reader reads from (offset())
  std::string window_;
  int64_t number_ = 0;
  bool done_ = false;
};

fixed_length_options checked_fixed_length(int64_t record_bytes, int64_t header_bytes,
                                          int64_t footer_bytes, int64_t hop_bytes,
                                          const std::string& encoding) {
  fixed_length_options o;
  o.header_bytes = checked("header_bytes", header_bytes);
  o.record_bytes = checked("record_bytes", record_bytes);
  o.footer_bytes = checked("footer_bytes", footer_bytes);
  o.hop_bytes = checked("hop_bytes", hop_bytes);
  parse_compression("encoding", encoding);
  o.encoding = encoding;
  return o;
}

/// The source of `file`; at `at` when given (RD-9).
std::unique_ptr<record_source> open_fixed_length(const std::string& file,
                                                 const fixed_length_options& opts,
                                                 const work_position* at) {
  check_non_negative("header_bytes", opts.header_bytes);
  check_non_negative("record_bytes", opts.record_bytes);
  check_non_negative("footer_bytes", opts.footer_bytes);
  check_non_negative("hop_bytes", opts.hop_bytes);
  auto kind = parse_compression("encoding", opts.encoding);
  if (kind == compression::none)
    return std::make_unique<fixed_length_source<buffered_file>>(opts, at, file);
  // TF's FixedLengthRecordReader decompresses with 256 KiB buffers.
  constexpr size_t buffer = 256 << 10;
  return std::make_unique<fixed_length_source<inflating_file>>(opts, at, file, kind,
                                                               buffer, buffer);
}

std::string fixed_length_fingerprint(const fixed_length_options& o) {
  return "record_bytes=" + std::to_string(o.record_bytes) +
         ", header_bytes=" + std::to_string(o.header_bytes) +
         ", footer_bytes=" + std::to_string(o.footer_bytes) +
         ", hop_bytes=" + std::to_string(o.hop_bytes) + ", encoding=\"" + o.encoding +
         "\"";
}

} // namespace

std::unique_ptr<record_source>
open_fixed_length_source(const std::string& file, const fixed_length_options& opts) {
  return open_fixed_length(file, opts, nullptr);
}

fixed_length_record_reader::fixed_length_record_reader(int64_t record_bytes,
                                                       int64_t header_bytes,
                                                       int64_t footer_bytes,
                                                       int64_t hop_bytes,
                                                       const std::string& encoding)
    : reader(
          "FixedLengthRecordReader",
          fixed_length_fingerprint(checked_fixed_length(
              record_bytes, header_bytes, footer_bytes, hop_bytes, encoding)),
          [o = checked_fixed_length(record_bytes, header_bytes, footer_bytes, hop_bytes,
                                    encoding)](const std::string& file) {
            return open_fixed_length(file, o, nullptr);
          },
          [o = checked_fixed_length(record_bytes, header_bytes, footer_bytes, hop_bytes,
                                    encoding)](const work_position& at) {
            return open_fixed_length(at.work, o, &at);
          }) {}

} // namespace quern
