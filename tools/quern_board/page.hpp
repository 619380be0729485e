#pragma once

// The html page: dygraphs and quern's page script embedded, the log
// directory's data inline (no server, no network).

#include <string>
#include <vector>

#include "logdir.hpp"

namespace quern::board {

struct page_options {
  /// Shown in the title (the log directory's name).
  std::string title;
  /// The log directory as given: file paths in the page are relative to it.
  std::string logdir;
  /// serve: the page asks the server for new data every reload_ms.
  bool live = false;
  int reload_ms = 2000;
};

/// The data of the page as JSON (also what `serve` answers on /data);
/// `version` tells the page whether anything changed.
std::string page_data(const std::vector<run_report>& runs, const page_options& opt,
                      const std::string& version);

/// What changed from `before` (the data of version `base`) to `now`, when
/// only points were appended to series `before` has: the runs again and the
/// new points (JSON with "base" set); empty when the page needs all the data.
std::string page_delta(const std::vector<run_report>& before,
                       const std::vector<run_report>& now, const page_options& opt,
                       const std::string& base, const std::string& version);

/// The whole page.
std::string render_page(const std::vector<run_report>& runs, const page_options& opt,
                        const std::string& version);
/// The whole page around `data` (what page_data made).
std::string render_page_with(const std::string& data, const page_options& opt);

} // namespace quern::board
