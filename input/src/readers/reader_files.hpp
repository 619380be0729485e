#pragma once

// What the readers share (input/src/readers/): files read through a buffer,
// their errors as TensorFlow names them, record keys and argument checks.
// Private to input/.

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace quern {
class state_reader;
class state_writer;
struct work_position;
} // namespace quern

namespace quern::detail {

/// A work unit in progress as state bytes (reader::serialize_state and the
/// csv_sources' checkpoint part): its name, offset and records produced;
/// negative records are refused as data loss.
void write_work_position(state_writer& w, const work_position& at);
work_position read_work_position(state_reader& r);

/// Throws TF's I/O error for `file`: `<file>; <strerror(err)>`, with the code
/// of TF's errno mapping (ENOENT NOT_FOUND, EACCES PERMISSION_DENIED, ...).
[[noreturn]] void throw_io_error(int err, const std::string& file);

/// A record's key `<file>:<n>`, written with one allocation at most: the
/// reader's hottest string after the value itself.
void set_key(std::string& key, const std::string& file, uint64_t n);

/// Throws invalid_argument_error `<attr> must be >= 0 not <value>` if value < 0.
void check_non_negative(const char* attr, int64_t value);

/// check_non_negative, then the value.
int64_t checked(const char* attr, int64_t value);

/// What a reader's `encoding` or `compression_type` names.
enum class compression { none, zlib, gzip };

/// "" is none, "ZLIB" zlib, "GZIP" gzip; anything else throws
/// invalid_argument_error `Unsupported <what> "<value>": expected "", "ZLIB"
/// or "GZIP"` (`what` names the attribute; TF reads such files uncompressed).
compression parse_compression(const char* what, const std::string& value);

/// "ZLIB" or "GZIP" ("" for none), as errors name a file's compression.
const char* compression_name(compression c);

/// Checks a buffer size of tf_record_options (`what` names it): 1 B..1 GiB,
/// else invalid_argument_error `<what> must be in [1, 1073741824] not <n>`.
size_t checked_buffer_size(const char* what, int64_t value);

/// Opens `file` for reading or throws its I/O error. A directory is refused
/// with EISDIR (TF opens it and fails the first read the same way).
int open_or_throw(const std::string& file);

/// A read-only file with a buffer: lines, byte counts, skips, everything.
class buffered_file {
public:
  explicit buffered_file(std::string name)
      : name_(std::move(name)), fd_(open_or_throw(name_)), buf_(new char[buffer_size]) {}
  ~buffered_file() { ::close(fd_); }
  buffered_file(const buffered_file&) = delete;
  buffered_file& operator=(const buffered_file&) = delete;

  const std::string& name() const { return name_; }

  /// TF's InputBuffer::ReadLine: false at the end of the file when nothing
  /// (after stripping a final "\r") is left.
  bool read_line(std::string& out) {
    out.clear();
    return append_line(out);
  }

  /// read_line, appending the line to `out`; false at the end of the file,
  /// with nothing appended.
  bool append_line(std::string& out) {
    const size_t start_size = out.size();
    for (;;) {
      auto avail = end_ - pos_;
      auto* start = buf_.get() + pos_;
      auto* nl = static_cast<const char*>(std::memchr(start, '\n', avail));
      if (nl != nullptr) {
        out.append(start, static_cast<size_t>(nl - start));
        pos_ += static_cast<size_t>(nl - start) + 1;
        strip_cr(out, start_size);
        return true;
      }
      out.append(start, avail);
      pos_ = end_;
      if (!fill())
        break;
    }
    strip_cr(out, start_size);
    return out.size() > start_size;
  }

  /// Appends up to n bytes to `out`; returns how many were appended.
  size_t read(size_t n, std::string& out) {
    size_t done = 0;
    while (done < n) {
      if (pos_ == end_ && !fill())
        break;
      auto k = std::min(n - done, end_ - pos_);
      out.append(buf_.get() + pos_, k);
      pos_ += k;
      done += k;
    }
    return done;
  }

  /// Skips up to n bytes; returns how many were skipped.
  uint64_t skip(uint64_t n) {
    uint64_t done = 0;
    while (done < n) {
      if (pos_ == end_ && !fill())
        break;
      auto k = static_cast<size_t>(std::min<uint64_t>(n - done, end_ - pos_));
      pos_ += k;
      done += k;
    }
    return done;
  }

  /// Bytes consumed so far (read, skipped, or passed over by a seek): where
  /// the next byte handed out is in the file.
  uint64_t offset() const { return file_pos_ - (end_ - pos_); }

  /// Goes to byte `target` of the file, to resume reading there. Throws
  /// data_loss_error `<file>; shorter than the saved position: <n> bytes, the
  /// position is <target>` when the file has fewer bytes, and its I/O error.
  void seek(uint64_t target);

  void read_all(std::string& out) {
    out.clear();
    out.append(buf_.get() + pos_, end_ - pos_);
    pos_ = end_;
    while (fill()) {
      out.append(buf_.get(), end_);
      pos_ = end_;
    }
  }

private:
  static constexpr size_t buffer_size = 256 << 10;

  /// Drops one "\r" that ends what was appended after `from`.
  static void strip_cr(std::string& s, size_t from) {
    if (s.size() > from && s.back() == '\r')
      s.pop_back();
  }

  /// Refills the (consumed) buffer; false at the end of the file.
  bool fill() {
    pos_ = end_ = 0;
    for (;;) {
      auto n = ::read(fd_, buf_.get(), buffer_size);
      if (n > 0) {
        end_ = static_cast<size_t>(n);
        file_pos_ += static_cast<uint64_t>(n);
        return true;
      }
      if (n == 0)
        return false;
      if (errno != EINTR)
        throw_io_error(errno, name_);
    }
  }

  std::string name_;
  int fd_;
  // Not zero-filled: a reader opens a file per work item, and only the
  // bytes read() returned are ever looked at.
  std::unique_ptr<char[]> buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  uint64_t file_pos_ = 0; // where the fd is: bytes read or sought past
};

/// Throws data_loss_error `<file>; shorter than the saved position: ...`:
/// a file's data ends at `size` (`unit`: "bytes", "decompressed bytes"),
/// before the position `target` a reader was to resume at.
[[noreturn]] void throw_shorter(const std::string& file, uint64_t size, uint64_t target,
                                const char* unit);

} // namespace quern::detail
