#pragma once

// One event file: its name (SW-10), creation without ever overwriting another
// writer's file, the file_version record (SW-12), buffered appends and
// flushes. Used by the summary-writer actor; usable on its own from a single
// thread.

#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/error.hpp>

#include "quern/summary.hpp"
#include "quern/summary/event.hpp"

namespace quern {

/// `events.out.tfevents.<seconds, %010lld>.<host><suffix>` (SW-10).
std::string event_file_name(int64_t seconds, const std::string& host,
                            const std::string& suffix);

/// The machine's host name (gethostname), "localhost" when unavailable.
std::string host_name();

/// Creates `dir` and its parents (SW-1). The error names the directory and
/// the OS reason: `cannot create log directory '<dir>': Not a directory`.
caf::error create_log_directory(const std::string& dir);

class event_file_writer {
public:
  event_file_writer();
  /// Writes what is buffered and closes the file; errors are lost here, call
  /// close() to see them.
  ~event_file_writer();
  event_file_writer(const event_file_writer&) = delete;
  event_file_writer& operator=(const event_file_writer&) = delete;

  /// Creates `<logdir>/events.out.tfevents.<now>.<host><suffix>`. When that
  /// name exists (a second writer in the same second), `.1`, `.2`, ... is
  /// appended instead of truncating the other file (TensorFlow truncates it,
  /// SW-5); TensorBoard matches `tfevents` anywhere in the name. Writes and
  /// flushes Event{wall_time = <now> seconds, file_version} (SW-12); `now`
  /// is the wall-clock time in seconds since the epoch.
  caf::error create(const std::string& logdir, const std::string& suffix, bool sync,
                    double now);

  /// Creates or truncates `path` and writes the file_version record with
  /// `wall_time`: for tests and tools that need a given name.
  caf::error create_at(const std::string& path, double wall_time, bool sync = true);

  bool is_open() const { return fd_ >= 0; }

  /// Whether path() still names the open file (false once it was deleted or
  /// replaced, SW-13).
  bool still_exists() const;
  const std::string& path() const { return path_; }

  /// Buffers one event (encoded and framed at once).
  void append(const scalar_event& ev) {
    encoder_.append_scalar(buf_, ev);
    ++pending_;
    ++events_;
  }
  void append(const summary_event& ev) {
    encoder_.append_event(buf_, ev);
    ++pending_;
    ++events_;
  }

  /// Events buffered and not yet handed to the OS, and their bytes.
  size_t pending_events() const { return pending_; }
  size_t pending_bytes() const { return buf_.size(); }
  /// Events appended to this file (file_version record excluded).
  uint64_t events() const { return events_; }
  /// Bytes handed to the OS for this file.
  uint64_t bytes_written() const { return written_; }

  /// Hands the buffer to the OS (write(2)). On failure the buffered events
  /// are dropped, the file is cut back to its last complete record (so that
  /// later events stay readable) and the error names the file and the OS
  /// reason.
  caf::error write();
  /// write(), then fsync when `sync` (SW-3: flush + fsync).
  caf::error flush(bool sync);
  /// flush(sync), then closes the file. Harmless when not open.
  caf::error close(bool sync);

private:
  caf::error adopt(int fd, const std::string& path, double wall_time, bool sync);

  int fd_ = -1;
  std::string path_;
  std::string buf_;
  size_t pending_ = 0;
  uint64_t events_ = 0;
  uint64_t written_ = 0;
  event_encoder encoder_;
};

} // namespace quern
