#pragma once

// The state of a queue shared by the four queue kinds (docs/semantics.md
// Q-10..Q-14): its storage, whether it is closed, and two lines of waiting
// attempts (attempts.hpp) served in order by one flush. Private to queues/:
// the public face is quern/queue.hpp.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include <caf/actor_addr.hpp>
#include <caf/error.hpp>

#include "quern/demand.hpp"
#include "quern/element.hpp"
#include "quern/queue_spec.hpp"
#include "quern/queue_state.hpp"
#include "quern/queue_stats.hpp"

#include "attempts.hpp"
#include "completion.hpp"
#include "kinds/kind.hpp"
#include "rows.hpp"

namespace quern::detail {

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
  /// Rows `client` gives back (to the front, in order): at most what
  /// handed_to_client() says; they no longer count as handed to it.
  void give_back(const caf::actor_addr& client, row_list rows);
  /// Rows answered to `client`'s dequeues and pulls that it has not given
  /// back: what it may give back.
  int64_t handed_to_client(const caf::actor_addr& client) const;
  /// `n` rows were answered to `client` (dequeue_attempt::serve).
  void handed_to(const caf::actor_addr& client, int64_t n);
  /// Withdraws the pulls of `client`, answering each with cancelled.
  void unpull(const caf::actor_addr& client);
  /// Cancels the client's pending pushes (rows stored so far stay stored).
  void unpush(const caf::actor_addr& client);
  /// How many keyed enqueues of the producer `m` wait in the line.
  size_t waiting(const keyed_mark* m) const;
  /// Whether its batch `number` is one of them.
  bool waiting(const keyed_mark* m, uint64_t number) const;
  /// Withdraws every keyed enqueue of `m` that waits, answering each with
  /// `why(its batch's number)`; the rows they stored stay stored. No
  /// flush: the retry that replaces them comes next.
  void withdraw(const keyed_mark* m, const std::function<caf::error(uint64_t)>& why);
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

  /// Its size, capacity and the counters of its traffic (TL-11).
  queue_stats stats() const;
  /// An enqueue-side attempt stored `rows` more rows; one completed after
  /// waiting `wait_ns` in the line (0: served at once).
  void count_stored(int64_t rows) { stats_.enqueued_rows += rows; }
  void count_enqueue(int64_t wait_ns) {
    ++stats_.enqueue_attempts;
    stats_.enqueue_wait_ns += wait_ns;
  }
  /// A dequeue-side attempt handed out `rows` rows; one batch handed out
  /// after waiting `wait_ns`.
  void count_handed(int64_t rows) { stats_.dequeued_rows += rows; }
  void count_dequeue(int64_t wait_ns) {
    ++stats_.dequeue_attempts;
    stats_.dequeue_wait_ns += wait_ns;
  }
  /// The steady clock in nanoseconds, read only for attempts that wait.
  static int64_t now_ns();

  /// What the queue holds now, for a checkpoint (queue_state.cpp).
  queue_state snapshot() const;
  /// Takes a snapshot back: the stored rows at once (whatever the capacity),
  /// the waiting ones as one enqueue attempt that answers nobody, then the
  /// waiting close. Throws failed_precondition_error when the queue was used
  /// (rows, attempts or closed) and invalid_argument_error when a row does
  /// not fit the queue's signature; nothing is taken then.
  void restore(queue_state s);

  /// The "<Kind> '<name>'" prefix used in enqueue-side messages.
  std::string enqueue_name() const;
  /// The prefix of single dequeue messages.
  std::string dequeue_name() const;
  /// The prefix of dequeue_many/up_to messages.
  std::string dequeue_many_name() const;

  // -- what attempts serve themselves from -----------------------------------

  caf::local_actor* self() const { return self_; }
  queue_storage& storage() { return *storage_; }
  const queue_kind_rules& kind() const { return kind_; }
  void mark_closed() { closed_ = true; }
  /// Moves `n` rows to hand out to the end of `out`.
  void take(size_t n, row_list& out);
  /// Elements that may be taken now (min_after_dequeue while open, Q-51).
  size_t available() const;
  bool has_live_enqueue_attempts() const;
  /// "<prefix> is closed and has insufficient elements (...)".
  caf::error insufficient(const std::string& prefix, int64_t requested,
                          size_t current) const;

private:
  void flush();
  /// Fails every waiting enqueue-side attempt that `is_it` picks with
  /// `why(attempt)` (without a flush); rows stored stay stored. Returns how
  /// many there were.
  template <class Pred, class Why>
  size_t fail_waiting_enqueues(Pred is_it, Why why);
  /// Serves a line from its head while its attempts complete; returns
  /// whether anything moved.
  template <class Attempts>
  bool serve_line(Attempts& line);

  caf::local_actor* self_;
  queue_spec spec_;
  const queue_kind_rules& kind_;
  std::unique_ptr<queue_storage> storage_;
  bool closed_ = false;
  std::deque<enqueue_attempt> enqueues_;
  std::deque<dequeue_attempt> dequeues_;
  /// Rows handed to each client and not given back (a counter per client
  /// actor, forgotten when it goes down): the most it may give back.
  std::unordered_map<caf::actor_addr, int64_t> handed_;
  /// The counters of stats() (size and capacity filled when asked).
  queue_stats stats_;
};

} // namespace quern::detail
