#pragma once

// Reading event files back: every event up to the first damaged record, with
// the record offsets, and the damage as a quern error (SW-22 texts).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "quern/summary.hpp"

namespace quern {

struct event_file_contents {
  std::string path;
  /// Every readable event, the file_version record included, in file order.
  std::vector<summary_event> events;
  /// The offset of each event's record.
  std::vector<uint64_t> offsets;
  /// none after a clean end; data_loss `truncated record at X` /
  /// `corrupted record at X` / `cannot parse Event at X`; or the error
  /// opening the file.
  caf::error error;
};

event_file_contents read_event_file(const std::string& path);

/// Whether TensorBoard takes a file of this name for an event file (it
/// matches `tfevents` anywhere in the name).
bool is_event_file_name(const std::string& file_name);

/// The event files of one run: a directory under the log directory that holds
/// event files, named by its path relative to the log directory ("." for the
/// log directory itself).
struct run_files {
  std::string run;
  std::vector<std::string> files; // sorted by name
};

/// Every run under `logdir` (recursively), sorted by run name; an error when
/// `logdir` is not a readable directory, or a folder below it cannot be read
/// (the error names it: a run is never left out in silence).
caf::expected<std::vector<run_files>> find_runs(const std::string& logdir);

} // namespace quern
