#pragma once
// Files quern's programs write for other programs to read (a port, an
// address, a page): written whole, so that a reader never sees half of one,
// and never through a link someone planted where the file is written. The
// mechanism is runtime's (quern/whole_file.hpp), which checkpoint files use
// too; these are the programs' shorthands for it.

#include <cstdio>
#include <functional>
#include <string>

#include "quern/whole_file.hpp"

namespace quern::cli {

/// quern::write_file_whole (a temporary file beside `path`, created with
/// O_CREAT | O_EXCL | O_NOFOLLOW, renamed to `path`), not synced. `write`
/// returns false when it failed (errno set). Returns an empty string, or why
/// it failed (naming the file): `cannot write '<path>': <reason>`.
inline std::string write_file_whole(const std::string& path,
                                    const std::function<bool(std::FILE*)>& write) {
  return quern::write_file_whole(path, write).why;
}

/// The same with the whole text at hand.
inline std::string write_file_whole(const std::string& path, const std::string& text) {
  return write_file_whole(path, [&](std::FILE* f) {
    return std::fwrite(text.data(), 1, text.size(), f) == text.size();
  });
}

} // namespace quern::cli
