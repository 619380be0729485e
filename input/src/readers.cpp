#include "quern/input/readers.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <mutex>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quern/error.hpp"
#include "quern/io_error.hpp"
#include "quern/queue_spec.hpp"
#include "quern/summary/record.hpp"

namespace quern {

namespace {

/// Throws TF's I/O error for `file`: `<file>; <strerror(err)>`, with the code
/// of TF's errno mapping (ENOENT NOT_FOUND, EACCES PERMISSION_DENIED, ...).
[[noreturn]] void throw_io_error(int err, const std::string& file) {
  auto mapped = io_error(err, file);
  throw_error(make_error(code_of(mapped), file + "; " + std::strerror(err)));
}

/// A record's key `<file>:<n>`, written with one allocation at most: the
/// reader's hottest string after the value itself.
void set_key(std::string& key, const std::string& file, uint64_t n) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  auto len = static_cast<size_t>(end - digits);
  key.clear();
  key.reserve(file.size() + 1 + len);
  key.append(file).append(1, ':').append(digits, len);
}

void check_non_negative(const char* attr, int64_t value) {
  if (value < 0)
    throw invalid_argument_error(std::string(attr) + " must be >= 0 not " +
                                 std::to_string(value));
}

/// Opens `file` for reading or throws its I/O error. A directory is refused
/// with EISDIR (TF opens it and fails the first read the same way).
int open_or_throw(const std::string& file) {
  int fd;
  do {
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0)
    throw_io_error(errno, file);
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw_io_error(EISDIR, file);
  }
  return fd;
}

/// A read-only file with a buffer: lines, byte counts, skips, everything.
class buffered_file {
public:
  explicit buffered_file(std::string name)
      : name_(std::move(name)), fd_(open_or_throw(name_)), buf_(buffer_size) {}
  ~buffered_file() { ::close(fd_); }
  buffered_file(const buffered_file&) = delete;
  buffered_file& operator=(const buffered_file&) = delete;

  const std::string& name() const { return name_; }

  /// TF's InputBuffer::ReadLine: false at the end of the file when nothing
  /// (after stripping a final "\r") is left.
  bool read_line(std::string& out) {
    out.clear();
    for (;;) {
      auto avail = end_ - pos_;
      auto* start = buf_.data() + pos_;
      auto* nl = static_cast<const char*>(std::memchr(start, '\n', avail));
      if (nl != nullptr) {
        out.append(start, static_cast<size_t>(nl - start));
        pos_ += static_cast<size_t>(nl - start) + 1;
        strip_cr(out);
        return true;
      }
      out.append(start, avail);
      pos_ = end_;
      if (!fill())
        break;
    }
    strip_cr(out);
    return !out.empty();
  }

  /// Appends up to n bytes to `out`; returns how many were appended.
  size_t read(size_t n, std::string& out) {
    size_t done = 0;
    while (done < n) {
      if (pos_ == end_ && !fill())
        break;
      auto k = std::min(n - done, end_ - pos_);
      out.append(buf_.data() + pos_, k);
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

  void read_all(std::string& out) {
    out.clear();
    out.append(buf_.data() + pos_, end_ - pos_);
    pos_ = end_;
    while (fill()) {
      out.append(buf_.data(), end_);
      pos_ = end_;
    }
  }

private:
  static constexpr size_t buffer_size = 256 << 10;

  static void strip_cr(std::string& s) {
    if (!s.empty() && s.back() == '\r')
      s.pop_back();
  }

  /// Refills the (consumed) buffer; false at the end of the file.
  bool fill() {
    pos_ = end_ = 0;
    for (;;) {
      auto n = ::read(fd_, buf_.data(), buf_.size());
      if (n > 0) {
        end_ = static_cast<size_t>(n);
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
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
};

class text_line_source : public record_source {
public:
  text_line_source(const std::string& file, int64_t skip) : file_(file) {
    std::string line;
    for (; line_ < skip; ++line_) {
      if (!file_.read_line(line)) {
        done_ = true; // fewer lines than the header: no records
        break;
      }
    }
  }

  bool next(record& out) override {
    if (done_)
      return false;
    if (!file_.read_line(out.value)) {
      done_ = true;
      return false;
    }
    ++line_;
    set_key(out.key, file_.name(), static_cast<uint64_t>(line_));
    return true;
  }

private:
  buffered_file file_;
  int64_t line_ = 0;
  bool done_ = false;
};

class fixed_length_source : public record_source {
public:
  fixed_length_source(const std::string& file, const fixed_length_options& o)
      : file_(file), record_(static_cast<uint64_t>(o.record_bytes)),
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

  buffered_file file_;
  uint64_t record_;
  uint64_t window_size_;
  uint64_t hop_;
  std::string window_;
  int64_t number_ = 0;
  bool done_ = false;
};

class tf_record_source : public record_source {
public:
  explicit tf_record_source(const std::string& file) : name_(file), reader_(file) {
    if (!reader_.ok())
      throw_error(reader_.open_error());
  }

  bool next(record& out) override {
    auto offset = reader_.offset();
    auto err = reader_.next(out.value);
    if (err) {
      if (is(err, error_code::out_of_range))
        return false; // clean end of the file
      throw_error(err);
    }
    set_key(out.key, name_, static_cast<uint64_t>(offset));
    return true;
  }

private:
  std::string name_;
  record_reader reader_;
};

class whole_file_source : public record_source {
public:
  explicit whole_file_source(const std::string& file) : file_(file) {}

  bool next(record& out) override {
    if (done_)
      return false;
    file_.read_all(out.value);
    out.key = file_.name();
    done_ = true;
    return true;
  }

  bool exhausted() const override { return done_; }

private:
  buffered_file file_;
  bool done_ = false;
};

void check_compression(const char* what, const std::string& value) {
  if (value.empty())
    return;
  if (value == "ZLIB" || value == "GZIP")
    throw unimplemented_error(std::string(what) + " \"" + value +
                              "\" is not supported: quern is built without zlib; "
                              "decompress the files first");
  throw invalid_argument_error(std::string("Unsupported ") + what + " \"" + value +
                               "\": expected \"\", \"ZLIB\" or \"GZIP\"");
}

} // namespace

std::unique_ptr<record_source> open_text_line_source(const std::string& file,
                                                     int64_t skip_header_lines) {
  check_non_negative("skip_header_lines", skip_header_lines);
  return std::make_unique<text_line_source>(file, skip_header_lines);
}

std::unique_ptr<record_source>
open_fixed_length_source(const std::string& file, const fixed_length_options& opts) {
  check_non_negative("header_bytes", opts.header_bytes);
  check_non_negative("record_bytes", opts.record_bytes);
  check_non_negative("footer_bytes", opts.footer_bytes);
  check_non_negative("hop_bytes", opts.hop_bytes);
  return std::make_unique<fixed_length_source>(file, opts);
}

std::unique_ptr<record_source> open_tf_record_source(const std::string& file) {
  // Open once ourselves so that open errors read as every other reader's.
  ::close(open_or_throw(file));
  return std::make_unique<tf_record_source>(file);
}

std::unique_ptr<record_source> open_whole_file_source(const std::string& file) {
  return std::make_unique<whole_file_source>(file);
}

// -- reader -------------------------------------------------------------------

struct reader::impl {
  explicit impl(source_factory f) : open(std::move(f)) {}

  source_factory open;
  mutable std::mutex mtx;
  std::unique_ptr<record_source> source; // the work unit in progress
  std::exception_ptr error;              // sticky read error of that unit
  int64_t produced = 0;
  int64_t started = 0;
  int64_t finished = 0;
  caf::actor_addr validated; // last queue whose spec passed RD-1

  /// Makes the next work unit current. A unit that fails to open is dropped
  /// (its error is thrown) and does not count as started.
  void start_next(const work_source& next_work) {
    auto work = next_work();
    auto opened = open(work); // throws the open error; the unit is dropped
    if (!opened)
      throw internal_error("reader: no record source for work unit '" + work + "'");
    source = std::move(opened);
    error = nullptr;
    ++started;
  }

  void finish_work() {
    source.reset();
    error = nullptr;
    finished = started;
  }

  /// Reads one record of the current unit: true if produced; false at its
  /// end (the unit is then finished). Rethrows a sticky error.
  bool read_one(record& out) {
    if (error)
      std::rethrow_exception(error);
    bool ok;
    try {
      ok = source->next(out);
    } catch (...) {
      error = std::current_exception();
      throw;
    }
    if (!ok) {
      finish_work();
      return false;
    }
    ++produced;
    if (source->exhausted())
      finish_work();
    return true;
  }

  record read(const work_source& next_work) {
    std::lock_guard<std::mutex> guard{mtx};
    record out;
    for (;;) {
      if (!source)
        start_next(next_work);
      if (read_one(out))
        return out;
    }
  }

  std::vector<record> read_up_to(const work_source& next_work, int64_t n) {
    if (n < 0)
      throw invalid_argument_error("num_records must be >= 0 not " + std::to_string(n));
    std::lock_guard<std::mutex> guard{mtx};
    std::vector<record> out;
    if (n == 0)
      return out; // as TF: nothing read, nothing dequeued
    // One allocation instead of a doubling series: each large allocation
    // makes glibc's malloc consolidate every small chunk freed since the
    // last one (the previous call's record strings), under the arena lock.
    out.reserve(static_cast<size_t>(std::min<int64_t>(n, 1 << 16)));
    record r;
    for (;;) {
      if (!source) {
        if (!out.empty())
          return out; // never cross into a new work unit (RD-2)
        start_next(next_work);
      }
      if (static_cast<int64_t>(out.size()) == n)
        return out;
      bool ok;
      try {
        ok = read_one(r);
      } catch (...) {
        if (!out.empty())
          return out; // the unit's error stays sticky for the next call
        throw;
      }
      if (ok)
        out.push_back(std::move(r));
    }
  }
};

namespace {

/// Work units from a blocking queue, validated as TF's ReaderBase does (RD-1).
reader::work_source queue_work(blocking_queue& q, caf::actor_addr& validated) {
  return [&q, &validated]() -> std::string {
    auto addr = q.actor().address();
    if (addr != validated) {
      auto spec = q.spec();
      if (spec.num_components() != 1)
        throw invalid_argument_error("Expected single component queue");
      if (spec.dtypes[0] != dtype::string)
        throw invalid_argument_error("Expected queue with single string component");
      if (spec.shapes_specified() && spec.shapes[0].fully_defined() &&
          spec.shapes[0].num_elements() != 1)
        throw invalid_argument_error("Expected to dequeue a one-element string tensor");
      validated = addr;
    }
    auto e = q.dequeue();
    if (e.size() != 1)
      throw invalid_argument_error("Expected single component queue");
    if (e[0].type() != dtype::string)
      throw invalid_argument_error("Expected queue with single string component");
    if (e[0].num_elements() != 1)
      throw invalid_argument_error("Expected to dequeue a one-element string tensor");
    return e[0].values<std::string>()[0];
  };
}

} // namespace

reader::reader(source_factory open) : impl_(std::make_unique<impl>(std::move(open))) {}

reader::~reader() = default;
reader::reader(reader&&) noexcept = default;
reader& reader::operator=(reader&&) noexcept = default;

record reader::read(blocking_queue& filenames) {
  // validated is only touched under the lock, inside impl::read.
  return impl_->read(queue_work(filenames, impl_->validated));
}

record reader::read(const work_source& next_work) {
  return impl_->read(next_work);
}

std::vector<record> reader::read_up_to(blocking_queue& filenames, int64_t n) {
  return impl_->read_up_to(queue_work(filenames, impl_->validated), n);
}

std::vector<record> reader::read_up_to(const work_source& next_work, int64_t n) {
  return impl_->read_up_to(next_work, n);
}

int64_t reader::num_records_produced() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return impl_->produced;
}

int64_t reader::num_work_units_completed() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return impl_->finished;
}

void reader::reset() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->source.reset();
  impl_->error = nullptr;
  impl_->produced = 0;
  impl_->started = 0;
  impl_->finished = 0;
}

// -- reader kinds -------------------------------------------------------------

namespace {

int64_t checked(const char* attr, int64_t value) {
  check_non_negative(attr, value);
  return value;
}

fixed_length_options checked_fixed_length(int64_t record_bytes, int64_t header_bytes,
                                          int64_t footer_bytes, int64_t hop_bytes,
                                          const std::string& encoding) {
  fixed_length_options o;
  o.header_bytes = checked("header_bytes", header_bytes);
  o.record_bytes = checked("record_bytes", record_bytes);
  o.footer_bytes = checked("footer_bytes", footer_bytes);
  o.hop_bytes = checked("hop_bytes", hop_bytes);
  check_compression("encoding", encoding);
  return o;
}

} // namespace

text_line_reader::text_line_reader(int64_t skip_header_lines)
    : reader([skip = checked("skip_header_lines", skip_header_lines)](
                 const std::string& file) { return open_text_line_source(file, skip); }) {
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

tf_record_reader::tf_record_reader(const std::string& compression_type)
    : reader([](const std::string& file) { return open_tf_record_source(file); }) {
  check_compression("compression_type", compression_type);
}

whole_file_reader::whole_file_reader()
    : reader([](const std::string& file) { return open_whole_file_source(file); }) {}

// -- records as elements ------------------------------------------------------

element record_element(const record& r) {
  return element{tensor::scalar(r.key), tensor::scalar(r.value)};
}

element record_batch(const std::vector<record>& rs) {
  std::vector<std::string> keys, values;
  keys.reserve(rs.size());
  values.reserve(rs.size());
  for (auto& r : rs) {
    keys.push_back(r.key);
    values.push_back(r.value);
  }
  auto n = static_cast<int64_t>(rs.size());
  return element{tensor::from_values(tensor_shape{n}, std::move(keys)),
                 tensor::from_values(tensor_shape{n}, std::move(values))};
}

} // namespace quern
