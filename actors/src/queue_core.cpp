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
  // `count` dequeues of one consumer in a row; every batch ready now travels
  // in one answer, so a consumer that keeps demand granted wakes once per
  // burst rather than once per batch.
  std::vector<element> ready;
  caf::error end;
  bool progressed = false;
  while (a.want.count > 0) {
    auto step = a.want.cut == batch_cut::any_size ? cut_any(a, end) : cut_exact(a, end);
    if (step == cut_step::waiting)
      break;
    progressed = true;
    if (step == cut_step::held)
      break;
    if (step == cut_step::ended) {
      a.want.count = 0;
      break;
    }
    emit(a, ready);
    --a.want.count;
  }
  if (!ready.empty() || end)
    a.done.deliver_pulled(self_, std::move(ready), std::move(end));
  if (a.want.count == 0)
    return progress::complete;
  return progressed ? progress::partial : progress::none;
}

queue_core::cut_step queue_core::cut_any(dequeue_attempt& a, caf::error& end) {
  // Q-30 (n = 1), and a streaming pull: complete as soon as at least one row
  // can be handed out.
  auto avail = available();
  if (avail > 0) {
    take(std::min(avail, static_cast<size_t>(a.want.n)), a.held);
    return cut_step::batch;
  }
  if (closed_) {
    end = insufficient(dequeue_name(), 1, storage_->size());
    return cut_step::ended;
  }
  return cut_step::waiting;
}

queue_core::cut_step queue_core::cut_exact(dequeue_attempt& a, caf::error& end) {
  // incremental; on a closed queue that cannot satisfy the rest,
  // dequeue_up_to returns what there is and dequeue_many puts back what it
  // held and fails. Q-73: a kind without incremental batches waits until n
  // are there and takes them at once (PriorityQueue: the n smallest).
  const auto n = static_cast<size_t>(a.want.n);
  const auto remaining = n - static_cast<size_t>(a.held.size());
  const auto size = storage_->size();
  if (closed_ && size < remaining) {
    const bool up_to = a.want.cut == batch_cut::dequeue_up_to;
    if (up_to && a.held.size() + static_cast<int64_t>(size) > 0) {
      // Q-74 for PriorityQueue: TensorFlow loses these rows; quern returns
      // them sorted.
      take(size, a.held);
      return cut_step::batch;
    }
    if (up_to && has_live_enqueue_attempts())
      return cut_step::waiting; // they will be refused or served first
    end = insufficient(dequeue_many_name(), static_cast<int64_t>(remaining), size);
    storage_->put_back(std::move(a.held));
    a.held.clear();
    return cut_step::ended;
  }
  const auto avail = available();
  const auto k = kind_.incremental_batches() ? std::min(remaining, avail)
                                             : (avail >= n ? n : size_t{0});
  take(k, a.held);
  if (static_cast<size_t>(a.held.size()) == n)
    return cut_step::batch;
  return k > 0 ? cut_step::held : cut_step::waiting;
}

void queue_core::emit(dequeue_attempt& a, std::vector<element>& ready) {
  if (!a.want.as_rows) {
    ready.push_back(take_batch(spec_, a.held));
    return;
  }
  if (ready.empty()) {
    ready = a.held.take_elements();
    return;
  }
  for (auto& row : a.held.take_elements())
    ready.push_back(std::move(row));
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
