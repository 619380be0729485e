#pragma once

// TensorFlow's QueueRunner (docs/semantics.md QR-1..QR-9, docs/coordination.md): enqueue
// ops that a runner actor runs again and again, one worker each, storing what each run
// emits in one queue; the last worker to run out of input closes it.
//
//   quern::queue_runner runner{q, {quern::async_op(fill), quern::blocking_op(read)}};
//   runner.start(sys, coord.actor());  // workers registered with the coordinator
//
// An async op (async_run) must not block and runs on the scheduler; a blocking op
// (blocking_run) has a thread of its own. run_enqueue_op() runs one op by hand.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "quern/coordination.hpp"
#include "quern/element.hpp"
#include "quern/error.hpp"
#include "quern/interfaces.hpp"

namespace quern {

namespace detail {
class async_client;     // coordination/src/runner/async_client.hpp
class blocking_state;   // the same file
class runner_meters;    // coordination/src/runner/worker_meter.hpp
struct started_workers; // coordination/src/runner/runner_shared.hpp
} // namespace detail

/// One run of an asynchronous enqueue op, handed to the op by its worker (an
/// event-based actor on the scheduler). The op must not block: it may send
/// requests with self() (or the dequeue helpers below) and complete the run
/// later, from a response handler. Exactly one of done(), end() or fail()
/// completes a run; emit()/emit_many() before it add the rows this run
/// produces (zero, one or many). The worker then enqueues every row (in
/// order, as one streamed push) and starts the next run; at most
/// queue_runner_options::push_window pushes wait for the queue at a time, so
/// a worker on a full queue stays blocked. An exception thrown by the op (or by a
/// response handler it installed) fails the run with its original message.
class async_run {
public:
  /// Made by the worker, which runs the op through `client`.
  explicit async_run(detail::async_client& client) noexcept : client_(&client) {}

  /// The worker actor, to make requests: `run.self()->request(q, caf::infinite, ...)`.
  caf::event_based_actor* self() const noexcept;
  /// How many runs this worker completed before this one.
  uint64_t index() const noexcept;
  /// Whether stop was requested from the runner (the worker ends right
  /// after it anyway; useful for long asynchronous chains).
  bool should_stop() const noexcept;

  /// One row to enqueue.
  void emit(element row);
  /// Every row of `batch` (leading dimension), in order; the batch travels
  /// to the queue as one message (push_batch).
  void emit_many(element batch);
  /// Several rows, in order.
  void emit(std::vector<element> rows);

  /// For an op whose rows come from nowhere upstream (a reader, a
  /// generator): if the queue refuses this run's rows whole (a stop cancelled
  /// or withdrew its push), `take_back` is called in this worker before it
  /// ends, and the rows count as never made instead of in rows_dropped(). It
  /// undoes the run (a reader steps back to where the run began); the
  /// take-backs of several refused runs are called newest first. Rows taken
  /// from upstream queues go back there instead (docs/queues.md, "What a
  /// stop keeps").
  void if_refused(std::function<void()> take_back);

  /// The run is complete: enqueue what was emitted, then run again.
  void done();
  /// The input is exhausted (TensorFlow: the op raised OutOfRange): enqueue
  /// what was emitted, then end this worker cleanly. The last worker of a
  /// runner to end closes the queue.
  void end();
  /// The run failed. An error whose code is one of the runner's queue-closed
  /// codes ends the worker like end() (nothing emitted is enqueued); any
  /// other error is reported to the coordinator and stops the pipeline.
  void fail(caf::error err);
  void fail(const std::exception& e);
  void fail(std::exception_ptr ep);
  bool completed() const noexcept;

  /// Dequeues one element of `q` and calls `f(element&)`. A failure (e.g.
  /// out_of_range once `q` is closed and drained) fails the run with it; an
  /// exception thrown by `f` fails the run too.
  ///
  /// Rows taken with these helpers (dequeue*, pull*) are the run's sources:
  /// if the worker is stopped before its output was stored, or the queue
  /// refuses all of it, they go back to the front of the queue they came
  /// from (docs/queues.md, "What a stop keeps").
  template <class F>
  void dequeue(const queue_actor& q, F f) {
    take(q, batch_cut::any_size, 0, element_fn(std::move(f)));
  }
  /// dequeue_many(n): `f(element& batch)`.
  template <class F>
  void dequeue_many(const queue_actor& q, int32_t n, F f) {
    take(q, batch_cut::dequeue_many, n, element_fn(std::move(f)));
  }
  /// dequeue_up_to(n): `f(element& batch)` with 1..n rows.
  template <class F>
  void dequeue_up_to(const queue_actor& q, int32_t n, F f) {
    take(q, batch_cut::dequeue_up_to, n, element_fn(std::move(f)));
  }

  /// The fast path for stages that work on rows (docs/queues.md): grants
  /// `q` demand for up to `n` rows on its streaming protocol and calls
  /// `f(std::vector<element>& rows)` with 1..n rows as they are (no stacking,
  /// no copy). out_of_range once `q` is closed and drained fails the run
  /// with it. One pull per run at a time (std::logic_error otherwise). If
  /// the worker is stopped while a pull is pending, the pull is withdrawn
  /// and rows already on their way go back to `q`.
  template <class F>
  void pull(const queue_actor& q, int32_t n, F f) {
    pull_rows(q, n, std::function<void(std::vector<element>&)>(std::move(f)));
  }

  /// Like pull(), but the 1..n rows come as one batch `f(element& batch)`
  /// (a view of an enqueued batch when they are consecutive rows of it).
  template <class F>
  void pull_batch(const queue_actor& q, int32_t n, F f) {
    pull_one_batch(q, n, element_fn(std::move(f)));
  }

private:
  using element_fn = std::function<void(element&)>;
  /// A dequeue (`any_size`: one row), dequeue_many or dequeue_up_to of `n`.
  void take(const queue_actor& q, batch_cut cut, int32_t n, element_fn f);
  void pull_rows(const queue_actor& q, int32_t n,
                 std::function<void(std::vector<element>&)> f);
  void pull_one_batch(const queue_actor& q, int32_t n, element_fn f);

  detail::async_client* client_;
};

/// One run of a blocking enqueue op. The op runs in its worker's own thread
/// (a detached actor) and may block (read a file, use a blocking_queue on an
/// upstream queue). Returning completes the run; rows emitted before are
/// then enqueued. Throwing fails the run: out_of_range_error (or another
/// queue-closed code) ends the worker cleanly, anything else is reported.
class blocking_run {
public:
  /// Made by the worker, which keeps the run's state in `state`.
  explicit blocking_run(detail::blocking_state& state) noexcept : state_(&state) {}

  uint64_t index() const noexcept;
  /// Whether stop was requested: long-running ops should check it.
  bool should_stop() const noexcept;
  void emit(element row);
  void emit_many(element batch);
  void emit(std::vector<element> rows);
  /// As async_run::if_refused: `take_back` undoes this run if the queue
  /// refuses its rows whole.
  void if_refused(std::function<void()> take_back);
  /// The input is exhausted: enqueue what was emitted, then end the worker.
  void end();
  /// Registers `hurry`, called from another thread when a pipeline
  /// checkpoint pauses this op's runner (docs/resume.md): an op that may wait
  /// inside its run for something the paused pipeline will not bring (room
  /// in a queue it writes itself) makes that wait end, so that the worker
  /// pauses between runs. Kept for the worker's life; it must stay safe to
  /// call after the op is gone.
  void on_pause(std::function<void()> hurry);
  /// Registers `settle`, called in the worker's own thread when a pipeline
  /// checkpoint pauses its runner, between two runs, before the worker says
  /// it paused: an op that hands rows to a queue through a writer of its own
  /// (direct_batch_op) makes them reach the queue (queue_writer::settle), so
  /// that the checkpoint finds each of them there (RS-14). Returning false
  /// (they did not reach it in time) makes the worker count as not paused,
  /// failing the checkpoint. Kept for the worker's life.
  void before_pause(std::function<bool()> settle);
  /// In a before_pause function: how long the checkpoint pausing this
  /// worker waits for it (pipeline_options::checkpoint_pause_limit). A
  /// settle bounded by it gives up when the checkpoint does, and the worker
  /// runs on.
  caf::timespan pause_limit() const noexcept;

private:
  detail::blocking_state* state_;
};

using async_enqueue_fn = std::function<void(async_run&)>;
using blocking_enqueue_fn = std::function<void(blocking_run&)>;

/// One enqueue op: what one worker runs again and again (docs/semantics.md QR-5).
struct enqueue_op {
  /// Used in worker names `<runner name>/<op name>`; empty: `op<index>`.
  std::string name;
  /// What the worker runs: an async body (an event-based worker) or a
  /// blocking one (a worker with a thread of its own).
  std::variant<std::monostate, async_enqueue_fn, blocking_enqueue_fn> body;

  /// Whether there is a function to run.
  bool runnable() const {
    if (auto fn = std::get_if<async_enqueue_fn>(&body))
      return static_cast<bool>(*fn);
    if (auto fn = std::get_if<blocking_enqueue_fn>(&body))
      return static_cast<bool>(*fn);
    return false;
  }
};

/// An enqueue op for an event-based worker (thousands fit on two cores).
enqueue_op async_op(async_enqueue_fn fn, std::string name = {});
/// An enqueue op that may block; its worker is a detached actor (a thread).
enqueue_op blocking_op(blocking_enqueue_fn fn, std::string name = {});

/// A runner's close_op or cancel_op (QR-2): a close of the runner's queue
/// with a cancel_pending_enqueues flag (TensorFlow's defaults), a function of
/// the user's, or nothing (std::nullopt). A function runs in a thread of its
/// own, so it may block (close other queues with a blocking_queue, say);
/// like TensorFlow, the runner ignores what it throws.
class runner_op {
public:
  /// queue.close(cancel_pending_enqueues).
  runner_op(bool cancel_pending_enqueues) : close_(cancel_pending_enqueues) {}
  /// Nothing is run.
  runner_op(std::nullopt_t) {}
  /// The user's op.
  template <class F, class = std::enable_if_t<std::is_invocable_r_v<void, F&> &&
                                              !std::is_same_v<std::decay_t<F>, bool>>>
  runner_op(F fn) : fn_(std::move(fn)) {}

  /// Whether there is anything to run.
  explicit operator bool() const noexcept { return close_.has_value() || fn_ != nullptr; }
  /// The close's flag, when this op is a close of the queue.
  const std::optional<bool>& close_flag() const noexcept { return close_; }
  /// The user's function, when this op is one.
  const std::function<void()>& function() const noexcept { return fn_; }

private:
  std::optional<bool> close_;
  std::function<void()> fn_;
};

/// Options of a queue runner (docs/semantics.md QR-1, QR-2).
struct queue_runner_options {
  /// Names the runner and its workers in join's straggler list; empty: the
  /// queue's resource name.
  std::string name;
  /// close_op: run once, when the last worker ran out of input (QR-6).
  /// Default: close the queue (false: TF's queue.close()); nullopt: leave
  /// the queue open.
  runner_op close_op = false;
  /// cancel_op: run once per start, on the first stop or error (QR-7,
  /// QR-8). Default: close the queue with cancel_pending_enqueues (TF's
  /// close(cancel_pending_enqueues=True)); nullopt: nothing.
  runner_op cancel_op = true;
  /// Error codes that mean "the input is exhausted / the queue is closed"
  /// (TF's queue_closed_exception_types); must not be empty. A common
  /// choice when enqueue ops dequeue from other queues is {out_of_range,
  /// cancelled}.
  std::vector<error_code> queue_closed_codes{error_code::out_of_range};
  /// Forgetting to start the runners is the most reported TensorFlow hang.
  /// While every runner made for a queue is still unstarted, a dequeue or
  /// pull of the queue that waited this long fails with
  /// failed_precondition_error `<queue> has N queue runner(s) that were
  /// never started: ...` instead of waiting forever. The queue takes the
  /// shortest of its runners' values.
  caf::timespan starvation_timeout = std::chrono::seconds(10);
  /// How many runs' rows a worker may have handed to the queue without an
  /// acknowledgement yet, so that the next run works while the queue stores
  /// (rows are stored in run order either way). 1: TensorFlow's strict
  /// run-then-enqueue alternation.
  int32_t push_window = 2;
};

/// TensorFlow's QueueRunner: a queue, a list of enqueue ops, a close and a
/// cancel behaviour. A value type; copies share one runner. start() spawns a
/// runner actor that supervises one worker per enqueue op:
/// - a worker whose run ended the input (end(), or a queue-closed error)
///   ends; the last one to end runs close_op, and ends once it is done
///   (QR-6);
/// - any other error is kept in exceptions_raised(), reported to the
///   coordinator (request_stop(error)), and the queue is closed with
///   cancel_op; the other workers are stopped (QR-7);
/// - a stop (from the coordinator, or the coordinator going down) closes the
///   queue with cancel_op, so no worker stays blocked on a full queue, and
///   stops every worker (QR-8);
/// - the runner actor ends when every worker has ended and its close is
///   done. Unlike TensorFlow, no thread waits for a stop request: when the
///   data runs out the runner ends by itself and join returns.
/// Started without a coordinator, the runner is stopped when the last copy
/// of this object is destroyed (so a program cannot hang at exit).
class queue_runner {
public:
  /// Throws invalid_argument_error `Must provide queue and enqueue_ops.`
  /// (QR-1) for an invalid queue or no ops, and for an empty
  /// queue_closed_codes (QR-2).
  queue_runner(queue_actor queue, std::vector<enqueue_op> ops,
               queue_runner_options opts = {});

  const queue_actor& queue() const;
  const std::string& name() const;
  size_t num_ops() const;

  /// create_threads(start=True) (QR-4): spawns the runner actor and one
  /// worker per enqueue op and returns what TensorFlow returns: the workers,
  /// in op order, then, with a coordinator, the closer (`<name>/closer`, the
  /// actor that runs cancel_op when stop is requested). With a coordinator,
  /// each of them is registered with it (so join waits for them and names
  /// stragglers) before this returns. The runner actor that supervises them
  /// is not among them (see runner()). Returns {} if a previous start is
  /// still running. Resets exceptions_raised (QR-9).
  std::vector<caf::actor> start(caf::actor_system& sys,
                                const coordinator_actor& coord = {});

  /// The enqueue ops (TensorFlow's enqueue_ops).
  const std::vector<enqueue_op>& enqueue_ops() const;

  /// Runs enqueue op `index` once by hand, as `sess.run(qr.enqueue_ops[i])`:
  /// what the run emitted is enqueued (waiting while the queue is full).
  /// Returns false when the run ended the input with end(); throws the
  /// run's error as it is (an out_of_range_error `Reached limit of 1` of an
  /// epoch-limited producer, as TensorFlow raises it) and any error of the
  /// queue.
  bool run_enqueue_op(caf::actor_system& sys, size_t index);

  /// The runner actor of the last start (invalid before).
  caf::actor runner() const;
  /// Whether start() created a runner actor at least once.
  bool started() const;
  /// Whether a worker of the last start is still alive (TensorFlow's runs
  /// per session): once the handles start() returned are down, false.
  bool running() const;
  /// Errors the workers raised in the last start, other than queue-closed
  /// ones and the cancellations caused by the runner's own stop (QR-7, QR-9;
  /// unlike TensorFlow also filled when a coordinator is used).
  std::vector<caf::error> exceptions_raised() const;
  /// Rows the workers of the last start emitted that the queue refused (a
  /// stop cancels it, or it was closed) and that could not go back to an
  /// upstream queue: rows with no upstream queue (a reader's), or a run's
  /// rows of which the queue had stored a part (a run larger than its
  /// capacity; docs/semantics.md Q-25). A run's rows are one push, stored
  /// whole or refused whole, so a stage fed by upstream queues drops none at
  /// a stop. TensorFlow drops these silently; see docs/queues.md, "What a
  /// stop keeps". Final once the handles start() returned are down.
  int64_t rows_dropped() const;
  /// Sends stop to the runner actor of the last start (no-op if ended).
  void stop() const;

  /// Whether the next start() measures where its workers' time goes
  /// (docs/input.md, "Where the pipeline waits"): on by default; a
  /// pipeline whose options turn telemetry off turns it off.
  void set_measured(bool on);
  /// The figures of the last start's workers (read by pipeline::telemetry).
  std::shared_ptr<detail::runner_meters> meters() const;
  /// The workers of the last start, as a pipeline's checkpoint pauses them
  /// (none before a start).
  std::shared_ptr<const detail::started_workers> workers_to_pause() const;

private:
  /// The runner's name: the given one, or the queue's resource name.
  void resolve_name(caf::scoped_actor& self);

  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace quern
