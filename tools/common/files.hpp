#pragma once
// Files quern's programs write for other programs to read (a port, an
// address, a page): written whole, so that a reader never sees half of one,
// and never through a link someone planted where the file is written.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>

namespace quern::cli {

/// Writes a new file beside `path` (`path.tmp.` and a random suffix, created
/// with O_CREAT | O_EXCL | O_NOFOLLOW: never an existing file, never through a
/// symbolic link), lets `write` fill it, then renames it to `path` (a link at
/// `path` itself is replaced, not followed). The file gets the mode 0666 less
/// the umask, as any new file. `write` returns false when it failed (errno
/// set). Returns an empty string, or why it failed (naming the file).
inline std::string write_file_whole(const std::string& path,
                                    const std::function<bool(std::FILE*)>& write) {
  std::random_device rd;
  std::mt19937_64 gen{
      (uint64_t{rd()} << 32) ^ rd() ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path + ".tmp.";
    for (int i = 0; i < 10; ++i)
      tmp += digits[gen() % (sizeof(digits) - 1)];
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST)
      return "cannot write '" + path + "': " + std::strerror(errno);
  }
  if (fd < 0)
    return "cannot write '" + path + "': no free temporary name beside it";
  auto* file = ::fdopen(fd, "wb");
  if (!file) {
    auto why = std::string(std::strerror(errno));
    ::close(fd);
    ::unlink(tmp.c_str());
    return "cannot write '" + path + "': " + why;
  }
  errno = 0;
  bool ok = write(file) && std::fflush(file) == 0 && !std::ferror(file);
  auto write_errno = errno;
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    write_errno = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return "cannot write '" + path +
           "': " + (write_errno ? std::strerror(write_errno) : "write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    auto why = std::string(std::strerror(errno));
    ::unlink(tmp.c_str());
    return "cannot write '" + path + "': " + why;
  }
  return {};
}

/// The same with the whole text at hand.
inline std::string write_file_whole(const std::string& path, const std::string& text) {
  return write_file_whole(path, [&](std::FILE* f) {
    return std::fwrite(text.data(), 1, text.size(), f) == text.size();
  });
}

} // namespace quern::cli
