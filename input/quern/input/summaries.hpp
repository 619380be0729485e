#pragma once
// Queue fill-fraction summaries of the input helpers (docs/semantics.md IN-2,
// IN-10, IN-12, IN-16): TensorFlow adds one scalar summary per helper queue
// to GraphKeys.SUMMARIES, and a training loop logs them all every step
// (merge_all + add_summary). Here the helpers register their queues with an
// input_summaries registry, and write(writer, step) asks every queue for its
// size and logs every fraction at that step.
//
// add_telemetry(pipe) adds where the pipeline's time goes (docs/input.md,
// "Where the pipeline waits"): write() then also writes pipe.telemetry() as
// scalars and its verdict as a text summary, at most once per interval.
//
// write() and values() block their caller (they wait for the queues'
// answers): call them from main() or a detached actor, never from an
// event-based actor, and from one thread at a time.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>

#include "quern/blocking_queue.hpp"
#include "quern/interfaces.hpp"
#include "quern/pipeline.hpp"
#include "quern/summary/summary_writer.hpp"

namespace quern {

class pipeline;

/// TensorBoard's `hp.hparams(...)` for a pipeline, in one call (SW-47): the
/// settings its input helpers recorded (pipeline::settings(): capacities,
/// batch sizes, num_epochs, seeds, min_after_dequeue, threads), then `more`
/// (your own: a learning rate), written as the run's hyper-parameters with
/// `metrics` to compare runs by:
///   quern::log_pipeline_settings(writer, pipe, {"loss"}, {{"learning_rate", 0.1}});
/// Errors are summary_writer::hparams' (a name given twice, ...).
void log_pipeline_settings(summary_writer& writer, const pipeline& pipe,
                           const std::vector<std::string>& metrics = {},
                           const hparam_list& more = {});

class input_summaries {
public:
  explicit input_summaries(caf::actor_system& sys);
  ~input_summaries();
  input_summaries(const input_summaries&) = delete;
  input_summaries& operator=(const input_summaries&) = delete;

  /// TF's unique name scope: `scope` the first time, then `scope_1`,
  /// `scope_2`, ... (a helper calls this once and names its queue and its
  /// summary after the result).
  std::string unique_scope(const std::string& scope);

  /// Registers `<scope>/fraction_of_<capacity>_full` with value
  /// float32(size) * float32(1/capacity). Returns the tag.
  std::string add_fraction_full(queue_actor q, const std::string& scope, int32_t capacity,
                                std::string name = {});
  /// Registers `<scope>/fraction_over_<m>_of_<c-m>_full` with value
  /// float32(max(0, size - m)) * float32(1/(c - m)). Returns the tag.
  std::string add_fraction_over(queue_actor q, const std::string& scope, int32_t capacity,
                                int32_t min_after_dequeue);

  /// Registered tags, in registration order.
  std::vector<std::string> tags() const;
  /// Current (tag, value) pairs: asks every queue for its size.
  std::vector<std::pair<std::string, float>> values();
  /// Logs values() as scalars at `step`, and with add_telemetry, the
  /// pipeline's telemetry when its interval has passed.
  void write(summary_writer& writer, int64_t step);

  /// write() also writes `pipe`'s telemetry (TL-6): telemetry_values() as
  /// scalars, the verdict as the text summary `pipeline/verdict` and the
  /// structure as `pipeline/graph` when it changed (TL-8), at
  /// most once per `every` of wall time (the first once `every` has passed
  /// since this call; 0: at every write), so that a run of ten days costs
  /// per hour what a run of ten seconds does. `pipe` must outlive the
  /// writes; a second call replaces the first.
  void add_telemetry(pipeline& pipe, caf::timespan every = std::chrono::seconds(10));
  /// The scalars of a telemetry reading (TL-6), tags cleaned (IN-16):
  /// `consumer/<queue>/wait_fraction`, `.../wait_seconds`, `.../steps_per_second`;
  /// `runner/<name>/busy`, `.../waiting_for_input`, `.../waiting_for_room`,
  /// `.../rows_per_second`; the same four per worker as
  /// `worker/<runner>/<op>/...`; `queue/<name>/fill`, `.../enqueue_rate`,
  /// `.../dequeue_rate`; and `runner/<name>/limiting`, 1 for the stage the
  /// verdict names (TL-5), 0 for the others (TL-9).
  static std::vector<std::pair<std::string, float>>
  telemetry_values(const pipeline_telemetry& t);
  /// The pipeline's structure as JSON (TL-8), what write() logs as the text
  /// summary `pipeline/graph` with the first telemetry and again whenever
  /// it changes: `{"stages": [{"name", "tag", "input", "queue",
  /// "workers": [...]}], "queues": [{"name", "tag", "capacity"}],
  /// "consumers": [{"queue", "tag"}]}`. A stage reads `input` (empty: not
  /// seen yet) and feeds `queue`; a consumer reads `queue`; every `tag` is
  /// the prefix of that thing's scalars in telemetry_values().
  static std::string telemetry_graph(const pipeline_telemetry& t);

  /// TF's summary-tag cleaning (IN-16): characters other than letters,
  /// digits, `_ - / .` become `_`, leading `/` are removed.
  static std::string clean_tag(const std::string& tag);

private:
  struct entry {
    std::string tag;
    std::unique_ptr<blocking_queue> queue;
    int32_t capacity;
    int32_t min_after_dequeue;
    bool over;
  };
  caf::actor_system& sys_;
  mutable std::mutex mtx_;
  std::map<std::string, int> scopes_;
  std::vector<entry> entries_;
  /// add_telemetry's pipeline, interval and the time of its last write.
  pipeline* telemetry_ = nullptr;
  caf::timespan telemetry_every_{0};
  std::chrono::steady_clock::time_point telemetry_last_;
  /// The last `pipeline/graph` written (empty: none yet).
  std::string telemetry_graph_;
};

} // namespace quern
