// FixedLengthRecordReader: records of a fixed size between a header and a
// footer, hop_bytes apart (RD-5), in a plain file or in the decompressed bytes
// of a GZIP or ZLIB one (RD-8).

#include "quern/input/readers.hpp"

#include "inflating_file.hpp"
#include "reader_files.hpp"

namespace quern {

using namespace detail;

namespace {

/// Over a buffered_file or an inflating_file (made of `args`), which read and
/// skip alike.
template <class File>
class fixed_length_source : public record_source {
public:
  template <class... Args>
  fixed_length_source(const fixed_length_options& o, Args&&... args)
      : file_(std::forward<Args>(args)...),
        record_(static_cast<uint64_t>(o.record_bytes)),
        window_size_(static_cast<uint64_t>(o.record_bytes + o.footer_bytes)),
        hop_(static_cast<uint64_t>(o.hop_bytes == 0 ? o.record_bytes : o.hop_bytes)) {
    if (file_.skip(static_cast<uint64_t>(o.header_bytes)) <
        static_cast<uint64_t>(o.header_bytes))
      done_ = true;
  }

  bool next(record& out) override {
    if (done_)
      return false;
    // The window holds record + footer bytes from the current record's start.
    // Hop to the next start (except before the first record), keeping the
    // bytes the windows share (TF's lookahead cache).
    if (number_ != 0) {
      if (hop_ <= window_.size()) {
        window_.erase(0, static_cast<size_t>(hop_));
      } else {
        auto gap = hop_ - window_.size();
        window_.clear();
        if (file_.skip(gap) < gap)
          return finish();
      }
    }
    auto missing = window_size_ - window_.size();
    if (file_.read(static_cast<size_t>(missing), window_) < missing)
      return finish(); // a trailing partial record is dropped
    out.value.assign(window_, 0, static_cast<size_t>(record_));
    set_key(out.key, file_.name(), static_cast<uint64_t>(number_));
    ++number_;
    return true;
  }

private:
  bool finish() {
    done_ = true;
    window_.clear();
    return false;
  }

  File file_;
  uint64_t record_;
  uint64_t window_size_;
  uint64_t hop_;
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

} // namespace

std::unique_ptr<record_source>
open_fixed_length_source(const std::string& file, const fixed_length_options& opts) {
  check_non_negative("header_bytes", opts.header_bytes);
  check_non_negative("record_bytes", opts.record_bytes);
  check_non_negative("footer_bytes", opts.footer_bytes);
  check_non_negative("hop_bytes", opts.hop_bytes);
  auto kind = parse_compression("encoding", opts.encoding);
  if (kind == compression::none)
    return std::make_unique<fixed_length_source<buffered_file>>(opts, file);
  // TF's FixedLengthRecordReader decompresses with 256 KiB buffers.
  constexpr size_t buffer = 256 << 10;
  return std::make_unique<fixed_length_source<inflating_file>>(opts, file, kind, buffer,
                                                               buffer);
}

fixed_length_record_reader::fixed_length_record_reader(int64_t record_bytes,
                                                       int64_t header_bytes,
                                                       int64_t footer_bytes,
                                                       int64_t hop_bytes,
                                                       const std::string& encoding)
    : reader([o = checked_fixed_length(record_bytes, header_bytes, footer_bytes,
                                       hop_bytes, encoding)](const std::string& file) {
        return open_fixed_length_source(file, o);
      }) {}

} // namespace quern
