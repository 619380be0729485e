#include "attempts.hpp"

#include <algorithm>

#include "queue_core.hpp"

namespace quern::detail {

// -- enqueue_attempt ------------------------------------------------------------

progress enqueue_attempt::serve(queue_core& q) {
  const auto& spec = q.spec();
  if (what == op::close) {
    // a non-cancelling close takes effect when it reaches the head.
    if (q.is_closed()) {
      fail(q.self(), make_error(error_code::cancelled,
                                "Queue '" + spec.resource_name + "' is already closed."));
    } else {
      q.mark_closed();
      done.deliver_bool(true);
    }
    return progress::complete;
  }
  if (q.is_closed()) {
    //
    fail(q.self(), make_error(error_code::cancelled, q.enqueue_name() + " is closed."));
    return progress::complete;
  }
  // Rows go in order while there is room; a batch goes as one
  // run, or as two when it only partly fits.
  auto room = static_cast<int64_t>(spec.capacity) - static_cast<int64_t>(q.size());
  if (whole && room < rows.size())
    return progress::none; // all its rows at once, or none yet
  auto k = std::min(rows.size(), std::max<int64_t>(room, 0));
  if (k > 0) {
    q.storage().push(rows, k);
    stored += k;
    q.count_stored(k);
    if (mark)
      mark->tally(keyed_number, k);
  }
  if (rows.empty()) {
    q.count_enqueue(parked_ns != 0 ? queue_core::now_ns() - parked_ns : 0);
    done.deliver_count(q.self(), static_cast<int32_t>(total), caf::none);
    return progress::complete;
  }
  return k > 0 ? progress::partial : progress::none;
}

void enqueue_attempt::fail(caf::local_actor* self, caf::error err) {
  if (done.is_stream())
    done.deliver_count(self, static_cast<int32_t>(stored), std::move(err));
  else
    done.deliver_error(self, std::move(err));
}

// -- dequeue_attempt ------------------------------------------------------------

progress dequeue_attempt::serve(queue_core& q) {
  // `count` dequeues of one consumer in a row; every batch ready now travels
  // in one answer, so a consumer that keeps demand granted wakes once per
  // burst rather than once per batch.
  std::vector<element> ready;
  int64_t rows_out = 0; // rows of `ready`, counted as handed to the client
  caf::error end;
  bool progressed = false;
  int64_t now = 0; // read once, and only if the attempt was parked
  while (want.count > 0) {
    auto step = want.cut == batch_cut::any_size ? cut_any(q, end) : cut_exact(q, end);
    if (step == cut_step::waiting)
      break;
    progressed = true;
    if (step == cut_step::held)
      break;
    if (step == cut_step::ended) {
      want.count = 0;
      break;
    }
    rows_out += held.size();
    emit(q, ready);
    --want.count;
    // The batch's wait at the queue; a demand that still owes batches
    // waits for the next from now on (TL-11).
    int64_t waited = 0;
    if (parked_ns != 0) {
      if (now == 0)
        now = queue_core::now_ns();
      waited = now - parked_ns;
      parked_ns = now;
    }
    q.count_dequeue(waited);
  }
  if (!ready.empty() || end)
    done.deliver_pulled(q.self(), std::move(ready), std::move(end));
  q.handed_to(client, rows_out);
  q.count_handed(rows_out);
  if (want.count == 0)
    return progress::complete;
  return progressed ? progress::partial : progress::none;
}

dequeue_attempt::cut_step dequeue_attempt::cut_any(queue_core& q, caf::error& end) {
  // Q-30 (n = 1), and a streaming pull: complete as soon as at least one row
  // can be handed out.
  auto avail = q.available();
  if (avail > 0) {
    q.take(std::min(avail, static_cast<size_t>(want.n)), held);
    return cut_step::batch;
  }
  if (q.is_closed()) {
    end = q.insufficient(q.dequeue_name(), 1, q.size());
    return cut_step::ended;
  }
  return cut_step::waiting;
}

dequeue_attempt::cut_step dequeue_attempt::cut_exact(queue_core& q, caf::error& end) {
  // incremental; on a closed queue that cannot satisfy the rest,
  // dequeue_up_to returns what there is and dequeue_many puts back what it
  // held and fails. Q-73: a kind without incremental batches waits until n
  // are there and takes them at once (PriorityQueue: the n smallest).
  const auto n = static_cast<size_t>(want.n);
  const auto remaining = n - static_cast<size_t>(held.size());
  const auto size = static_cast<size_t>(q.size());
  if (q.is_closed() && size < remaining) {
    const bool up_to = want.cut == batch_cut::dequeue_up_to;
    if (up_to && held.size() + static_cast<int64_t>(size) > 0) {
      // Q-74 for PriorityQueue: TensorFlow loses these rows; quern returns
      // them sorted.
      q.take(size, held);
      return cut_step::batch;
    }
    if (up_to && q.has_live_enqueue_attempts())
      return cut_step::waiting; // they will be refused or served first
    end = q.insufficient(q.dequeue_many_name(), static_cast<int64_t>(remaining), size);
    q.storage().put_back(std::move(held));
    held.clear();
    return cut_step::ended;
  }
  const auto avail = q.available();
  const auto k = q.kind().incremental_batches() ? std::min(remaining, avail)
                                                : (avail >= n ? n : size_t{0});
  q.take(k, held);
  if (static_cast<size_t>(held.size()) == n)
    return cut_step::batch;
  return k > 0 ? cut_step::held : cut_step::waiting;
}

void dequeue_attempt::emit(queue_core& q, std::vector<element>& ready) {
  if (!want.as_rows) {
    ready.push_back(take_batch(q.spec(), held));
    return;
  }
  if (ready.empty()) {
    ready = held.take_elements();
    return;
  }
  for (auto& row : held.take_elements())
    ready.push_back(std::move(row));
}

void dequeue_attempt::fail(queue_storage& storage, caf::local_actor* self,
                           caf::error err) {
  drop(storage);
  done.deliver_error(self, std::move(err));
}

void dequeue_attempt::drop(queue_storage& storage) {
  storage.put_back(std::move(held));
  held.clear();
}

} // namespace quern::detail
