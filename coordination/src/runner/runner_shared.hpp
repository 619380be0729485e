#pragma once

// What the parts of a queue runner share (private to actors/): the messages
// between its handle, its actor and its workers, the stop signal, the access
// its workers have to an async_run, and how one part starts the others. The
// runner's state (live workers, errors, rows dropped) is its actor's. The parts:
//   run.cpp             async_run, blocking_run, run_output (what an op sees)
//   runner_pipe.*       how a worker pushes its runs' rows and ends
//   runner_workers.cpp  the async and the blocking worker
//   runner_actor.cpp    the runner actor: starts, watches and stops workers
//   queue_runner.cpp    the queue_runner handle

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

namespace quern::detail {

/// worker -> itself: start the next run.
using worker_run_atom = caf::atom_constant<caf::atom("qr_run")>;

/// worker -> runner: (worker_end, worker id, rows dropped, exit reason). A
/// worker sends it just before it quits, so that once the worker's handle is
/// down, the runner has counted it (local messages keep causal order: a
/// request its handle makes after seeing the worker down comes later).
using worker_end_atom = caf::atom_constant<caf::atom("qr_end")>;
/// handle -> runner: (runner_status) -> (live workers, rows dropped, errors).
using runner_status_atom = caf::atom_constant<caf::atom("qr_status")>;

/// The runner actor's own interface: the public one, its handle's status
/// request and its workers' end reports (process-local: the runner lives
/// where its handle is, even when its queue is remote).
using runner_impl_actor = queue_runner_actor::extend<
    caf::replies_to<runner_status_atom>::with<int32_t, int64_t, std::vector<caf::error>>,
    caf::reacts_to<worker_end_atom, uint64_t, int64_t, caf::error>>;

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

struct async_worker_access {
  static void reset(async_run& r, caf::event_based_actor* self, uint64_t index,
                    const std::atomic<bool>* stop) {
    r.self_ = self;
    r.index_ = index;
    r.state_ = async_run::state::running;
    r.out_.clear();
    r.error_ = caf::error{};
    r.stop_ = stop;
    r.taken_.clear();
  }
  static void set_on_complete(async_run& r, std::function<void()> f) {
    r.on_complete_ = std::move(f);
  }
  static void set_on_settled(async_run& r, std::function<void()> f) {
    r.on_settled_ = std::move(f);
  }
  static void set_on_pull(async_run& r, std::function<void(const queue_actor&)> f) {
    r.on_pull_ = std::move(f);
  }
  /// The rows the completed run took from upstream queues.
  static std::vector<taken_rows> take_sources(async_run& r) {
    return std::move(r.taken_);
  }
  /// The worker is stopped during the run: what the run took goes back (the
  /// entries are returned, for receipts), its output is dropped, a pending
  /// pull and pending dequeues are withdrawn (their answers, rows included,
  /// go back when they come).
  static std::vector<taken_rows> abandon(async_run& r) {
    r.state_ = async_run::state::abandoned;
    r.out_.clear();
    auto sources = std::move(r.taken_);
    r.taken_.clear();
    give_back_all(r.self_, sources);
    if (r.on_pulled_) {
      r.on_pulled_ = nullptr;
      r.self_->send(r.pull_from_, unpull_atom::value);
    }
    for (auto& q : r.asked_)
      r.self_->send(q, unpull_atom::value);
    return sources;
  }
  /// Whether answers are still owed to the run (a pull, dequeues).
  static bool owed(const async_run& r) {
    return r.pull_pending_ || r.requests_pending_ > 0;
  }
  /// A pull was answered: the pull is no longer pending.
  static void pull_answered(async_run& r) { r.pull_pending_ = false; }
  static const queue_actor& pull_from(const async_run& r) { return r.pull_from_; }
  static bool abandoned(const async_run& r) { return r.abandoned(); }
  /// Records pulled rows, numbered `first` on for their queue's receipts
  /// (0: not numbered), as the run's sources (before the op sees them: it
  /// may move them).
  static void took(async_run& r, const std::vector<element>& rows, uint64_t first) {
    taken_rows t;
    t.from = r.pull_from_;
    t.first_unit = first;
    t.units = first > 0 ? rows.size() : 0;
    // Kept flat: one allocation per pull, not one per row (a queue's rows
    // all have its number of components).
    t.width = rows.front().size();
    if (t.width == 0) {
      t.rows = rows;
      r.taken_.push_back(std::move(t));
      return;
    }
    t.flat.reserve(rows.size() * t.width);
    for (auto& e : rows) {
      if (e.size() != t.width) { // cannot happen for rows of one queue
        t.flat.clear();
        t.width = 0;
        t.rows = rows;
        break;
      }
      t.flat.insert(t.flat.end(), e.components.begin(), e.components.end());
    }
    r.taken_.push_back(std::move(t));
  }
  static void took_batch(async_run& r, const element& batch, uint64_t first) {
    taken_rows t;
    t.from = r.pull_from_;
    t.first_unit = first;
    t.units = first > 0 ? 1 : 0;
    t.batch = batch;
    t.is_batch = true;
    r.taken_.push_back(std::move(t));
  }
  /// Sends rows back to the front of the queues they came from (the
  /// entries keep where they came from and their numbers, for receipts).
  static void give_back_all(caf::event_based_actor* self,
                            std::vector<taken_rows>& taken) {
    for (auto& t : taken) {
      auto from = t.from;
      auto rows = std::move(t).to_rows();
      if (from && !rows.empty())
        self->send(from, give_back_atom::value, std::move(rows));
    }
  }
  static bool failed(const async_run& r) { return r.state_ == async_run::state::failed; }
  /// Hands a pulled(xs, err) answer to the run that asked for it; false if
  /// no pull is pending.
  static bool deliver_pulled(async_run& r, std::vector<element>& xs, caf::error& err) {
    if (!r.on_pulled_)
      return false;
    auto f = std::move(r.on_pulled_);
    r.on_pulled_ = nullptr;
    f(xs, err);
    return true;
  }
  /// Whether the last pull asked for rows (else for one batch).
  static bool pulled_rows(const async_run& r) { return r.pull_as_rows_; }
  static bool ended(const async_run& r) { return r.state_ == async_run::state::end; }
  static caf::error& error(async_run& r) { return r.error_; }
  static run_output& out(async_run& r) { return r.out_; }

  static void reset(blocking_run& r, uint64_t index, const std::atomic<bool>* stop) {
    r.index_ = index;
    r.end_ = false;
    r.out_.clear();
    r.stop_ = stop;
  }
  static bool ended(const blocking_run& r) { return r.end_; }
  static run_output& out(blocking_run& r) { return r.out_; }
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
};

/// Spawns the worker of `op`: an async op on CAF's scheduler, a blocking op
/// in a thread of its own (it may block).
caf::actor spawn_worker(caf::actor_system& sys, const enqueue_op& op, worker_settings s);
/// The same, monitored by `parent` (the runner actor).
caf::actor spawn_monitored_worker(caf::local_actor* parent, const enqueue_op& op,
                                  worker_settings s);

/// What the runner actor is started with.
struct runner_config {
  queue_actor queue;
  std::vector<enqueue_op> ops;
  queue_runner_options opts;
  std::string name;
  coordinator_actor coord;
  stop_flag stop;
  std::shared_ptr<runner_outcome> outcome;
};

/// Spawns the runner actor (runner_actor.cpp).
runner_impl_actor spawn_runner(caf::actor_system& sys, runner_config cfg);

/// `<runner>/<op name>`, or `<runner>/op<i>` for an op without a name.
std::string op_name(const std::string& runner_name, const std::vector<enqueue_op>& ops,
                    size_t i);

} // namespace quern::detail
