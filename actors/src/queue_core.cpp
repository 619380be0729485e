#include "queue_core.hpp"

#include <algorithm>

#include <caf/local_actor.hpp>
#include <caf/mailbox_element.hpp>

#include "quern/atoms.hpp"

namespace quern::detail {

namespace {

// Sends a one-way message from `self` to `dest` (the streaming protocol's
// answers go to whoever pushed or pulled, which may be any kind of actor).
template <class... Ts>
void send_to(caf::local_actor* self, const caf::strong_actor_ptr& dest, Ts&&... xs) {
  if (!dest)
    return;
  dest->enqueue(caf::make_mailbox_element(caf::strong_actor_ptr{self->ctrl()},
                                          caf::make_message_id(), {},
                                          std::forward<Ts>(xs)...),
                self->context());
}

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

// -- completion ---------------------------------------------------------------

completion completion::promise(caf::response_promise rp) {
  completion c;
  c.kind_ = kind::promise;
  c.rp_ = std::move(rp);
  return c;
}

completion completion::pushed_to(caf::strong_actor_ptr client) {
  completion c;
  c.kind_ = kind::pushed;
  c.client_ = std::move(client);
  return c;
}

completion completion::pulled_to(caf::strong_actor_ptr client) {
  completion c;
  c.kind_ = kind::pulled;
  c.client_ = std::move(client);
  return c;
}

void completion::deliver_count(caf::local_actor* self, int32_t stored, caf::error err) {
  if (kind_ == kind::pushed)
    send_to(self, client_, pushed_atom::value, stored, std::move(err));
  else if (err)
    rp_.deliver(std::move(err));
  else
    rp_.deliver(stored);
}

void completion::deliver_element(caf::local_actor*, element e) {
  rp_.deliver(std::move(e));
}

void completion::deliver_rows(caf::local_actor* self, std::vector<element> rows,
                              caf::error err) {
  send_to(self, client_, pulled_atom::value, std::move(rows), std::move(err));
}

void completion::deliver_bool(bool value) {
  rp_.deliver(value);
}

void completion::deliver_error(caf::local_actor* self, caf::error err) {
  switch (kind_) {
  case kind::promise:
    rp_.deliver(std::move(err));
    break;
  case kind::pushed:
    send_to(self, client_, pushed_atom::value, int32_t{0}, std::move(err));
    break;
  case kind::pulled:
    send_to(self, client_, pulled_atom::value, std::vector<element>{}, std::move(err));
    break;
  }
}

// -- queue_core ---------------------------------------------------------------

queue_core::queue_core(caf::local_actor* self, queue_spec spec)
    : self_(self), spec_(std::move(spec)), storage_(make_storage(spec_)) {}

std::string queue_core::enqueue_name() const {
  // PaddingFIFOQueue inherits FIFOQueue's enqueue and says so.
  auto kind = spec_.kind == queue_kind::padding_fifo ? queue_kind::fifo : spec_.kind;
  return std::string(queue_kind_name(kind)) + " '" + spec_.resource_name + "'";
}

std::string queue_core::dequeue_name() const {
  return enqueue_name(); // the single dequeue speaks like the enqueue
}

std::string queue_core::dequeue_many_name() const {
  return std::string(queue_kind_name(spec_.kind)) + " '" + spec_.resource_name + "'";
}

caf::error queue_core::insufficient(const std::string& prefix, int64_t requested,
                                    size_t current) const {
  return make_error(error_code::out_of_range,
                    prefix + " is closed and has insufficient elements (requested " +
                        std::to_string(requested) + ", current size " +
                        std::to_string(current) + ")");
}

size_t queue_core::available() const {
  auto n = storage_->size();
  if (spec_.kind == queue_kind::random_shuffle && !closed_) {
    // while open, at least min_after_dequeue elements stay behind.
    auto keep = static_cast<size_t>(spec_.min_after_dequeue);
    return n > keep ? n - keep : 0;
  }
  return n;
}

bool queue_core::has_live_enqueue_attempts() const {
  return !enqueues_.empty();
}

void queue_core::add(enqueue_attempt a) {
  enqueues_.push_back(std::move(a));
  flush();
}

void queue_core::add(dequeue_attempt a) {
  dequeues_.push_back(std::move(a));
  flush();
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
      a.done.deliver_count(self_, static_cast<int32_t>(a.next), std::move(err));
    else
      a.done.deliver_error(self_, std::move(err));
    return progress::complete;
  }
  auto capacity = static_cast<size_t>(spec_.capacity);
  bool took = false;
  while (a.next < a.rows.size() && storage_->size() < capacity) {
    storage_->push(std::move(a.rows[a.next++]));
    took = true;
  }
  if (a.next == a.rows.size()) {
    a.done.deliver_count(self_, static_cast<int32_t>(a.rows.size()), caf::none);
    return progress::complete;
  }
  return took ? progress::partial : progress::none;
}

queue_core::progress queue_core::serve(dequeue_attempt& a) {
  switch (a.what) {
  case dequeue_attempt::op::dequeue:
    return serve_single(a);
  case dequeue_attempt::op::pull:
    return serve_pull(a);
  case dequeue_attempt::op::dequeue_many:
  case dequeue_attempt::op::dequeue_up_to:
    if (spec_.kind == queue_kind::priority)
      return serve_many_priority(a);
    return serve_many(a);
  }
  return progress::none;
}

queue_core::progress queue_core::serve_single(dequeue_attempt& a) {
  //
  if (available() > 0) {
    a.done.deliver_element(self_, storage_->pop());
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
    auto k = std::min(avail, static_cast<size_t>(a.n));
    std::vector<element> rows;
    rows.reserve(k);
    for (size_t i = 0; i < k; ++i)
      rows.push_back(storage_->pop());
    a.done.deliver_rows(self_, std::move(rows), caf::none);
    return progress::complete;
  }
  if (closed_) {
    a.done.deliver_rows(self_, {}, insufficient(dequeue_name(), 1, storage_->size()));
    return progress::complete;
  }
  return progress::none;
}

void queue_core::complete_many(dequeue_attempt& a) {
  a.done.deliver_element(self_, make_batch(a.held));
  a.held.clear();
}

queue_core::progress queue_core::serve_many(dequeue_attempt& a) {
  // incremental; on a closed queue that cannot satisfy the rest,
  // dequeue_up_to returns what there is and dequeue_many puts back what it
  // held and fails.
  auto remaining = static_cast<size_t>(a.n) - a.held.size();
  if (closed_ && storage_->size() < remaining) {
    bool up_to = a.what == dequeue_attempt::op::dequeue_up_to;
    if (up_to && a.held.size() + storage_->size() > 0) {
      while (storage_->size() > 0)
        a.held.push_back(storage_->pop());
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
  bool took = false;
  while (a.held.size() < static_cast<size_t>(a.n) && available() > 0) {
    a.held.push_back(storage_->pop());
    took = true;
  }
  if (a.held.size() == static_cast<size_t>(a.n)) {
    complete_many(a);
    return progress::complete;
  }
  return took ? progress::partial : progress::none;
}

queue_core::progress queue_core::serve_many_priority(dequeue_attempt& a) {
  // not incremental, waits until n are there, then the n smallest.
  auto n = static_cast<size_t>(a.n);
  auto size = storage_->size();
  if (closed_ && size < n) {
    bool up_to = a.what == dequeue_attempt::op::dequeue_up_to;
    if (up_to && size > 0) {
      // TensorFlow loses these elements; quern returns them sorted.
      while (storage_->size() > 0)
        a.held.push_back(storage_->pop());
      complete_many(a);
      return progress::complete;
    }
    if (up_to && has_live_enqueue_attempts())
      return progress::none;
    a.done.deliver_error(self_, insufficient(dequeue_many_name(), a.n, size));
    return progress::complete;
  }
  if (size >= n) {
    for (size_t i = 0; i < n; ++i)
      a.held.push_back(storage_->pop());
    complete_many(a);
    return progress::complete;
  }
  return progress::none;
}

element queue_core::make_batch(const std::vector<element>& rows) const {
  element batch;
  batch.components.reserve(spec_.num_components());
  std::vector<tensor> column;
  column.reserve(rows.size());
  for (size_t i = 0; i < spec_.num_components(); ++i) {
    column.clear();
    for (auto& r : rows)
      column.push_back(r.components[i]);
    auto row_shape = spec_.shapes[i];
    if (!row_shape.fully_defined()) {
      // each unknown dimension is the largest of this batch (0 when
      // the batch is empty); rows are padded with zeros.
      auto dims = row_shape.dims();
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] >= 0)
          continue;
        int64_t m = 0;
        for (auto& t : column)
          m = std::max(m, t.shape().dim(d));
        dims[d] = m;
      }
      row_shape = tensor_shape(std::move(dims));
      for (auto& t : column)
        t = t.padded_to(row_shape);
    }
    batch.components.push_back(
        tensor::stack_or_empty(column, spec_.dtypes[i], row_shape));
  }
  return batch;
}

void queue_core::close_cancelling(completion done) {
  // closed at once; every pending enqueue-side attempt is cancelled.
  closed_ = true;
  auto pending = std::move(enqueues_);
  enqueues_.clear();
  for (auto& a : pending) {
    if (a.done.is_stream())
      a.done.deliver_count(self_, static_cast<int32_t>(a.next), cancelled_enqueue());
    else
      a.done.deliver_error(self_, cancelled_enqueue());
  }
  done.deliver_bool(true);
  flush();
}

void queue_core::give_back(std::vector<element> rows) {
  if (rows.empty())
    return;
  storage_->put_back(std::move(rows));
  flush();
}

void queue_core::unpull(const caf::actor_addr& client) {
  for (auto i = dequeues_.begin(); i != dequeues_.end();) {
    if (i->what == dequeue_attempt::op::pull && i->client == client) {
      i->done.deliver_rows(self_, {}, cancelled_dequeue());
      i = dequeues_.erase(i);
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
        i->done.deliver_count(self_, static_cast<int32_t>(i->next), timed_out());
      else
        i->done.deliver_error(self_, timed_out());
      enqueues_.erase(i);
      flush();
      return;
    }
  }
  for (auto i = dequeues_.begin(); i != dequeues_.end(); ++i) {
    if (i->id == id) {
      // unlike TensorFlow, what the attempt held goes back, in order.
      storage_->put_back(std::move(i->held));
      i->done.deliver_error(self_, timed_out());
      dequeues_.erase(i);
      flush();
      return;
    }
  }
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
  for (auto& a : enqs) {
    if (a.done.is_stream())
      a.done.deliver_count(self_, static_cast<int32_t>(a.next), cancelled_enqueue());
    else
      a.done.deliver_error(self_, cancelled_enqueue());
  }
  for (auto& a : deqs)
    a.done.deliver_error(self_, cancelled_dequeue());
}

} // namespace quern::detail
