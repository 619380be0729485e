#include "quern/pipeline.hpp"

#include <algorithm>
#include <iostream>
#include <mutex>
#include <sstream>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>

#include "quern/detail/starvation.hpp"

#include "pipeline_checkpoint.hpp"
#include "pipeline_state.hpp"

namespace quern {

namespace {

std::string describe(caf::timespan t) {
  std::ostringstream os;
  os << std::chrono::duration<double>(t).count() << " s";
  return os.str();
}

std::string diagnose(const consumer::state& st, const queue_actor& q,
                     bool& never_started) {
  never_started = false;
  std::vector<queue_runner> feeding;
  {
    std::lock_guard<std::mutex> guard{st.mtx};
    for (auto& r : st.runners)
      if (r.queue().address() == q.address())
        feeding.push_back(r);
  }
  if (feeding.empty())
    return "no queue runner of this pipeline feeds this queue; unless other code "
           "enqueues into it, this dequeue waits forever";
  bool any_started = false;
  for (auto& r : feeding) {
    if (r.running())
      return {}; // fed: its producers may just be slow
    any_started = any_started || r.started();
  }
  if (!any_started) {
    never_started = true;
    return "its " + std::to_string(feeding.size()) +
           " queue runner(s) were never started: call start_queue_runners before "
           "dequeuing (TensorFlow would hang here forever)";
  }
  return "every queue runner of this queue has ended without closing it; unless other "
         "code enqueues into it, this dequeue waits forever";
}

} // namespace

// -- consumer -------------------------------------------------------------------------

consumer::consumer(caf::actor_system& sys, queue_actor q, std::shared_ptr<const state> st)
    : q_(sys, q), client_(sys), watched_(detail::is_local_queue(q)),
      state_(std::move(st)) {
  try {
    queue_name_ = "queue '" + q_.spec().resource_name + "'";
  } catch (const std::exception&) {
    queue_name_ = "a queue";
  }
}

void consumer::starving(const std::string& queue_said, bool queue_never_started,
                        caf::timespan waited) const {
  // The pipeline's own words when it knows why (its runners of the queue);
  // the queue's when it knows more (runners of other pipelines).
  bool never_started = false;
  auto why = diagnose(*state_, q_.actor(), never_started);
  if (why.empty()) {
    why = queue_said;
    never_started = queue_never_started;
  }
  if (why.empty())
    return; // a runner still feeds it: its producers may just be slow
  auto action = never_started ? state_->opts.when_never_started : state_->opts.when_unfed;
  auto msg =
      "Dequeue from " + queue_name_ + " has waited " + describe(waited) + ": " + why;
  if (action == starvation_action::fail)
    throw failed_precondition_error(msg);
  if (action == starvation_action::warn)
    std::cerr << "quern: warning: " << msg << '\n';
}

template <class F>
element consumer::guarded(F attempt) {
  auto limit = state_->opts.starvation_timeout;
  auto lease = client_.acquire();
  auto& self = *lease;
  if (limit <= caf::timespan{0} || limit == caf::timespan::max())
    return attempt(self, wait_forever);
  // One request. A queue of this process watches it (detail::starving_atom):
  // it fails it after `limit` if no runner feeds the queue, or when the last
  // runner ends, and keeps every element. Its deadline costs no delay at
  // exit: the queue's deadline relay holds the queue weakly (deadlines.cpp).
  // A remote queue's dequeue waits `limit`, then the pipeline looks.
  auto queue = caf::actor_cast<caf::actor>(q_.actor());
  auto start = std::chrono::steady_clock::now();
  std::string said;
  bool never_started = false;
  try {
    if (!watched_)
      return attempt(self, limit);
    self->send(queue, detail::starving_atom::value, limit);
    return attempt(self, wait_forever);
  } catch (const failed_precondition_error& e) { // runners never started
    said = e.what();
    never_started = true;
  } catch (const unavailable_error& e) { // no runner feeds the queue
    if (!watched_)
      throw; // a remote queue's own error
    said = e.what();
  } catch (const deadline_exceeded_error&) { // a remote queue waited `limit`
    if (watched_)
      throw;
  }
  starving(said, never_started,
           std::chrono::duration_cast<caf::timespan>(std::chrono::steady_clock::now() -
                                                     start));
  // Warned (or told to ignore it): the call keeps waiting, undiagnosed.
  if (watched_)
    self->send(queue, detail::starving_atom::value, caf::timespan::max());
  return attempt(self, wait_forever);
}

template <class F>
element consumer::measured(F attempt, bool batch) {
  if (!meter_)
    return guarded(std::move(attempt));
  auto begin = detail::steady_ns();
  auto e = guarded(std::move(attempt));
  auto end = detail::steady_ns();
  meter_->dequeued(begin, end, batch && !e.components.empty() ? e.batch_size() : 1);
  return e;
}

element consumer::dequeue() {
  return measured(
      [this](caf::scoped_actor& self, caf::timespan t) {
        return blocking_client::receive_answer<element>(self, q_.actor(),
                                                        dequeue_atom::value, t);
      },
      false);
}

element consumer::dequeue_many(int32_t n) {
  return measured(
      [this, n](caf::scoped_actor& self, caf::timespan t) {
        return blocking_client::receive_answer<element>(self, q_.actor(),
                                                        dequeue_many_atom::value, n, t);
      },
      true);
}

element consumer::dequeue_up_to(int32_t n) {
  return measured(
      [this, n](caf::scoped_actor& self, caf::timespan t) {
        return blocking_client::receive_answer<element>(self, q_.actor(),
                                                        dequeue_up_to_atom::value, n, t);
      },
      true);
}

// -- pipeline -------------------------------------------------------------------------

pipeline::pipeline(caf::actor_system& sys, pipeline_options opts)
    : sys_(sys), opts_(opts), state_(std::make_shared<consumer::state>()) {
  state_->opts = opts;
}

pipeline::~pipeline() {
  stop();
  if (state_->member)
    caf::anon_send_exit(state_->member, caf::exit_reason::user_shutdown);
  // The last checkpoint is written whole before the pipeline goes.
  try {
    wait_checkpoint();
  } catch (const std::exception& e) {
    std::cerr << "quern: warning: checkpoint '" << state_->checkpoint_files.last_path()
              << "' was not written: " << e.what() << '\n';
  }
  // Restored batches that no batch reader took were never handed out.
  std::lock_guard<std::mutex> guard{state_->mtx};
  for (auto& [name, batches] : state_->restored_held)
    std::cerr << "quern: warning: " << batches.size()
              << " batches restored for the batch reader of queue '" << name
              << "' were never handed out: the restored pipeline made no batch reader "
                 "of that queue (make_batch_reader)\n";
}

void pipeline::add_queue_runner(queue_runner qr) {
  std::lock_guard<std::mutex> guard{state_->mtx};
  state_->runners.push_back(std::move(qr));
}

std::vector<queue_runner> pipeline::queue_runners() const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  return state_->runners;
}

std::vector<caf::actor> pipeline::start_queue_runners(coordinator& coord) {
  return start_queue_runners(coord.actor());
}

std::vector<caf::actor> pipeline::start_queue_runners() {
  return start_queue_runners(coordinator_actor{});
}

std::vector<caf::actor> pipeline::start_queue_runners(const coordinator_actor& coord) {
  bool restore_first = false;
  {
    std::lock_guard<std::mutex> guard{state_->mtx};
    restore_first = opts_.restore && !state_->restore_tried;
    state_->restore_tried = true;
  }
  if (restore_first)
    restore_latest();
  auto runners = queue_runners();
  if (runners.empty())
    std::cerr << "quern: warning: start_queue_runners: the pipeline has no queue "
                 "runners to start\n";
  std::vector<caf::actor> result;
  for (auto& r : runners) {
    r.set_measured(opts_.telemetry);
    auto actors = r.start(sys_, coord);
    result.insert(result.end(), actors.begin(), actors.end());
  }
  return result;
}

void pipeline::add_setting(std::string name, pipeline_setting value) {
  std::lock_guard<std::mutex> guard{state_->mtx};
  auto& all = state_->settings;
  auto i = std::find_if(all.begin(), all.end(),
                        [&](const auto& kv) { return kv.first == name; });
  if (i != all.end())
    i->second = std::move(value);
  else
    all.emplace_back(std::move(name), std::move(value));
}

std::vector<std::pair<std::string, pipeline_setting>> pipeline::settings() const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  return state_->settings;
}

consumer pipeline::make_consumer(queue_actor q) const {
  // A restored snapshot's batches held by a batch reader of q are handed out
  // by a batch reader of q, not by this consumer (RS-17).
  pipeline_ckpt::refuse_if_held(sys_, *state_, q, "a consumer (make_consumer)");
  std::shared_ptr<detail::consumer_meter> meter;
  if (opts_.telemetry)
    meter = std::make_shared<detail::consumer_meter>(q);
  {
    std::lock_guard<std::mutex> guard{state_->mtx};
    state_->consumed.push_back(q);
    if (meter)
      state_->consumer_meters.push_back(meter);
  }
  consumer c{sys_, std::move(q), state_};
  c.meter_ = std::move(meter);
  return c;
}

std::string pipeline::starvation_diagnosis(const queue_actor& q,
                                           bool& never_started) const {
  return diagnose(*state_, q, never_started);
}

void pipeline::stop() const {
  for (auto& r : queue_runners())
    r.stop();
}

} // namespace quern
