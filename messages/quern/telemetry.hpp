#pragma once

// Where a pipeline's time goes (docs/input.md, "Where the pipeline waits";
// docs/semantics.md TL-1..TL-11): what pipeline::telemetry() returns
// (quern/pipeline_telemetry.hpp includes this header), and what a checkpoint
// member of another process answers the chief's pipeline with (TL-10). Every
// share is of the span the figures cover (the time since the previous
// reading, or since the pipeline was made).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace quern {

/// One consumer of the pipeline (pipeline::make_consumer), over the span
/// (TL-1).
struct consumer_telemetry {
  /// The queue it dequeues from (its name in a checkpoint).
  std::string queue;
  int64_t dequeues = 0;
  int64_t rows = 0;
  /// Time its dequeues were blocked (from the call to its return), and
  /// the wall time of its steps (from the end of one dequeue to the end of
  /// the next; the first from its start).
  double wait_seconds = 0;
  double step_seconds = 0;
  /// wait_seconds / step_seconds: the share of the training loop's time
  /// spent waiting for input (0 when it never waited).
  double wait_fraction = 0;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, consumer_telemetry& x) {
    return f(caf::meta::type_name("quern::consumer_telemetry"), x.queue, x.dequeues,
             x.rows, x.wait_seconds, x.step_seconds, x.wait_fraction);
  }
};

/// One worker of a queue runner, over the span (TL-2).
struct worker_telemetry {
  /// `<runner>/<op>`.
  std::string name;
  /// Shares of the span: in its op (a blocking op's run, less the waits
  /// below), waiting for an upstream queue's answer (an async op's
  /// dequeues and pulls; a blocking op's dequeues through a blocking
  /// handle), waiting for room (its pushes' window full, or a blocking
  /// op's enqueues through a blocking handle). The rest is idle.
  double busy = 0;
  double waiting_for_input = 0;
  double waiting_for_room = 0;
  /// Rows its pushes stored per second.
  double rows_per_second = 0;
  int64_t runs = 0;
  /// The upstream queue it last waited for (empty: none seen).
  std::string input_queue;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, worker_telemetry& x) {
    return f(caf::meta::type_name("quern::worker_telemetry"), x.name, x.busy,
             x.waiting_for_input, x.waiting_for_room, x.rows_per_second, x.runs,
             x.input_queue);
  }
};

/// One queue runner (a stage), over the span (TL-3).
struct runner_telemetry {
  std::string name;
  /// The queue it feeds.
  std::string queue;
  /// The means of its workers' shares, and the rows per second of them
  /// all.
  double busy = 0;
  double waiting_for_input = 0;
  double waiting_for_room = 0;
  double rows_per_second = 0;
  /// Its upstream queue (its workers' input_queue when they agree; empty:
  /// none seen).
  std::string input_queue;
  std::vector<worker_telemetry> workers;
  /// With two workers or more: the one that stored the fewest rows per
  /// second (empty with one worker).
  std::string straggler;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, runner_telemetry& x) {
    return f(caf::meta::type_name("quern::runner_telemetry"), x.name, x.queue, x.busy,
             x.waiting_for_input, x.waiting_for_room, x.rows_per_second, x.input_queue,
             x.workers, x.straggler);
  }
};

/// One queue of the pipeline (fed by its runners or read by its
/// consumers), over the span (TL-4).
struct queue_telemetry {
  std::string name;
  int32_t size = 0;
  int32_t capacity = 0;
  /// size / capacity when asked (0 for an unbounded queue).
  double fill = 0;
  /// Rows the queue stored per second, and rows it handed out per second,
  /// as the queue itself counts them (TL-4, TL-11): every producer and
  /// consumer of it, of this process or another, in a runner or not.
  double enqueue_rate = 0;
  double dequeue_rate = 0;
  /// How long, on the mean, an enqueue-side attempt (an enqueue, a push)
  /// and a dequeue-side one (a dequeue, one batch of a pull) that completed
  /// in the span waited at the queue: for room, and for rows (TL-11). An
  /// attempt served at once counts 0; 0 when none completed.
  double enqueue_wait_seconds = 0;
  double dequeue_wait_seconds = 0;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, queue_telemetry& x) {
    return f(caf::meta::type_name("quern::queue_telemetry"), x.name, x.size, x.capacity,
             x.fill, x.enqueue_rate, x.dequeue_rate, x.enqueue_wait_seconds,
             x.dequeue_wait_seconds);
  }
};

/// What pipeline::telemetry() returns.
struct pipeline_telemetry {
  /// The span the figures cover, in seconds.
  double span_seconds = 0;
  std::vector<consumer_telemetry> consumers;
  std::vector<runner_telemetry> runners;
  std::vector<queue_telemetry> queues;
  /// The stage that limits the pipeline (TL-5; empty: none, the pipeline
  /// keeps up or nothing was consumed).
  std::string limiting_stage;
  /// The verdict as one line of text (TL-5, TL-6).
  std::string verdict;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, pipeline_telemetry& x) {
    return f(caf::meta::type_name("quern::pipeline_telemetry"), x.span_seconds,
             x.consumers, x.runners, x.queues, x.limiting_stage, x.verdict);
  }
};

namespace detail {

/// Which queue a reading's queue name stands for: the node of the process
/// that owns the queue and its actor id there, as the queue itself says
/// (queue_stats; a handle of a queue of another process is a local
/// go-between, whose own node and id are not the queue's). Empty node: the
/// queue did not answer.
struct queue_ref {
  std::string name;
  std::string node;
  uint64_t actor = 0;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, queue_ref& x) {
    return f(caf::meta::type_name("quern::detail::queue_ref"), x.name, x.node, x.actor);
  }
};

/// A checkpoint member's reading, as it crosses to the chief's pipeline
/// (member_telemetry_atom, TL-10): its process's node, its figures (over the
/// span since the chief's previous reading) and which queue each of its
/// queue names is. The chief merges it into the pipeline_telemetry users
/// see, which carries no such identities.
struct member_telemetry {
  std::string node;
  pipeline_telemetry figures;
  std::vector<queue_ref> queues;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, member_telemetry& x) {
    return f(caf::meta::type_name("quern::detail::member_telemetry"), x.node, x.figures,
             x.queues);
  }
};

} // namespace detail

} // namespace quern
