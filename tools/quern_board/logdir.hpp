#pragma once

// What quern-board knows about a log directory: every run (a folder with
// event files), its files and their damage, per-tag statistics (what
// `inspect` prints) and, when asked for, the values themselves (scalars,
// histograms, text, images) for `html` and `serve`, each series bounded in
// memory; `export` streams the scalars from the files.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <caf/error.hpp>

#include "quern/summary.hpp"
#include "quern/summary/reader.hpp"
#include "quern/summary/values.hpp"

namespace quern::board {

struct file_report {
  std::string path;
  size_t records = 0;
  std::string version;
  caf::error error;
  /// The offset after the last record read (where reading goes on when the
  /// file grows); its size and modification time when it was read.
  uint64_t end = 0;
  int64_t size = -1;
  int64_t mtime = 0;
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
  /// The lowest value (NaN skipped; NaN when every value is NaN).
  double min_value = 0;
  size_t out_of_order = 0;
  std::string plugin;
};

/// One scalar series of one run, in file order: every point up to
/// `exact_limit` points; beyond, thinned to at most `bucket_limit` buckets
/// of consecutive points, each keeping its first, lowest, highest and last
/// point (so the series' first, last, lowest and highest points are always
/// there). Memory is bounded by the limits, not by the log.
class scalar_series {
public:
  static constexpr size_t exact_limit = 100000;
  static constexpr size_t bucket_limit = 8192;

  void add(int64_t step, double wall, float value);
  /// Brings steps, walls and values up to date (after add).
  void settle();
  /// Every point seen (kept or not).
  size_t total() const { return total_; }
  bool thinned() const { return thinned_; }

  /// The kept points, in file order (up to date after settle).
  std::vector<int64_t> steps;
  std::vector<double> walls;
  std::vector<float> values;

private:
  struct point {
    uint64_t index;
    int64_t step;
    double wall;
    float value;
  };
  struct bucket {
    point first, low, high, last;
  };
  void start_bucket(const point& p);
  size_t total_ = 0;
  bool thinned_ = false;
  bool dirty_ = false;
  uint64_t width_ = 1; // points per bucket
  std::vector<bucket> buckets_;
};

template <class T>
struct stamped {
  int64_t step;
  double wall;
  T value;
};

/// At most `limit` items of a series, spread over it: every k-th (k doubles
/// when the list is full) and the latest. Memory bounded by the limit.
template <class T>
class spread_list {
public:
  explicit spread_list(size_t limit = 1000) : limit_(limit) {}
  void add(T x) {
    if (index_ % stride_ == 0) {
      kept_.push_back(std::move(x));
      latest_.clear();
      if (kept_.size() > limit_) {
        std::vector<T> half;
        for (size_t i = 0; i < kept_.size(); i += 2)
          half.push_back(std::move(kept_[i]));
        kept_ = std::move(half);
        stride_ *= 2;
      }
    } else {
      latest_.assign(1, std::move(x));
    }
    ++index_;
  }
  /// The kept items and the latest, in order.
  std::vector<const T*> items() const {
    std::vector<const T*> out;
    for (auto& x : kept_)
      out.push_back(&x);
    for (auto& x : latest_)
      out.push_back(&x);
    return out;
  }
  size_t size() const { return kept_.size() + latest_.size(); }
  size_t total() const { return index_; }

private:
  size_t limit_;
  size_t index_ = 0;
  size_t stride_ = 1;
  std::vector<T> kept_;
  std::vector<T> latest_;
};

/// Where an event is in its run: the index of its file among the run's files
/// and the offset of its record.
struct event_position {
  size_t file = 0;
  uint64_t offset = 0;
};
inline bool operator<(const event_position& a, const event_position& b) {
  return a.file != b.file ? a.file < b.file : a.offset < b.offset;
}

/// TensorBoard's purge_orphaned_data for one run (TB-2). A job restarted from
/// a checkpoint at step s writes steps s, s+1, ... again; the points its
/// earlier life wrote at those steps are orphaned. As TensorBoard's event
/// accumulator, per run across its files in order:
/// - while the run's file version is 2 or more, a SessionLog START at step s
///   purges every point seen before it with step >= s (every tag);
/// - while it is missing or below 2 (old TensorFlow files), a summary event
///   whose step is below the previous summary event's purges the points seen
///   before it, of its own tags, with step >= its step.
/// The plan is found by a first pass over the files that decodes only each
/// event's step, version and session status (and, where steps go back in an
/// old file, its tags), and keeps only what can still purge a later point
/// (a stack of triggers with rising steps): memory grows with the restarts
/// (and, in old files, the times steps went back), not with the points. The second pass asks `purged` of every point.
class purge_plan {
public:
  /// Reads the run's `file`-th file, `path`, from offset `from` (a record
  /// boundary) to its end or its first bad record; returns the offset after
  /// the last record read (the second pass reads no further) and sets
  /// `damage` to what stopped it (nothing at a clean end).
  uint64_t scan(size_t file, const std::string& path, uint64_t from, caf::error& damage);
  /// Whether the point of `tag` at `step`, in the event at `at`, is purged by
  /// a later trigger; counted in `restarts` / `went_back_points` when it is.
  bool purged(const event_position& at, int64_t step, const std::string& tag);
  /// Whether a trigger found since the last call may purge a point seen
  /// before it (serve then reads the run again: a page must lose them too).
  bool take_cut() {
    bool c = cut_;
    cut_ = false;
    return c;
  }

  struct restart {
    event_position at;
    int64_t step = 0;
    size_t points = 0; // the points it purged
  };
  /// Every START that counts (file version >= 2), in file order.
  std::vector<restart> restarts;
  /// Points purged because steps went back (file version < 2), and how many
  /// events went back.
  size_t went_back_points = 0;
  size_t went_back_events = 0;

private:
  struct trigger {
    event_position at;
    int64_t step;
  };
  static void push(std::vector<trigger>& stack, trigger t);
  static const trigger* first_after(const std::vector<trigger>& stack,
                                    const event_position& at);
  bool has_version_ = false;
  double version_ = 0;
  int64_t last_summary_step_ = -1; // TensorBoard's most_recent_step starts at -1
  bool any_summary_ = false;
  int64_t max_summary_step_ = 0;
  bool cut_ = false;
  std::vector<trigger> starts_;
  std::map<std::string, std::vector<trigger>> went_back_;
};

struct run_report;

/// The lines `inspect` prints for a run's purged points (TB-2), e.g.
/// "purged 40 points: restarted at step 100".
std::vector<std::string> purge_lines(const run_report& run);

/// Histograms are kept as TensorBoard's compression (see compress_histogram).
using compressed_histogram = std::vector<double>;

struct run_report {
  std::string run;
  /// The wall time of the run's first event (TensorBoard's start time);
  /// infinity for a run without a readable event.
  double start_time;
  std::vector<file_report> files;
  std::map<std::string, tag_stats> tags;
  std::map<std::string, size_t> other_events; // session logs, log messages, graphs
  bool damaged = false;
  /// What purges its orphaned points (TB-2; empty when not purging).
  purge_plan purge;
  /// The run's hparams, as TensorBoard's hparams plugin reads them (TB-1):
  /// the values of its (last) session start, sorted by name; the metrics its
  /// experiment names; its end status ("" while none was written). The
  /// plugin's summaries are not tags of the run.
  bool has_hparams = false;
  hparam_list hparams;
  std::vector<std::string> hparam_metrics;
  std::string hparams_end;
  // Filled only when values are kept (each bounded, see above):
  std::map<std::string, scalar_series> scalars;
  std::map<std::string, spread_list<stamped<compressed_histogram>>> histograms;
  std::map<std::string, spread_list<stamped<std::string>>> texts;
  std::map<std::string, spread_list<stamped<image_data>>> images;
};

/// How many histograms, texts and images of one tag are kept at most.
constexpr size_t histogram_limit = 1000;
constexpr size_t text_limit = 1000;
constexpr size_t image_limit = 100;

/// Which runs and tags to read (empty sets: all), and whether orphaned points
/// are purged (TB-2; `--purge-orphaned=false` keeps them).
struct selection {
  std::set<std::string> runs;
  std::set<std::string> tags;
  bool purge_orphaned = true;
  bool wants_run(const std::string& r) const { return runs.empty() || runs.count(r) > 0; }
  bool wants_tag(const std::string& t) const { return tags.empty() || tags.count(t) > 0; }
};

/// Reads `file` from where it was last read (file.end; 0 for a new file) up
/// to `to` (where the purge plan's pass stopped, reporting `damage` there)
/// into `rep`, one event at a time, appending `file` to rep.files (or
/// updating it when it is already the last one). Points the run's purge plan
/// purges are left out (sel.purge_orphaned).
void read_into(run_report& rep, file_report file, const selection& sel, bool keep_values,
               uint64_t to = UINT64_MAX, caf::error damage = {});

/// Reads the files of `files` from index `first` on (the last file read
/// before from where it stopped) into `rep`: the purge plan's pass over
/// them, then the values. Returns false, reading nothing more, when
/// `stop_at_cut` and what was added purges points read before (TB-2).
bool read_more(run_report& rep, const run_files& files, size_t first,
               const selection& sel, bool keep_values, bool stop_at_cut = false);

/// Reads one run, one event at a time (twice when purging: TB-2).
run_report read_run(const run_files& files, const selection& sel, bool keep_values);

/// Reads every selected run; runs come ordered as TensorBoard lists them:
/// by start time, runs without events last, ties by name.
std::vector<run_report> read_runs(const std::vector<run_files>& runs,
                                  const selection& sel, bool keep_values);

/// Orders runs as TensorBoard lists them (see read_runs).
void sort_by_start_time(std::vector<run_report>& runs);

/// The selected runs in TensorBoard's order, from the first event of each
/// (nothing else read).
std::vector<run_files> runs_by_start_time(const std::vector<run_files>& runs,
                                          const selection& sel);

/// Calls `each(run, tag, step, wall, value)` for every selected scalar, runs
/// in TensorBoard's order, events in file order, reading one event at a time;
/// stops when `each` returns false. Returns the runs' files (records,
/// damage) as read.
std::vector<run_report>
for_each_scalar(const std::vector<run_files>& runs, const selection& sel,
                const std::function<bool(const std::string&, const std::string&, int64_t,
                                         double, float)>& each);

/// The damage of every file, one line each, as `inspect` reports it on stderr.
std::vector<std::string> damage_lines(const run_report& run);
bool any_damage(const std::vector<run_report>& runs);
/// Writes damage_lines of every run to stderr.
void report_damage(const std::vector<run_report>& runs);

/// The log directory's own name: the last part of its path ("logs" for
/// "runs/logs/" or "./logs"; the canonical path's last part for "." or "..").
std::string logdir_name(const std::string& logdir);

/// find_runs, with the run at the log directory's root (find_runs calls it
/// ".") named after the log directory (logdir_name), or that name and
/// " (root)" when a sub-folder has that name already.
caf::expected<std::vector<run_files>> find_board_runs(const std::string& logdir);

/// The hparams table (TB-1): the metrics to show, the union of the runs'
/// declared metrics in order of appearance or, when no run declares any, as
/// TensorBoard infers them, every scalar tag of the runs with hparams.
std::vector<std::string> hparams_metrics(const std::vector<run_report>& runs);
/// The hyper-parameters' names over all runs, sorted.
std::vector<std::string> hparams_names(const std::vector<run_report>& runs);
/// "success", "failure", "running" or "unknown".
std::string status_name(hparams_status status);

/// "scalars", "histograms", "images", "tensors" or "text" (plugin "text").
std::string kind_name(const tag_stats& st);

/// TensorBoard's distribution view: the histogram's values at the basis
/// points 0, 6.68, 15.87, 30.85, 50, 69.15, 84.13, 93.32 and 100 % (its
/// compressor, normal-distribution standard deviations), interpolated
/// linearly inside buckets.
std::vector<double> compress_histogram(const histogram_data& h);

} // namespace quern::board
