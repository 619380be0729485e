#include "inflating_file.hpp"

#include <algorithm>
#include <cstring>

#include <unistd.h>
#include <zlib.h>

#include "quern/error.hpp"

namespace quern::detail {

struct inflating_file::state {
  z_stream z{};
};

inflating_file::inflating_file(std::string name, compression kind,
                               size_t input_buffer_size, size_t output_buffer_size)
    : name_(std::move(name)), kind_(kind), fd_(open_or_throw(name_)),
      z_(std::make_unique<state>()), in_size_(input_buffer_size),
      out_size_(output_buffer_size), in_(new unsigned char[in_size_]),
      out_(new unsigned char[out_size_]) {
  // TF's ZlibCompressionOptions: MAX_WBITS for ZLIB, 16 + MAX_WBITS for GZIP.
  int bits = kind_ == compression::gzip ? 16 + MAX_WBITS : MAX_WBITS;
  if (inflateInit2(&z_->z, bits) != Z_OK) {
    ::close(fd_);
    throw resource_exhausted_error(name_ + "; cannot start decompressing " +
                                   compression_name(kind_) + " data: out of memory");
  }
}

inflating_file::~inflating_file() {
  inflateEnd(&z_->z);
  ::close(fd_);
}

uint64_t inflating_file::compressed_offset() const {
  return file_read_ - z_->z.avail_in;
}

void inflating_file::fail(const std::string& what) {
  throw data_loss_error(name_ + "; " + what);
}

template <class Take>
uint64_t inflating_file::consume(uint64_t n, Take take) {
  if (error_)
    std::rethrow_exception(error_);
  uint64_t done = 0;
  try {
    while (done < n) {
      if (out_pos_ == out_end_ && !fill())
        break;
      auto k = static_cast<size_t>(std::min<uint64_t>(n - done, out_end_ - out_pos_));
      take(reinterpret_cast<const char*>(out_.get()) + out_pos_, k);
      out_pos_ += k;
      done += k;
      consumed_ += k;
    }
  } catch (...) {
    error_ = std::current_exception();
    throw;
  }
  return done;
}

size_t inflating_file::read(size_t n, std::string& out) {
  return static_cast<size_t>(
      consume(n, [&out](const char* p, size_t k) { out.append(p, k); }));
}

size_t inflating_file::read(char* dst, size_t n) {
  return static_cast<size_t>(consume(n, [&dst](const char* p, size_t k) {
    std::memcpy(dst, p, k);
    dst += k;
  }));
}

uint64_t inflating_file::skip(uint64_t n) {
  return consume(n, [](const char*, size_t) {});
}

void inflating_file::seek(uint64_t target) {
  if (target < consumed_)
    throw internal_error(name_ + "; cannot seek back to decompressed byte " +
                         std::to_string(target) + " from " + std::to_string(consumed_));
  skip(target - consumed_);
  if (consumed_ < target)
    throw_shorter(name_, consumed_, target, "decompressed bytes");
}

bool inflating_file::fill() {
  if (finished_)
    return false;
  inflate_into_buffer();
  return out_end_ > 0;
}

// Inflates until the output buffer is full or the data has ended.
void inflating_file::inflate_into_buffer() {
  auto& z = z_->z;
  out_pos_ = out_end_ = 0;
  z.next_out = out_.get();
  z.avail_out = static_cast<uInt>(out_size_);
  while (z.avail_out > 0 && !finished_) {
    if (z.avail_in == 0 && !file_end_)
      read_input();
    if (stream_end_)
      next_member();
    else if (z.avail_in == 0) // file_end_: the file ends inside the stream
      fail(std::string("truncated ") + compression_name(kind_) +
           " data: the file ends at compressed offset " + std::to_string(file_read_) +
           ", inside the compressed stream");
    else
      inflate_some();
  }
  out_end_ = out_size_ - z.avail_out;
}

void inflating_file::read_input() {
  for (;;) {
    auto n = ::read(fd_, in_.get(), in_size_);
    if (n > 0) {
      z_->z.next_in = in_.get();
      z_->z.avail_in = static_cast<uInt>(n);
      file_read_ += static_cast<uint64_t>(n);
      return;
    }
    if (n == 0) {
      file_end_ = true;
      return;
    }
    if (errno != EINTR)
      throw_io_error(errno, name_);
  }
}

// After the end of a stream: the clean end of the data, another GZIP member,
// or bytes that do not belong there.
void inflating_file::next_member() {
  auto& z = z_->z;
  if (z.avail_in == 0) { // read_input found the end of the file
    finished_ = true;
    return;
  }
  if (kind_ == compression::zlib)
    fail("data after the end of the ZLIB stream at compressed offset " +
         std::to_string(compressed_offset()));
  inflateReset(&z);
  stream_end_ = false;
}

void inflating_file::inflate_some() {
  auto& z = z_->z;
  int rc = ::inflate(&z, Z_NO_FLUSH);
  switch (rc) {
  case Z_OK:
    return;
  case Z_BUF_ERROR: // no progress for want of input: the loop reads more
    if (z.avail_in > 0 && z.avail_out > 0)
      throw internal_error(name_ + "; inflate() made no progress at compressed offset " +
                           std::to_string(compressed_offset()));
    return;
  case Z_STREAM_END:
    stream_end_ = true;
    return;
  case Z_MEM_ERROR:
    throw resource_exhausted_error(name_ + "; out of memory decompressing " +
                                   compression_name(kind_) + " data");
  default:
    // Z_DATA_ERROR, and Z_NEED_DICT (a preset dictionary nobody has).
    fail(std::string("corrupt ") + compression_name(kind_) +
         " data at compressed offset " + std::to_string(compressed_offset()) +
         ": inflate() failed with error " + std::to_string(rc) +
         (z.msg != nullptr ? std::string(": ") + z.msg : std::string()));
  }
}

} // namespace quern::detail
