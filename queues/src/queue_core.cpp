#include "queue_core.hpp"

#include <algorithm>
#include <chrono>

#include <caf/local_actor.hpp>
#include <caf/node_id.hpp>

namespace quern::detail {

namespace {

caf::error cancelled_enqueue() {
  return make_error(error_code::cancelled, "Enqueue operation was cancelled");
}

caf::error cancelled_dequeue() {
  return make_error(error_code::cancelled, "Dequeue operation was cancelled");
}

caf::error timed_out() {
  return make_error(error_code::deadline_exceeded, "Timed out waiting for notification");
}

} // namespace

// -- queue_core ---------------------------------------------------------------

queue_core::queue_core(caf::local_actor* self, queue_spec spec)
    : self_(self), spec_(std::move(spec)), kind_(rules_of(spec_.kind)),
      storage_(kind_.make_storage(spec_)) {}

std::string queue_core::enqueue_name() const {
  return std::string(kind_.enqueue_class()) + " '" + spec_.resource_name + "'";
}

std::string queue_core::dequeue_name() const {
  return enqueue_name(); // the single dequeue speaks like the enqueue
}

std::string queue_core::dequeue_many_name() const {
  return std::string(kind_.name()) + " '" + spec_.resource_name + "'";
}

caf::error queue_core::insufficient(const std::string& prefix, int64_t requested,
                                    size_t current) const {
  return make_error(error_code::out_of_range,
                    prefix + " is closed and has insufficient elements (requested " +
                        std::to_string(requested) + ", current size " +
                        std::to_string(current) + ")");
}

size_t queue_core::available() const {
  return kind_.available(storage_->size(), closed_, spec_);
}

void queue_core::take(size_t n, row_list& out) {
  if (n > 0)
    storage_->take(n, out);
}

bool queue_core::has_live_enqueue_attempts() const {
  return !enqueues_.empty();
}

namespace {

// A new attempt that is still pending sits at the back, unless later ones
// were added meanwhile (they were not: add() flushes before returning). It
// is parked from now on: the clock is read for attempts that wait only
// (TL-11).
template <class Attempts>
bool still_pending(Attempts& xs, uint64_t id) {
  auto i =
      std::find_if(xs.rbegin(), xs.rend(), [id](const auto& x) { return x.id == id; });
  if (i == xs.rend())
    return false;
  if (i->parked_ns == 0)
    i->parked_ns = queue_core::now_ns();
  return true;
}

} // namespace

int64_t queue_core::now_ns() {
  // Never 0, which means "not parked".
  return std::max<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count(),
                           1);
}

queue_stats queue_core::stats() const {
  auto s = stats_;
  s.size = size();
  s.capacity = spec_.capacity;
  s.node = caf::to_string(self_->node());
  s.actor = self_->id();
  return s;
}

bool queue_core::add(enqueue_attempt a) {
  auto id = a.id;
  enqueues_.push_back(std::move(a));
  flush();
  return still_pending(enqueues_, id);
}

bool queue_core::add(dequeue_attempt a) {
  auto id = a.id;
  dequeues_.push_back(std::move(a));
  flush();
  return still_pending(dequeues_, id);
}

template <class Attempts>
bool queue_core::serve_line(Attempts& line) {
  bool moved = false;
  while (!line.empty()) {
    auto r = line.front().serve(*this);
    if (r == progress::none)
      break;
    moved = true;
    if (r == progress::partial)
      break;
    line.pop_front();
  }
  return moved;
}

void queue_core::flush() {
  for (;;) {
    // serve each line from its head until neither makes progress.
    bool progressed = true;
    while (progressed) {
      progressed = serve_line(enqueues_);
      progressed = serve_line(dequeues_) || progressed;
    }
    // A push waiting for room for all its rows while a dequeue waits for
    // rows would wait forever where the kind holds rows back (a shuffle
    // queue's min_after_dequeue, a priority queue's dequeue_many that takes
    // all n at once): it stores what fits from now on, as an enqueue_many
    // does. (A FIFO dequeue waits only while the queue is empty, when every
    // push that may wait whole fits.)
    if (enqueues_.empty() || dequeues_.empty() || !enqueues_.front().whole)
      return;
    enqueues_.front().whole = false;
  }
}

void queue_core::close_cancelling(completion done) {
  // closed at once; every pending enqueue-side attempt is cancelled.
  closed_ = true;
  auto pending = std::move(enqueues_);
  enqueues_.clear();
  for (auto& a : pending)
    a.fail(self_, cancelled_enqueue());
  done.deliver_bool(true);
  flush();
}

void queue_core::give_back(const caf::actor_addr& client, row_list rows) {
  if (rows.empty())
    return;
  // (caf::actor_addr's hash dereferences it: no null key, nothing handed.)
  if (auto i = client ? handed_.find(client) : handed_.end(); i != handed_.end()) {
    i->second -= std::min(i->second, rows.size());
    if (i->second == 0)
      handed_.erase(i);
  }
  storage_->put_back(std::move(rows));
  flush();
}

int64_t queue_core::handed_to_client(const caf::actor_addr& client) const {
  if (!client)
    return 0;
  auto i = handed_.find(client);
  return i == handed_.end() ? 0 : i->second;
}

void queue_core::handed_to(const caf::actor_addr& client, int64_t n) {
  if (client && n > 0)
    handed_[client] += n;
}

void queue_core::unpull(const caf::actor_addr& client) {
  for (auto i = dequeues_.begin(); i != dequeues_.end();) {
    if (i->client == client) {
      i->fail(*storage_, self_, cancelled_dequeue());
      i = dequeues_.erase(i);
    } else {
      ++i;
    }
  }
  flush();
}

void queue_core::unpush(const caf::actor_addr& client) {
  // The producer learns how many of each push's rows were stored.
  fail_waiting_enqueues(
      [&](const enqueue_attempt& a) {
        return a.client == client && a.what == enqueue_attempt::op::push;
      },
      [](const enqueue_attempt&) { return cancelled_enqueue(); });
  flush();
}

template <class Pred, class Why>
size_t queue_core::fail_waiting_enqueues(Pred is_it, Why why) {
  size_t failed = 0;
  for (auto i = enqueues_.begin(); i != enqueues_.end();) {
    if (!is_it(*i)) {
      ++i;
      continue;
    }
    // rows already stored stay stored.
    i->fail(self_, why(*i));
    i = enqueues_.erase(i);
    ++failed;
  }
  return failed;
}

size_t queue_core::waiting(const keyed_mark* m) const {
  return static_cast<size_t>(
      std::count_if(enqueues_.begin(), enqueues_.end(),
                    [m](const enqueue_attempt& a) { return a.mark == m; }));
}

bool queue_core::waiting(const keyed_mark* m, uint64_t number) const {
  return std::any_of(enqueues_.begin(), enqueues_.end(), [=](const enqueue_attempt& a) {
    return a.mark == m && a.keyed_number == number;
  });
}

void queue_core::withdraw(const keyed_mark* m,
                          const std::function<caf::error(uint64_t)>& why) {
  // No flush: the retry is added next, which flushes.
  fail_waiting_enqueues([m](const enqueue_attempt& a) { return a.mark == m; },
                        [&](const enqueue_attempt& a) { return why(a.keyed_number); });
}

void queue_core::expire(uint64_t id) {
  if (fail_waiting_enqueues([id](const enqueue_attempt& a) { return a.id == id; },
                            [](const enqueue_attempt&) { return timed_out(); }) > 0) {
    flush();
    return;
  }
  // unlike TensorFlow, what the attempt held goes back, in order.
  fail_waiting_dequeue(id, timed_out());
}

bool queue_core::fail_waiting_dequeue(uint64_t id, caf::error err) {
  for (auto i = dequeues_.begin(); i != dequeues_.end(); ++i) {
    if (i->id == id) {
      i->fail(*storage_, self_, std::move(err));
      dequeues_.erase(i);
      flush();
      return true;
    }
  }
  return false;
}

void queue_core::client_down(const caf::actor_addr& client) {
  if (client)
    handed_.erase(client);
  enqueues_.erase(std::remove_if(enqueues_.begin(), enqueues_.end(),
                                 [&](const enqueue_attempt& a) {
                                   return a.client == client && !a.done.is_stream();
                                 }),
                  enqueues_.end());
  for (auto i = dequeues_.begin(); i != dequeues_.end();) {
    if (i->client == client) {
      i->drop(*storage_);
      i = dequeues_.erase(i);
    } else {
      ++i;
    }
  }
  flush();
}

void queue_core::shutdown() {
  auto enqs = std::move(enqueues_);
  auto deqs = std::move(dequeues_);
  enqueues_.clear();
  dequeues_.clear();
  // Streamed answers go anonymously: the queue may be ending because its
  // last reference went, and a message naming it as sender would take a new
  // reference to an actor that is being destroyed (a use after free).
  // Streaming clients tell answers by their atom, not by their sender.
  for (auto& a : enqs)
    a.fail(nullptr, cancelled_enqueue());
  for (auto& a : deqs)
    a.done.deliver_error(nullptr, cancelled_dequeue());
}

} // namespace quern::detail
