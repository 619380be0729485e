#pragma once

// The handles on a queue actor for code that may block (main(), plain threads, detached
// actors; never an event-based actor): blocking_queue, TensorFlow's operations one call
// each; queue_writer, a producer on the streaming protocol; queue_reader and
// batch_reader, consumers that keep demand granted (docs/queues.md). Threads may share
// each; errors are thrown as op_error subclasses; no element is lost. They work
// on a queue of another process unchanged (docs/distributed.md).
//   quern::blocking_queue q{sys, spawn_fifo_queue(sys, 10, {quern::dtype::int64})};
//   q.enqueue({quern::tensor::scalar(int64_t{1})});
//   auto row = q.dequeue();

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/system_messages.hpp>

#include "quern/blocking_client.hpp"
#include "quern/interfaces.hpp"

namespace quern {

namespace detail {

/// The credit a streaming client (queue_writer, queue_reader, batch_reader)
/// has out at its queue: the messages it sent that still owe an answer,
/// oldest first, each with the units (rows or batches) it still owes. A queue
/// serves one client's messages in order, so answers settle the oldest.
class credit_ledger {
public:
  /// A message asking for, or handing over, `units`.
  void sent(size_t units) {
    owed_.push_back(units);
    total_ += units;
  }
  /// The units the oldest message still owes (0 if none is out).
  size_t oldest() const { return owed_.empty() ? 0 : owed_.front(); }
  /// An answer to the oldest message brought `got` of its units. The message
  /// is settled when `settled` (an error ended it, or it is answered once)
  /// or when it owes nothing more.
  void answered(size_t got, bool settled) {
    if (owed_.empty())
      return; // nothing was owed (cannot happen with a well-behaved queue)
    auto& front = owed_.front();
    got = std::min(got, front);
    front -= got;
    total_ -= got;
    if (!settled && front > 0)
      return;
    total_ -= front;
    owed_.pop_front();
  }
  /// The queue is gone: nothing outstanding will be answered. Returns the
  /// units that were owed.
  size_t forget() {
    auto owed = total_;
    owed_.clear();
    total_ = 0;
    return owed;
  }
  size_t messages() const { return owed_.size(); }
  size_t units() const { return total_; }
  bool empty() const { return owed_.empty(); }

private:
  std::deque<size_t> owed_;
  size_t total_ = 0;
};

/// Appends a unit a consumer did not take to the rows a give-back returns to
/// the front of the queue: a row as it is, a batch cut row by row. Shared by
/// a reader's end and by the relay of a lost remote consumer.
void append_rows(std::vector<element>& rows, element&& unit, bool batch);

/// What a stream holds and its code did not take (rows, or batches), as the
/// rows of a give-back, oldest first.
std::vector<element> rows_of(std::deque<element>& units, bool as_rows);

/// Why a streaming client's queue is gone, from its down message: the
/// queue's own quern error when it ended with one, `cancelled` when it was
/// shut down, else `unavailable`.
caf::error queue_gone(const caf::down_msg& dm);

/// What both readers (queue_reader, batch_reader) are made of: a caller
/// actor of its own, whose one mailbox receives the stream's answers in
/// order (so a reader's calls take turns under `mtx`);
/// the queue it monitors; the credit it has out; and why the stream ended.
/// A thread waiting in it is named in quern::actor_system's exit report.
class stream_client {
public:
  /// Throws argument_error naming `who` if `q` is not a valid handle.
  stream_client(caf::actor_system& sys, queue_actor q, const char* who);

  /// Waits for one message: an answer goes to `on_answer`; the queue's end
  /// records why (end) and forgets the credit out. `op` names the wait in
  /// the exit report.
  template <class F>
  void await_one(caf::atom_value op, F on_answer) {
    exit_watch::blocked_call waiting{self->home_system(),
                                     caf::actor_cast<caf::actor_addr>(queue), op};
    self->receive(std::move(on_answer), [&](caf::down_msg& dm) { queue_lost(dm); });
  }

  /// Held through a reader's calls; timed, so that a pipeline checkpoint
  /// waits for another thread's pull() a bounded time (pull_stream::settle).
  std::timed_mutex mtx;
  caf::scoped_actor self;
  queue_actor queue;
  credit_ledger ledger;
  /// The queue actor is gone: nothing more will be answered.
  bool queue_down = false;
  /// Why the stream ended: the first error (a reader ignores a withdrawn
  /// pull's cancelled, and ends normally with out_of_range).
  caf::error end;

private:
  void queue_lost(const caf::down_msg& dm);
};

/// The consumer side of both readers: keeps demand out for up to `window`
/// units (rows or batches, as `shape` asks), hands them out one at a time,
/// and at its end withdraws what is still granted and gives every unit it
/// received but did not hand out back to the front of the queue, in order.
class pull_stream : public stream_client {
public:
  /// `shape`: the cut and row count of each demand; a demand of rows asks
  /// for `chunk` rows and is answered once, a demand of batches asks for as
  /// many batches as the window has room for. Demand goes out when there is
  /// room for `chunk` units, in at most `max_messages` messages at a time.
  pull_stream(caf::actor_system& sys, queue_actor q, const char* who, demand shape,
              size_t window, size_t chunk, size_t max_messages);
  ~pull_stream();

  std::optional<element> try_pull();
  /// try_pull(), throwing the error that ended the data at its end.
  element pull();

  /// For a pipeline checkpoint (pipeline::make_batch_reader); the caller
  /// holds `mtx`. Withdraws the demand out and waits for its answers, so
  /// that nothing more is on its way from the queue, and returns a copy of
  /// the units received and not handed out yet, oldest first (they stay
  /// here). The next pull grants again.
  std::vector<element> settle();
  /// settle() in two halves, for a snapshot that pauses the runners
  /// meanwhile: sends the withdrawal (once until its answers are in);
  /// settle() then awaits its answers. The caller holds `mtx` from here to
  /// settle().
  void begin_settle();
  /// Units handed out before any the queue sends (a restored checkpoint's),
  /// oldest first; the caller holds `mtx`.
  void prefill(std::vector<element> units);

private:
  void grant();
  void await_one();
  /// Withdraws the demand out (begin_settle) and receives its answers.
  void withdraw();

  /// Tells a queue of another process how many units the caller's code has
  /// taken (taken, remote_queue_actor): its relay keeps the rest, and gives
  /// them back if this process is lost. Nothing for a queue of this process.
  void confirm();

  demand shape_;
  size_t window_;
  size_t chunk_;
  size_t max_messages_;
  std::deque<element> items_;
  bool withdrawing_ = false; // the withdrawal is sent, its answers not all in
  uint64_t handed_ = 0;      // units handed to the caller's code (or, at the end, back)
  uint64_t confirmed_ = 0;   // of which the queue was told
  remote_queue_actor receipts_; // where taken goes: none for a queue of this process
};

struct writer_state; // a queue_writer's stream, shared with its pump

} // namespace detail

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
  /// The queue's size, capacity and the counters of its own traffic: rows
  /// stored and handed out, and per side the attempts that completed and
  /// how long those that waited waited in its line (docs/semantics.md
  /// TL-11).
  queue_stats stats();

  /// What the queue holds now, for a checkpoint (docs/resume.md): its stored
  /// rows, the rows of enqueues waiting for room, whether it is closed, its
  /// generator. A queue of another process answers too (quern::net), its
  /// rows crossing in one message.
  queue_state snapshot();
  /// Puts a snapshot back into a queue that was never used; throws
  /// failed_precondition_error for a used queue, invalid_argument_error for
  /// rows that do not fit it.
  void restore(queue_state s);

private:
  blocking_client client_;
  queue_actor queue_;
};

/// A producer on the streaming (credit) protocol, for single elements at
/// high rate (docs/queues.md). push() returns as soon as the element is
/// handed to the queue's stream; up to `window` elements may be in flight.
/// flush() waits until every pushed element is stored and throws the first
/// error (e.g. cancelled_error once the queue closed); stored() counts what
/// the queue confirmed. While two pushes await the queue's answer, rows and
/// batches pushed meanwhile wait in the writer and travel together, in one
/// message, as soon as the queue answers one of the two: the writer's pump
/// (a small actor of its own) sends them, whether or not the pushing thread
/// calls again. The destructor hands what waits to the queue without waiting
/// for room (it is stored in order, or refused on close): call flush() to
/// wait and to learn errors. Threads may share one writer: a call that
/// waits for the queue lets the others go on, and the rows of one thread
/// keep their order.
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
  /// before go first. Counted and windowed like rows (a batch larger than
  /// the window goes alone); throws like push().
  void push_batch(element batch);
  /// Waits until every pushed row is stored or refused; throws the first
  /// error.
  void flush();
  /// Rows the queue confirmed as stored.
  int64_t stored() const;
  /// Rows that were pushed but not stored because of an error.
  int64_t refused() const;
  /// Rows sent whose answer never came because the queue was lost (its
  /// actor ended, or its process or the connection to it): a queue in
  /// another process may or may not hold them. Once flush() returned or
  /// threw, stored() + refused() + unconfirmed() is every row pushed.
  int64_t unconfirmed() const;
  /// Thread-safe: the push that waits for the window (or else the next
  /// push) sends what the writer holds at once, beyond the window, and
  /// returns. A pipeline checkpoint calls it (through blocking_run::on_pause)
  /// so that a writing op does not wait for room the paused pipeline will
  /// not make (docs/resume.md); its worker starts no run after it until the
  /// pipeline runs again.
  void hurry();
  /// Sends everything the writer holds, beyond the window, and a barrier
  /// after it, and waits until the barrier came back from the queue: every
  /// row pushed before is then stored there or among its waiting rows, none
  /// on its way (a queue of another process too). True then, or when the
  /// stream has ended (its error is thrown by the next call); false when the
  /// barrier did not come back within `limit`. A pipeline checkpoint calls
  /// it through blocking_run::before_pause (docs/resume.md, RS-14).
  bool settle(caf::timespan limit);

private:
  /// Waits (the state's lock held) until the pump says something changed.
  void wait(std::unique_lock<std::mutex>& lock);
  /// Refuses what waits to be sent and throws the stream's error.
  [[noreturn]] void fail_pending();

  caf::actor_system& sys_;
  std::shared_ptr<detail::writer_state> state_; // shared with the pump
  caf::actor pump_;
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
  queue_reader(const queue_reader&) = delete;
  queue_reader& operator=(const queue_reader&) = delete;

  element pull();
  /// Like pull(), but returns nullopt on end of data instead of throwing.
  std::optional<element> try_pull();

private:
  detail::pull_stream stream_;
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
  batch_reader(const batch_reader&) = delete;
  batch_reader& operator=(const batch_reader&) = delete;
  /// A reader moved from is not used again.
  batch_reader(batch_reader&&) noexcept = default;
  batch_reader& operator=(batch_reader&&) noexcept = default;

  /// The next batch; throws out_of_range_error at the end of data.
  element pull();
  std::optional<element> try_pull();

  /// Its stream, shared with a pipeline whose checkpoints take the batches
  /// it holds (pipeline::make_batch_reader).
  const std::shared_ptr<detail::pull_stream>& stream() const noexcept { return stream_; }

private:
  std::shared_ptr<detail::pull_stream> stream_;
};

} // namespace quern
