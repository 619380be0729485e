#pragma once

// What quern-board knows about a log directory: every run (a folder with
// event files), its files and their damage, per-tag statistics (what
// `inspect` prints) and, when asked for, the values themselves (scalars,
// histograms, text, images) for `export`, `html` and `serve`.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <caf/error.hpp>

#include "quern/summary.hpp"
#include "quern/summary/reader.hpp"

namespace quern::board {

struct file_report {
  std::string path;
  size_t records = 0;
  std::string version;
  caf::error error;
};

struct tag_stats {
  summary_kind kind = summary_kind::scalar;
  size_t count = 0;
  int64_t min_step = 0;
  int64_t max_step = 0;
  int64_t first_step = 0;
  int64_t last_step = 0;
  double first_value = 0;
  double last_value = 0;
  size_t out_of_order = 0;
  std::string plugin;
};

/// One scalar series of one run, in file order.
struct scalar_series {
  std::vector<int64_t> steps;
  std::vector<double> walls;
  std::vector<float> values;
};

template <class T>
struct stamped {
  int64_t step;
  double wall;
  T value;
};

struct run_report {
  std::string run;
  /// The wall time of the run's first event (TensorBoard's start time);
  /// infinity for a run without a readable event.
  double start_time;
  std::vector<file_report> files;
  std::map<std::string, tag_stats> tags;
  std::map<std::string, size_t> other_events; // session logs, log messages, graphs
  bool damaged = false;
  // Filled only when values are kept:
  std::map<std::string, scalar_series> scalars;
  std::map<std::string, std::vector<stamped<histogram_data>>> histograms;
  std::map<std::string, std::vector<stamped<std::string>>> texts;
  std::map<std::string, std::vector<stamped<image_data>>> images;
  /// Scalars in file order across tags (tag, index into scalars[tag]).
  std::vector<std::pair<const std::string*, size_t>> scalar_order;
};

/// Which runs and tags to read (empty sets: all).
struct selection {
  std::set<std::string> runs;
  std::set<std::string> tags;
  bool wants_run(const std::string& r) const { return runs.empty() || runs.count(r) > 0; }
  bool wants_tag(const std::string& t) const { return tags.empty() || tags.count(t) > 0; }
};

/// Reads one run from already-read files (in file order).
run_report make_run_report(const std::string& run,
                           const std::vector<const event_file_contents*>& files,
                           const selection& sel, bool keep_values);

/// Reads every selected run; runs come ordered as TensorBoard lists them:
/// by start time, runs without events last, ties by name.
std::vector<run_report> read_runs(const std::vector<run_files>& runs,
                                  const selection& sel, bool keep_values);

/// Orders runs as TensorBoard lists them (see read_runs).
void sort_by_start_time(std::vector<run_report>& runs);

/// The damage of every file, one line each, as `inspect` reports it on stderr.
std::vector<std::string> damage_lines(const run_report& run);
bool any_damage(const std::vector<run_report>& runs);
/// Writes damage_lines of every run to stderr.
void report_damage(const std::vector<run_report>& runs);

/// "scalars", "histograms", "images", "tensors" or "text" (plugin "text").
std::string kind_name(const tag_stats& st);

/// TensorBoard's distribution view: the histogram's values at the basis
/// points 0, 6.68, 15.87, 30.85, 50, 69.15, 84.13, 93.32 and 100 % (its
/// compressor, normal-distribution standard deviations), interpolated
/// linearly inside buckets.
std::vector<double> compress_histogram(const histogram_data& h);

} // namespace quern::board
