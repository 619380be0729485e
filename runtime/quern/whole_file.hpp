#pragma once

// Files written whole: a reader of the file never sees half of one, and the
// writer never writes through a link someone planted where the file goes.
// The one home of that mechanism: quern's programs write their port files and
// pages with it (tools/common/files.hpp), and checkpoint files are written
// with it, synced to disk (quern/checkpoint_file.hpp).

#include <cstdio>
#include <functional>
#include <string>

namespace quern {

/// What write_file_whole did: `ok()`, or the errno of the failure (0 when no
/// system call failed) and why, naming the file: `cannot write '<path>':
/// <reason>`.
struct write_outcome {
  int err = 0;
  std::string why;
  bool ok() const { return why.empty(); }
};

/// Writes a new file beside `path` (`path.tmp.` and a random suffix, created
/// with O_CREAT | O_EXCL | O_NOFOLLOW: never an existing file, never through a
/// symbolic link), lets `write` fill it, then renames it to `path` (a link at
/// `path` itself is replaced, not followed). The file gets the mode 0666 less
/// the umask, as any new file. `write` returns false when it failed (errno
/// set). With `sync`, the file's bytes reach the disk (fsync) before the
/// rename and the rename itself after it (fsync of the directory), so that
/// after a crash `path` is the old file or the new one, whole. On failure the
/// temporary file is removed and `path` is left as it was (unless only the
/// directory's sync failed: the new file is then in place).
write_outcome write_file_whole(const std::string& path,
                               const std::function<bool(std::FILE*)>& write,
                               bool sync = false);

namespace detail {

/// Creates `path` for writing, mode 0666 less the umask, with O_CREAT |
/// O_EXCL | O_NOFOLLOW | O_CLOEXEC: fails with EEXIST when anything is there,
/// a symbolic link included, wherever it points. Returns the descriptor, or
/// -errno. What write_file_whole creates its temporary file with.
int create_exclusive(const std::string& path);

} // namespace detail

} // namespace quern
