// tf_record_writer: TFRecord files, plain or compressed with zlib as TF's
// RecordWriter and ZlibOutputBuffer write them (RD-8). The framing is
// logging's append_record.

#include "quern/input/tf_record.hpp"

#include <cerrno>
#include <exception>
#include <vector>

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include "quern/error.hpp"
#include "quern/format/record.hpp"
#include "readers/reader_files.hpp"

namespace quern {

using namespace detail;

struct tf_record_writer::impl {
  impl(const std::string& p, const tf_record_options& o)
      : path(p), kind(parse_compression("compression_type", o.compression_type)),
        gather(checked_buffer_size("input_buffer_size", o.input_buffer_size)),
        out_size(checked_buffer_size("output_buffer_size", o.output_buffer_size)) {
    if (kind != compression::none) {
      if (out_size < 8)
        throw invalid_argument_error("output_buffer_size must be >= 8 to write " +
                                     std::string(compression_name(kind)) + " not " +
                                     std::to_string(out_size));
      if (o.compression_level < -1 || o.compression_level > 9)
        throw invalid_argument_error("compression_level must be in [-1, 9] not " +
                                     std::to_string(o.compression_level));
      out.resize(out_size);
      // TF's ZlibCompressionOptions: deflated, MAX_WBITS (+16 for GZIP),
      // memory level 9, the default strategy.
      int bits = kind == compression::gzip ? 16 + MAX_WBITS : MAX_WBITS;
      if (deflateInit2(&z, o.compression_level, Z_DEFLATED, bits, 9,
                       Z_DEFAULT_STRATEGY) != Z_OK)
        throw resource_exhausted_error(path +
                                       "; cannot start compressing: out of memory");
      z_open = true;
    }
    do {
      fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      int err = errno;
      end_zlib();
      throw_io_error(err, path);
    }
  }

  ~impl() {
    if (fd >= 0 && !error) {
      try {
        finish();
      } catch (...) { // a destructor cannot report it: close() does
      }
    }
    if (fd >= 0)
      ::close(fd);
    end_zlib();
  }

  void end_zlib() {
    if (z_open)
      deflateEnd(&z);
    z_open = false;
  }

  /// Runs `f`, keeping its failure: every later call throws it again.
  template <class F>
  void guarded(F&& f) {
    if (error)
      std::rethrow_exception(error);
    try {
      f();
    } catch (...) {
      error = std::current_exception();
      throw;
    }
  }

  void write(std::string_view record) {
    append_record(pending, record);
    if (pending.size() >= gather)
      pass_on(Z_NO_FLUSH);
  }

  /// Hands the pending framed bytes on: to the file, or through deflate with
  /// `flush` into the output buffer, which goes to the file when full.
  void pass_on(int flush) {
    if (kind == compression::none) {
      write_all(pending.data(), pending.size());
      pending.clear();
      return;
    }
    z.next_in = reinterpret_cast<Bytef*>(pending.data());
    z.avail_in = static_cast<uInt>(pending.size());
    for (;;) {
      // zlib: a flush wants more than six bytes of room, or it repeats markers.
      auto room = out_size - out_used;
      if (room == 0 || (flush != Z_NO_FLUSH && room < 8))
        drain();
      z.next_out = reinterpret_cast<Bytef*>(out.data()) + out_used;
      z.avail_out = static_cast<uInt>(out_size - out_used);
      int rc = deflate(&z, flush);
      out_used = out_size - z.avail_out;
      if (rc == Z_STREAM_END)
        break;
      if (rc != Z_OK && rc != Z_BUF_ERROR)
        throw internal_error(path + "; deflate() failed with error " +
                             std::to_string(rc) +
                             (z.msg != nullptr ? std::string(": ") + z.msg : ""));
      // Done when all input is taken and deflate stopped short of a full
      // buffer (for a sync flush: the flush is complete); Z_FINISH goes on
      // to Z_STREAM_END.
      if (flush != Z_FINISH && z.avail_in == 0 && z.avail_out > 0)
        break;
    }
    pending.clear();
  }

  void drain() {
    write_all(out.data(), out_used);
    out_used = 0;
  }

  void write_all(const char* p, size_t n) {
    while (n > 0) {
      auto k = ::write(fd, p, n);
      if (k < 0) {
        if (errno == EINTR)
          continue;
        throw_io_error(errno, path);
      }
      p += k;
      n -= static_cast<size_t>(k);
    }
  }

  void flush() {
    if (fd < 0)
      return;
    pass_on(kind == compression::none ? Z_NO_FLUSH : Z_SYNC_FLUSH);
    drain();
  }

  /// Ends the stream and closes the file (once; on failure too).
  void finish() {
    try {
      pass_on(kind == compression::none ? Z_NO_FLUSH : Z_FINISH);
      drain();
    } catch (...) {
      ::close(fd);
      fd = -1;
      throw;
    }
    int file = fd;
    fd = -1;
    if (::close(file) != 0 && errno != EINTR)
      throw_io_error(errno, path);
  }

  std::string path;
  compression kind;
  size_t gather;
  size_t out_size;
  int fd = -1;
  z_stream z{};
  bool z_open = false;
  std::string pending;   // framed records not yet passed on
  std::vector<char> out; // compressed bytes not yet written
  size_t out_used = 0;
  std::exception_ptr error;
};

tf_record_writer::tf_record_writer(const std::string& path,
                                   const tf_record_options& options)
    : impl_(std::make_unique<impl>(path, options)) {}

tf_record_writer::tf_record_writer(const std::string& path,
                                   const std::string& compression_type)
    : tf_record_writer(path, tf_record_options{compression_type}) {}

tf_record_writer::~tf_record_writer() = default;
tf_record_writer::tf_record_writer(tf_record_writer&&) noexcept = default;
tf_record_writer& tf_record_writer::operator=(tf_record_writer&&) noexcept = default;

const std::string& tf_record_writer::path() const {
  return impl_->path;
}

void tf_record_writer::write(std::string_view record) {
  if (impl_->fd < 0 && !impl_->error)
    throw failed_precondition_error(impl_->path + "; write after close");
  impl_->guarded([&] { impl_->write(record); });
}

void tf_record_writer::flush() {
  impl_->guarded([&] { impl_->flush(); });
}

void tf_record_writer::close() {
  impl_->guarded([&] {
    if (impl_->fd >= 0)
      impl_->finish();
  });
}

} // namespace quern
