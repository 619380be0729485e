// The queue runner's actor: starts its workers, registers them with the
// coordinator, watches them end, runs close_op and cancel_op, and stops them
// together (runner_shared.hpp lists the runner's parts).

#include <iostream>
#include <set>
#include <unordered_map>

#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "quern/actor_system.hpp"

#include "runner_shared.hpp"

namespace quern::detail {

namespace {

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
          auto w = spawn_monitored_worker(
              self, op,
              {st.cfg.queue, st.cfg.opts.push_window, st.cfg.shared, uint64_t{0}, name});
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
      },
      [self](stop_atom) { begin_stop(self); },
  };
}

} // namespace

queue_runner_actor spawn_runner(caf::actor_system& sys, runner_config cfg) {
  return sys.spawn(runner_impl, std::move(cfg));
}

} // namespace quern::detail
