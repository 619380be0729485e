#pragma once

// The text outputs of quern-board: `inspect` and `export` (csv or json).

#include <ostream>
#include <string>
#include <vector>

#include "logdir.hpp"

namespace quern::board {

/// What `inspect` prints for runs read without values.
void write_inspect(std::ostream& out, const std::string& logdir,
                   const std::vector<run_report>& runs, bool tags_filtered);

/// What `export` prints: every selected scalar, run by run (in TensorBoard's
/// run order), in file order within a run, written as it is read (memory
/// does not grow with the log). Returns the runs' files and their damage.
std::vector<run_report> write_export(std::ostream& out,
                                     const std::vector<run_files>& runs,
                                     const selection& sel, bool json);

} // namespace quern::board
