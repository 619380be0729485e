// The two kinds of queue runner workers: an async op runs on CAF's
// scheduler and asks upstream queues by message; a blocking op runs in a
// thread of its own (runner_shared.hpp lists the runner's parts).

#include <set>

#include <caf/stateful_actor.hpp>

#include "quern/actor_system.hpp"

#include "runner_pipe.hpp"

namespace quern::detail {

namespace {

struct async_worker_state {
  async_enqueue_fn fn;
  async_client client; // the op's run
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
  // A run abandoned at a pause may still be owed answers: the next run
  // starts once they came (async_settled).
  if (!st.pipe.may_run() || (st.client.abandoned() && st.client.owed()))
    return;
  st.pipe.run_active = true;
  if (st.pipe.meter)
    st.pipe.meter->to(activity::busy);
  auto& c = st.client;
  c.reset(self, st.pipe.runs, st.pipe.stop.get());
  try {
    st.fn(c.run());
  } catch (...) {
    if (c.completed())
      throw; // the exception handler keeps the message
    c.run().fail(std::current_exception());
  }
}

/// The async worker finishes once its pushes are answered and an abandoned
/// run is owed no answers.
void async_try_finish(async_worker_ptr self) {
  auto& st = self->state;
  try_finish(self, st.pipe, st.client.abandoned() && st.client.owed());
}

/// The active run is abandoned (a stop or a pause): its sources go back,
/// and rows it emitted from nowhere upstream are taken back by the op now
/// (if_refused), before older runs' are: it is the newest.
void abandon_run(async_worker_ptr self) {
  auto& st = self->state;
  st.pipe.run_active = false;
  auto& out = st.client.out();
  if (!out.empty() && out.take_back) {
    st.pipe.take_backs.emplace_back(output_rows(out), std::move(out.take_back));
    take_back_refused(st.pipe);
  }
  st.pipe.upstream.release(self, st.client.abandon());
}

/// The async worker ends with `reason`: an active run is abandoned (its
/// sources go back), pending pushes are withdrawn.
void async_wind_down(async_worker_ptr self, caf::error reason) {
  auto& st = self->state;
  if (st.pipe.run_active)
    abandon_run(self);
  wind_down(self, st.pipe, std::move(reason));
  async_try_finish(self);
}

/// Before a pause is answered: pushes unanswered by a queue of another
/// process may still be on the wire; a barrier sent after them comes back
/// once they all reached it.
void send_barrier(caf::event_based_actor* self, push_pipe& p) {
  if (!p.remote_queue || p.pushes.empty())
    return;
  p.barrier_pending = true;
  self->send(p.queue, barrier_atom::value, ++p.barrier);
}

/// A pause waiting for the worker's barrier (and, `settled`, for an
/// abandoned run's owed answers) is answered once it came back.
void answer_pause_if_settled(push_pipe& p, bool settled) {
  if (!settled || p.barrier_pending)
    return;
  for (auto& rp : p.pause_waiters)
    rp.deliver(true);
  p.pause_waiters.clear();
}

/// An abandoned run's last owed answer came: a pause waiting for it is
/// answered, a worker that ends may end, a resumed one runs again.
void async_settled(async_worker_ptr self) {
  auto& p = self->state.pipe;
  if (!p.barrier_pending) {
    for (auto& rp : p.pause_waiters)
      rp.deliver(true);
    p.pause_waiters.clear();
  }
  async_try_finish(self);
  if (!p.finish)
    schedule_run(self, p);
}

/// A pipeline checkpoint pauses the worker (worker_pause_atom): a run in
/// progress is abandoned, as at a stop, and the pause is answered once
/// that run is owed nothing; resumed, the worker runs again.
caf::result<bool> async_pause(async_worker_ptr self, bool on) {
  auto& st = self->state;
  auto& p = st.pipe;
  p.paused = on;
  if (p.meter)
    p.meter->to(activity::idle);
  if (!on) {
    schedule_run(self, p);
    return true;
  }
  if (p.run_active)
    abandon_run(self);
  send_barrier(self, p);
  if (!(st.client.abandoned() && st.client.owed()) && !p.barrier_pending)
    return true;
  auto rp = self->make_response_promise<bool>();
  p.pause_waiters.push_back(rp);
  return rp;
}

void async_run_completed(async_worker_ptr self) {
  auto& st = self->state;
  auto& c = st.client;
  st.pipe.run_active = false;
  ++st.pipe.runs;
  if (c.failed()) {
    if (st.pipe.meter)
      st.pipe.meter->to(activity::idle);
    // The run's sources go back: it produced nothing.
    auto sources = c.take_sources();
    give_back_all(self, sources);
    st.pipe.upstream.release(self, sources);
    run_failed(self, st.pipe, std::move(c.error()));
    async_try_finish(self);
    return;
  }
  after_run(self, st.pipe, c.out(), c.ended(), c.take_sources());
}

void watch_pull_origin(async_worker_ptr self) {
  auto& q = self->state.client.pull_from();
  if (q && self->state.watched.insert(q.address()).second)
    self->monitor(q);
}

/// A queue went down: the worker's own (it ends), or one it pulled from
/// (a pull sent there will not be answered).
void async_worker_down(async_worker_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  if (dm.source == st.pipe.queue.address()) {
    on_queue_down(self, st.pipe);
    async_wind_down(self, *st.pipe.finish);
    return;
  }
  st.watched.erase(dm.source);
  auto& c = st.client;
  if (c.pull_from().address() != dm.source || !c.owed())
    return;
  std::vector<element> none;
  caf::error err = make_error(error_code::cancelled, "the queue pulled from is gone");
  c.pull_answered();
  if (!c.deliver_pulled(none, err))
    async_try_finish(self);
}

/// A pull was answered: the rows (or the one batch) go to the run that asked,
/// or back to their queue if the run no longer waits for them.
void async_pulled(async_worker_ptr self, std::vector<element>& xs, caf::error& err) {
  auto& st = self->state;
  auto& c = st.client;
  c.pull_answered();
  const bool rows = c.pulled_rows();
  if (st.pipe.meter && !err && !xs.empty())
    st.pipe.meter->to(activity::busy);
  auto from = c.pull_from(); // the next pull may change it
  // Numbered as the queue's side counts them (every unit of every answer);
  // those not kept as the run's sources are done with once handled here.
  auto units = xs.size();
  auto first = st.pipe.upstream.arrive(from, units);
  if (!err && !xs.empty() && !c.completed()) {
    if (rows)
      c.took(xs, first);
    else
      c.took_batch(xs.front(), first);
    units = 0;
  }
  const bool delivered = c.deliver_pulled(xs, err);
  if (!delivered) {
    if (!xs.empty()) {
      std::vector<element> back;
      if (rows) {
        back = std::move(xs);
      } else {
        taken_rows t;
        t.batch = std::move(xs.front());
        t.is_batch = true;
        back = std::move(t).to_rows();
      }
      self->send(from, give_back_atom::value, std::move(back));
    }
  }
  st.pipe.upstream.release(self, from, first, units);
  if (!delivered)
    async_try_finish(self);
  watch_pull_origin(self);
}

caf::behavior async_worker(async_worker_ptr self, async_enqueue_fn fn,
                           worker_settings s) {
  auto& st = self->state;
  st.fn = std::move(fn);
  init_pipe(self, st.pipe, std::move(s));
  st.client.set_meter(st.pipe.meter.get());
  st.client.on_complete([self] { async_run_completed(self); });
  st.client.on_settled([self] { async_settled(self); });
  st.client.on_pull(
      [self](const queue_actor& q) { self->state.pipe.upstream.pulling(self, q); });
  self->set_down_handler([self](caf::down_msg& dm) { async_worker_down(self, dm); });
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
      [self](pulled_atom, std::vector<element>& xs, caf::error& err) {
        async_pulled(self, xs, err);
      },
      [self](stop_atom) {
        async_wind_down(self, caf::make_error(caf::exit_reason::user_shutdown));
      },
      [self](worker_pause_atom, bool on, caf::timespan) { return async_pause(self, on); },
      [self](barrier_passed_atom, uint64_t token) {
        auto& st = self->state;
        if (token != st.pipe.barrier)
          return;
        st.pipe.barrier_pending = false;
        answer_pause_if_settled(st.pipe, !(st.client.abandoned() && st.client.owed()));
      },
  };
}

struct blocking_worker_state {
  blocking_enqueue_fn fn;
  blocking_state run; // the op's run
  push_pipe pipe;
  static inline const char* name = "quern.blocking_worker";
};

using blocking_worker_ptr = caf::stateful_actor<blocking_worker_state>*;

/// The run's thread tells `m` of its blocking calls while the run lasts.
class metered_run {
public:
  explicit metered_run(worker_meter* m) noexcept : prev_(call_meter::current()) {
    if (m != nullptr)
      call_meter::current() = m;
  }
  ~metered_run() { call_meter::current() = prev_; }
  metered_run(const metered_run&) = delete;
  metered_run& operator=(const metered_run&) = delete;

private:
  call_meter* prev_;
};

void start_blocking_run(blocking_worker_ptr self) {
  auto& st = self->state;
  st.pipe.run_scheduled = false;
  if (st.pipe.stop->load()) {
    wind_down(self, st.pipe, caf::make_error(caf::exit_reason::user_shutdown));
    try_finish(self, st.pipe, false);
    return;
  }
  // Paused, or about to be: the pause message is on its way (pause_hooks).
  if (!st.pipe.may_run() || (st.pipe.hooks && st.pipe.hooks->pausing()))
    return;
  auto& r = st.run;
  r.reset(st.pipe.runs++, st.pipe.stop.get(), st.pipe.hooks.get());
  auto* meter = st.pipe.meter.get();
  if (meter) // its blocking calls inside the run tell it how long they wait
    meter->to(activity::busy);
  try {
    // Named in the exit report while it runs (quern::actor_system).
    exit_watch::in_run running{self->system(), st.pipe.name, r.index()};
    metered_run metered{meter};
    st.fn(r.run()); // may block: this actor has its own thread
  } catch (...) {
    if (meter)
      meter->to(activity::idle);
    run_failed(self, st.pipe, error_from_exception(std::current_exception()));
    try_finish(self, st.pipe, false);
    return;
  }
  after_run(self, st.pipe, r.out(), r.ended(), {});
}

caf::behavior blocking_worker(blocking_worker_ptr self, blocking_enqueue_fn fn,
                              worker_settings s) {
  auto& st = self->state;
  st.fn = std::move(fn);
  init_pipe(self, st.pipe, std::move(s));
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
      // Seen only between runs (the run holds this actor's thread): paused
      // at once.
      [self](worker_pause_atom, bool on, caf::timespan limit) -> caf::result<bool> {
        auto& p = self->state.pipe;
        p.paused = on;
        if (p.meter)
          p.meter->to(activity::idle);
        if (!on) {
          schedule_run(self, p);
          return true;
        }
        // Rows the op's own writer sent reach their queue first (RS-14).
        if (!self->state.run.settle(limit))
          return make_error(error_code::deadline_exceeded,
                            "the rows its op wrote did not reach their queue within "
                            "the pause limit");
        send_barrier(self, p);
        if (!p.barrier_pending)
          return true;
        auto rp = self->make_response_promise<bool>();
        p.pause_waiters.push_back(rp);
        return rp;
      },
      [self](barrier_passed_atom, uint64_t token) {
        auto& p = self->state.pipe;
        if (token != p.barrier)
          return;
        p.barrier_pending = false;
        answer_pause_if_settled(p, true);
      },
  };
}

} // namespace

caf::actor spawn_worker(caf::actor_system& sys, const enqueue_op& op, worker_settings s) {
  if (auto fn = std::get_if<async_enqueue_fn>(&op.body))
    return sys.spawn(async_worker, *fn, std::move(s));
  return sys.spawn<caf::detached>(blocking_worker, std::get<blocking_enqueue_fn>(op.body),
                                  std::move(s));
}

caf::actor spawn_monitored_worker(caf::local_actor* parent, const enqueue_op& op,
                                  worker_settings s) {
  if (auto fn = std::get_if<async_enqueue_fn>(&op.body))
    return parent->spawn<caf::monitored>(async_worker, *fn, std::move(s));
  return parent->spawn<caf::monitored + caf::detached>(
      blocking_worker, std::get<blocking_enqueue_fn>(op.body), std::move(s));
}

} // namespace quern::detail
