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

/// What `export` prints for runs read with values: every scalar, run by run
/// (in TensorBoard's run order), in file order within a run.
void write_export(std::ostream& out, const std::vector<run_report>& runs, bool json);

} // namespace quern::board
