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

// Why the request cannot be taken, or none. `m` is the producer's mark.
caf::error refusal(const queue_core& q, const batch_key& key, const keyed_mark& m,
                   int64_t rows, uint64_t digest, bool last_waits) {
  auto where = q.enqueue_name() + ": ";
  auto last = "its batch " + std::to_string(m.batch);
  if (key.producer.empty())
    return make_error(error_code::invalid_argument,
                      where + "a keyed enqueue needs a producer name");
  if (key.batch == 0)
    return make_error(error_code::invalid_argument, where + "the batches of producer '" +
                                                        key.producer +
                                                        "' are numbered from 1, got 0");
  // An earlier connection's request read after a later retry: its sender is
  // gone or already retried.
  if (key.attempt <= m.attempt)
    return make_error(error_code::aborted,
                      where + attempt_of(key) +
                          " is not stored: the queue already saw its attempt " +
                          std::to_string(m.attempt) + " (an earlier request read late)");
  if (key.batch < m.batch)
    return make_error(error_code::failed_precondition,
                      where + batch_of(key) + " is older than " + last +
                          " the queue already has (does a second producer use the "
                          "name '" +
                          key.producer + "'?)");
  if (key.batch > m.batch && last_waits)
    return make_error(error_code::failed_precondition,
                      where + batch_of(key) + " came while " + last +
                          " still waits for room: a producer that retries has one "
                          "batch in flight");
  if (key.batch == m.batch && rows != m.rows)
    return make_error(error_code::invalid_argument,
                      where + batch_of(key) + " had " + std::to_string(m.rows) +
                          " rows, its retry has " + std::to_string(rows));
  // Taken for a retry, another producer's batch under the same name and
  // number would be answered without being stored, or mixed with the first.
  if (key.batch == m.batch && digest != m.digest)
    return make_error(error_code::failed_precondition,
                      where + batch_of(key) +
                          " was sent again with other values than the queue has "
                          "(does a second producer use the name '" +
                          key.producer + "'?)");
  return caf::none;
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
  bool waits = known && q.waiting(&found->second);
  auto digest = batch.digest();
  if (auto err =
          refusal(q, key, known ? found->second : keyed_mark{}, rows, digest, waits)) {
    rp.deliver(std::move(err));
    return std::nullopt;
  }
  auto& m = known ? found->second : marks_[key.producer];
  m.attempt = key.attempt;
  if (key.batch > m.batch) {
    m.batch = key.batch;
    m.rows = rows;
    m.stored = 0;
    m.digest = digest;
  } else if (m.stored == m.rows) {
    // A retry of a batch the queue holds whole: its first request was
    // stored, and its answer lost with the connection.
    std::cerr << "quern: " << q.enqueue_name() << " already holds " << batch_of(key)
              << "; its retry (attempt " << key.attempt
              << ") was answered without storing it again\n";
    rp.deliver(static_cast<int32_t>(rows));
    return std::nullopt;
  } else if (waits) {
    q.withdraw(&m,
               make_error(error_code::aborted, q.enqueue_name() + ": " + batch_of(key) +
                                                   " was sent again (attempt " +
                                                   std::to_string(key.attempt) +
                                                   "), which stores the rest of it"));
  }
  if (m.stored == m.rows) { // an empty batch
    rp.deliver(static_cast<int32_t>(rows));
    return std::nullopt;
  }
  enqueue_attempt a;
  a.what = enqueue_attempt::op::enqueue_many;
  a.rows.push_back(row_run{std::move(batch), m.stored, rows - m.stored, true});
  a.total = rows;
  a.stored = m.stored;
  a.mark = &m;
  return a;
}

batch_key producer_marks::position(const std::string& producer) const {
  batch_key at{producer, 0, 0};
  if (auto i = marks_.find(producer); i != marks_.end()) {
    const auto& m = i->second;
    at.batch = m.stored == m.rows ? m.batch : m.batch - 1;
    at.attempt = m.attempt;
  }
  return at;
}

} // namespace quern::detail
