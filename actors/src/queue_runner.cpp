#include "quern/queue_runner.hpp"

#include <algorithm>
#include <iostream>
#include <mutex>
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
  std::atomic<bool> running{false};
  caf::actor_addr runner;
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
  }
  static void set_on_complete(async_run& r, std::function<void()> f) {
    r.on_complete_ = std::move(f);
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

} // namespace detail

// -- async_run / blocking_run ---------------------------------------------------------

bool async_run::should_stop() const noexcept {
  return stop_ != nullptr && stop_->load(std::memory_order_relaxed);
}

void async_run::emit(element row) {
  if (completed())
    throw std::logic_error("quern::async_run::emit after the run was completed");
  out_.add_row(std::move(row));
}

void async_run::emit_many(element batch) {
  if (completed())
    throw std::logic_error("quern::async_run::emit_many after the run was completed");
  out_.add_batch(std::move(batch));
}

void async_run::emit(std::vector<element> rows) {
  if (completed())
    throw std::logic_error("quern::async_run::emit after the run was completed");
  out_.add_rows(std::move(rows));
}

void async_run::complete(state s) {
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

// A worker ends by quitting: normally when its input ended, with
// user_shutdown when stopped, and with the run's error otherwise. Its runner
// monitors it and reads the reason.

/// How a worker streams its rows: each run's rows are one push; up to
/// `push_window` pushes may wait for their ack while the next run already
/// works (rows are still stored in run order: one sender, one queue).
struct push_pipe {
  queue_actor queue;
  int32_t window = 2;
  int32_t in_flight = 0;
  bool ended = false;      // the input is exhausted: quit once all acked
  bool run_active = false; // an asynchronous run has not completed yet
  bool run_scheduled = false;
  uint64_t runs = 0;

  bool may_run() const { return !ended && !run_active && in_flight < window; }
};

/// After a run: push its rows, then end or schedule the next run (always
/// through the mailbox, so that a pending stop is seen first and the stack
/// does not grow).
void after_run(caf::event_based_actor* self, push_pipe& p, detail::run_output& out,
               bool ended) {
  for (auto& piece : out.pieces()) {
    ++p.in_flight;
    if (piece.is_batch)
      self->send(p.queue, push_batch_atom::value, std::move(piece.batch));
    else
      self->send(p.queue, push_atom::value, std::move(piece.rows));
  }
  out.clear();
  p.ended = p.ended || ended;
  if (p.ended) {
    if (p.in_flight == 0)
      self->quit(caf::exit_reason::normal);
    return;
  }
  if (p.may_run() && !p.run_scheduled) {
    p.run_scheduled = true;
    self->send(self, worker_run_atom::value);
  }
}

/// A push was acknowledged.
void on_pushed(caf::event_based_actor* self, push_pipe& p, caf::error& err) {
  --p.in_flight;
  if (err) {
    self->quit(std::move(err));
    return;
  }
  if (p.ended) {
    if (p.in_flight == 0)
      self->quit(caf::exit_reason::normal);
    return;
  }
  if (p.may_run() && !p.run_scheduled) {
    p.run_scheduled = true;
    self->send(self, worker_run_atom::value);
  }
}

struct async_worker_state {
  async_enqueue_fn fn;
  std::shared_ptr<runner_shared> shared;
  async_run run;
  push_pipe pipe;
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

void async_run_completed(async_worker_ptr self) {
  auto& st = self->state;
  auto& r = st.run;
  st.pipe.run_active = false;
  ++st.pipe.runs;
  if (async_worker_access::failed(r)) {
    self->quit(std::move(async_worker_access::error(r)));
    return;
  }
  after_run(self, st.pipe, async_worker_access::out(r), async_worker_access::ended(r));
}

caf::behavior async_worker(async_worker_ptr self, async_enqueue_fn fn, queue_actor q,
                           int32_t window, std::shared_ptr<runner_shared> shared) {
  self->set_exception_handler(keep_exception_message);
  auto& st = self->state;
  st.fn = std::move(fn);
  st.pipe.queue = std::move(q);
  st.pipe.window = std::max(window, int32_t{1});
  st.shared = std::move(shared);
  async_worker_access::set_on_complete(st.run, [self] { async_run_completed(self); });
  st.pipe.run_scheduled = true;
  self->send(self, worker_run_atom::value);
  return {
      [self](worker_run_atom) { start_async_run(self); },
      [self](pushed_atom, int32_t, caf::error& err) {
        on_pushed(self, self->state.pipe, err);
      },
      [self](pulled_atom, std::vector<element>& rows, caf::error& err) {
        if (!async_worker_access::deliver_pulled(self->state.run, rows, err) &&
            !rows.empty())
          // Nobody asked for them: back to the front of the queue they came from.
          caf::anon_send(caf::actor_cast<caf::actor>(self->current_sender()),
                         give_back_atom::value, std::move(rows));
      },
      [self](pulled_atom, element& batch, caf::error& err) {
        if (!async_worker_access::deliver_pulled_batch(self->state.run, batch, err) &&
            !batch.components.empty() && batch.batch_size() > 0) {
          std::vector<element> rows;
          for (int64_t i = 0; i < batch.batch_size(); ++i)
            rows.push_back(batch.row(i));
          caf::anon_send(caf::actor_cast<caf::actor>(self->current_sender()),
                         give_back_atom::value, std::move(rows));
        }
      },
      [self](stop_atom) { self->quit(caf::exit_reason::user_shutdown); },
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
    self->quit(caf::exit_reason::user_shutdown);
    return;
  }
  if (!st.pipe.may_run())
    return;
  auto& r = st.run;
  async_worker_access::reset(r, st.pipe.runs++, &st.shared->stop);
  try {
    st.fn(r); // may block: this actor has its own thread
  } catch (...) {
    self->quit(error_from_exception(std::current_exception()));
    return;
  }
  after_run(self, st.pipe, async_worker_access::out(r), async_worker_access::ended(r));
}

caf::behavior blocking_worker(blocking_worker_ptr self, blocking_enqueue_fn fn,
                              queue_actor q, int32_t window,
                              std::shared_ptr<runner_shared> shared) {
  self->set_exception_handler(keep_exception_message);
  auto& st = self->state;
  st.fn = std::move(fn);
  st.pipe.queue = std::move(q);
  st.pipe.window = std::max(window, int32_t{1});
  st.shared = std::move(shared);
  st.pipe.run_scheduled = true;
  self->send(self, worker_run_atom::value);
  return {
      [self](worker_run_atom) { start_blocking_run(self); },
      [self](pushed_atom, int32_t, caf::error& err) {
        on_pushed(self, self->state.pipe, err);
      },
      [self](stop_atom) { self->quit(caf::exit_reason::user_shutdown); },
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

void begin_stop(runner_ptr self) {
  auto& st = self->state;
  if (st.stopping)
    return;
  st.stopping = true;
  st.cfg.shared->stop = true;
  if (st.cfg.opts.cancel_op)
    close_queue(self, *st.cfg.opts.cancel_op);
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
  bool clean = is_clean_exit(reason) || has_code(st.cfg.opts.queue_closed_codes, reason);
  // A cancellation caused by our own cancel_op during a stop is expected.
  bool quiet = st.stopping && is(reason, error_code::cancelled);
  if (!clean && !quiet) {
    {
      std::lock_guard<std::mutex> guard{st.cfg.shared->mtx};
      st.cfg.shared->exceptions.push_back(reason);
    }
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
    close_queue(self, *st.cfg.opts.close_op);
  }
  check_finished(self);
}

std::string op_name(const runner_config& cfg, size_t i) {
  auto& op = cfg.ops[i];
  return cfg.name + "/" + (op.name.empty() ? "op" + std::to_string(i) : op.name);
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
          caf::actor w;
          if (op.async)
            w = self->spawn<caf::monitored>(async_worker, op.async, st.cfg.queue,
                                            st.cfg.opts.push_window, st.cfg.shared);
          else
            w = self->spawn<caf::monitored + caf::detached>(
                blocking_worker, op.blocking, st.cfg.queue, st.cfg.opts.push_window,
                st.cfg.shared);
          st.live.emplace(w.id(), w);
          st.workers.push_back(w);
          st.names.emplace(w.id(), op_name(st.cfg, i));
          regs.push_back(registration{w, op_name(st.cfg, i), false, false});
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
  queue_actor queue;
  std::vector<enqueue_op> ops;
  queue_runner_options opts;
  std::string name;
  bool with_coordinator = false;
  std::shared_ptr<runner_shared> shared;

  ~impl() {
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
    throw invalid_argument_error("Must provide queue and enqueue_ops.");
  if (opts.queue_closed_codes.empty())
    throw invalid_argument_error(
        "queue_closed_exception_types, if provided, must be a non-empty list of "
        "tf.error types, but saw: []");
  impl_->queue = std::move(queue);
  impl_->ops = std::move(ops);
  impl_->name = opts.name;
  impl_->opts = std::move(opts);
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

std::vector<caf::actor> queue_runner::start(caf::actor_system& sys,
                                            const coordinator_actor& coord) {
  auto& d = *impl_;
  if (d.shared && d.shared->running.load())
    return {}; // QR-4
  caf::scoped_actor self{sys};
  if (d.name.empty()) {
    self->request(d.queue, caf::infinite, spec_atom::value)
        .receive([&](queue_spec& s) { d.name = node_name(s.resource_name); },
                 [&](caf::error&) { d.name = "queue_runner"; });
  }
  auto shared = std::make_shared<runner_shared>();
  shared->running = true;
  d.shared = shared; // resets exceptions_raised (QR-9)
  d.with_coordinator = static_cast<bool>(coord);
  runner_config cfg{d.queue, d.ops, d.opts, d.name, coord, shared};
  auto runner = sys.spawn(runner_impl, std::move(cfg));
  auto runner_handle = caf::actor_cast<caf::actor>(runner);
  shared->runner = runner_handle.address();
  caf::error err;
  if (coord) {
    std::vector<registration> regs{registration{runner_handle, d.name, true, true}};
    self->request(coord, caf::infinite, register_atom::value, std::move(regs))
        .receive([](int32_t) {}, [&](caf::error& e) { err = e; });
  }
  std::vector<caf::actor> result{runner_handle};
  self->request(runner, caf::infinite, runner_start_atom::value)
      .receive(
          [&](std::vector<caf::actor>& ws) {
            result.insert(result.end(), ws.begin(), ws.end());
          },
          [&](caf::error& e) { err = e; });
  if (err) {
    caf::anon_send(runner, stop_atom::value);
    throw_error(err);
  }
  return result;
}

caf::actor queue_runner::runner() const {
  if (!impl_->shared)
    return {};
  return caf::actor_cast<caf::actor>(impl_->shared->runner);
}

bool queue_runner::started() const {
  return impl_->shared != nullptr;
}

bool queue_runner::running() const {
  return impl_->shared && impl_->shared->running.load();
}

std::vector<caf::error> queue_runner::exceptions_raised() const {
  if (!impl_->shared)
    return {};
  std::lock_guard<std::mutex> guard{impl_->shared->mtx};
  return impl_->shared->exceptions;
}

void queue_runner::stop() const {
  if (auto a = runner())
    caf::anon_send(a, stop_atom::value);
}

} // namespace quern
