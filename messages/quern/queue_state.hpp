#pragma once

// What a queue holds at a checkpoint (docs/resume.md): the rows it stores, the
// rows of the enqueues waiting for room, whether it is closed, and its random
// generator. A queue of this process answers snapshot with it and takes it back
// with restore (checkpoint_queue_actor, quern/interfaces.hpp); the pipeline
// writes it to a checkpoint file.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "quern/element.hpp"

namespace quern {

struct queue_state {
  /// The rows stored, as batches (every component has a leading dimension),
  /// in the queue's own order: restored in this order, a FIFO hands them out
  /// in the same order, a shuffle queue's storage and a priority queue's heap
  /// are laid out as they were.
  std::vector<element> stored;
  /// The rows of enqueues that waited for room, as batches, in the order
  /// they would have been stored. A restored queue stores them as room frees,
  /// before anything enqueued after the restore; a non-cancelling close that
  /// waited behind them (`close_waiting`) takes effect after them.
  std::vector<element> waiting;
  bool close_waiting = false;
  bool closed = false;
  /// A RandomShuffleQueue's generator (std::mt19937_64 as text), so that
  /// a restored queue picks what the unbroken one would have picked; empty
  /// for the other kinds.
  std::string generator;

  int64_t stored_rows() const;
  int64_t waiting_rows() const;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, queue_state& x) {
    return f(caf::meta::type_name("quern::queue_state"), x.stored, x.waiting,
             x.close_waiting, x.closed, x.generator);
  }
};

/// The bytes of a queue_state in a checkpoint file (docs/resume.md): a
/// format version, closed, close_waiting, the generator, then the stored
/// and the waiting batches (state_writer's elements).
std::string encode_queue_state(const queue_state& s);
/// Reads encode_queue_state's bytes; throws data_loss_error naming `what`
/// (the queue) and the problem.
queue_state decode_queue_state(std::string_view bytes, const std::string& what);

} // namespace quern
