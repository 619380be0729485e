#include "queue_core.hpp"

#include <algorithm>

#include <caf/local_actor.hpp>

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
// were added meanwhile (they were not: add() flushes before returning).
template <class Attempts>
bool still_pending(const Attempts& xs, uint64_t id) {
  return std::any_of(xs.rbegin(), xs.rend(), [id](const auto& x) { return x.id == id; });
}

} // namespace

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

void queue_core::flush() {
  // serve each side from its head until neither makes progress.
  bool progressed = true;
  while (progressed) {
    progressed = false;
    while (!enqueues_.empty()) {
      auto r = serve(enqueues_.front());
      if (r == progress::complete) {
        enqueues_.pop_front();
        progressed = true;
        continue;
      }
      if (r == progress::partial)
        progressed = true;
      break;
    }
    while (!dequeues_.empty()) {
      auto r = serve(dequeues_.front());
      if (r == progress::complete) {
        dequeues_.pop_front();
        progressed = true;
        continue;
      }
      if (r == progress::partial)
        progressed = true;
      break;
    }
  }
}

queue_core::progress queue_core::serve(enqueue_attempt& a) {
  if (a.what == enqueue_attempt::op::close) {
    // a non-cancelling close takes effect when it reaches the head.
    if (closed_) {
      a.done.deliver_error(
          self_, make_error(error_code::cancelled,
                            "Queue '" + spec_.resource_name + "' is already closed."));
    } else {
      closed_ = true;
      a.done.deliver_bool(true);
    }
    return progress::complete;
  }
  if (closed_) {
    //
    auto err = make_error(error_code::cancelled, enqueue_name() + " is closed.");
    if (a.done.is_stream())
      a.done.deliver_count(self_, static_cast<int32_t>(a.stored), std::move(err));
    else
      a.done.deliver_error(self_, std::move(err));
    return progress::complete;
  }
  // Rows go in order while there is room; a batch goes as one
  // run, or as two when it only partly fits.
  auto capacity = static_cast<int64_t>(spec_.capacity);
  auto room = capacity - static_cast<int64_t>(storage_->size());
  auto k = std::min(a.rows.size(), std::max<int64_t>(room, 0));
  if (k > 0) {
    storage_->push(a.rows, k);
    a.stored += k;
  }
  if (a.rows.empty()) {
    a.done.deliver_count(self_, static_cast<int32_t>(a.total), caf::none);
    return progress::complete;
  }
  return k > 0 ? progress::partial : progress::none;
}

queue_core::progress queue_core::serve(dequeue_attempt& a) {
  switch (a.what) {
  case dequeue_attempt::op::dequeue:
    return serve_single(a);
  case dequeue_attempt::op::pull:
  case dequeue_attempt::op::pull_batch:
    return serve_pull(a);
  case dequeue_attempt::op::pull_many:
    return serve_pull_many(a);
  case dequeue_attempt::op::dequeue_many:
  case dequeue_attempt::op::dequeue_up_to:
    return kind_.incremental_batches() ? serve_many(a) : serve_many_whole(a);
  }
  return progress::none;
}

queue_core::progress queue_core::serve_single(dequeue_attempt& a) {
  //
  if (available() > 0) {
    row_list one;
    take(1, one);
    a.done.deliver_element(self_, one.pop_front());
    return progress::complete;
  }
  if (closed_) {
    a.done.deliver_error(self_, insufficient(dequeue_name(), 1, storage_->size()));
    return progress::complete;
  }
  return progress::none;
}

queue_core::progress queue_core::serve_pull(dequeue_attempt& a) {
  // A streaming pull completes as soon as it can hand out at least one row.
  auto avail = available();
  if (avail > 0) {
    row_list rows;
    take(std::min(avail, static_cast<size_t>(a.n)), rows);
    if (a.what == dequeue_attempt::op::pull_batch)
      a.done.deliver_batch(self_, take_batch(spec_, rows), caf::none);
    else
      a.done.deliver_rows(self_, rows.take_elements(), caf::none);
    return progress::complete;
  }
  if (closed_) {
    a.done.deliver_error(self_, insufficient(dequeue_name(), 1, storage_->size()));
    return progress::complete;
  }
  return progress::none;
}

queue_core::progress queue_core::serve_pull_many(dequeue_attempt& a) {
  // `batches` dequeue_many(n) (or dequeue_up_to(n)) in a row, each served
  // like serve_many / serve_many_whole; every batch ready now travels in
  // one message, so a consumer that keeps demand granted wakes once per
  // burst rather than once per batch.
  const bool incremental = kind_.incremental_batches();
  const auto n = static_cast<size_t>(a.n);
  std::vector<element> ready;
  caf::error end;
  bool progressed = false;
  while (a.batches > 0) {
    auto remaining = n - static_cast<size_t>(a.held.size());
    auto size = storage_->size();
    if (closed_ && size < remaining) {
      if (a.up_to && a.held.size() + static_cast<int64_t>(size) > 0) {
        take(size, a.held);
        ready.push_back(take_batch(spec_, a.held));
        --a.batches;
        progressed = true;
        continue;
      }
      if (a.up_to && has_live_enqueue_attempts())
        break; // they will be refused or served first
      end = insufficient(dequeue_many_name(), static_cast<int64_t>(remaining), size);
      storage_->put_back(std::move(a.held));
      a.held.clear();
      a.batches = 0;
      break;
    }
    auto avail = available();
    auto k = incremental ? std::min(remaining, avail) : (avail >= n ? n : 0);
    if (k == 0)
      break;
    take(k, a.held);
    progressed = true;
    if (static_cast<size_t>(a.held.size()) < n)
      break;
    ready.push_back(take_batch(spec_, a.held));
    --a.batches;
  }
  if (!ready.empty() || end)
    a.done.deliver_batches(self_, std::move(ready), std::move(end));
  if (a.batches == 0)
    return progress::complete;
  return progressed ? progress::partial : progress::none;
}

void queue_core::complete_many(dequeue_attempt& a) {
  a.done.deliver_element(self_, take_batch(spec_, a.held));
}

queue_core::progress queue_core::serve_many(dequeue_attempt& a) {
  // incremental; on a closed queue that cannot satisfy the rest,
  // dequeue_up_to returns what there is and dequeue_many puts back what it
  // held and fails.
  auto remaining = static_cast<size_t>(a.n - a.held.size());
  if (closed_ && storage_->size() < remaining) {
    bool up_to = a.what == dequeue_attempt::op::dequeue_up_to;
    if (up_to && a.held.size() + static_cast<int64_t>(storage_->size()) > 0) {
      take(storage_->size(), a.held);
      complete_many(a);
      return progress::complete;
    }
    if (up_to && has_live_enqueue_attempts())
      return progress::none; // they will be refused or served first
    auto err = insufficient(dequeue_many_name(), static_cast<int64_t>(remaining),
                            storage_->size());
    storage_->put_back(std::move(a.held));
    a.held.clear();
    a.done.deliver_error(self_, std::move(err));
    return progress::complete;
  }
  auto k = std::min(remaining, available());
  take(k, a.held);
  if (a.held.size() == a.n) {
    complete_many(a);
    return progress::complete;
  }
  return k > 0 ? progress::partial : progress::none;
}

queue_core::progress queue_core::serve_many_whole(dequeue_attempt& a) {
  // not incremental, waits until n are there, then takes them at once
  // (PriorityQueue: the n smallest).
  auto n = static_cast<size_t>(a.n);
  auto size = storage_->size();
  if (closed_ && size < n) {
    bool up_to = a.what == dequeue_attempt::op::dequeue_up_to;
    if (up_to && size > 0) {
      // TensorFlow loses these elements; quern returns them sorted.
      take(size, a.held);
      complete_many(a);
      return progress::complete;
    }
    if (up_to && has_live_enqueue_attempts())
      return progress::none;
    a.done.deliver_error(self_, insufficient(dequeue_many_name(), a.n, size));
    return progress::complete;
  }
  if (size >= n) {
    take(n, a.held);
    complete_many(a);
    return progress::complete;
  }
  return progress::none;
}

void queue_core::close_cancelling(completion done) {
  // closed at once; every pending enqueue-side attempt is cancelled.
  closed_ = true;
  auto pending = std::move(enqueues_);
  enqueues_.clear();
  for (auto& a : pending) {
    if (a.done.is_stream())
      a.done.deliver_count(self_, static_cast<int32_t>(a.stored), cancelled_enqueue());
    else
      a.done.deliver_error(self_, cancelled_enqueue());
  }
  done.deliver_bool(true);
  flush();
}

void queue_core::give_back(row_list rows) {
  if (rows.empty())
    return;
  storage_->put_back(std::move(rows));
  flush();
}

void queue_core::unpull(const caf::actor_addr& client) {
  for (auto i = dequeues_.begin(); i != dequeues_.end();) {
    if (i->client == client) {
      storage_->put_back(std::move(i->held));
      i->done.deliver_error(self_, cancelled_dequeue());
      i = dequeues_.erase(i);
    } else {
      ++i;
    }
  }
  flush();
}

void queue_core::unpush(const caf::actor_addr& client) {
  for (auto i = enqueues_.begin(); i != enqueues_.end();) {
    if (i->client == client && i->what == enqueue_attempt::op::push) {
      // Rows already stored stay stored; the producer learns how many.
      i->done.deliver_count(self_, static_cast<int32_t>(i->stored), cancelled_enqueue());
      i = enqueues_.erase(i);
    } else {
      ++i;
    }
  }
  flush();
}

void queue_core::expire(uint64_t id) {
  for (auto i = enqueues_.begin(); i != enqueues_.end(); ++i) {
    if (i->id == id) {
      // rows already stored stay stored.
      if (i->done.is_stream())
        i->done.deliver_count(self_, static_cast<int32_t>(i->stored), timed_out());
      else
        i->done.deliver_error(self_, timed_out());
      enqueues_.erase(i);
      flush();
      return;
    }
  }
  // unlike TensorFlow, what the attempt held goes back, in order.
  fail_waiting_dequeue(id, timed_out());
}

bool queue_core::fail_waiting_dequeue(uint64_t id, caf::error err) {
  for (auto i = dequeues_.begin(); i != dequeues_.end(); ++i) {
    if (i->id == id) {
      storage_->put_back(std::move(i->held));
      i->done.deliver_error(self_, std::move(err));
      dequeues_.erase(i);
      flush();
      return true;
    }
  }
  return false;
}

void queue_core::client_down(const caf::actor_addr& client) {
  enqueues_.erase(std::remove_if(enqueues_.begin(), enqueues_.end(),
                                 [&](const enqueue_attempt& a) {
                                   return a.client == client && !a.done.is_stream();
                                 }),
                  enqueues_.end());
  for (auto i = dequeues_.begin(); i != dequeues_.end();) {
    if (i->client == client) {
      storage_->put_back(std::move(i->held));
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
  for (auto& a : enqs) {
    if (a.done.is_stream())
      a.done.deliver_count(nullptr, static_cast<int32_t>(a.stored), cancelled_enqueue());
    else
      a.done.deliver_error(nullptr, cancelled_enqueue());
  }
  for (auto& a : deqs)
    a.done.deliver_error(nullptr, cancelled_dequeue());
}

} // namespace quern::detail
