#pragma once

// The typed interface of every queue actor (docs/semantics.md, Queues; docs/queues.md):
// strict_queue_actor, TensorFlow's operations as requests; streaming_queue_actor, the
// credit protocol of one-way messages; queue_actor, both, which spawn_queue() returns;
// and what crosses processes (keyed enqueues, remote_queue_actor). From main() use a
// handle (quern/blocking_queue.hpp); an actor requests with caf::infinite and gives a
// timeout that the queue enforces:
//   self->request(q, caf::infinite, quern::dequeue_atom::value, quern::wait_forever)

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/replies_to.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

#include "quern/atoms.hpp"
#include "quern/batch_key.hpp"
#include "quern/demand.hpp"
#include "quern/element.hpp"
#include "quern/queue_spec.hpp"
#include "quern/queue_state.hpp"
#include "quern/queue_stats.hpp"

namespace quern {

/// Passed as the `timeout` of an enqueue or dequeue attempt: wait as long as
/// it takes. A finite timeout is enforced by the queue itself (Q-80,
/// docs/queues.md): it answers deadline_exceeded and keeps every element; clients request
/// with caf::infinite so that CAF never drops a late reply.
constexpr caf::timespan wait_forever = caf::timespan::max();

/// The strict TensorFlow operations of every queue actor (FIFO,
/// random-shuffle, padding, priority): one request, one reply when the
/// attempt completes (docs/semantics.md, Queues). Failures are quern errors
/// (error.hpp).
///   enqueue(element, timeout)            -> rows stored (1)
///   enqueue_many(batch, timeout)         -> rows stored (batch size)
///   dequeue(timeout)                     -> element
///   dequeue_many(n, timeout)             -> batch of n rows
///   dequeue_up_to(n, timeout)            -> batch of 1..n rows (n once open)
///   close(cancel_pending_enqueues)       -> true once the close took effect
///   size() -> int32, is_closed() -> bool, spec() -> queue_spec
///   queue_stats() -> queue_stats: its size, capacity and the counters of
///                  its own traffic (queue_stats.hpp; docs/semantics.md TL-11)
/// The three dequeues are the one-batch case of a `demand` (demand.hpp).
using strict_queue_actor = caf::typed_actor<
    caf::replies_to<enqueue_atom, element, caf::timespan>::with<int32_t>,
    caf::replies_to<enqueue_many_atom, element, caf::timespan>::with<int32_t>,
    caf::replies_to<dequeue_atom, caf::timespan>::with<element>,
    caf::replies_to<dequeue_many_atom, int32_t, caf::timespan>::with<element>,
    caf::replies_to<dequeue_up_to_atom, int32_t, caf::timespan>::with<element>,
    caf::replies_to<close_atom, bool>::with<bool>,
    caf::replies_to<size_atom>::with<int32_t>,
    caf::replies_to<is_closed_atom>::with<bool>,
    caf::replies_to<spec_atom>::with<queue_spec>,
    caf::replies_to<queue_stats_atom>::with<queue_stats>>;

/// The streaming (credit) protocol of every queue actor: one-way messages,
/// answered by a message to the sender (docs/queues.md).
///   push(rows)     the rows as one enqueue attempt; the queue answers the
///                  sender with pushed(stored, error) once the whole push
///                  completed or failed (error is none when all rows were
///                  stored). A push no larger than the capacity is stored
///                  whole or not at all (docs/semantics.md Q-25).
///   push_batch(bs) the rows of the batches `bs`, in order, as one attempt
///                  (no per-row work in a FIFO queue); answered like push.
///   pull(demand)   demand for `count` batches of n rows (demand.hpp), served
///                  in order like `count` strict dequeues; rows are held
///                  incrementally like dequeue_many's. The queue answers
///                  pulled(xs, error) with every batch ready at once (a view
///                  of an enqueued batch when its rows are consecutive rows
///                  of it); error out_of_range ends the demand at the end of
///                  data, cancelled after unpull.
///   give_back(rows) rows a consumer received and will not take; they return
///                  to the front of the queue in order, at most as many as
///                  the queue handed to the sender and it did not give back.
///   unpull()       withdraws the sender's pending pulls and dequeues: each
///                  is answered pulled(none, cancelled) or a cancelled error,
///                  and the rows it held go back to the queue (a consumer
///                  that stops).
///   unpush()       withdraws the sender's pending pushes: each is answered
///                  pushed(rows stored so far, cancelled) (a producer that
///                  stops and takes back what it still holds).
///   feeder(declared, started, timeout)
///                  queue runners made for (declared) and started on or ended
///                  on (started: +1, -1) this queue: a dequeue that waits
///                  while runners exist and none was started fails after
///                  `timeout` with a diagnosis.
using streaming_queue_actor =
    caf::typed_actor<caf::reacts_to<push_atom, std::vector<element>>,
                     caf::reacts_to<push_batch_atom, std::vector<element>>,
                     caf::reacts_to<pull_atom, demand>,
                     caf::reacts_to<give_back_atom, std::vector<element>>,
                     caf::reacts_to<unpull_atom>, caf::reacts_to<unpush_atom>,
                     caf::reacts_to<feeder_atom, int32_t, int32_t, caf::timespan>,
                     caf::reacts_to<barrier_atom, uint64_t>>;

/// The interface of every queue actor: both protocols. It converts to
/// either part (a strict_queue_actor for code that only calls TensorFlow's
/// operations).
using queue_actor = strict_queue_actor::extend_with<streaming_queue_actor>;

// -- what crosses processes ----------------------------------------------------------

/// A producer that retries, which every queue actor serves so that a batch
/// sent again after a lost connection is stored once (quern::net's
/// remote_producer sends them; docs/distributed.md, "Retried batches").
///   enqueue_keyed(key, batch, timeout)   -> rows of the batch (batch_key.hpp):
///                  enqueue_many for a producer that retries. Batch
///                  `key.batch` of `key.producer` is stored once: a retry of
///                  a batch the queue holds whole is answered at once without
///                  storing it again, a retry of one it holds in part stores
///                  the rest, and a retry of one still waiting for room
///                  replaces the earlier request (answered aborted), at the
///                  back of the line. A request whose attempt is not above
///                  the producer's last is refused (aborted), and so is an
///                  older batch (failed_precondition) or a new batch while
///                  the last still waits.
///   producer_mark(producer) -> batch_key: the producer's last batch stored
///                  whole and the last attempt number seen (0 and 0 for a
///                  producer never seen): where a restarted producer goes on.
using keyed_enqueue_actor = caf::typed_actor<
    caf::replies_to<enqueue_keyed_atom, batch_key, element, caf::timespan>::with<int32_t>,
    caf::replies_to<producer_mark_atom, std::string>::with<batch_key>>;

/// What a pipeline's checkpoint asks of a queue (docs/resume.md); every
/// queue actor serves it, and quern::net passes it on to a queue of another
/// process (remote_queue_actor):
///   snapshot()            -> queue_state: the rows stored, the rows of the
///                  enqueues waiting for room, closed, the generator. The
///                  pipeline asks while its runners are paused, so that no row
///                  is on its way between two queues.
///   restore(queue_state)  -> true: a queue that was never used takes the
///                  state back (the stored rows even beyond its capacity, the
///                  waiting ones as room frees); a queue that holds rows, has
///                  waiting attempts or is closed refuses with
///                  failed_precondition.
using checkpoint_queue_actor =
    caf::typed_actor<caf::replies_to<snapshot_atom>::with<queue_state>,
                     caf::replies_to<restore_atom, queue_state>::with<bool>>;

/// A queue as another process sees it: the queue's own protocol, keyed
/// enqueues, a checkpoint's snapshot and restore (checkpoint_queue_actor),
/// and what a consumer of another process confirms taking:
///   taken(n)       the consumer is done with the first n units its pulls
///                  (or dequeues) received (atoms.hpp). quern::net's relay of
///                  the queue keeps the rest and gives it back to the front
///                  of the queue if the consumer's process is lost; a queue
///                  of the consumer's own process is never sent it
///                  (quern/detail/receipts.hpp).
/// quern::net's go-betweens (the node's facades and relays, the endpoint of
/// a connect) speak it; a queue actor itself serves keyed_enqueue_actor and
/// checkpoint_queue_actor but not taken.
using remote_queue_actor = queue_actor::extend_with<keyed_enqueue_actor>::extend_with<
    checkpoint_queue_actor>::extend<caf::reacts_to<taken_atom, uint64_t>>;

} // namespace quern
