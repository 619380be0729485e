#pragma once

// quern-board serve: the html page on 127.0.0.1, its data re-read as the
// event files grow (Boost.Beast).

#include <string>

#include "page.hpp"

namespace quern::board {

struct serve_options {
  std::string logdir;
  unsigned short port = 6006;
  page_options page;
  /// TB-2: purge the points a restart orphaned (`--purge-orphaned=false` keeps them).
  bool purge_orphaned = true;
};

/// Serves until SIGINT or SIGTERM; returns the exit status (1 when the port
/// cannot be bound).
int serve(const serve_options& opt);

} // namespace quern::board
