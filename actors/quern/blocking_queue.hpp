#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "quern/blocking_client.hpp"
#include "quern/interfaces.hpp"

namespace quern {

/// A blocking handle on a queue actor for plain `main()` code or detached
/// actors (never call it from an event-based actor: it blocks its thread).
/// Every call maps to one strict TensorFlow operation and throws the op_error
/// subclass named after TensorFlow's error (out_of_range_error, ...).
/// A timeout is enforced by the queue (deadline_exceeded_error); the handle
/// itself waits for the queue's answer, so no element is ever lost to a
/// reply that came too late.
///
/// One handle may be shared by any number of threads, as one TensorFlow
/// dequeue op is run by many: each call waits on its own, so a thread blocked
/// in dequeue() does not hold up another thread's enqueue() on the same
/// handle, and every element goes to exactly one caller.
class blocking_queue {
public:
  using timeout_type = std::chrono::nanoseconds;

  blocking_queue(caf::actor_system& sys, queue_actor q);

  const queue_actor& actor() const { return queue_; }

  void enqueue(const element& e, timeout_type timeout = wait_forever);
  void enqueue_many(const element& batch, timeout_type timeout = wait_forever);
  element dequeue(timeout_type timeout = wait_forever);
  element dequeue_many(int32_t n, timeout_type timeout = wait_forever);
  element dequeue_up_to(int32_t n, timeout_type timeout = wait_forever);
  void close(bool cancel_pending_enqueues = false);
  int32_t size();
  bool is_closed();
  queue_spec spec();

private:
  blocking_client client_;
  queue_actor queue_;
};

/// A producer on the streaming (credit) protocol, for single elements at
/// high rate (docs/queues.md). push() returns as soon as the element is
/// handed to the queue's stream; up to `window` elements may be in flight.
/// flush() waits until every pushed element is stored and throws the first
/// error (e.g. cancelled_error once the queue closed); stored() counts what
/// the queue confirmed. The destructor hands rows not yet sent to the queue
/// without waiting (they are stored in order or refused on close): call
/// flush() to wait and to learn errors. Threads may share one writer: its
/// calls take turns (rows of one thread keep their order).
class queue_writer {
public:
  queue_writer(caf::actor_system& sys, queue_actor q, size_t window = 1024);
  ~queue_writer();
  queue_writer(const queue_writer&) = delete;
  queue_writer& operator=(const queue_writer&) = delete;

  /// Hands `e` to the queue's stream. Throws the stream's first error (and
  /// refuses `e`) once a push failed, e.g. cancelled_error after a close.
  void push(element e);
  /// Hands every row of `batch` (leading dimension) to the queue as one
  /// attempt: a FIFO queue stores the batch without touching its rows, and a
  /// batch_reader may get it back as the very same tensors. Rows pushed
  /// before go first. Counted and windowed like rows; throws like push().
  void push_batch(element batch);
  /// Waits until every pushed row is stored or refused; throws the first
  /// error.
  void flush();
  /// Rows the queue confirmed as stored.
  int64_t stored() const;
  /// Rows that were pushed but not stored because of an error.
  int64_t refused() const;

private:
  void send_pending();
  void await_one();
  void poll();
  [[noreturn]] void fail_pending();
  void handle_ack(int32_t stored, const caf::error& err, size_t sent);

  mutable std::mutex mtx_;
  caf::scoped_actor self_;
  queue_actor queue_;
  size_t window_;
  std::vector<element> pending_; // not sent yet
  std::deque<size_t> in_flight_; // sizes of pushes awaiting an ack
  size_t in_flight_rows_ = 0;
  int64_t stored_ = 0;
  int64_t refused_ = 0;
  caf::error error_;
};

/// A consumer on the streaming (credit) protocol: keeps demand for up to
/// `window` rows granted and hands them out one at a time. pull() throws
/// out_of_range_error once the queue is closed and drained. Rows received but
/// not taken are given back to the front of the queue when the reader is
/// destroyed, so none is ever lost. Threads may share one reader: each row
/// goes to exactly one pull().
class queue_reader {
public:
  /// `window`: rows granted or received but not yet taken, at most; from 4
  /// (four pulls of a quarter each stay granted) to 2^31 - 1.
  queue_reader(caf::actor_system& sys, queue_actor q, size_t window = 1024);
  ~queue_reader();
  queue_reader(const queue_reader&) = delete;
  queue_reader& operator=(const queue_reader&) = delete;

  element pull();
  /// Like pull(), but returns nullopt on end of data instead of throwing.
  std::optional<element> try_pull();

private:
  void grant();
  void await_one();

  std::mutex mtx_;
  caf::scoped_actor self_;
  queue_actor queue_;
  size_t window_;
  std::deque<element> buffer_;
  size_t outstanding_pulls_ = 0;
  bool queue_down_ = false;
  caf::error end_;
};

/// A consumer of batches on the streaming protocol: keeps demand for several
/// batches granted and hands them out one at a time, so the consumer
/// rarely waits for a round trip. With batch_cut::any_size each batch has
/// 1..batch_size rows, as soon as any is there (a view of an enqueued batch
/// when the rows are consecutive rows of one); with dequeue_many /
/// dequeue_up_to, batches are exactly those of the strict calls (the queue
/// holds rows incrementally and respects min_after_dequeue). Batches that
/// are ready together travel in one message. try_pull() returns nullopt once
/// the queue is closed and drained. Batches received but not taken go back
/// to the front of the queue when the reader is destroyed, so none is lost.
/// The queue's components must have specified shapes. Threads may share one
/// reader: each batch goes to exactly one pull().
class batch_reader {
public:
  /// `window`: the batches granted or received but not yet handed out, at
  /// most (demand goes out in chunks of at least half of it).
  batch_reader(caf::actor_system& sys, queue_actor q, int32_t batch_size,
               batch_cut cut = batch_cut::any_size, size_t window = 64);
  ~batch_reader();
  batch_reader(const batch_reader&) = delete;
  batch_reader& operator=(const batch_reader&) = delete;

  /// The next batch; throws out_of_range_error at the end of data.
  element pull();
  std::optional<element> try_pull();

private:
  void grant();
  void await_one();

  std::mutex mtx_;
  caf::scoped_actor self_;
  queue_actor queue_;
  int32_t batch_size_;
  batch_cut cut_;
  size_t window_;
  std::deque<element> batches_;
  /// Batches still owed by each demand sent, oldest first (the queue serves
  /// one client's attempts in order), and their sum.
  std::deque<int32_t> owed_;
  size_t owed_total_ = 0;
  bool queue_down_ = false;
  caf::error end_;
};

} // namespace quern
