#pragma once

// The pending-attempt machinery shared by the four queue kinds
// (docs/semantics.md Q-10..Q-14): two FIFO lists of attempts, served by one flush.
// Private to actors/: the public face is quern/queue.hpp.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include <caf/actor_addr.hpp>
#include <caf/error.hpp>

#include "quern/demand.hpp"
#include "quern/element.hpp"
#include "quern/queue_spec.hpp"

#include "completion.hpp"
#include "kinds/kind.hpp"
#include "rows.hpp"

namespace quern::detail {

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

/// One demand (quern/demand.hpp) waiting to be served: a strict dequeue
/// (count 1, answered through a promise) or a streaming pull.
struct dequeue_attempt {
  uint64_t id = 0;
  demand want;   // want.count: batches still owed
  row_list held; // rows taken for the current batch while waiting for the rest
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
  /// What cutting one batch of a demand did.
  enum class cut_step { waiting, held, batch, ended };
  cut_step cut_any(dequeue_attempt& a, caf::error& end);
  cut_step cut_exact(dequeue_attempt& a, caf::error& end);
  void emit(dequeue_attempt& a, std::vector<element>& ready);
  void take(size_t n, row_list& out);
  /// Elements that may be taken now (min_after_dequeue while open, Q-51).
  size_t available() const;
  bool has_live_enqueue_attempts() const;
  caf::error insufficient(const std::string& prefix, int64_t requested,
                          size_t current) const;

  caf::local_actor* self_;
  queue_spec spec_;
  const queue_kind_rules& kind_;
  std::unique_ptr<queue_storage> storage_;
  bool closed_ = false;
  std::deque<enqueue_attempt> enqueues_;
  std::deque<dequeue_attempt> dequeues_;
};

} // namespace quern::detail
