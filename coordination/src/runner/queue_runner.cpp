// The queue_runner handle (quern/queue_runner.hpp); runner_shared.hpp lists
// the runner's other parts.

#include "quern/queue_runner.hpp"

#include "quern/actor_system.hpp"

#include <atomic>
#include <chrono>
#include <mutex>

#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "runner_shared.hpp"

namespace quern {

using detail::runner_config;
using detail::runner_outcome;

namespace detail {

/// One start: the runner actor (held weakly: it lives until its work is
/// done) and what it publishes as it ends. The runner's state is its own;
/// the handle asks it (ask()). Not in the anonymous namespace: the handle's
/// impl holds one.
struct started_run {
  caf::actor_system* sys = nullptr;
  caf::actor_addr runner;
  std::shared_ptr<runner_outcome> outcome;
};

} // namespace detail

using detail::started_run;

namespace {

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

/// How long the handle waits for its runner's answer. The runner is a local
/// event-based actor that answers at once; a runner that does not answer
/// in this time is a defect, reported instead of a hang.
constexpr auto status_wait = std::chrono::seconds(30);

/// What the runner of one start says about itself.
struct runner_report {
  int32_t live_workers = 0;
  int64_t rows_dropped = 0;
  std::vector<caf::error> exceptions;
};

[[noreturn]] void no_answer(const std::string& what) {
  throw deadline_exceeded_error("the queue runner actor did not " + what + " within " +
                                std::to_string(status_wait.count()) + " s");
}

/// Asks the runner of `r` (a request with a bounded wait) or, once it has
/// ended, reads what it published.
runner_report ask(const started_run& r) {
  runner_report rep;
  if (!r.outcome->published()) {
    if (auto a = caf::actor_cast<caf::actor>(r.runner)) {
      caf::scoped_actor self{*r.sys};
      bool answered = false;
      caf::error err;
      self->request(a, status_wait, detail::runner_status_atom::value)
          .receive(
              [&](int32_t live, int64_t dropped, std::vector<caf::error>& ex) {
                rep = runner_report{live, dropped, std::move(ex)};
                answered = true;
              },
              [&](caf::error& e) { err = std::move(e); });
      if (answered)
        return rep;
      if (err == caf::sec::request_timeout)
        no_answer("answer a status request");
    }
  }
  // It has ended (or is ending): it publishes before anyone sees it down.
  if (!r.outcome->wait(status_wait, rep.rows_dropped, rep.exceptions))
    no_answer("publish its outcome as it ended");
  return rep;
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
  /// Its workers' figures (docs/input.md, "Where the pipeline waits").
  std::shared_ptr<detail::runner_meters> meters =
      std::make_shared<detail::runner_meters>(true);

  /// The last start (none before the first).
  std::shared_ptr<const started_run> last;
  /// Its workers, once its start was answered.
  std::shared_ptr<const detail::started_workers> workers;

  std::shared_ptr<const started_run> current() const {
    std::lock_guard<std::mutex> guard{mtx};
    return last;
  }

  ~impl() {
    // Made and never started: the queue no longer counts on this runner.
    if (!last && queue)
      caf::anon_send(queue, feeder_atom::value, int32_t{-1}, int32_t{0},
                     caf::timespan{0});
    // Started without a coordinator: nobody else will stop it.
    if (last && !with_coordinator && !last->outcome->published())
      if (auto a = caf::actor_cast<caf::actor>(last->runner))
        caf::anon_send(a, stop_atom::value);
  }
};

queue_runner::queue_runner(queue_actor queue, std::vector<enqueue_op> ops,
                           queue_runner_options opts)
    : impl_(std::make_shared<impl>()) {
  bool ops_ok = !ops.empty();
  for (auto& op : ops)
    if (!op.runnable())
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

} // namespace

std::string detail::op_name(const std::string& runner_name,
                            const std::vector<enqueue_op>& ops, size_t i) {
  auto& op = ops[i];
  return runner_name + "/" + (op.name.empty() ? "op" + std::to_string(i) : op.name);
}

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
  if (d.last && ask(*d.last).live_workers > 0)
    return {}; // QR-4
  caf::scoped_actor self{sys};
  if (d.last && !d.last->outcome->published()) {
    // Every worker ended; the runner is finishing its close_op: let it.
    if (auto old = caf::actor_cast<caf::actor>(d.last->runner)) {
      self->monitor(old);
      self->receive([](caf::down_msg&) {});
    }
  }
  resolve_name(self);
  // The queue is fed now; the runner actor tells it when it ends.
  self->send(d.queue, feeder_atom::value, int32_t{0}, int32_t{1}, caf::timespan{0});
  auto stop = std::make_shared<std::atomic<bool>>(false);
  auto outcome = std::make_shared<runner_outcome>();
  d.with_coordinator = static_cast<bool>(coord);
  d.meters->restart();
  auto hooks = std::make_shared<detail::pause_hooks>();
  runner_config cfg{d.queue, d.ops,   d.opts, d.name,  coord,
                    stop,    outcome, hooks,  d.meters};
  auto runner = detail::spawn_runner(sys, std::move(cfg));
  auto runner_handle = caf::actor_cast<caf::actor>(runner);
  // A new start: exceptions_raised starts empty (QR-9).
  d.last = std::make_shared<const started_run>(
      started_run{&sys, runner_handle.address(), std::move(outcome)});
  d.workers.reset(); // the last start's, until this one's are known
  // At exit, quern::actor_system sets the stop flag before it ends the
  // runner, so that blocking ops see should_stop().
  detail::exit_watch::track(sys, runner_handle, "queue runner '" + d.name + "'",
                            [stop] { *stop = true; });
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
  // One worker per op, in the ops' order (none when stopped before it started).
  auto ws = std::make_shared<detail::started_workers>();
  ws->hooks = std::move(hooks);
  for (size_t i = 0; i < result.size(); ++i)
    ws->workers.emplace_back(result[i].address(), detail::op_name(d.name, d.ops, i));
  d.workers = std::move(ws);
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
    name = detail::op_name(d.name, d.ops, index);
  }
  // A worker limited to one run: it enqueues what the run emitted and ends.
  auto& op = d.ops[index]; // the ops never change after construction
  auto w = detail::spawn_worker(
      sys, op,
      {d.queue, int32_t{1}, std::make_shared<std::atomic<bool>>(),
       d.opts.queue_closed_codes, caf::actor{}, uint64_t{1}, name, nullptr, nullptr});
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
  auto r = impl_->current();
  if (!r)
    return {};
  return caf::actor_cast<caf::actor>(r->runner);
}

bool queue_runner::started() const {
  return impl_->current() != nullptr;
}

bool queue_runner::running() const {
  auto r = impl_->current();
  return r && ask(*r).live_workers > 0;
}

std::vector<caf::error> queue_runner::exceptions_raised() const {
  auto r = impl_->current();
  return r ? ask(*r).exceptions : std::vector<caf::error>{};
}

int64_t queue_runner::rows_dropped() const {
  auto r = impl_->current();
  return r ? ask(*r).rows_dropped : 0;
}

void queue_runner::set_measured(bool on) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->meters->set_on(on);
}

std::shared_ptr<detail::runner_meters> queue_runner::meters() const {
  return impl_->meters;
}

std::shared_ptr<const detail::started_workers> queue_runner::workers_to_pause() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return impl_->workers;
}

void queue_runner::stop() const {
  if (auto a = runner())
    caf::anon_send(a, stop_atom::value);
}

} // namespace quern