#include "producer_marks.hpp"

#include <iostream>

#include "quern/error.hpp"
#include "quern/queue.hpp"

#include "queue_core.hpp"

namespace quern::detail {

namespace {

std::string batch_of(const batch_key& key) {
  return "batch " + std::to_string(key.batch) + " of producer '" + key.producer + "'";
}

std::string attempt_of(const batch_key& key) {
  return "attempt " + std::to_string(key.attempt) + " of " + batch_of(key);
}

// Why the request cannot be taken, or none. `m` is the producer's mark,
// `r` its record of this batch if the queue remembers one, `waits` how many
// of its batches wait for room.
caf::error refusal(const queue_core& q, const batch_key& key, const keyed_mark& m,
                   const keyed_batch* r, int64_t rows, uint64_t digest, size_t waits) {
  auto where = q.enqueue_name() + ": ";
  if (key.producer.empty())
    return make_error(error_code::invalid_argument,
                      where + "a keyed enqueue needs a producer name");
  if (key.batch == 0)
    return make_error(error_code::invalid_argument, where + "the batches of producer '" +
                                                        key.producer +
                                                        "' are numbered from 1, got 0");
  // An earlier connection's request read after a later one's (its sender is
  // gone or sent it again), or the same batch twice in one attempt.
  if (key.attempt < m.attempt || (r && key.attempt <= r->attempt))
    return make_error(error_code::aborted,
                      where + attempt_of(key) +
                          " is not stored: the queue already saw its attempt " +
                          std::to_string(m.attempt) + " (an earlier request read late)");
  if (!r && key.batch <= m.last)
    return make_error(error_code::failed_precondition,
                      where + batch_of(key) + " is older than its batch " +
                          std::to_string(m.last) +
                          " the queue already has (does a second producer use the "
                          "name '" +
                          key.producer + "'?)");
  if (!r && waits > 0 && key.attempt > m.attempt)
    return make_error(error_code::failed_precondition,
                      where + batch_of(key) + " came under attempt " +
                          std::to_string(key.attempt) + " while its batches of attempt " +
                          std::to_string(m.attempt) +
                          " still wait for room: a producer that retries sends what "
                          "waits again first, in order");
  if (!r && waits >= max_keyed_in_flight)
    return make_error(error_code::failed_precondition,
                      where + batch_of(key) + " came while " + std::to_string(waits) +
                          " of its batches wait for room: a producer that retries has "
                          "at most " +
                          std::to_string(max_keyed_in_flight) + " in flight");
  if (r && rows != r->rows)
    return make_error(error_code::invalid_argument,
                      where + batch_of(key) + " had " + std::to_string(r->rows) +
                          " rows, its retry has " + std::to_string(rows));
  // Taken for a retry, another producer's batch under the same name and
  // number would be answered without being stored, or mixed with the first.
  if (r && digest != r->digest)
    return make_error(error_code::failed_precondition,
                      where + batch_of(key) +
                          " was sent again with other values than the queue has "
                          "(does a second producer use the name '" +
                          key.producer + "'?)");
  return caf::none;
}

// Forgets the oldest batches beyond what a retry can still send again; one
// that waits is kept (its attempt tallies it).
void forget_old(queue_core& q, keyed_mark& m) {
  while (m.recent.size() > 2 * max_keyed_in_flight &&
         !q.waiting(&m, m.recent.begin()->first))
    m.recent.erase(m.recent.begin());
}

} // namespace

std::optional<enqueue_attempt>
producer_marks::admit(queue_core& q, const batch_key& key, element& batch,
                      caf::typed_response_promise<int32_t>& rp) {
  int64_t rows = 0;
  try {
    rows = validate_enqueue_many(q.spec(), batch);
  } catch (const op_error& ex) {
    rp.deliver(ex.to_error());
    return std::nullopt;
  }
  // A producer's mark is made by its first request that is taken.
  auto found = marks_.find(key.producer);
  bool known = found != marks_.end();
  if (known)
    forget_old(q, found->second);
  const keyed_mark none;
  const auto& have = known ? found->second : none;
  auto rec = have.recent.find(key.batch);
  const keyed_batch* r = rec != have.recent.end() ? &rec->second : nullptr;
  auto waits = known ? q.waiting(&found->second) : 0;
  auto digest = batch.digest();
  if (auto err = refusal(q, key, have, r, rows, digest, waits)) {
    rp.deliver(std::move(err));
    return std::nullopt;
  }
  auto& m = known ? found->second : marks_[key.producer];
  if (r && key.attempt > m.attempt && waits > 0) {
    // The producer sends again, in order, what an earlier attempt left
    // waiting (its connection was lost): those requests are replaced.
    q.withdraw(&m, [&](uint64_t number) {
      auto what =
          "batch " + std::to_string(number) + " of producer '" + key.producer + "'";
      if (number == key.batch)
        return make_error(error_code::aborted, q.enqueue_name() + ": " + what +
                                                   " was sent again (attempt " +
                                                   std::to_string(key.attempt) +
                                                   "), which stores the rest of it");
      return make_error(error_code::aborted,
                        q.enqueue_name() + ": " + what + " waited under attempt " +
                            std::to_string(m.attempt) + ", which attempt " +
                            std::to_string(key.attempt) + " replaces");
    });
  }
  // refusal() let no lower attempt through, nor a new batch at or below the
  // last one.
  m.attempt = key.attempt;
  auto& b = m.recent[key.batch];
  if (!r) {
    b.rows = rows;
    b.digest = digest;
    m.last = key.batch;
  }
  b.attempt = key.attempt;
  if (r && b.stored == b.rows && b.rows > 0) {
    // A retry of a batch the queue holds whole: its first request was
    // stored, and its answer lost with the connection.
    std::cerr << "quern: " << q.enqueue_name() << " already holds " << batch_of(key)
              << "; its retry (attempt " << key.attempt
              << ") was answered without storing it again\n";
    rp.deliver(static_cast<int32_t>(rows));
    return std::nullopt;
  }
  if (b.stored == b.rows) { // an empty batch
    rp.deliver(static_cast<int32_t>(rows));
    return std::nullopt;
  }
  enqueue_attempt a;
  a.what = enqueue_attempt::op::enqueue_many;
  a.rows.push_back(row_run{std::move(batch), b.stored, rows - b.stored, true});
  a.total = rows;
  a.stored = b.stored;
  a.mark = &m;
  a.keyed_number = key.batch;
  return a;
}

batch_key producer_marks::position(const std::string& producer) const {
  batch_key at{producer, 0, 0};
  if (auto i = marks_.find(producer); i != marks_.end()) {
    const auto& m = i->second;
    at.batch = m.last;
    // Before the first batch it remembers that is not whole.
    for (const auto& [number, b] : m.recent)
      if (b.stored < b.rows) {
        at.batch = number - 1;
        break;
      }
    at.attempt = m.attempt;
  }
  return at;
}

} // namespace quern::detail
