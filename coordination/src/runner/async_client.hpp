#pragma once

// What an enqueue op's run is made of, behind the handles the op sees
// (async_run, blocking_run in quern/queue_runner.hpp): the rows a run
// emits, the rows it took from upstream queues, and, for an async op, the
// event-based client that asks upstream queues on the run's behalf and
// reports to its worker how the run ended. Private to coordination/;
// runner_shared.hpp lists the runner's parts.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/error.hpp>
#include <caf/event_based_actor.hpp>

#include "quern/queue_runner.hpp"

namespace quern::detail {

class worker_meter; // worker_meter.hpp

/// What one run emitted, in order: runs of single rows (one streamed push
/// each) and whole batches (one push_batch each, kept intact: no per-row
/// work in the queue).
class run_output {
public:
  void add_row(element row);
  void add_rows(std::vector<element> rows);
  void add_batch(element batch);
  bool empty() const noexcept { return pieces_.empty(); }
  void clear() noexcept {
    pieces_.clear();
    take_back = nullptr;
  }
  /// What undoes the run when its rows are refused whole (if_refused).
  std::function<void()> take_back;

  struct piece {
    bool is_batch = false;
    std::vector<element> rows; // !is_batch
    element batch;             // is_batch
  };
  std::vector<piece>& pieces() noexcept { return pieces_; }

private:
  std::vector<piece> pieces_;
};

/// Rows a run took from an upstream queue: single rows, one batch, or rows
/// kept flat (their components in one vector, `width` per row: one
/// allocation for a whole pull instead of one per row).
struct taken_rows {
  queue_actor from;
  std::vector<element> rows; // !is_batch, width == 0
  element batch;             // is_batch
  bool is_batch = false;
  std::vector<tensor> flat; // width > 0
  size_t width = 0;
  /// The numbers of the pulled units (rows, or the batch) these are, for
  /// a queue of another process that keeps them until the worker confirms
  /// it is done with them: first_unit .. first_unit + units - 1 (units 0:
  /// not numbered).
  uint64_t first_unit = 0;
  uint64_t units = 0;
  /// The rows, in order (a batch split into row views).
  std::vector<element> to_rows() &&;
};

/// Sends rows back to the front of the queues they came from (the entries
/// keep where they came from and their numbers, for receipts).
void give_back_all(caf::event_based_actor* self, std::vector<taken_rows>& taken);

/// What a pipeline checkpoint calls as it pauses a runner (docs/resume.md):
/// functions that blocking ops registered (blocking_run::on_pause) to end a
/// wait inside their run, so that their worker pauses between runs. Shared
/// by a runner and its workers; thread-safe.
class pause_hooks {
public:
  void add(std::function<void()> f) {
    std::lock_guard<std::mutex> guard{mtx_};
    hooks_.push_back(std::move(f));
  }
  /// A pause is requested: blocking workers start no run until resumed()
  /// (a run started after the hooks fired could wait again for room).
  void fire() {
    pausing_ = true;
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& f : hooks_)
      f();
  }
  void resumed() { pausing_ = false; }
  bool pausing() const { return pausing_; }

private:
  std::atomic<bool> pausing_{false};
  std::mutex mtx_;
  std::vector<std::function<void()>> hooks_;
};

using pause_hooks_ptr = std::shared_ptr<pause_hooks>;

/// The state of one blocking run (its op runs in the worker's own thread).
class blocking_state {
public:
  blocking_state() = default;
  blocking_state(const blocking_state&) = delete;
  blocking_state& operator=(const blocking_state&) = delete;

  /// Before each run.
  void reset(uint64_t index, const std::atomic<bool>* stop, pause_hooks* hooks) {
    index_ = index;
    end_ = false;
    out_.clear();
    stop_ = stop;
    hooks_ = hooks;
  }
  void on_pause(std::function<void()> f) {
    if (hooks_)
      hooks_->add(std::move(f));
  }
  void before_pause(std::function<bool()> f) { settles_.push_back(std::move(f)); }
  /// The op's before_pause functions, in the worker's thread, for a pause
  /// that waits at most `limit`: false when one of them says what it sent
  /// did not reach its queue in time.
  bool settle(caf::timespan limit) {
    pause_limit_ = limit;
    bool all = true;
    for (auto& f : settles_)
      all = f() && all;
    return all;
  }
  blocking_run& run() noexcept { return run_; }
  caf::timespan pause_limit() const noexcept { return pause_limit_; }
  uint64_t index() const noexcept { return index_; }
  bool should_stop() const noexcept {
    return stop_ != nullptr && stop_->load(std::memory_order_relaxed);
  }
  void end() noexcept { end_ = true; }
  bool ended() const noexcept { return end_; }
  run_output& out() noexcept { return out_; }

private:
  uint64_t index_ = 0;
  bool end_ = false;
  run_output out_;
  const std::atomic<bool>* stop_ = nullptr;
  pause_hooks* hooks_ = nullptr;
  std::vector<std::function<bool()>> settles_; // kept across runs
  caf::timespan pause_limit_{std::chrono::seconds(60)};
  blocking_run run_{*this};
};

/// The event-based client an async worker runs its op through: it sends the
/// op's dequeues and pulls from the worker actor, records what they took
/// (the run's sources), keeps what the run emits, and tells the worker when
/// the run completes. An async op has at most one pull out and counts its
/// dequeues, so it keeps no credit window. The worker speaks to the run
/// only through this class; the op only through its async_run.
class async_client {
public:
  async_client() = default;
  async_client(const async_client&) = delete;
  async_client& operator=(const async_client&) = delete;

  /// What the worker is told: a run completed (done, end or fail); an
  /// abandoned run's last owed answer arrived; a pull is about to go to `q`.
  void on_complete(std::function<void()> f) { on_complete_ = std::move(f); }
  void on_settled(std::function<void()> f) { on_settled_ = std::move(f); }
  void on_pull(std::function<void(const queue_actor&)> f) { on_pull_ = std::move(f); }
  /// Where the run's waits for its dequeues are told (none: not measured).
  void set_meter(worker_meter* m) noexcept { meter_ = m; }

  // -- the worker's side ----------------------------------------------------------------

  /// Starts run `index` as `self`.
  void reset(caf::event_based_actor* self, uint64_t index, const std::atomic<bool>* stop);
  async_run& run() noexcept { return run_; }

  bool completed() const noexcept { return state_ != state::running; }
  bool failed() const noexcept { return state_ == state::failed; }
  bool ended() const noexcept { return state_ == state::end; }
  bool abandoned() const noexcept { return state_ == state::abandoned; }
  caf::error& error() noexcept { return error_; }
  run_output& out() noexcept { return out_; }

  /// The rows the completed run took from upstream queues.
  std::vector<taken_rows> take_sources() { return std::move(taken_); }
  /// The worker is stopped during the run: what the run took goes back (the
  /// entries are returned, for receipts), its output is dropped, a pending
  /// pull and pending dequeues are withdrawn (their answers, rows included,
  /// go back when they come).
  std::vector<taken_rows> abandon();
  /// Whether answers are still owed to the run (a pull, dequeues).
  bool owed() const noexcept { return pull_pending_ || requests_pending_ > 0; }
  /// A pull was answered: the pull is no longer pending.
  void pull_answered() noexcept { pull_pending_ = false; }
  const queue_actor& pull_from() const noexcept { return pull_from_; }
  /// Whether the last pull asked for rows (else for one batch).
  bool pulled_rows() const noexcept { return pull_as_rows_; }
  /// Records pulled rows (or the one pulled batch), numbered `first` on for
  /// their queue's receipts (0: not numbered), as the run's sources (before
  /// the op sees them: it may move them).
  void took(const std::vector<element>& rows, uint64_t first);
  void took_batch(const element& batch, uint64_t first);
  /// Hands a pulled(xs, err) answer to the run that asked for it; false if
  /// no pull is pending.
  bool deliver_pulled(std::vector<element>& xs, caf::error& err);

  // -- the op's side (through async_run) ------------------------------------------------

  caf::event_based_actor* self() const noexcept { return self_; }
  uint64_t index() const noexcept { return index_; }
  bool should_stop() const noexcept {
    return stop_ != nullptr && stop_->load(std::memory_order_relaxed);
  }
  /// Keeps what the run emits (nothing once it was abandoned; a logic_error
  /// once it completed).
  template <class F>
  void emit(const char* what, F&& add) {
    if (abandoned())
      return;
    if (completed())
      throw std::logic_error(std::string("quern::async_run::") + what +
                             " after the run was completed");
    add(out_);
  }
  void done() { complete(state::done); }
  void end() { complete(state::end); }
  void fail(caf::error err);
  /// A dequeue (`any_size`: one row), dequeue_many or dequeue_up_to of `n`.
  void take(const queue_actor& q, batch_cut cut, int32_t n,
            std::function<void(element&)> f);
  /// Asks `q` for 1..n rows, as rows (`f` gets them) or as one batch.
  void pull(const queue_actor& q, int32_t n, bool as_rows,
            std::function<void(std::vector<element>&)> f);

private:
  /// abandoned: the worker was stopped during the run; what the run does
  /// afterwards is ignored (its sources went back).
  enum class state { running, done, end, failed, abandoned };

  void complete(state s);
  /// Runs `g`; an exception it throws fails the run (or, once the run
  /// completed, goes on to the worker's exception handler).
  template <class G>
  void guarded(G&& g) {
    try {
      g();
    } catch (...) {
      if (completed())
        throw;
      fail(error_from_exception(std::current_exception()));
    }
  }
  /// An answer to a dequeue: false if the run was abandoned (the rows went
  /// back to `q`), else the rows are recorded as this run's sources.
  bool answer_arrived(const queue_actor& q, const element& e, bool is_batch);
  /// A dequeue failed: false if the run was abandoned.
  bool answer_failed();
  void settle_if_abandoned();

  caf::event_based_actor* self_ = nullptr;
  worker_meter* meter_ = nullptr;
  uint64_t index_ = 0;
  state state_ = state::running;
  run_output out_;
  caf::error error_;
  const std::atomic<bool>* stop_ = nullptr;
  std::function<void()> on_complete_;
  std::function<void()> on_settled_;
  std::function<void(const queue_actor&)> on_pull_;
  /// The pending pull's continuation.
  std::function<void(std::vector<element>&, caf::error&)> on_pulled_;
  /// Whether the last pull asked for rows rather than a batch (its answer
  /// may come after the run was abandoned, and its rows still go back).
  bool pull_as_rows_ = true;
  /// Rows this run took from upstream queues, and where from.
  std::vector<taken_rows> taken_;
  /// Where the pending pull (if any) went; answers of dequeues still owed,
  /// and the queues they were asked of.
  queue_actor pull_from_;
  bool pull_pending_ = false;
  int32_t requests_pending_ = 0;
  std::vector<queue_actor> asked_;
  async_run run_{*this};
};

} // namespace quern::detail
