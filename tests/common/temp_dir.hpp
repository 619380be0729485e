#pragma once

// A fresh directory under the system's temporary directory for one test,
// removed with everything in it at scope exit; every suite's helpers use it.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace quern::test {

class temp_dir {
public:
  temp_dir() {
    std::string templ =
        (std::filesystem::temp_directory_path() / "quern-test-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path_ = templ;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }
  /// <dir>/<name>.
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string operator/(const std::string& name) const { return file(name); }

  /// Writes `contents` (bytes as given) to <dir>/<name>; returns the path.
  std::string write(const std::string& name, const std::string& contents) const {
    auto path = file(name);
    std::ofstream out{path, std::ios::binary};
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    REQUIRE(out.good());
    return path;
  }

private:
  std::string path_;
};

} // namespace quern::test
