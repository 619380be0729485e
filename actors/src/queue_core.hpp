#pragma once

// The pending-attempt machinery shared by the four queue kinds
// (docs/semantics.md Q-10..Q-14): two FIFO lists of attempts, served by one flush.
// Private to actors/: the public face is quern/queue.hpp.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/error.hpp>
#include <caf/response_promise.hpp>

#include "quern/element.hpp"
#include "quern/queue_spec.hpp"

namespace quern::detail {

/// Consecutive rows kept together: one element (no batch dimension), or rows
/// [begin, begin + count) of a batch. Batches travel through a FIFO queue as
/// runs, so an enqueue_many costs the same for 1 row as for 10,000, and a
/// dequeue_many that takes rows of one batch returns a view of it.
struct row_run {
  element data;
  int64_t begin = 0;
  int64_t count = 1;
  bool batched = false;

  static row_run single(element e) { return row_run{std::move(e), 0, 1, false}; }
  static row_run batch(element b, int64_t rows) {
    return row_run{std::move(b), 0, rows, true};
  }

  int64_t size() const { return count; }
  /// Row `i` of this run as an element (a view when batched).
  element row(int64_t i) const { return batched ? data.row(begin + i) : data; }
};

/// Rows in order, as runs.
class row_list {
public:
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::deque<row_run>& runs() const { return runs_; }
  /// The element of the first run, to move out of a list about to be cleared.
  element& front_data() { return runs_.front().data; }

  void push_back(row_run r);
  void push_back(element single) { push_back(row_run::single(std::move(single))); }
  /// Appends every run of `other`, in order.
  void append(row_list&& other);
  /// Puts every run of `other` in front of this list, in order.
  void prepend(row_list&& other);
  /// Moves the first `n` rows (n <= size()) to the end of `out`.
  void move_front(int64_t n, row_list& out);
  /// Removes and returns the first row. Requires !empty().
  element pop_front();
  /// Every row as an element (views of batches, no copy of values).
  std::vector<element> elements() const;
  /// The same, moving single rows out instead of copying them; leaves the
  /// list empty.
  std::vector<element> take_elements();
  void clear() {
    runs_.clear();
    size_ = 0;
  }

private:
  std::deque<row_run> runs_;
  int64_t size_ = 0;
};

/// Where the elements of a queue live; one implementation per kind.
class queue_storage {
public:
  virtual ~queue_storage() = default;
  virtual size_t size() const = 0;
  /// Stores the first `n` rows of `from` (n <= from.size()), moving them
  /// out of it (FIFO: as runs; others split them into rows).
  virtual void push(row_list& from, int64_t n) = 0;
  /// Moves the next `n` rows to hand out (FIFO: oldest, shuffle: random,
  /// priority: smallest first) to the end of `out`. Requires n <= size().
  virtual void take(size_t n, row_list& out) = 0;
  /// Returns rows taken by an attempt that did not complete, so that they are
  /// the next ones handed out again where order matters (FIFO: at the front,
  /// in their original order).
  virtual void put_back(row_list&& rows) = 0;
};

std::unique_ptr<queue_storage> make_storage(const queue_spec& spec);

/// How an attempt ends, sent to whoever waits for it.
class completion {
public:
  /// A request/response attempt: answered through a promise.
  static completion promise(caf::response_promise rp);
  /// A streamed push: the sender gets pushed(stored, error).
  static completion pushed_to(caf::strong_actor_ptr client);
  /// A streamed pull: the sender gets pulled(rows, error).
  static completion pulled_to(caf::strong_actor_ptr client);
  /// A streamed batch pull: the sender gets pulled(batch, error).
  static completion pulled_batch_to(caf::strong_actor_ptr client);
  /// A pull_many: the sender gets batches(batches, error), possibly several
  /// times.
  static completion batches_to(caf::strong_actor_ptr client);

  bool is_stream() const { return kind_ != kind::promise; }
  const caf::strong_actor_ptr& client() const { return client_; }

  void deliver_count(caf::local_actor* self, int32_t stored, caf::error err);
  void deliver_element(caf::local_actor* self, element e);
  void deliver_rows(caf::local_actor* self, std::vector<element> rows, caf::error err);
  void deliver_batch(caf::local_actor* self, element batch, caf::error err);
  void deliver_batches(caf::local_actor* self, std::vector<element> batches,
                       caf::error err);
  void deliver_bool(bool value);
  void deliver_error(caf::local_actor* self, caf::error err);

private:
  enum class kind { promise, pushed, pulled, pulled_batch, batches };
  kind kind_ = kind::promise;
  caf::response_promise rp_;
  caf::strong_actor_ptr client_;
};

struct enqueue_attempt {
  enum class op { enqueue, enqueue_many, push, close };
  op what = op::enqueue;
  uint64_t id = 0;
  row_list rows;      // rows still to store
  int64_t total = 0;  // rows of the attempt
  int64_t stored = 0; // rows stored so far
  caf::actor_addr client;
  completion done;
};

struct dequeue_attempt {
  enum class op { dequeue, dequeue_many, dequeue_up_to, pull, pull_batch, pull_many };
  op what = op::dequeue;
  uint64_t id = 0;
  int32_t n = 1;
  int32_t batches = 1; // pull_many: batches still owed
  bool up_to = false;  // pull_many: dequeue_up_to's end
  row_list held;       // rows taken while waiting for the rest
  caf::actor_addr client;
  completion done;
};

/// The state of one queue actor (docs/semantics.md, Queues).
class queue_core {
public:
  queue_core(caf::local_actor* self, queue_spec spec);

  const queue_spec& spec() const { return spec_; }
  int32_t size() const { return static_cast<int32_t>(storage_->size()); }
  bool is_closed() const { return closed_; }

  /// Appends an attempt and flushes. Validation happened before.
  /// Returns whether the attempt is still pending (it did not complete at
  /// once), i.e. whether a deadline is worth arming.
  bool add(enqueue_attempt a);
  bool add(dequeue_attempt a);
  /// close(cancel_pending_enqueues=true); replies through `done`.
  void close_cancelling(completion done);
  /// Rows a streaming consumer gives back (to the front, in order).
  void give_back(row_list rows);
  /// Withdraws the pulls of `client`, answering each with cancelled.
  void unpull(const caf::actor_addr& client);
  /// Cancels the client's pending pushes (rows stored so far stay stored).
  void unpush(const caf::actor_addr& client);
  /// A deadline expired: answers deadline_exceeded if the attempt is still
  /// pending, keeping every element (Q-80, and better than TF for Q-37).
  void expire(uint64_t id);
  /// A dequeue-side attempt that is still pending fails with `err`; what it
  /// held goes back, in order (as expire()). Returns whether it was pending.
  bool fail_waiting_dequeue(uint64_t id, caf::error err);
  /// A client went down: drops its request attempts without an answer and
  /// returns what they held. Streamed pushes stay: their rows were handed
  /// over and are stored or refused like any other.
  void client_down(const caf::actor_addr& client);
  /// The actor terminates: every pending attempt is answered cancelled.
  void shutdown();

  /// Builds the batch of `rows` for dequeue_many/up_to (padding included).
  element make_batch(const row_list& rows) const;
  /// The same, leaving `rows` empty: a list that is one whole batch (what a
  /// shuffle take returns) is moved out as it is, without a copy.
  element take_batch(row_list& rows) const;

  /// The "<Kind> '<name>'" prefix used in enqueue-side messages.
  std::string enqueue_name() const;
  /// The prefix of single dequeue messages.
  std::string dequeue_name() const;
  /// The prefix of dequeue_many/up_to messages.
  std::string dequeue_many_name() const;

private:
  enum class progress { none, partial, complete };

  void flush();
  progress serve(enqueue_attempt& a);
  progress serve(dequeue_attempt& a);
  progress serve_single(dequeue_attempt& a);
  progress serve_many(dequeue_attempt& a);
  progress serve_many_priority(dequeue_attempt& a);
  progress serve_pull(dequeue_attempt& a);
  progress serve_pull_many(dequeue_attempt& a);
  void take(size_t n, row_list& out);
  /// Elements that may be taken now (min_after_dequeue while open, Q-51).
  size_t available() const;
  bool has_live_enqueue_attempts() const;
  caf::error insufficient(const std::string& prefix, int64_t requested,
                          size_t current) const;
  void complete_many(dequeue_attempt& a);

  caf::local_actor* self_;
  queue_spec spec_;
  std::unique_ptr<queue_storage> storage_;
  bool closed_ = false;
  std::deque<enqueue_attempt> enqueues_;
  std::deque<dequeue_attempt> dequeues_;
};

} // namespace quern::detail
