#include "quern/queue_runner.hpp"

#include "quern/actor_system.hpp"

#include <algorithm>
#include <deque>
#include <iostream>
#include <iterator>
#include <mutex>
#include <set>
#include <unordered_map>

#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace quern {

namespace {

/// worker -> itself: start the next run.
using worker_run_atom = caf::atom_constant<caf::atom("qr_run")>;

} // namespace

namespace detail {

/// What a runner actor shares with its queue_runner handle and its workers
/// (process-local).
struct runner_shared {
  std::atomic<bool> stop{false};
  /// The runner actor is alive.
  std::atomic<bool> running{false};
  /// Workers alive (TensorFlow's runs per session): each counts itself out.
  std::atomic<int> live_workers{0};
  caf::actor_addr runner;
  /// The runner's queue_closed_codes.
  std::vector<error_code> closed_codes;
  /// Rows the workers emitted that their queue refused and that did not go
  /// back to a queue they came from (queue_runner::rows_dropped()).
  std::atomic<int64_t> rows_dropped{0};
  mutable std::mutex mtx;
  std::vector<caf::error> exceptions;
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
  /// The rows the completed run took from upstream queues.
  static std::vector<taken_rows> take_sources(async_run& r) {
    return std::move(r.taken_);
  }
  /// The worker is stopped during the run: what the run took goes back, its
  /// output is dropped, a pending pull and pending dequeues are withdrawn
  /// (their answers, rows included, go back when they come).
  static void abandon(async_run& r) {
    r.state_ = async_run::state::abandoned;
    r.out_.clear();
    give_back_all(r.self_, std::move(r.taken_));
    r.taken_.clear();
    if (r.on_pulled_ || r.on_pulled_batch_) {
      r.on_pulled_ = nullptr;
      r.on_pulled_batch_ = nullptr;
      r.self_->send(r.pull_from_, unpull_atom::value);
    }
    for (auto& q : r.asked_)
      r.self_->send(q, unpull_atom::value);
  }
  /// Whether answers are still owed to the run (a pull, dequeues).
  static bool owed(const async_run& r) {
    return r.pull_pending_ || r.requests_pending_ > 0;
  }
  /// A pull was answered: the pull is no longer pending.
  static void pull_answered(async_run& r) { r.pull_pending_ = false; }
  static const queue_actor& pull_from(const async_run& r) { return r.pull_from_; }
  static bool abandoned(const async_run& r) { return r.abandoned(); }
  /// Records pulled rows as the run's sources (before the op sees them: it
  /// may move them).
  static void took(async_run& r, const std::vector<element>& rows) {
    taken_rows t;
    t.from = r.pull_from_;
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
  static void took_batch(async_run& r, const element& batch) {
    taken_rows t;
    t.from = r.pull_from_;
    t.batch = batch;
    t.is_batch = true;
    r.taken_.push_back(std::move(t));
  }
  /// Sends rows back to the front of the queues they came from.
  static void give_back_all(caf::event_based_actor* self, std::vector<taken_rows> taken) {
    for (auto& t : taken) {
      auto from = t.from;
      auto rows = std::move(t).to_rows();
      if (from && !rows.empty())
        self->send(from, give_back_atom::value, std::move(rows));
    }
  }
  static bool failed(const async_run& r) { return r.state_ == async_run::state::failed; }
  /// Hands a pulled(rows, err) answer to the run that asked for it; false if
  /// no pull is pending.
  static bool deliver_pulled(async_run& r, std::vector<element>& rows, caf::error& err) {
    if (!r.on_pulled_)
      return false;
    auto f = std::move(r.on_pulled_);
    r.on_pulled_ = nullptr;
    f(rows, err);
    return true;
  }
  static bool deliver_pulled_batch(async_run& r, element& batch, caf::error& err) {
    if (!r.on_pulled_batch_)
      return false;
    auto f = std::move(r.on_pulled_batch_);
    r.on_pulled_batch_ = nullptr;
    f(batch, err);
    return true;
  }
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

} // namespace detail

// -- run_output -----------------------------------------------------------------------

namespace detail {

void run_output::add_row(element row) {
  if (pieces_.empty() || pieces_.back().is_batch)
    pieces_.emplace_back();
  pieces_.back().rows.push_back(std::move(row));
}

void run_output::add_rows(std::vector<element> rows) {
  if (rows.empty())
    return;
  if (pieces_.empty() || pieces_.back().is_batch) {
    pieces_.emplace_back();
    pieces_.back().rows = std::move(rows);
    return;
  }
  auto& dst = pieces_.back().rows;
  for (auto& r : rows)
    dst.push_back(std::move(r));
}

void run_output::add_batch(element batch) {
  if (batch.batch_size() == 0) // validates: throws for a non-batch
    return;
  piece p;
  p.is_batch = true;
  p.batch = std::move(batch);
  pieces_.push_back(std::move(p));
}

std::vector<element> taken_rows::to_rows() && {
  if (width > 0) {
    std::vector<element> out;
    out.reserve(flat.size() / width);
    for (size_t i = 0; i + width <= flat.size(); i += width)
      out.emplace_back(
          std::vector<tensor>(std::make_move_iterator(flat.begin() + i),
                              std::make_move_iterator(flat.begin() + i + width)));
    return out;
  }
  if (!is_batch)
    return std::move(rows);
  std::vector<element> out;
  if (batch.components.empty())
    return out;
  auto n = batch.batch_size();
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out.push_back(batch.row(i));
  return out;
}

} // namespace detail

// -- async_run / blocking_run ---------------------------------------------------------

bool async_run::should_stop() const noexcept {
  return stop_ != nullptr && stop_->load(std::memory_order_relaxed);
}

void async_run::emit(element row) {
  if (abandoned())
    return;
  if (completed())
    throw std::logic_error("quern::async_run::emit after the run was completed");
  out_.add_row(std::move(row));
}

void async_run::emit_many(element batch) {
  if (abandoned())
    return;
  if (completed())
    throw std::logic_error("quern::async_run::emit_many after the run was completed");
  out_.add_batch(std::move(batch));
}

void async_run::emit(std::vector<element> rows) {
  if (abandoned())
    return;
  if (completed())
    throw std::logic_error("quern::async_run::emit after the run was completed");
  out_.add_rows(std::move(rows));
}

void async_run::complete(state s) {
  if (abandoned()) // the worker was stopped; nothing the run does counts
    return;
  if (completed())
    throw std::logic_error("quern::async_run completed twice (done/end/fail)");
  state_ = s;
  if (on_complete_)
    on_complete_();
}

void async_run::done() {
  complete(state::done);
}

void async_run::end() {
  complete(state::end);
}

void async_run::fail(caf::error err) {
  if (!err)
    err = make_error(error_code::unknown, "async_run::fail without an error");
  if (abandoned())
    return;
  if (completed())
    throw std::logic_error("quern::async_run completed twice (done/end/fail)");
  error_ = std::move(err);
  complete(state::failed);
}

void async_run::fail(const std::exception& e) {
  if (auto op = dynamic_cast<const op_error*>(&e))
    fail(op->to_error());
  else
    fail(make_error(error_code::unknown, e.what()));
}

void async_run::fail(std::exception_ptr ep) {
  fail(error_from_exception(ep));
}

void async_run::request_sent(const queue_actor& q) {
  ++requests_pending_;
  if (std::find(asked_.begin(), asked_.end(), q) == asked_.end())
    asked_.push_back(q);
}

void async_run::pull_sent(const queue_actor& q) {
  pull_from_ = q;
  pull_pending_ = true;
}

bool async_run::answer_arrived(const queue_actor& q, const element& e, bool is_batch) {
  if (--requests_pending_ == 0)
    asked_.clear();
  detail::taken_rows t;
  t.from = q;
  t.is_batch = is_batch;
  if (is_batch)
    t.batch = e;
  else
    t.rows.push_back(e);
  if (abandoned()) {
    std::vector<detail::taken_rows> back;
    back.push_back(std::move(t));
    detail::async_worker_access::give_back_all(self_, std::move(back));
    if (!detail::async_worker_access::owed(*this) && on_settled_)
      on_settled_();
    return false;
  }
  taken_.push_back(std::move(t));
  return true;
}

bool async_run::answer_failed() {
  if (--requests_pending_ == 0)
    asked_.clear();
  if (abandoned()) {
    if (!detail::async_worker_access::owed(*this) && on_settled_)
      on_settled_();
    return false;
  }
  return true;
}

bool blocking_run::should_stop() const noexcept {
  return stop_ != nullptr && stop_->load(std::memory_order_relaxed);
}

void blocking_run::emit(std::vector<element> rows) {
  out_.add_rows(std::move(rows));
}

enqueue_op async_op(async_enqueue_fn fn, std::string name) {
  enqueue_op op;
  op.name = std::move(name);
  op.async = std::move(fn);
  return op;
}

enqueue_op blocking_op(blocking_enqueue_fn fn, std::string name) {
  enqueue_op op;
  op.name = std::move(name);
  op.blocking = std::move(fn);
  return op;
}

namespace {

using detail::async_worker_access;
using detail::runner_shared;

// -- workers ----------------------------------------------------------------------------

bool has_code(const std::vector<error_code>& codes, const caf::error& e) {
  if (!e || e.category() != error_category)
    return false;
  return std::find(codes.begin(), codes.end(), code_of(e)) != codes.end();
}

bool is_clean_exit(const caf::error& reason) {
  if (!reason)
    return true;
  if (reason.category() == caf::atom("exit")) {
    auto r = static_cast<caf::exit_reason>(reason.code());
    return r == caf::exit_reason::normal || r == caf::exit_reason::user_shutdown ||
           r == caf::exit_reason::unreachable;
  }
  return false;
}

bool is_reportable(const runner_shared& shared, const caf::error& reason) {
  if (is_clean_exit(reason) || has_code(shared.closed_codes, reason))
    return false;
  return !(shared.stop.load() && is(reason, error_code::cancelled));
}

// A worker ends by quitting: normally when its input ended, with
// user_shutdown when stopped, and with the run's error otherwise. Its runner
// monitors it and reads the reason.

/// How a worker streams its rows: each run's rows are one push; up to
/// `push_window` pushes may wait for their ack while the next run already
/// works (rows are still stored in run order: one sender, one queue).
///
/// What a stop keeps (docs/queues.md): a run's rows taken from upstream
/// queues (its sources) are kept until the queue acknowledged the run's
/// pushes. If the queue refused every row of the run (it was cancelled, or
/// the worker withdrew its pushes at a stop), the sources go back to the
/// front of the queues they came from; rows that cannot go back (no sources,
/// or part of the run was stored) are counted in runner_shared::rows_dropped.
struct push_pipe {
  queue_actor queue;
  int32_t window = 2;
  /// Pushes sent and not acknowledged yet, in order: the rows each carried.
  /// The queue answers one sender's pushes in order (it serves enqueue
  /// attempts in order, and a close or unpush cancels them in order).
  std::deque<int64_t> pushes;
  /// The runs whose pushes are not all acknowledged yet.
  struct run_in_flight {
    size_t pushes_left = 0;
    int64_t stored = 0;
    int64_t refused = 0;
    std::vector<detail::taken_rows> sources;
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
  /// The runner's shared state and this worker's name, `<runner>/<op>`.
  std::shared_ptr<runner_shared> shared;
  std::string name;

  bool may_run() const {
    return !finish && !run_active && static_cast<int32_t>(pushes.size()) < window;
  }
};

/// Whether a worker's exit reason is an error to report (QR-6, QR-7): not
/// the end of its input, not a queue-closed code, and not a cancellation
/// that the runner's own cancel_op caused during a stop.
bool is_reportable(const runner_shared& shared, const caf::error& reason);

/// Every worker ends here: it counts itself out and records its error in
/// exceptions_raised before it quits, so that once the handles start()
/// returned are down, both are up to date (TensorFlow's threads do the
/// same before they die).
void record_end(push_pipe& p, const caf::error& reason) {
  if (!p.shared) // already recorded
    return;
  auto shared = std::move(p.shared);
  --shared->live_workers;
  if (is_reportable(*shared, reason)) {
    std::lock_guard<std::mutex> guard{shared->mtx};
    shared->exceptions.push_back(with_origin(reason, p.name));
  }
}

void end_worker(caf::scheduled_actor* self, push_pipe& p, caf::error reason) {
  record_end(p, reason);
  self->quit(std::move(reason));
}

/// The settings every worker's pipe starts with; an exception that escapes
/// the worker ends it like any other error.
template <class Self>
void init_pipe(Self* self, push_pipe& p, queue_actor q, int32_t window,
               std::shared_ptr<runner_shared> shared, uint64_t max_runs,
               std::string name) {
  p.queue = std::move(q);
  p.window = std::max(window, int32_t{1});
  p.shared = std::move(shared);
  p.max_runs = max_runs;
  p.name = std::move(name);
  // A queue that is gone answers no push: the worker must not wait for it.
  self->monitor(p.queue);
  self->set_exception_handler([&p](caf::scheduled_actor* s, std::exception_ptr& ep) {
    auto err = keep_exception_message(s, ep);
    record_end(p, err);
    return err;
  });
}

/// Quits once the worker is finishing and nothing is owed to it: no push
/// unacknowledged, and (`owed`) no answer of an upstream queue pending.
void try_finish(caf::event_based_actor* self, push_pipe& p, bool owed) {
  if (p.finish && p.pushes.empty() && !owed)
    end_worker(self, p, *p.finish);
}

/// The worker ends with `reason` (a stop or an error): pushes still pending
/// are withdrawn, so that the worker learns at once which rows the queue
/// did not take (and gives their sources back) instead of waiting on a full
/// queue. The first reason is kept.
void wind_down(caf::event_based_actor* self, push_pipe& p, caf::error reason) {
  if (!p.finish)
    p.finish = std::move(reason);
  if (!p.pushes.empty() && !p.withdrawn) {
    p.withdrawn = true;
    self->send(p.queue, unpush_atom::value);
  }
}

/// A run failed. A queue-closed code is the end of the input: the rows
/// pushed before are still stored, as after end(). Any other error winds
/// the worker down.
void run_failed(caf::event_based_actor* self, push_pipe& p, caf::error err) {
  if (p.shared && has_code(p.shared->closed_codes, err)) {
    if (!p.finish)
      p.finish = std::move(err);
  } else {
    wind_down(self, p, std::move(err));
  }
}

/// Schedules the next run if the pipe has room for it and none is
/// scheduled (always through the mailbox, so that a pending stop is seen
/// first and the stack does not grow).
void schedule_run(caf::event_based_actor* self, push_pipe& p) {
  if (p.may_run() && !p.run_scheduled) {
    p.run_scheduled = true;
    self->send(self, worker_run_atom::value);
  }
}

/// After a run: push its rows, then end or schedule the next run (always
/// through the mailbox, so that a pending stop is seen first and the stack
/// does not grow).
void after_run(caf::event_based_actor* self, push_pipe& p, detail::run_output& out,
               bool ended, std::vector<detail::taken_rows> sources) {
  if (!out.empty()) {
    push_pipe::run_in_flight r;
    r.pushes_left = out.pieces().size();
    r.sources = std::move(sources);
    p.runs_in_flight.push_back(std::move(r));
    for (auto& piece : out.pieces()) {
      if (piece.is_batch) {
        p.pushes.push_back(piece.batch.batch_size());
        self->send(p.queue, push_batch_atom::value, std::move(piece.batch));
      } else {
        p.pushes.push_back(static_cast<int64_t>(piece.rows.size()));
        self->send(p.queue, push_atom::value, std::move(piece.rows));
      }
    }
  } // else: the run consumed its sources (a filter) or had none
  out.clear();
  if (ended && !p.finish)
    p.finish = caf::error{};
  else if (!p.finish && p.max_runs > 0 && p.runs >= p.max_runs)
    p.finish = caf::make_error(caf::exit_reason::user_shutdown);
  if (p.finish) {
    try_finish(self, p, false);
    return;
  }
  schedule_run(self, p);
}

/// A run's pushes are all acknowledged: if the queue refused all of it, its
/// sources go back; rows refused that cannot go back are counted.
void settle(caf::event_based_actor* self, push_pipe& p, push_pipe::run_in_flight& r) {
  if (r.refused == 0)
    return;
  if (r.stored == 0 && !r.sources.empty()) {
    detail::async_worker_access::give_back_all(self, std::move(r.sources));
    return;
  }
  if (p.shared)
    p.shared->rows_dropped += r.refused;
}

/// A push was acknowledged. Returns false if the worker is to end.
void on_pushed(caf::event_based_actor* self, push_pipe& p, int32_t stored,
               caf::error& err) {
  if (p.pushes.empty() || p.runs_in_flight.empty())
    return; // not ours (cannot happen: one sender, one queue)
  auto rows = p.pushes.front();
  p.pushes.pop_front();
  auto& r = p.runs_in_flight.front();
  r.stored += stored;
  if (err)
    r.refused += std::max<int64_t>(rows - stored, 0);
  if (--r.pushes_left == 0) {
    settle(self, p, r);
    p.runs_in_flight.pop_front();
  }
  if (err)
    wind_down(self, p, std::move(err));
}

/// The worker's queue went down: no pending push will be answered.
void on_queue_down(caf::event_based_actor* self, push_pipe& p) {
  int64_t lost = 0;
  for (auto n : p.pushes)
    lost += n;
  if (p.shared)
    p.shared->rows_dropped += lost;
  p.pushes.clear();
  p.runs_in_flight.clear();
  wind_down(self, p,
            make_error(error_code::cancelled, "the queue of " + p.name + " is gone"));
}

struct async_worker_state {
  async_enqueue_fn fn;
  std::shared_ptr<runner_shared> shared;
  async_run run;
  push_pipe pipe;
  /// Upstream queues this worker pulled from, monitored: a pull sent to a
  /// queue that is gone is never answered.
  std::set<caf::actor_addr> watched;
  static inline const char* name = "quern.async_worker";
};

using async_worker_ptr = caf::stateful_actor<async_worker_state>*;

void start_async_run(async_worker_ptr self) {
  auto& st = self->state;
  st.pipe.run_scheduled = false;
  if (!st.pipe.may_run())
    return;
  st.pipe.run_active = true;
  auto& r = st.run;
  async_worker_access::reset(r, self, st.pipe.runs, &st.shared->stop);
  try {
    st.fn(r);
  } catch (...) {
    if (r.completed())
      throw; // the exception handler keeps the message
    r.fail(std::current_exception());
  }
}

/// The async worker finishes once its pushes are answered and an abandoned
/// run is owed no answers.
void async_try_finish(async_worker_ptr self) {
  auto& st = self->state;
  try_finish(self, st.pipe,
             async_worker_access::abandoned(st.run) && async_worker_access::owed(st.run));
}

/// The async worker ends with `reason`: an active run is abandoned (its
/// sources go back), pending pushes are withdrawn.
void async_wind_down(async_worker_ptr self, caf::error reason) {
  auto& st = self->state;
  if (st.pipe.run_active) {
    st.pipe.run_active = false;
    async_worker_access::abandon(st.run);
  }
  wind_down(self, st.pipe, std::move(reason));
  async_try_finish(self);
}

void async_run_completed(async_worker_ptr self) {
  auto& st = self->state;
  auto& r = st.run;
  st.pipe.run_active = false;
  ++st.pipe.runs;
  if (async_worker_access::failed(r)) {
    // The run's sources go back: it produced nothing.
    async_worker_access::give_back_all(self, async_worker_access::take_sources(r));
    run_failed(self, st.pipe, std::move(async_worker_access::error(r)));
    async_try_finish(self);
    return;
  }
  after_run(self, st.pipe, async_worker_access::out(r), async_worker_access::ended(r),
            async_worker_access::take_sources(r));
}

void watch_pull_origin(async_worker_ptr self) {
  auto& q = async_worker_access::pull_from(self->state.run);
  if (q && self->state.watched.insert(q.address()).second)
    self->monitor(q);
}

caf::behavior async_worker(async_worker_ptr self, async_enqueue_fn fn, queue_actor q,
                           int32_t window, std::shared_ptr<runner_shared> shared,
                           uint64_t max_runs, std::string name) {
  auto& st = self->state;
  st.fn = std::move(fn);
  st.shared = shared;
  init_pipe(self, st.pipe, std::move(q), window, std::move(shared), max_runs,
            std::move(name));
  async_worker_access::set_on_complete(st.run, [self] { async_run_completed(self); });
  async_worker_access::set_on_settled(st.run, [self] { async_try_finish(self); });
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source == st.pipe.queue.address()) {
      on_queue_down(self, st.pipe);
      async_wind_down(self, *st.pipe.finish);
      return;
    }
    st.watched.erase(dm.source);
    auto& r = st.run;
    if (async_worker_access::pull_from(r).address() == dm.source &&
        async_worker_access::owed(r)) {
      // The pull went to a queue that is gone: no answer will come.
      std::vector<element> none;
      caf::error err = make_error(error_code::cancelled, "the queue pulled from is gone");
      async_worker_access::pull_answered(r);
      if (!async_worker_access::deliver_pulled(r, none, err)) {
        element nobatch;
        if (!async_worker_access::deliver_pulled_batch(r, nobatch, err))
          async_try_finish(self);
      }
    }
  });
  st.pipe.run_scheduled = true;
  self->send(self, worker_run_atom::value);
  return {
      [self](worker_run_atom) {
        watch_pull_origin(self);
        start_async_run(self);
        watch_pull_origin(self);
      },
      [self](pushed_atom, int32_t stored, caf::error& err) {
        auto& st = self->state;
        on_pushed(self, st.pipe, stored, err);
        if (st.pipe.finish) {
          async_wind_down(self, *st.pipe.finish);
          return;
        }
        schedule_run(self, st.pipe);
      },
      [self](pulled_atom, std::vector<element>& rows, caf::error& err) {
        auto& r = self->state.run;
        async_worker_access::pull_answered(r);
        if (!err && !rows.empty() && r.completed() == false)
          async_worker_access::took(r, rows);
        if (!async_worker_access::deliver_pulled(r, rows, err)) {
          // Nobody asked for them (the run was abandoned): back to the
          // front of the queue they came from.
          if (!rows.empty())
            self->send(async_worker_access::pull_from(r), give_back_atom::value,
                       std::move(rows));
          async_try_finish(self);
        }
        watch_pull_origin(self);
      },
      [self](pulled_atom, element& batch, caf::error& err) {
        auto& r = self->state.run;
        async_worker_access::pull_answered(r);
        bool has_rows = !batch.components.empty() && batch.batch_size() > 0;
        if (!err && has_rows && r.completed() == false)
          async_worker_access::took_batch(r, batch);
        if (!async_worker_access::deliver_pulled_batch(r, batch, err)) {
          if (has_rows) {
            detail::taken_rows t;
            t.batch = std::move(batch);
            t.is_batch = true;
            self->send(async_worker_access::pull_from(r), give_back_atom::value,
                       std::move(t).to_rows());
          }
          async_try_finish(self);
        }
        watch_pull_origin(self);
      },
      [self](stop_atom) {
        async_wind_down(self, caf::make_error(caf::exit_reason::user_shutdown));
      },
  };
}

struct blocking_worker_state {
  blocking_enqueue_fn fn;
  std::shared_ptr<runner_shared> shared;
  blocking_run run;
  push_pipe pipe;
  static inline const char* name = "quern.blocking_worker";
};

using blocking_worker_ptr = caf::stateful_actor<blocking_worker_state>*;

void start_blocking_run(blocking_worker_ptr self) {
  auto& st = self->state;
  st.pipe.run_scheduled = false;
  if (st.shared->stop.load()) {
    wind_down(self, st.pipe, caf::make_error(caf::exit_reason::user_shutdown));
    try_finish(self, st.pipe, false);
    return;
  }
  if (!st.pipe.may_run())
    return;
  auto& r = st.run;
  async_worker_access::reset(r, st.pipe.runs++, &st.shared->stop);
  try {
    // Named in the exit report while it runs (quern::actor_system).
    detail::exit_watch::in_run running{self->system(), st.pipe.name, r.index()};
    st.fn(r); // may block: this actor has its own thread
  } catch (...) {
    run_failed(self, st.pipe, error_from_exception(std::current_exception()));
    try_finish(self, st.pipe, false);
    return;
  }
  after_run(self, st.pipe, async_worker_access::out(r), async_worker_access::ended(r),
            {});
}

caf::behavior blocking_worker(blocking_worker_ptr self, blocking_enqueue_fn fn,
                              queue_actor q, int32_t window,
                              std::shared_ptr<runner_shared> shared, uint64_t max_runs,
                              std::string name) {
  auto& st = self->state;
  st.fn = std::move(fn);
  st.shared = shared;
  init_pipe(self, st.pipe, std::move(q), window, std::move(shared), max_runs,
            std::move(name));
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source == st.pipe.queue.address()) {
      on_queue_down(self, st.pipe);
      try_finish(self, st.pipe, false);
    }
  });
  st.pipe.run_scheduled = true;
  self->send(self, worker_run_atom::value);
  return {
      [self](worker_run_atom) { start_blocking_run(self); },
      [self](pushed_atom, int32_t stored, caf::error& err) {
        auto& st = self->state;
        on_pushed(self, st.pipe, stored, err);
        if (st.pipe.finish) {
          try_finish(self, st.pipe, false);
          return;
        }
        schedule_run(self, st.pipe);
      },
      [self](stop_atom) {
        wind_down(self, self->state.pipe,
                  caf::make_error(caf::exit_reason::user_shutdown));
        try_finish(self, self->state.pipe, false);
      },
  };
}

// -- the runner actor -----------------------------------------------------------------

struct runner_config {
  queue_actor queue;
  std::vector<enqueue_op> ops;
  queue_runner_options opts;
  std::string name;
  coordinator_actor coord;
  std::shared_ptr<runner_shared> shared;
};

struct runner_state {
  runner_config cfg;
  std::unordered_map<caf::actor_id, caf::actor> live;
  /// Each worker's name, `<runner>/<op>`: the origin of its errors.
  std::unordered_map<caf::actor_id, std::string> names;
  /// The user's close_op / cancel_op functions still running.
  std::set<caf::actor_id> user_ops;
  std::vector<caf::actor> workers;
  bool started = false;
  bool stopping = false;
  bool close_requested = false;
  /// The start request waits for the coordinator's registration ack; the
  /// runner must not end before it answered (workers may end that fast).
  bool start_pending = false;
  int pending_closes = 0;
  /// A runner lives until its work is done or it is stopped, even if nobody
  /// else holds a reference to it (released with the state on exit).
  caf::actor keep_alive;
  static inline const char* name = "quern.queue_runner";
};

using runner_ptr = queue_runner_actor::stateful_pointer<runner_state>;

void check_finished(runner_ptr self) {
  auto& st = self->state;
  if (st.started && !st.start_pending && st.live.empty() && st.pending_closes == 0) {
    st.cfg.shared->running = false; // before anyone sees the runner down
    self->quit(caf::exit_reason::normal);
  }
}

void close_queue(runner_ptr self, bool cancel_pending_enqueues) {
  auto& st = self->state;
  ++st.pending_closes;
  // Errors are ignored (QR-6, QR-8): e.g. "already closed".
  self->request(st.cfg.queue, caf::infinite, close_atom::value, cancel_pending_enqueues)
      .then(
          [self](bool) {
            --self->state.pending_closes;
            check_finished(self);
          },
          [self](caf::error&) {
            --self->state.pending_closes;
            check_finished(self);
          });
}

// Runs the user's close_op or cancel_op in a thread of its own (it may
// block); what it throws is ignored, as TensorFlow ignores it (QR-6, QR-8).
caf::behavior user_op_actor(caf::event_based_actor* self, std::function<void()> fn) {
  try {
    fn();
  } catch (...) {
  }
  self->quit();
  return {};
}

/// Runs close_op or cancel_op; the runner ends only after it is done.
void run_op(runner_ptr self, const runner_op& op) {
  auto& st = self->state;
  if (op.close_flag()) {
    close_queue(self, *op.close_flag());
  } else if (op.function()) {
    ++st.pending_closes;
    auto a = self->spawn<caf::monitored + caf::detached>(user_op_actor, op.function());
    st.user_ops.insert(a.id());
  }
}

void begin_stop(runner_ptr self) {
  auto& st = self->state;
  if (st.stopping)
    return;
  st.stopping = true;
  st.cfg.shared->stop = true;
  run_op(self, st.cfg.opts.cancel_op);
  for (auto& kv : st.live)
    caf::anon_send(kv.second, stop_atom::value);
  // Not started yet: the start request (always sent right after spawning)
  // answers with no workers and ends the runner.
}

void worker_down(runner_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  auto i = st.live.find(dm.source.id());
  if (i == st.live.end())
    return;
  st.live.erase(i);
  auto reason = with_origin(dm.reason, st.names[dm.source.id()]);
  // The worker recorded the error in exceptions_raised itself (end_worker).
  if (is_reportable(*st.cfg.shared, reason)) {
    if (st.cfg.coord) {
      self->request(st.cfg.coord, caf::infinite, request_stop_atom::value, reason)
          .then([](bool) {}, [](caf::error&) {});
    } else {
      std::cerr << "quern: Exception in QueueRunner " << st.cfg.name << ": "
                << render(reason) << '\n';
    }
    begin_stop(self); // cancel the queue and stop the other workers
  }
  if (st.live.empty() && !st.stopping && st.cfg.opts.close_op && !st.close_requested) {
    // QR-6: the last worker to run out of input closes the queue.
    st.close_requested = true;
    run_op(self, st.cfg.opts.close_op);
  }
  check_finished(self);
}

std::string op_name(const std::string& runner_name, const std::vector<enqueue_op>& ops,
                    size_t i);

queue_runner_actor::behavior_type runner_impl(runner_ptr self, runner_config cfg) {
  self->set_exception_handler(keep_exception_message);
  self->state.cfg = std::move(cfg);
  self->state.keep_alive = caf::actor_cast<caf::actor>(self);
  auto shared = self->state.cfg.shared;
  self->attach_functor([shared] { shared->running = false; });
  if (self->state.cfg.coord)
    self->monitor(self->state.cfg.coord);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.cfg.coord && dm.source == st.cfg.coord.address()) {
      begin_stop(self); // the coordinator is gone: stop
      return;
    }
    if (st.user_ops.erase(dm.source.id()) > 0) {
      --st.pending_closes;
      check_finished(self);
      return;
    }
    worker_down(self, dm);
  });
  return {
      [self](runner_start_atom) -> caf::result<std::vector<caf::actor>> {
        auto& st = self->state;
        if (st.started)
          return st.workers;
        st.started = true;
        if (st.stopping) { // stopped before it started (QR-5: should_stop first)
          check_finished(self);
          return std::vector<caf::actor>{};
        }
        std::vector<registration> regs;
        for (size_t i = 0; i < st.cfg.ops.size(); ++i) {
          auto& op = st.cfg.ops[i];
          auto name = op_name(st.cfg.name, st.cfg.ops, i);
          ++st.cfg.shared->live_workers; // the worker counts itself out
          caf::actor w;
          if (op.async)
            w = self->spawn<caf::monitored>(async_worker, op.async, st.cfg.queue,
                                            st.cfg.opts.push_window, st.cfg.shared,
                                            uint64_t{0}, name);
          else
            w = self->spawn<caf::monitored + caf::detached>(
                blocking_worker, op.blocking, st.cfg.queue, st.cfg.opts.push_window,
                st.cfg.shared, uint64_t{0}, name);
          detail::exit_watch::track(self->system(), w, "worker '" + name + "'");
          st.live.emplace(w.id(), w);
          st.workers.push_back(w);
          st.names.emplace(w.id(), name);
          regs.push_back(registration{w, name, false, false});
        }
        if (!st.cfg.coord)
          return st.workers;
        // Registered before start() returns, so that join includes them.
        auto rp = self->make_response_promise<std::vector<caf::actor>>();
        st.start_pending = true;
        auto answer = [self, rp]() mutable {
          self->state.start_pending = false;
          rp.deliver(self->state.workers);
          check_finished(self);
        };
        self->request(st.cfg.coord, caf::infinite, register_atom::value, std::move(regs))
            .then([answer](int32_t) mutable { answer(); },
                  [answer](caf::error&) mutable { answer(); });
        return rp;
      },
      [self](stop_atom) { begin_stop(self); },
  };
}

/// The queue's node name: its resource name without the `_<k>_` prefix of
/// unshared queues (docs/semantics.md C-3).
std::string node_name(const std::string& resource_name) {
  if (resource_name.size() > 2 && resource_name[0] == '_') {
    auto i = resource_name.find('_', 1);
    if (i != std::string::npos && i > 1 &&
        resource_name.find_first_not_of("0123456789", 1) == i)
      return resource_name.substr(i + 1);
  }
  return resource_name;
}

} // namespace

// -- queue_runner ---------------------------------------------------------------------

struct queue_runner::impl {
  /// A queue_runner is a value that threads may share, as TensorFlow's is:
  /// start(), name resolution and the current start's state take turns.
  mutable std::mutex mtx;
  queue_actor queue;
  std::vector<enqueue_op> ops;
  queue_runner_options opts;
  std::string name;
  bool with_coordinator = false;
  std::shared_ptr<runner_shared> shared;

  std::shared_ptr<runner_shared> current() const {
    std::lock_guard<std::mutex> guard{mtx};
    return shared;
  }

  ~impl() {
    // Made and never started: the queue no longer counts on this runner.
    if (!shared && queue)
      caf::anon_send(queue, feeder_atom::value, int32_t{-1}, int32_t{0},
                     caf::timespan{0});
    // Started without a coordinator: nobody else will stop it.
    if (shared && !with_coordinator && shared->running.load())
      if (auto a = caf::actor_cast<caf::actor>(shared->runner))
        caf::anon_send(a, stop_atom::value);
  }
};

queue_runner::queue_runner(queue_actor queue, std::vector<enqueue_op> ops,
                           queue_runner_options opts)
    : impl_(std::make_shared<impl>()) {
  bool ops_ok = !ops.empty();
  for (auto& op : ops)
    if (!op.async && !op.blocking)
      ops_ok = false;
  if (!queue || !ops_ok)
    throw argument_error("Must provide queue and enqueue_ops.");
  if (opts.queue_closed_codes.empty())
    throw argument_error(
        "queue_closed_exception_types, if provided, must be a non-empty list of "
        "tf.error types, but saw: []",
        argument_error::python_kind::type_error);
  impl_->queue = std::move(queue);
  impl_->ops = std::move(ops);
  impl_->name = opts.name;
  impl_->opts = std::move(opts);
  // The queue learns that a runner will feed it: a consumer that waits while
  // no runner of the queue was ever started gets a diagnosis, not a hang.
  caf::anon_send(impl_->queue, feeder_atom::value, int32_t{1}, int32_t{0},
                 impl_->opts.starvation_timeout);
}

const queue_actor& queue_runner::queue() const {
  return impl_->queue;
}

const std::string& queue_runner::name() const {
  return impl_->name;
}

size_t queue_runner::num_ops() const {
  return impl_->ops.size();
}

namespace {

// The closer that start() returns with a coordinator (TensorFlow's
// close-on-stop thread, QR-8): it forwards the coordinator's stop to the
// runner, which runs cancel_op, and ends with the runner, with its reason (an
// error of the runner itself reaches the coordinator that way).
caf::behavior closer_actor(caf::event_based_actor* self, caf::actor runner) {
  self->monitor(runner);
  self->set_down_handler([self](caf::down_msg& dm) { self->quit(dm.reason); });
  return {[self, runner](stop_atom) { self->send(runner, stop_atom::value); }};
}

std::string op_name(const std::string& runner_name, const std::vector<enqueue_op>& ops,
                    size_t i) {
  auto& op = ops[i];
  return runner_name + "/" + (op.name.empty() ? "op" + std::to_string(i) : op.name);
}

} // namespace

void queue_runner::resolve_name(caf::scoped_actor& self) {
  auto& d = *impl_;
  if (!d.name.empty())
    return;
  self->request(d.queue, caf::infinite, spec_atom::value)
      .receive([&](queue_spec& s) { d.name = node_name(s.resource_name); },
               [&](caf::error&) { d.name = "queue_runner"; });
}

std::vector<caf::actor> queue_runner::start(caf::actor_system& sys,
                                            const coordinator_actor& coord) {
  auto& d = *impl_;
  std::lock_guard<std::mutex> guard{d.mtx};
  if (d.shared && d.shared->live_workers.load() > 0)
    return {}; // QR-4
  caf::scoped_actor self{sys};
  if (d.shared && d.shared->running.load()) {
    // Every worker ended; the runner is finishing its close_op: let it.
    if (auto old = caf::actor_cast<caf::actor>(d.shared->runner)) {
      self->monitor(old);
      self->receive([](caf::down_msg&) {});
    }
  }
  resolve_name(self);
  if (!d.shared) // the first start: the queue is fed now
    self->send(d.queue, feeder_atom::value, int32_t{0}, int32_t{1}, caf::timespan{0});
  auto shared = std::make_shared<runner_shared>();
  shared->running = true;
  shared->closed_codes = d.opts.queue_closed_codes;
  d.shared = shared; // resets exceptions_raised (QR-9)
  d.with_coordinator = static_cast<bool>(coord);
  runner_config cfg{d.queue, d.ops, d.opts, d.name, coord, shared};
  auto runner = sys.spawn(runner_impl, std::move(cfg));
  auto runner_handle = caf::actor_cast<caf::actor>(runner);
  shared->runner = runner_handle.address();
  // At exit, quern::actor_system sets the stop flag before it ends the
  // runner, so that blocking ops see should_stop().
  detail::exit_watch::track(sys, runner_handle, "queue runner '" + d.name + "'",
                            [shared] { shared->stop = true; });
  caf::error err;
  caf::actor closer;
  if (coord) {
    // Registered before the workers start, so that join includes it.
    closer = sys.spawn(closer_actor, runner_handle);
    std::vector<registration> regs{registration{closer, d.name + "/closer", true, true}};
    self->request(coord, caf::infinite, register_atom::value, std::move(regs))
        .receive([](int32_t) {}, [&](caf::error& e) { err = e; });
    // QR-5: a stop requested before the start means no run at all. Sent from
    // here, it reaches the runner before the start request.
    bool stopped = false;
    self->request(coord, caf::infinite, should_stop_atom::value)
        .receive([&](bool b) { stopped = b; }, [&](caf::error& e) { err = e; });
    if (stopped)
      self->send(runner, stop_atom::value);
  }
  std::vector<caf::actor> result;
  self->request(runner, caf::infinite, runner_start_atom::value)
      .receive([&](std::vector<caf::actor>& ws) { result = std::move(ws); },
               [&](caf::error& e) { err = e; });
  if (err) {
    caf::anon_send(runner, stop_atom::value);
    throw_error(err);
  }
  if (closer)
    result.push_back(closer);
  return result;
}

const std::vector<enqueue_op>& queue_runner::enqueue_ops() const {
  return impl_->ops;
}

bool queue_runner::run_enqueue_op(caf::actor_system& sys, size_t index) {
  auto& d = *impl_;
  if (index >= d.ops.size())
    throw argument_error("run_enqueue_op: the runner has " +
                         std::to_string(d.ops.size()) + " enqueue ops, got index " +
                         std::to_string(index));
  caf::scoped_actor self{sys};
  std::string name;
  {
    std::lock_guard<std::mutex> guard{d.mtx};
    resolve_name(self);
    name = op_name(d.name, d.ops, index);
  }
  // A worker limited to one run: it enqueues what the run emitted and ends.
  auto& op = d.ops[index]; // the ops never change after construction
  auto shared = std::make_shared<runner_shared>();
  shared->live_workers = 1;
  caf::actor w = op.async
                     ? sys.spawn(async_worker, op.async, d.queue, int32_t{1}, shared,
                                 uint64_t{1}, name)
                     : sys.spawn<caf::detached>(blocking_worker, op.blocking, d.queue,
                                                int32_t{1}, shared, uint64_t{1}, name);
  self->monitor(w);
  caf::error reason;
  self->receive([&](caf::down_msg& dm) { reason = dm.reason; });
  if (reason == caf::exit_reason::user_shutdown)
    return true; // ran once
  if (!reason || reason == caf::exit_reason::normal)
    return false; // end(): the input is exhausted
  throw_error(with_origin(reason, name));
}

caf::actor queue_runner::runner() const {
  auto shared = impl_->current();
  if (!shared)
    return {};
  return caf::actor_cast<caf::actor>(shared->runner);
}

bool queue_runner::started() const {
  return impl_->current() != nullptr;
}

bool queue_runner::running() const {
  auto shared = impl_->current();
  return shared && shared->live_workers.load() > 0;
}

std::vector<caf::error> queue_runner::exceptions_raised() const {
  auto shared = impl_->current();
  if (!shared)
    return {};
  std::lock_guard<std::mutex> guard{shared->mtx};
  return shared->exceptions;
}

int64_t queue_runner::rows_dropped() const {
  auto shared = impl_->current();
  return shared ? shared->rows_dropped.load() : 0;
}

void queue_runner::stop() const {
  if (auto a = runner())
    caf::anon_send(a, stop_atom::value);
}

} // namespace quern
