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

/// What `export --hparams` prints (TB-1): one row per run with hparams, its
/// hyper-parameters (sorted by name; empty where a run has none of that
/// name), then per metric its last value and its lowest; runs in
/// TensorBoard's order. CSV: `run,<hparam>...,<metric>...,min(<metric>)...`.
void write_hparams(std::ostream& out, const std::vector<run_report>& runs, bool json);

/// An hparam's value as text: a string as it is, true/false, a number in its
/// shortest round-trip form.
std::string hparam_text(const hparam_value& v);

} // namespace quern::board
