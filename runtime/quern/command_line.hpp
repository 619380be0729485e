#pragma once
// Command lines for programs that need no options of their own.

#include <optional>

#include <caf/actor_system_config.hpp>

namespace quern {

/// Reads the command line into `cfg`: CAF's own options (`--help`,
/// `--config-file`, `--caf.scheduler.max-threads=2`, ...) and quern's
/// (`--quern.exit-grace=5s`). Returns the status the program should exit with
/// now, or nothing to go on:
///  - 0 after `--help` printed the options;
///  - 2 after an error was printed to stderr that names the program and the
///    one bad argument: `hello_queue: unknown option '--verbose' (see --help)`,
///    `hello_queue: unexpected argument 'data.csv' (see --help)`.
/// Programs with options of their own parse them first (Boost.Program_options
/// in quern's examples) and may pass CAF's through to this.
std::optional<int> parse_command_line(caf::actor_system_config& cfg, int argc,
                                      char** argv);

} // namespace quern
