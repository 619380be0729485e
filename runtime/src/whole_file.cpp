#include "quern/whole_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>

namespace quern {

namespace {

write_outcome failed(const std::string& path, int err, const std::string& why = {}) {
  return {err,
          "cannot write '" + path + "': " + (why.empty() ? std::strerror(err) : why)};
}

/// The directory `path` is in ("." for a bare name).
std::string directory_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

/// Syncs the directory `path` is in, so that a rename into it is on disk.
int sync_directory_of(const std::string& path) {
  int fd = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  int rc = ::fsync(fd);
  int err = rc == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

} // namespace

int detail::create_exclusive(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  } while (fd < 0 && errno == EINTR);
  return fd < 0 ? -errno : fd;
}

write_outcome write_file_whole(const std::string& path,
                               const std::function<bool(std::FILE*)>& write, bool sync) {
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
    fd = detail::create_exclusive(tmp);
    if (fd < 0 && fd != -EEXIST)
      return failed(path, -fd);
  }
  if (fd < 0)
    return failed(path, EEXIST, "no free temporary name beside it");
  auto* file = ::fdopen(fd, "wb");
  if (!file) {
    auto err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return failed(path, err);
  }
  errno = 0;
  bool ok = write(file) && std::fflush(file) == 0 && !std::ferror(file);
  auto write_errno = errno;
  if (ok && sync && ::fsync(::fileno(file)) != 0) {
    ok = false;
    write_errno = errno;
  }
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    write_errno = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return write_errno ? failed(path, write_errno) : failed(path, 0, "write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    auto err = errno;
    ::unlink(tmp.c_str());
    return failed(path, err);
  }
  if (sync) {
    if (auto err = sync_directory_of(path); err != 0)
      return failed(path, err,
                    std::string("renamed into place, but its directory could not be "
                                "synced: ") +
                        std::strerror(err));
  }
  return {};
}

} // namespace quern
