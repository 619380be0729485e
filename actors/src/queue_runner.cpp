// The queue_runner handle (quern/queue_runner.hpp); runner_shared.hpp lists
// the runner's other parts.

#include "quern/queue_runner.hpp"

#include "quern/actor_system.hpp"

#include <mutex>

#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "runner_shared.hpp"

namespace quern {

using detail::runner_config;
using detail::runner_shared;

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
  auto runner = detail::spawn_runner(sys, std::move(cfg));
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
    name = detail::op_name(d.name, d.ops, index);
  }
  // A worker limited to one run: it enqueues what the run emitted and ends.
  auto& op = d.ops[index]; // the ops never change after construction
  auto shared = std::make_shared<runner_shared>();
  shared->live_workers = 1;
  auto w =
      detail::spawn_worker(sys, op, {d.queue, int32_t{1}, shared, uint64_t{1}, name});
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