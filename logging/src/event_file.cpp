#include "quern/summary/event_file.hpp"

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quern/error.hpp"
#include "quern/io_error.hpp"

namespace quern {

std::string event_file_name(int64_t seconds, const std::string& host,
                            const std::string& suffix) {
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%010" PRId64, seconds);
  return std::string("events.out.tfevents.") + secs + "." + host + suffix;
}

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0')
    return "localhost";
  return buf;
}

caf::error create_log_directory(const std::string& dir) {
  if (dir.empty())
    return make_error(error_code::invalid_argument, "empty log directory name");
  // mkdir -p, one component at a time, so that the OS reason is the one of
  // the component that failed.
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    auto next = dir.find('/', pos + 1);
    prefix = dir.substr(0, next);
    pos = next;
    if (prefix.empty() || prefix == "/")
      continue;
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      return io_error(errno, "cannot create log directory '" + dir + "'");
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return io_error(errno, "cannot create log directory '" + dir + "'");
  if (!S_ISDIR(st.st_mode))
    return io_error(ENOTDIR, "cannot create log directory '" + dir + "'");
  return caf::none;
}

event_file_writer::event_file_writer() {
  buf_.reserve(size_t{1} << 20);
}

event_file_writer::~event_file_writer() {
  close(false);
}

caf::error event_file_writer::adopt(int fd, const std::string& path, double wall_time,
                                    bool sync) {
  fd_ = fd;
  path_ = path;
  buf_.clear();
  pending_ = 0;
  events_ = 0;
  written_ = 0;
  encoder_.append_event(buf_, file_version_event(wall_time));
  return flush(sync);
}

caf::error event_file_writer::create(const std::string& logdir, const std::string& suffix,
                                     bool sync, double now) {
  if (auto err = close(sync))
    return err;
  auto secs = static_cast<int64_t>(std::floor(now));
  auto base = logdir;
  if (!base.empty() && base.back() != '/')
    base += '/';
  base += event_file_name(secs, host_name(), suffix);
  for (int n = 0;; ++n) {
    auto path = n == 0 ? base : base + "." + std::to_string(n);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST && n < 100000)
        continue;
      return io_error(errno, "cannot create event file '" + path + "'");
    }
    // The name is ours now (O_EXCL): write the first record into it.
    return adopt(fd, path, static_cast<double>(secs), sync);
  }
}

caf::error event_file_writer::create_at(const std::string& path, double wall_time,
                                        bool sync) {
  if (auto err = close(sync))
    return err;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_error(errno, "cannot create event file '" + path + "'");
  return adopt(fd, path, wall_time, sync);
}

bool event_file_writer::still_exists() const {
  if (fd_ < 0)
    return false;
  struct stat by_name;
  struct stat by_fd;
  if (::stat(path_.c_str(), &by_name) != 0 || ::fstat(fd_, &by_fd) != 0)
    return false;
  return by_name.st_dev == by_fd.st_dev && by_name.st_ino == by_fd.st_ino;
}

caf::error event_file_writer::write() {
  if (fd_ < 0 || buf_.empty()) {
    pending_ = 0;
    return caf::none;
  }
  const char* p = buf_.data();
  size_t left = buf_.size();
  auto good = written_;
  while (left > 0) {
    auto n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      auto err = io_error(errno, "cannot write to event file '" + path_ + "'");
      // Cut off what part of the buffer made it, so that the file still ends
      // at a record boundary and later events remain readable.
      if (::ftruncate(fd_, static_cast<off_t>(good)) == 0 &&
          ::lseek(fd_, static_cast<off_t>(good), SEEK_SET) >= 0)
        written_ = good;
      buf_.clear();
      pending_ = 0;
      return err;
    }
    p += n;
    left -= static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
  buf_.clear();
  pending_ = 0;
  return caf::none;
}

caf::error event_file_writer::flush(bool sync) {
  if (auto err = write())
    return err;
  if (sync && fd_ >= 0 && ::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS)
    return io_error(errno, "cannot sync event file '" + path_ + "'");
  return caf::none;
}

caf::error event_file_writer::close(bool sync) {
  if (fd_ < 0)
    return caf::none;
  auto err = flush(sync);
  if (::close(fd_) != 0 && !err)
    err = io_error(errno, "cannot close event file '" + path_ + "'");
  fd_ = -1;
  return err;
}

} // namespace quern
