#include "reader_files.hpp"

#include <cerrno>
#include <charconv>

#include <fcntl.h>
#include <sys/stat.h>

#include "quern/error.hpp"
#include "quern/io_error.hpp"

namespace quern::detail {

void throw_io_error(int err, const std::string& file) {
  auto mapped = io_error(err, file);
  throw_error(make_error(code_of(mapped), file + "; " + std::strerror(err)));
}

void set_key(std::string& key, const std::string& file, uint64_t n) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  auto len = static_cast<size_t>(end - digits);
  // One allocation and three copies: append(1, c) would fill through memset.
  key.clear();
  key.reserve(file.size() + 1 + len);
  key.append(file);
  key.push_back(':');
  key.append(digits, len);
}

void check_non_negative(const char* attr, int64_t value) {
  if (value < 0)
    throw invalid_argument_error(std::string(attr) + " must be >= 0 not " +
                                 std::to_string(value));
}

int64_t checked(const char* attr, int64_t value) {
  check_non_negative(attr, value);
  return value;
}

compression parse_compression(const char* what, const std::string& value) {
  if (value.empty())
    return compression::none;
  if (value == "ZLIB")
    return compression::zlib;
  if (value == "GZIP")
    return compression::gzip;
  throw invalid_argument_error(std::string("Unsupported ") + what + " \"" + value +
                               "\": expected \"\", \"ZLIB\" or \"GZIP\"");
}

const char* compression_name(compression c) {
  switch (c) {
  case compression::zlib:
    return "ZLIB";
  case compression::gzip:
    return "GZIP";
  default:
    return "";
  }
}

size_t checked_buffer_size(const char* what, int64_t value) {
  constexpr int64_t max = int64_t{1} << 30;
  if (value < 1 || value > max)
    throw invalid_argument_error(std::string(what) + " must be in [1, " +
                                 std::to_string(max) + "] not " + std::to_string(value));
  return static_cast<size_t>(value);
}

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

void throw_shorter(const std::string& file, uint64_t size, uint64_t target,
                   const char* unit) {
  throw data_loss_error(file +
                        "; shorter than the saved position: " + std::to_string(size) +
                        " " + unit + ", the position is " + std::to_string(target));
}

void buffered_file::seek(uint64_t target) {
  struct stat st;
  if (::fstat(fd_, &st) != 0)
    throw_io_error(errno, name_);
  auto size = static_cast<uint64_t>(st.st_size);
  if (size < target)
    throw_shorter(name_, size, target, "bytes");
  if (::lseek(fd_, static_cast<off_t>(target), SEEK_SET) < 0)
    throw_io_error(errno, name_);
  pos_ = end_ = 0;
  file_pos_ = target;
}

} // namespace quern::detail
