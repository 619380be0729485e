#pragma once

// What the parts of a queue runner share (private to coordination/): the
// messages between its handle, its actor and its workers, the stop signal,
// and how one part starts the others. The runner's state (live workers,
// errors, rows dropped) is its actor's. The parts:
//   async_client.hpp    what a run is made of: its output, its sources, the
//                       async op's client (the workers' way to a run)
//   run.cpp             async_run, blocking_run, async_client (what an op sees)
//   runner_pipe.*       how a worker pushes its runs' rows and ends
//   runner_workers.cpp  the async and the blocking worker
//   runner_actor.cpp    the runner actor: starts, watches and stops workers
//   queue_runner.cpp    the queue_runner handle
//   worker_meter.*      where a worker's time goes (busy, waiting for input or
//                       room), read by pipeline::telemetry

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/timespan.hpp>

#include "quern/queue_runner.hpp"

#include "async_client.hpp"
#include "worker_meter.hpp"

namespace quern::detail {

/// worker -> itself: start the next run.
using worker_run_atom = caf::atom_constant<caf::atom("qr_run")>;

/// worker -> runner: (worker_end, worker id, rows dropped, exit reason) ->
/// bool. A worker asks it before it quits and quits once answered, so that
/// once the worker's handle is down, the runner has counted it (local
/// messages keep causal order: a request its handle makes after seeing the
/// worker down comes later). The runner answers the last worker to run out
/// of input only once close_op is done (QR-6: TensorFlow's last thread runs
/// it before it ends), the others at once. A worker ended by an exception
/// sends it one-way and does not wait.
using worker_end_atom = caf::atom_constant<caf::atom("qr_end")>;
/// handle -> runner: (runner_status) -> (live workers, rows dropped, errors).
using runner_status_atom = caf::atom_constant<caf::atom("qr_status")>;

/// pipeline -> worker: (worker_pause, true, limit) -> true once the worker
/// is between runs and no answer is owed to a run: it starts no run and
/// sends no push until (worker_pause, false, limit). A run of an async op in
/// progress is abandoned (what it took goes back, its pulls are withdrawn)
/// and runs again after the pause; a blocking worker answers once its run is
/// done, or deadline_exceeded when the rows its op wrote did not reach their
/// queue within `limit` (docs/resume.md).
using worker_pause_atom = caf::atom_constant<caf::atom("qr_wpause")>;

/// The runner actor's own interface: the public one, its handle's status
/// request and its workers' end reports (process-local: the runner lives
/// where its handle is, even when its queue is remote).
using runner_impl_actor = queue_runner_actor::extend<
    caf::replies_to<runner_status_atom>::with<int32_t, int64_t, std::vector<caf::error>>,
    caf::replies_to<worker_end_atom, uint64_t, int64_t, caf::error>::with<bool>>;

/// The one piece of memory a runner shares with its workers: its stop
/// signal. A blocking op asks should_stop() from inside its run, while its
/// worker's thread is busy in the op, so no message could reach it there.
/// The runner (and quern::actor_system at exit) sets it; workers only read
/// it. Everything else (live workers, errors, rows dropped) is the runner
/// actor's state, reported to it by message.
using stop_flag = std::shared_ptr<std::atomic<bool>>;

/// What a runner actor publishes as it ends, for its handle to read once the
/// actor can no longer answer (written once, by the actor).
class runner_outcome {
public:
  /// The first call wins; later ones are ignored.
  void publish(int64_t rows_dropped, std::vector<caf::error> exceptions);
  bool published() const;
  /// Waits up to `limit` for the outcome; false if it did not come.
  bool wait(caf::timespan limit, int64_t& rows_dropped,
            std::vector<caf::error>& exceptions) const;

private:
  mutable std::mutex mtx_;
  mutable std::condition_variable cv_;
  bool published_ = false;
  int64_t rows_dropped_ = 0;
  std::vector<caf::error> exceptions_;
};

/// Whether a worker's exit reason is an error to report (QR-6, QR-7): not
/// the end of its input, not one of `closed_codes`, and not a cancellation
/// that the runner's own cancel_op caused during a stop (`stopping`).
bool is_reportable(const std::vector<error_code>& closed_codes, bool stopping,
                   const caf::error& reason);

/// What a worker is started with.
struct worker_settings {
  queue_actor queue;
  /// Pushes that may wait for their ack (queue_runner_options::push_window).
  int32_t window = 2;
  stop_flag stop;
  /// The runner's queue_closed_codes.
  std::vector<error_code> closed_codes;
  /// Where the worker reports its end (none for an op run by hand).
  caf::actor runner;
  /// Runs to make at most (0: no limit): 1 for an op run by hand.
  uint64_t max_runs = 0;
  /// `<runner>/<op>`: the origin of its errors.
  std::string name;
  /// Where its blocking op registers what a checkpoint's pause calls.
  pause_hooks_ptr hooks;
  /// Where it keeps its figures (none: not measured).
  worker_meter_ptr meter;
};

/// Spawns the worker of `op`: an async op on CAF's scheduler, a blocking op
/// in a thread of its own (it may block).
caf::actor spawn_worker(caf::actor_system& sys, const enqueue_op& op, worker_settings s);
/// The same, monitored by `parent` (the runner actor).
caf::actor spawn_monitored_worker(caf::local_actor* parent, const enqueue_op& op,
                                  worker_settings s);

/// The workers of a runner's start, as a pipeline's checkpoint pauses them:
/// asked directly (worker_pause_atom), not through the runner actor, which
/// would add a message each way while every reader waits.
struct started_workers {
  /// Fired before the workers are asked to pause, reset before they run again.
  pause_hooks_ptr hooks;
  /// Held weakly (a worker lives until its work is done), each with its
  /// name, `<runner>/<op>`.
  std::vector<std::pair<caf::actor_addr, std::string>> workers;
};

/// What the runner actor is started with.
struct runner_config {
  queue_actor queue;
  std::vector<enqueue_op> ops;
  queue_runner_options opts;
  std::string name;
  coordinator_actor coord;
  stop_flag stop;
  std::shared_ptr<runner_outcome> outcome;
  pause_hooks_ptr hooks;
  /// Its workers' meters (docs/input.md, "Where the pipeline waits").
  std::shared_ptr<runner_meters> meters;
};

/// Spawns the runner actor (runner_actor.cpp).
runner_impl_actor spawn_runner(caf::actor_system& sys, runner_config cfg);

/// `<runner>/<op name>`, or `<runner>/op<i>` for an op without a name.
std::string op_name(const std::string& runner_name, const std::vector<enqueue_op>& ops,
                    size_t i);

} // namespace quern::detail
