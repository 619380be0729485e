#pragma once

// The checkpoint files of a pipeline, written one after another
// (pipeline::checkpoint; bench_reading_pipeline --alone files writes through
// it too, to time the file without its snapshot).

#include <cstdint>
#include <functional>
#include <future>
#include <string>

#include "quern/checkpoint_file.hpp"
#include "quern/detail/task_threads.hpp"

namespace quern::detail {

/// Writes checkpoint files whole (write_checkpoint), one at a time: a file is
/// on disk, or its error thrown, before the next is started. One file in
/// `sync_every` is synced; until a newer one is, the newest synced file is
/// kept beside the `keep_last` others (CK-6). The owner takes turns for the
/// calls (a pipeline's checkpoint_mtx).
class checkpoint_writer {
public:
  struct settings {
    std::string dir;
    int keep_last = 3;
    int sync_every = 1;
    /// Written in a thread of its own that does not preempt the caller
    /// (task_threads' background), while the caller goes on; false: in the
    /// caller's thread, on disk when write() returns.
    bool background = true;
  };

  /// Waits for the file before (throwing its error), then writes the
  /// contents that `make` returns, as the file of `step`
  /// (checkpoint_path(s.dir, step)); `make` runs in the writing thread and
  /// what it holds goes before the file is written. Returns the path.
  std::string write(const settings& s, int64_t step,
                    std::function<checkpoint_contents()> make);
  /// Waits until the file being written is on disk; throws its error.
  void wait();
  /// The path of the last file write() was given (empty before the first).
  const std::string& last_path() const noexcept { return path_; }

private:
  std::future<std::string> writing_;
  bool writing_synced_ = false;
  std::string path_;
  /// Files written (sync_every counts them), and the newest one synced.
  int64_t written_ = 0;
  std::string last_synced_;
  /// One thread for every file: a thread started for each file cost the
  /// pipeline more than the file. Its tasks hold nothing of this object.
  task_threads<std::string> threads_{"quern.ckpt", 1, true};
};

} // namespace quern::detail
