#pragma once

// What a queue counts of its own traffic (docs/semantics.md TL-11): the rows
// it stored and handed out, and per side the attempts that completed and how
// long the ones that had to wait waited in its line. Every queue actor
// answers (queue_stats) with it (quern/interfaces.hpp); pipeline::telemetry()
// reads the counters' deltas over its span (docs/input.md, "Where the
// pipeline waits").

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

namespace quern {

/// A queue's counters since it was made; every one only grows.
struct queue_stats {
  /// The queue's size and capacity when it answered.
  int32_t size = 0;
  int32_t capacity = 0;
  /// Rows stored by enqueue-side attempts (enqueue, enqueue_many, a
  /// streamed push, a keyed enqueue), and rows handed out by dequeue-side
  /// attempts (dequeues and streamed pulls; rows given back and handed out
  /// again count again). Rows a checkpoint's restore stores at once are not
  /// counted; its rows that were waiting for room count as one attempt when
  /// they are stored.
  int64_t enqueued_rows = 0;
  int64_t dequeued_rows = 0;
  /// Enqueue-side attempts that completed (stored all their rows; a close
  /// is no enqueue), and the nanoseconds those that waited for room spent
  /// in the queue's line, from when they were parked to when they
  /// completed. An attempt served at once adds 0.
  int64_t enqueue_attempts = 0;
  int64_t enqueue_wait_ns = 0;
  /// Batches handed out by dequeue-side attempts (a strict dequeue, or one
  /// batch of a streamed demand), and the nanoseconds they waited: from
  /// when the attempt was parked (or, for a demand's later batch, its
  /// previous batch was handed out while it waited) to when the batch was
  /// handed out.
  int64_t dequeue_attempts = 0;
  int64_t dequeue_wait_ns = 0;
  /// Which queue answered: the node of its process (CAF's node id as text)
  /// and its actor id there. A handle of a queue of another process is a
  /// local go-between: this is how pipeline telemetry tells that two
  /// processes' handles are one queue (TL-10).
  std::string node;
  uint64_t actor = 0;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, queue_stats& x) {
    return f(caf::meta::type_name("quern::queue_stats"), x.size, x.capacity,
             x.enqueued_rows, x.dequeued_rows, x.enqueue_attempts, x.enqueue_wait_ns,
             x.dequeue_attempts, x.dequeue_wait_ns, x.node, x.actor);
  }
};

} // namespace quern
