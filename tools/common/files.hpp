#pragma once
// Files quern's programs write for other programs to poll (a port, an
// address): written whole, so that a reader never sees half of one.

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace quern::cli {

/// Writes `text` to `path.tmp`, then renames it to `path`. Returns an empty
/// string, or why it failed (naming the file).
inline std::string write_file_whole(const std::string& path, const std::string& text) {
  auto tmp = path + ".tmp";
  {
    std::ofstream out{tmp};
    out << text;
    if (!out)
      return "cannot write '" + tmp + "'";
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno);
  return {};
}

} // namespace quern::cli
