#pragma once

// What a consumer asks a queue for: a demand, `count` batches of `n` rows cut as its
// batch_cut says. The strict dequeues are its one-batch case, and a streaming consumer
// sends it with pull_atom (docs/queues.md, Three ways to talk to a queue). Users choose a
// batch_cut when they make a batch_reader (quern/blocking_queue.hpp); readers and
// queue runners' pulls build their demands themselves.

#include <cstdint>

#include <caf/meta/type_name.hpp>

namespace quern {

/// How the rows of a dequeue are cut into batches.
enum class batch_cut : uint8_t {
  /// Whatever is there: 1..n rows, as soon as there is one (a streaming pull).
  any_size = 0,
  /// Exactly n rows, as dequeue_many(n): at the end of data, the rows of a
  /// final partial batch stay in the queue and the demand ends with
  /// dequeue_many's out_of_range error.
  dequeue_many = 1,
  /// Exactly n rows while the queue is open; once it is closed, the rest as a
  /// smaller final batch, as dequeue_up_to(n) (TF's allow_smaller_final_batch).
  dequeue_up_to = 2,
};

/// The one shape of every dequeue: `count` batches of `n` rows, cut as `cut`
/// says, served in order like `count` dequeues of one consumer. The strict
/// calls are its one-batch case:
///   dequeue()          {n = 1, count = 1, any_size, as_rows}
///   dequeue_many(n)    {n,     count = 1, dequeue_many}
///   dequeue_up_to(n)   {n,     count = 1, dequeue_up_to}
/// A streaming consumer sends it with pull_atom and keeps demand granted with
/// a larger count (docs/queues.md).
struct demand {
  int32_t n = 1;
  int32_t count = 1;
  batch_cut cut = batch_cut::dequeue_many;
  /// The batch's rows one by one, without a batch dimension, instead of one
  /// batch (count must then be 1). Needs no shapes.
  bool as_rows = false;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, demand& x) {
    return f(caf::meta::type_name("quern::demand"), x.n, x.count, x.cut, x.as_rows);
  }
};

} // namespace quern
