#pragma once

// How a queue runner's worker pushes the rows of its runs to the queue and
// ends (private to coordination/; runner_shared.hpp lists the runner's parts).

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/event_based_actor.hpp>
#include <caf/scheduled_actor.hpp>

#include "quern/detail/receipts.hpp"
#include "runner_shared.hpp"

namespace quern::detail {

/// What a worker's runs pulled from queues of other processes, confirmed
/// to each such queue (taken) once the worker is done with it: a run's
/// sources when its output was stored, dropped or given back, rows given
/// back at once. Until then the queue's side keeps them, and gives them
/// back if this process is lost (docs/distributed.md). A queue of this
/// process keeps nothing and is told nothing.
class upstream_receipts {
public:
  /// Before each pull: a queue of another process is told taken(0) before
  /// the first, so that its side keeps what this worker is sent.
  void pulling(caf::event_based_actor* self, const queue_actor& q);
  /// `n` units came from `q`: the number of the first, or 0 for a queue
  /// that is told nothing.
  uint64_t arrive(const queue_actor& q, uint64_t n);
  /// The worker is done with units first .. first + n - 1 of `q` / with
  /// `ts` (sent back first, if they go back): the queues they came from
  /// learn how far that confirms their units.
  void release(caf::event_based_actor* self, const queue_actor& q, uint64_t first,
               uint64_t n);
  void release(caf::event_based_actor* self, const std::vector<taken_rows>& ts);
  /// The queues told anything: before the worker ends, one answered request
  /// to each makes sure the last confirmation arrived before the worker's
  /// end does (which their side learns straight from the middleman).
  std::vector<queue_actor> told() const;

private:
  struct queue_receipts {
    queue_actor queue;
    remote_queue_actor receipts; // where taken goes (a queue of another process)
    bool confirms = false;
    prefix_receipts units;
  };
  /// Marks the units done with: their queue's receipts, or null for a
  /// queue told nothing.
  queue_receipts* mark(const queue_actor& q, uint64_t first, uint64_t n);
  void tell(caf::event_based_actor* self, queue_receipts& qr);
  std::map<caf::actor_addr, queue_receipts> queues_;
};

// A worker ends by quitting: normally when its input ended, with
// user_shutdown when stopped, and with the run's error otherwise. Its runner
// monitors it and reads the reason.

/// How a worker streams its rows: each run's rows are one push; up to
/// `push_window` pushes may wait for their ack while the next run already
/// works (rows are still stored in run order: one sender, one queue).
///
/// What a stop keeps (docs/queues.md): a run's rows taken from upstream
/// queues (its sources) are kept until the queue acknowledged the run's
/// push. The queue stores a push that fits its capacity whole or not at
/// all, so a push cancelled or withdrawn at a stop stored nothing, and the
/// sources go back to the front of the queues they came from. Rows that
/// cannot go back (no sources, or part of a run was stored: a run larger
/// than the capacity, or one a shuffle or priority queue had to store in
/// part) are counted in rows_dropped, which the worker reports to its
/// runner when it ends.
struct push_pipe {
  queue_actor queue;
  int32_t window = 2;
  /// Pushes sent and not acknowledged yet, in order: the rows each carried.
  /// The queue answers one sender's pushes in order (it serves enqueue
  /// attempts in order, and a close or unpush cancels them in order).
  std::deque<int64_t> pushes;
  /// The runs whose push is not acknowledged yet (one push per run, in
  /// the order of `pushes`).
  struct run_in_flight {
    int64_t stored = 0;
    int64_t refused = 0;
    std::vector<taken_rows> sources;
    std::function<void()> take_back; // the op's undo (if_refused)
  };
  std::deque<run_in_flight> runs_in_flight;
  /// Set when the worker is done: it quits with this reason once nothing is
  /// owed to it (none: the input is exhausted; user_shutdown: stopped or
  /// max_runs were run; an error).
  std::optional<caf::error> finish;
  bool withdrawn = false;  // unpush sent
  bool run_active = false; // an asynchronous run has not completed yet
  bool run_scheduled = false;
  uint64_t runs = 0;
  /// Runs to make at most (0: no limit): 1 for an op run by hand.
  uint64_t max_runs = 0;
  /// The runner's stop signal, its queue-closed codes, the runner to report
  /// the end to (none for an op run by hand), and this worker's name,
  /// `<runner>/<op>`.
  stop_flag stop;
  std::vector<error_code> closed_codes;
  caf::actor runner;
  std::string name;
  /// Rows refused by the queue that could not go back (reported at the end).
  int64_t rows_dropped = 0;
  /// Refused runs the op takes back (if_refused), oldest first, with their
  /// rows: called newest first before the worker reports its end.
  std::vector<std::pair<int64_t, std::function<void()>>> take_backs;
  /// The end was reported (record_end or end_worker, once).
  bool ended = false;
  /// The worker waits for its upstream queues before it ends.
  bool ending = false;
  upstream_receipts upstream;
  /// A pipeline checkpoint paused the worker (worker_pause_atom): no run
  /// starts until it is resumed.
  bool paused = false;
  pause_hooks_ptr hooks;
  /// The worker's figures (none: not measured).
  worker_meter_ptr meter;
  /// Pause requests answered once an abandoned run is owed nothing.
  std::vector<caf::typed_response_promise<bool>> pause_waiters;
  /// The queue is of another process: a pause with pushes unanswered is
  /// answered once a barrier sent after them came back (barrier_atom), so
  /// that no row of this worker is on the wire when a checkpoint of several
  /// processes takes that queue's rows (RS-12): each is stored, or waits for
  /// room among the queue's waiting rows.
  bool remote_queue = false;
  uint64_t barrier = 0;         // the last barrier sent
  bool barrier_pending = false; // it has not come back yet

  bool may_run() const {
    return !finish && !run_active && !paused &&
           static_cast<int32_t>(pushes.size()) < window;
  }
};

/// The rows of a run's output.
int64_t output_rows(run_output& out);
/// The op takes back its refused runs, newest first (if_refused); a
/// take-back that throws leaves its rows counted as dropped.
void take_back_refused(push_pipe& p);

/// Every worker ends here: it reports its end (its rows dropped and its exit
/// reason) to its runner and quits once the runner answered, so that once
/// the handles start() returned are down, the runner's counts are up to date
/// and, after the last worker, close_op is done (TensorFlow's threads do the
/// same before they die). record_end is the report of a worker ended by an
/// exception, sent one-way: that worker quits at once.
void record_end(caf::actor_id self, push_pipe& p, const caf::error& reason);
void end_worker(caf::event_based_actor* self, push_pipe& p, caf::error reason);

/// The settings every worker's pipe starts with; an exception that escapes
/// the worker ends it like any other error.
template <class Self>
void init_pipe(Self* self, push_pipe& p, worker_settings s) {
  p.queue = std::move(s.queue);
  p.window = std::max(s.window, int32_t{1});
  p.stop = std::move(s.stop);
  p.closed_codes = std::move(s.closed_codes);
  p.runner = std::move(s.runner);
  p.max_runs = s.max_runs;
  p.name = std::move(s.name);
  p.hooks = std::move(s.hooks);
  p.meter = std::move(s.meter);
  p.remote_queue = detail::confirms_taking(p.queue);
  // A queue that is gone answers no push: the worker must not wait for it.
  self->monitor(p.queue);
  self->set_exception_handler([&p](caf::scheduled_actor* s, std::exception_ptr& ep) {
    auto err = keep_exception_message(s, ep);
    record_end(s->id(), p, err);
    return err;
  });
}

/// Quits once the worker is finishing and nothing is owed to it: no push
/// unacknowledged, and (`owed`) no answer of an upstream queue pending.
void try_finish(caf::event_based_actor* self, push_pipe& p, bool owed);
/// The worker ends with `reason` (a stop or an error): pushes still pending
/// are withdrawn. The first reason is kept.
void wind_down(caf::event_based_actor* self, push_pipe& p, caf::error reason);
/// A run failed: a queue-closed code ends the input, any other error winds
/// the worker down.
void run_failed(caf::event_based_actor* self, push_pipe& p, caf::error err);
/// Schedules the next run if the pipe has room for it.
void schedule_run(caf::event_based_actor* self, push_pipe& p);
/// After a run: push its rows, then end or schedule the next run.
void after_run(caf::event_based_actor* self, push_pipe& p, run_output& out, bool ended,
               std::vector<taken_rows> sources);
/// A push was acknowledged.
void on_pushed(caf::event_based_actor* self, push_pipe& p, int32_t stored,
               caf::error& err);
/// The worker's queue went down: no pending push will be answered.
void on_queue_down(caf::event_based_actor* self, push_pipe& p);

} // namespace quern::detail
