#include "quern/summary/reader.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include "quern/error.hpp"
#include "quern/format/record.hpp"
#include "quern/io_error.hpp"
#include "quern/summary/event.hpp"

namespace quern {

namespace fs = std::filesystem;

event_file_contents read_event_file(const std::string& path) {
  event_file_contents result;
  result.path = path;
  record_reader reader{path};
  std::string payload;
  for (;;) {
    auto offset = reader.offset();
    if (auto err = reader.next(payload)) {
      if (!is(err, error_code::out_of_range))
        result.error = std::move(err);
      return result;
    }
    auto ev = decode_event(payload);
    if (!ev) {
      result.error = make_error(error_code::data_loss,
                                "cannot parse Event at " + std::to_string(offset));
      return result;
    }
    result.events.push_back(std::move(*ev));
    result.offsets.push_back(offset);
  }
}

bool is_event_file_name(const std::string& file_name) {
  return file_name.find("tfevents") != std::string::npos;
}

caf::expected<std::vector<run_files>> find_runs(const std::string& logdir) {
  std::error_code ec;
  if (!fs::is_directory(logdir, ec)) {
    if (!fs::exists(logdir, ec))
      return io_error(ENOENT, "cannot read log directory '" + logdir + "'");
    return io_error(ENOTDIR, "cannot read log directory '" + logdir + "'");
  }
  std::map<std::string, std::vector<std::string>> runs;
  auto root = fs::path(logdir);
  auto visit = [&](const fs::directory_entry& entry) {
    std::error_code e;
    if (!entry.is_regular_file(e))
      return;
    if (!is_event_file_name(entry.path().filename().string()))
      return;
    auto rel = entry.path().parent_path().lexically_relative(root).string();
    if (rel.empty())
      rel = ".";
    runs[rel].push_back(entry.path().string());
  };
  // A folder that may not be read is an error that names it, never a run
  // silently left out (or "no event files" for an unreadable logdir).
  fs::recursive_directory_iterator it{root, ec};
  if (ec)
    return io_error(ec.value(), "cannot read log directory '" + logdir + "'");
  for (auto end = fs::recursive_directory_iterator{}; it != end;) {
    visit(*it);
    std::error_code de;
    auto entered = it->is_directory(de) ? it->path().string() : std::string{};
    it.increment(ec);
    if (ec)
      return io_error(ec.value(), "cannot read directory '" +
                                      (entered.empty() ? logdir : entered) +
                                      "' under log directory '" + logdir + "'");
  }
  std::vector<run_files> result;
  for (auto& [run, files] : runs) {
    std::sort(files.begin(), files.end());
    result.push_back(run_files{run, std::move(files)});
  }
  return result;
}

} // namespace quern
