#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/error.hpp>

#include "quern/blocking_queue.hpp"

namespace quern::detail {

/// A queue_writer's stream: what it sent and the queue still owes an answer
/// for, what waits to be sent, and its tallies. The writer's threads and its
/// pump share it under `mtx`, each holding it only briefly (the pump runs on
/// a scheduler thread, which must not wait).
struct writer_state {
  writer_state(queue_actor q, size_t window) : queue(std::move(q)), window(window) {}

  /// Sends the waiting rows, then the waiting batches, each kind in one
  /// message under the pump's identity (so that the queue answers the pump).
  void send_pending(const caf::actor& pump);
  /// The queue answered the oldest push: `stored` rows of it are stored,
  /// `err` says why the rest are not.
  void answered(int32_t stored, caf::error& err);
  /// The queue (or the pump) is gone: nothing in flight will be answered.
  /// Those rows count as unconfirmed, and `why` says how many.
  void lost(caf::error why);
  /// A push may go out now: fewer than two are in flight.
  bool may_send() const;
  size_t pending_rows() const { return rows.size() + batch_rows; }

  std::mutex mtx;
  std::condition_variable changed; // an answer came, or the stream ended
  const queue_actor queue;
  const size_t window;
  credit_ledger ledger; // pushes awaiting an answer, in rows
  // Not sent yet: rows, or batches (never both: a push of the other kind
  // sends what waits first).
  std::vector<element> rows;
  std::vector<element> batches;
  size_t batch_rows = 0;
  int64_t stored = 0;
  int64_t refused = 0;
  int64_t unconfirmed = 0; // sent, never answered: the queue was lost
  caf::error end;          // the stream's first error
  /// queue_writer::hurry(): the push waiting for the window (or the next
  /// one) sends what it holds without waiting.
  bool hurried = false;
  /// queue_writer::settle(): the last barrier sent after the pushes, and the
  /// last one the queue sent back.
  uint64_t barrier_sent = 0;
  uint64_t barrier_back = 0;
};

/// Makes the pump of a writer on `state`: an actor (a CAF companion) that
/// the writer's pushes are sent as, so that it receives the queue's answers
/// and the queue's end. On each answer it updates `state`, sends what waits
/// if fewer than two pushes are in flight, and wakes the writer's waiting
/// call, whether or not the writer calls again.
caf::actor make_writer_pump(caf::actor_system& sys, std::shared_ptr<writer_state> state);

/// Ends a pump and its monitor of `queue`: later answers are dropped. Call
/// it without `state.mtx` (it waits for a handler running elsewhere).
void end_writer_pump(const caf::actor& pump, const queue_actor& queue);

} // namespace quern::detail
