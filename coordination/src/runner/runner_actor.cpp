// The queue runner's actor: starts its workers, registers them with the
// coordinator, watches them end, runs close_op and cancel_op, and stops them
// together (runner_shared.hpp lists the runner's parts).

#include <iostream>
#include <set>
#include <tuple>
#include <unordered_map>

#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "quern/actor_system.hpp"

#include "runner_shared.hpp"

namespace quern::detail {

namespace {

struct runner_tally {
  int64_t rows_dropped = 0;
  std::vector<caf::error> exceptions;
};

struct runner_state {
  runner_config cfg;
  std::unordered_map<caf::actor_id, caf::actor> live;
  /// Each worker's name, `<runner>/<op>`: the origin of its errors.
  std::unordered_map<caf::actor_id, std::string> names;
  /// The user's close_op / cancel_op functions still running, each with
  /// whether it is the close_op.
  std::unordered_map<caf::actor_id, bool> user_ops;
  std::vector<caf::actor> workers;
  /// Workers that have not reported their end yet (running()), and what
  /// the ended ones reported: rows dropped and errors (QR-7, QR-9). The
  /// tally is the actor's alone; it is on the heap only so that the
  /// runner's exit functor, which runs after the state is gone, publishes it.
  std::set<caf::actor_id> unreported;
  std::shared_ptr<runner_tally> tally = std::make_shared<runner_tally>();
  bool started = false;
  bool stopping = false;
  bool close_requested = false;
  /// close_op has run (or was answered); until then the last worker to run
  /// out of input waits for it (QR-6), its end report answered here.
  bool close_done = false;
  std::vector<caf::typed_response_promise<bool>> close_waiters;
  /// A worker reported an error to report (QR-7): no close_op then, the
  /// runner stops with cancel_op once it sees that worker down.
  bool failed = false;
  /// The start request waits for the coordinator's registration ack; the
  /// runner must not end before it answered (workers may end that fast).
  bool start_pending = false;
  int pending_closes = 0;
  /// Errors told to the coordinator and not yet answered: the runner ends
  /// only after its coordinator knows why it stopped (a remote one would
  /// otherwise lose the report when this process ends right after).
  int pending_reports = 0;
  /// A runner lives until its work is done or it is stopped, even if nobody
  /// else holds a reference to it (released with the state on exit).
  caf::actor keep_alive;
  static inline const char* name = "quern.queue_runner";
};

using runner_ptr = runner_impl_actor::stateful_pointer<runner_state>;

void check_finished(runner_ptr self) {
  auto& st = self->state;
  if (st.started && !st.start_pending && st.live.empty() && st.pending_closes == 0 &&
      st.pending_reports == 0) {
    // Before anyone sees the runner down: its handle reads this once the
    // runner no longer answers.
    st.cfg.outcome->publish(st.tally->rows_dropped, st.tally->exceptions);
    self->quit(caf::exit_reason::normal);
  }
}

/// close_op is done: the worker waiting for it may end.
void close_op_done(runner_ptr self) {
  auto& st = self->state;
  st.close_done = true;
  for (auto& rp : st.close_waiters)
    rp.deliver(true);
  st.close_waiters.clear();
}

/// One of close_op or cancel_op (`is_close`: close_op) is done.
void op_done(runner_ptr self, bool is_close) {
  --self->state.pending_closes;
  if (is_close)
    close_op_done(self);
  check_finished(self);
}

void close_queue(runner_ptr self, bool cancel_pending_enqueues, bool is_close) {
  auto& st = self->state;
  ++st.pending_closes;
  // Errors are ignored (QR-6, QR-8): e.g. "already closed". The queue
  // answers once the close took effect (a non-cancelling one behind the
  // pushes before it, as TensorFlow's), or fails it when it is gone.
  self->request(st.cfg.queue, caf::infinite, close_atom::value, cancel_pending_enqueues)
      .then([self, is_close](bool) { op_done(self, is_close); },
            [self, is_close](caf::error&) { op_done(self, is_close); });
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

/// Runs close_op (`is_close`) or cancel_op; the runner ends only after it
/// is done.
void run_op(runner_ptr self, const runner_op& op, bool is_close) {
  auto& st = self->state;
  if (op.close_flag()) {
    close_queue(self, *op.close_flag(), is_close);
  } else if (op.function()) {
    ++st.pending_closes;
    auto a = self->spawn<caf::monitored + caf::detached>(user_op_actor, op.function());
    st.user_ops.emplace(a.id(), is_close);
  } else if (is_close) {
    close_op_done(self);
  }
}

/// QR-6: once every worker ran out of input, close_op runs, once.
void close_if_done(runner_ptr self) {
  auto& st = self->state;
  if (!st.unreported.empty() || st.stopping || st.failed || st.close_requested)
    return;
  st.close_requested = true;
  if (st.cfg.opts.close_op)
    run_op(self, st.cfg.opts.close_op, true);
  else
    close_op_done(self);
}

void begin_stop(runner_ptr self) {
  auto& st = self->state;
  if (st.stopping)
    return;
  st.stopping = true;
  *st.cfg.stop = true;
  run_op(self, st.cfg.opts.cancel_op, false);
  for (auto& kv : st.live)
    caf::anon_send(kv.second, stop_atom::value);
  // Not started yet: the start request (always sent right after spawning)
  // answers with no workers and ends the runner.
}

bool reportable(runner_ptr self, const caf::error& reason) {
  auto& st = self->state;
  return is_reportable(st.cfg.opts.queue_closed_codes, st.cfg.stop->load(), reason);
}

/// A worker reported its end (or went down without a report: it was
/// killed): counted out, its rows dropped and its error kept.
void worker_ended(runner_ptr self, caf::actor_id id, int64_t dropped,
                  const caf::error& reason) {
  auto& st = self->state;
  if (st.unreported.erase(id) == 0)
    return;
  st.tally->rows_dropped += dropped;
  if (reportable(self, reason)) {
    st.failed = true;
    st.tally->exceptions.push_back(with_origin(reason, st.names[id]));
  }
}

/// A worker reported its end and waits for the answer to quit.
caf::result<bool> worker_reported(runner_ptr self, caf::actor_id id, int64_t dropped,
                                  const caf::error& reason) {
  worker_ended(self, id, dropped, reason);
  close_if_done(self);
  auto& st = self->state;
  if (!st.close_requested || st.close_done)
    return true;
  // QR-6: the last worker ends only once close_op is done, so that a caller
  // who saw every handle of start() down finds the queue closed
  // (TensorFlow's last thread runs close_op before it ends).
  auto rp = self->make_response_promise<bool>();
  st.close_waiters.push_back(rp);
  return rp;
}

void worker_down(runner_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  auto i = st.live.find(dm.source.id());
  if (i == st.live.end())
    return;
  st.live.erase(i);
  worker_ended(self, dm.source.id(), 0, dm.reason);
  auto reason = with_origin(dm.reason, st.names[dm.source.id()]);
  if (reportable(self, reason)) {
    if (st.cfg.coord) {
      // Answered by the coordinator, or failed when it is gone (a remote
      // one's endpoint fails it when the node is lost): never forever.
      ++st.pending_reports;
      auto reported = [self] {
        --self->state.pending_reports;
        check_finished(self);
      };
      self->request(st.cfg.coord, caf::infinite, request_stop_atom::value, reason)
          .then([reported](bool) { reported(); },
                [reported](caf::error&) { reported(); });
    } else {
      std::cerr << "quern: Exception in QueueRunner " << st.cfg.name << ": "
                << render(reason) << '\n';
    }
    begin_stop(self); // cancel the queue and stop the other workers
  }
  // QR-6: normally the last worker's end report ran close_op already; a
  // worker killed without a report is counted here.
  close_if_done(self);
  check_finished(self);
}

/// The start request: spawns one worker per op and registers them with the
/// coordinator before it answers (QR-4).
caf::result<std::vector<caf::actor>> start_workers(runner_ptr self) {
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
    auto w = spawn_monitored_worker(
        self, op,
        {st.cfg.queue, st.cfg.opts.push_window, st.cfg.stop,
         st.cfg.opts.queue_closed_codes, caf::actor_cast<caf::actor>(self), uint64_t{0},
         name, st.cfg.hooks, st.cfg.meters ? st.cfg.meters->add(name) : nullptr});
    st.unreported.insert(w.id());
    exit_watch::track(self->system(), w, "worker '" + name + "'");
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
}

runner_impl_actor::behavior_type runner_impl(runner_ptr self, runner_config cfg) {
  self->set_exception_handler(keep_exception_message);
  self->state.cfg = std::move(cfg);
  self->state.keep_alive = caf::actor_cast<caf::actor>(self);
  // However it ends (check_finished publishes first; killed at exit, or an
  // exception), the handle gets the outcome, and the queue learns that
  // this runner no longer feeds it (a dequeue of a pipeline consumer may
  // wait for that, feeders.hpp).
  self->attach_functor([outcome = self->state.cfg.outcome, tally = self->state.tally,
                        queue = self->state.cfg.queue] {
    outcome->publish(tally->rows_dropped, tally->exceptions);
    caf::anon_send(queue, feeder_atom::value, int32_t{0}, int32_t{-1}, caf::timespan{0});
  });
  if (self->state.cfg.coord)
    self->monitor(self->state.cfg.coord);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.cfg.coord && dm.source == st.cfg.coord.address()) {
      begin_stop(self); // the coordinator is gone: stop
      return;
    }
    if (auto i = st.user_ops.find(dm.source.id()); i != st.user_ops.end()) {
      auto is_close = i->second;
      st.user_ops.erase(i);
      op_done(self, is_close);
      return;
    }
    worker_down(self, dm);
  });
  return {
      [self](runner_start_atom) { return start_workers(self); },
      [self](stop_atom) { begin_stop(self); },
      [self](runner_status_atom) {
        auto& st = self->state;
        return std::make_tuple(static_cast<int32_t>(st.unreported.size()),
                               st.tally->rows_dropped, st.tally->exceptions);
      },
      [self](worker_end_atom, uint64_t id, int64_t dropped, caf::error& reason) {
        return worker_reported(self, id, dropped, reason);
      },
  };
}

} // namespace

void runner_outcome::publish(int64_t rows_dropped, std::vector<caf::error> exceptions) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (published_)
      return;
    published_ = true;
    rows_dropped_ = rows_dropped;
    exceptions_ = std::move(exceptions);
  }
  cv_.notify_all();
}

bool runner_outcome::published() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return published_;
}

bool runner_outcome::wait(caf::timespan limit, int64_t& rows_dropped,
                          std::vector<caf::error>& exceptions) const {
  std::unique_lock<std::mutex> guard{mtx_};
  if (!cv_.wait_for(guard, limit, [this] { return published_; }))
    return false;
  rows_dropped = rows_dropped_;
  exceptions = exceptions_;
  return true;
}

runner_impl_actor spawn_runner(caf::actor_system& sys, runner_config cfg) {
  return sys.spawn(runner_impl, std::move(cfg));
}

} // namespace quern::detail
