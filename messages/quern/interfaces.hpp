#pragma once

#include <cstdint>
#include <vector>

#include <caf/error.hpp>
#include <caf/replies_to.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

#include "quern/atoms.hpp"
#include "quern/element.hpp"
#include "quern/queue_spec.hpp"

namespace quern {

/// Passed as the `timeout` of an enqueue or dequeue attempt: wait as long as
/// it takes. A finite timeout is enforced by the queue itself (Q-80,
/// docs/queues.md): it answers deadline_exceeded and keeps every element; clients request
/// with caf::infinite so that CAF never drops a late reply.
constexpr caf::timespan wait_forever = caf::timespan::max();

/// The interface of every queue actor (FIFO, random-shuffle, padding, priority).
///
/// Strict TensorFlow operations: one request, one reply when the attempt
/// completes (docs/semantics.md, Queues). Failures are quern errors (error.hpp).
///   enqueue(element, timeout)            -> rows stored (1)
///   enqueue_many(batch, timeout)         -> rows stored (batch size)
///   dequeue(timeout)                     -> element
///   dequeue_many(n, timeout)             -> batch of n rows
///   dequeue_up_to(n, timeout)            -> batch of 1..n rows (n once open)
///   close(cancel_pending_enqueues)       -> true once the close took effect
///   size() -> int32, is_closed() -> bool, spec() -> queue_spec
///
/// Streaming (credit) protocol, one-way messages (docs/queues.md):
///   push(rows)     each row an enqueue attempt; the queue answers the sender
///                  with pushed(stored, error) once the whole push completed
///                  or failed (error is none when all rows were stored).
///   push_batch(b)  the rows of batch `b` as one attempt (no per-row work in
///                  a FIFO queue); answered like push.
///   pull(n)        a dequeue-side attempt that completes as soon as it holds
///                  at least one row; the queue answers pulled(rows, error),
///                  error out_of_range once closed and empty.
///   pull_batch(n)  like pull, but the rows come as one batch:
///                  pulled(batch, error) -- a view of an enqueued batch when
///                  they are consecutive rows of it.
///   pull_many(n, count, up_to)
///                  demand for `count` batches of exactly n rows, served in
///                  order like `count` dequeue_many(n) (dequeue_up_to(n) with
///                  `up_to`: once closed, the rest as a smaller final batch).
///                  Rows are held incrementally like dequeue_many's. The
///                  queue answers batches(b, error) with every batch ready
///                  at once; error out_of_range ends the demand at the end
///                  of data (dequeue_many: the rows of a final partial batch
///                  stay in the queue), cancelled after unpull.
///   give_back(rows) rows a consumer received and will not take; they return
///                  to the front of the queue in order.
///   unpull()       withdraws the sender's pending pulls and dequeues: each
///                  is answered pulled(no rows, cancelled), batches(none,
///                  cancelled) or a cancelled error, and the rows it held go
///                  back to the queue (a consumer that stops).
///   unpush()       withdraws the sender's pending pushes: each is answered
///                  pushed(rows stored so far, cancelled) (a producer that
///                  stops and takes back what it still holds).
///   feeder(declared, started, timeout)
///                  queue runners made for (declared) and started on or ended
///                  on (started: +1, -1) this queue: a dequeue that waits
///                  while runners exist and none was started fails after
///                  `timeout` with a diagnosis.
using queue_actor = caf::typed_actor<
    caf::replies_to<enqueue_atom, element, caf::timespan>::with<int32_t>,
    caf::replies_to<enqueue_many_atom, element, caf::timespan>::with<int32_t>,
    caf::replies_to<dequeue_atom, caf::timespan>::with<element>,
    caf::replies_to<dequeue_many_atom, int32_t, caf::timespan>::with<element>,
    caf::replies_to<dequeue_up_to_atom, int32_t, caf::timespan>::with<element>,
    caf::replies_to<close_atom, bool>::with<bool>,
    caf::replies_to<size_atom>::with<int32_t>,
    caf::replies_to<is_closed_atom>::with<bool>,
    caf::replies_to<spec_atom>::with<queue_spec>,
    caf::reacts_to<push_atom, std::vector<element>>,
    caf::reacts_to<push_batch_atom, element>, caf::reacts_to<pull_atom, int32_t>,
    caf::reacts_to<pull_batch_atom, int32_t>,
    caf::reacts_to<pull_many_atom, int32_t, int32_t, bool>,
    caf::reacts_to<give_back_atom, std::vector<element>>, caf::reacts_to<unpull_atom>,
    caf::reacts_to<unpush_atom>,
    caf::reacts_to<feeder_atom, int32_t, int32_t, caf::timespan>>;

} // namespace quern
