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
  async_worker_access::reset(r, self, st.pipe.runs, st.pipe.stop.get());
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
    st.pipe.upstream.release(self, async_worker_access::abandon(st.run));
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
    auto sources = async_worker_access::take_sources(r);
    async_worker_access::give_back_all(self, sources);
    st.pipe.upstream.release(self, sources);
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
  auto& r = st.run;
  if (async_worker_access::pull_from(r).address() != dm.source ||
      !async_worker_access::owed(r))
    return;
  std::vector<element> none;
  caf::error err = make_error(error_code::cancelled, "the queue pulled from is gone");
  async_worker_access::pull_answered(r);
  if (!async_worker_access::deliver_pulled(r, none, err))
    async_try_finish(self);
}

/// A pull was answered: the rows (or the one batch) go to the run that asked,
/// or back to their queue if the run no longer waits for them.
void async_pulled(async_worker_ptr self, std::vector<element>& xs, caf::error& err) {
  auto& st = self->state;
  auto& r = st.run;
  async_worker_access::pull_answered(r);
  const bool rows = async_worker_access::pulled_rows(r);
  auto from = async_worker_access::pull_from(r); // the next pull may change it
  // Numbered as the queue's side counts them (every unit of every answer);
  // those not kept as the run's sources are done with once handled here.
  auto units = xs.size();
  auto first = st.pipe.upstream.arrive(from, units);
  if (!err && !xs.empty() && r.completed() == false) {
    if (rows)
      async_worker_access::took(r, xs, first);
    else
      async_worker_access::took_batch(r, xs.front(), first);
    units = 0;
  }
  const bool delivered = async_worker_access::deliver_pulled(r, xs, err);
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
  async_worker_access::set_on_complete(st.run, [self] { async_run_completed(self); });
  async_worker_access::set_on_settled(st.run, [self] { async_try_finish(self); });
  async_worker_access::set_on_pull(st.run, [self](const queue_actor& q) {
    self->state.pipe.upstream.pulling(self, q);
  });
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
  };
}

struct blocking_worker_state {
  blocking_enqueue_fn fn;
  blocking_run run;
  push_pipe pipe;
  static inline const char* name = "quern.blocking_worker";
};

using blocking_worker_ptr = caf::stateful_actor<blocking_worker_state>*;

void start_blocking_run(blocking_worker_ptr self) {
  auto& st = self->state;
  st.pipe.run_scheduled = false;
  if (st.pipe.stop->load()) {
    wind_down(self, st.pipe, caf::make_error(caf::exit_reason::user_shutdown));
    try_finish(self, st.pipe, false);
    return;
  }
  if (!st.pipe.may_run())
    return;
  auto& r = st.run;
  async_worker_access::reset(r, st.pipe.runs++, st.pipe.stop.get());
  try {
    // Named in the exit report while it runs (quern::actor_system).
    exit_watch::in_run running{self->system(), st.pipe.name, r.index()};
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
