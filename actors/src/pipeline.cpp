#include "quern/pipeline.hpp"

#include <algorithm>
#include <iostream>
#include <mutex>
#include <sstream>

namespace quern {

struct consumer::state {
  pipeline_options opts;
  mutable std::mutex mtx;
  std::vector<queue_runner> runners;
};

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
    : q_(sys, q), state_(std::move(st)) {
  try {
    queue_name_ = "queue '" + q_.spec().resource_name + "'";
  } catch (const std::exception&) {
    queue_name_ = "a queue";
  }
}

template <class F>
element consumer::guarded(F attempt) {
  auto limit = state_->opts.starvation_timeout;
  if (limit <= caf::timespan{0} || limit == caf::timespan::max())
    return attempt(wait_forever);
  // The queue enforces each slice itself (no element is lost). Slices stay
  // short because a queue keeps a pending deadline timer (and thus itself)
  // alive until it fires, which would delay ~actor_system by a long slice.
  auto slice = std::min(limit, caf::timespan{std::chrono::milliseconds(100)});
  bool warned = false;
  caf::timespan waited{0};
  for (;;) {
    try {
      return attempt(slice);
    } catch (const deadline_exceeded_error&) {
      waited += slice;
      if (waited < limit)
        continue;
      bool never_started = false;
      auto why = diagnose(*state_, q_.actor(), never_started);
      if (why.empty())
        continue;
      auto action =
          never_started ? state_->opts.when_never_started : state_->opts.when_unfed;
      auto msg =
          "Dequeue from " + queue_name_ + " has waited " + describe(waited) + ": " + why;
      if (action == starvation_action::fail)
        throw failed_precondition_error(msg);
      if (action == starvation_action::warn && !warned) {
        std::cerr << "quern: warning: " << msg << '\n';
        warned = true;
      }
    }
  }
}

element consumer::dequeue() {
  return guarded([this](caf::timespan t) { return q_.dequeue(t); });
}

element consumer::dequeue_many(int32_t n) {
  return guarded([this, n](caf::timespan t) { return q_.dequeue_many(n, t); });
}

element consumer::dequeue_up_to(int32_t n) {
  return guarded([this, n](caf::timespan t) { return q_.dequeue_up_to(n, t); });
}

// -- pipeline -------------------------------------------------------------------------

pipeline::pipeline(caf::actor_system& sys, pipeline_options opts)
    : sys_(sys), opts_(opts), state_(std::make_shared<consumer::state>()) {
  state_->opts = opts;
}

pipeline::~pipeline() {
  stop();
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
  auto runners = queue_runners();
  if (runners.empty())
    std::cerr << "quern: warning: start_queue_runners: the pipeline has no queue "
                 "runners to start\n";
  std::vector<caf::actor> result;
  for (auto& r : runners) {
    auto actors = r.start(sys_, coord);
    result.insert(result.end(), actors.begin(), actors.end());
  }
  return result;
}

consumer pipeline::make_consumer(queue_actor q) const {
  return consumer{sys_, std::move(q), state_};
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
