#pragma once

// The attempts a queue keeps waiting, in two lines (docs/semantics.md
// Q-10..Q-14): each knows how to serve itself from the queue and whom to
// answer. queue_core keeps the lines and the order in which they are served.
// Private to queues/.

#include <cstdint>
#include <map>

#include <caf/actor_addr.hpp>
#include <caf/error.hpp>

#include "quern/demand.hpp"
#include "quern/element.hpp"

#include "completion.hpp"
#include "rows.hpp"

namespace quern::detail {

class queue_core;
class queue_storage;

/// What serving an attempt did.
enum class progress { none, partial, complete };

/// One batch of a producer that retries, as the queue last saw it.
struct keyed_batch {
  uint64_t attempt = 0; // the attempt that sent it last
  int64_t rows = 0;     // rows of the batch
  int64_t stored = 0;   // of them stored
  uint64_t digest = 0;  // of its values (element::digest): a retry sends the same
};

/// What a queue knows of one producer that retries (enqueue_keyed,
/// producer_marks.hpp): its recent batches and how much of each is stored,
/// which their attempts tally as they store. A producer may have several
/// batches waiting for room at once, all of one attempt.
struct keyed_mark {
  uint64_t attempt = 0;                   // the highest attempt number taken
  uint64_t last = 0;                      // the highest batch number taken
  std::map<uint64_t, keyed_batch> recent; // by number; the oldest are forgotten

  /// `k` more rows of batch `number` are stored.
  void tally(uint64_t number, int64_t k) {
    if (auto i = recent.find(number); i != recent.end())
      i->second.stored += k;
  }
};

/// One attempt of the enqueue line: rows to store in order (an enqueue, an
/// enqueue_many or a streamed push), or a close that takes effect when it
/// reaches the head of the line.
struct enqueue_attempt {
  enum class op { enqueue, enqueue_many, push, close };
  op what = op::enqueue;
  uint64_t id = 0;
  row_list rows;      // rows still to store
  int64_t total = 0;  // rows of the attempt
  int64_t stored = 0; // rows stored so far
  caf::actor_addr client;
  completion done;
  keyed_mark* mark = nullptr; // a keyed enqueue's producer, tallied
  uint64_t keyed_number = 0;  // and its batch's number
  /// A streamed push no larger than the capacity is stored whole: it waits
  /// until there is room for all its rows, so that a push cancelled or
  /// withdrawn stored none of them (a queue runner then gives the run's
  /// sources back). Cleared when waiting whole would stall the queue
  /// (queue_core::flush); a push larger than the capacity never has it.
  bool whole = false;
  /// When it was parked in the line (steady clock, ns; 0: served at once so
  /// far): its wait at the queue ends when it completes (TL-11).
  int64_t parked_ns = 0;

  /// Stores what fits (or closes the queue) and answers once complete.
  progress serve(queue_core& q);
  /// Ends the attempt with `err`: a streamed push learns how many of its
  /// rows were stored, which stay stored; a request gets the error.
  /// `self` is null where the answer must go anonymously (see shutdown()).
  void fail(caf::local_actor* self, caf::error err);
};

/// One demand (quern/demand.hpp) of the dequeue line: a strict dequeue
/// (count 1, answered through a promise) or a streaming pull, answered with
/// every batch ready at once.
struct dequeue_attempt {
  uint64_t id = 0;
  demand want;   // want.count: batches still owed
  row_list held; // rows taken for the current batch while waiting for the rest
  caf::actor_addr client;
  completion done;
  /// Since when its next batch has been waiting in the line (steady clock,
  /// ns; 0: not parked): set when it is parked, moved on as each batch is
  /// handed out while it waits (TL-11).
  int64_t parked_ns = 0;

  /// Cuts the batches it can now and answers with them.
  progress serve(queue_core& q);
  /// Ends the attempt with `err`; what it held goes back first, in order
  /// unlike TensorFlow, nothing is lost). `self` as above.
  void fail(queue_storage& storage, caf::local_actor* self, caf::error err);
  /// Its client went down: what it held goes back, and nobody is answered.
  void drop(queue_storage& storage);

private:
  /// What cutting one batch did.
  enum class cut_step { waiting, held, batch, ended };
  cut_step cut_any(queue_core& q, caf::error& end);
  cut_step cut_exact(queue_core& q, caf::error& end);
  void emit(queue_core& q, std::vector<element>& ready);
};

} // namespace quern::detail
