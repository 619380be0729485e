#pragma once

// The key of a batch sent by a producer that retries (docs/distributed.md, Retried
// batches): the producer's name, the batch's number and an attempt number. Every queue
// actor stores a keyed batch (enqueue_keyed, quern/interfaces.hpp) once, however often it
// arrives. quern::remote_producer (quern/remote.hpp) makes the keys; users see one only
// as the answer of producer_mark, which its resumed_after() reads.

#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

namespace quern {

/// Names one batch of a producer that retries (enqueue_keyed,
/// interfaces.hpp): a queue stores each batch of a producer once, however
/// often it is sent, and the rest of a batch it stored in part
/// (docs/distributed.md, Retried batches).
struct batch_key {
  /// The producer, by a name that stays the same across its reconnections
  /// and restarts; one name per producer.
  std::string producer;
  /// The batch's number: 1 for the producer's first, then increasing. A
  /// retry sends the same number.
  uint64_t batch = 0;
  /// Never decreases: a producer sends its batches under one attempt number
  /// while a connection lasts (several may wait for room at once) and under
  /// a higher one when it sends them again, so that a request overtaken by a
  /// later retry (an earlier connection's, read late) is told apart and
  /// refused, and a batch is never taken twice under one number.
  uint64_t attempt = 0;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, batch_key& x) {
    return f(caf::meta::type_name("quern::batch_key"), x.producer, x.batch, x.attempt);
  }
};

/// The batches of one producer that may wait for room in a queue at once;
/// the queue refuses more (failed_precondition) and remembers twice as many
/// of each producer's last batches, for their retries.
inline constexpr size_t max_keyed_in_flight = 64;

} // namespace quern
