#pragma once

// The atoms of the queue protocol: the first element of every message a queue actor
// takes or sends (TensorFlow's operations, keyed enqueues, the streaming protocol of
// docs/queues.md, feeder). Handles (quern/blocking_queue.hpp) send them for main();
// an actor sends them through the typed interfaces of quern/interfaces.hpp:
//   self->request(q, caf::infinite, quern::dequeue_atom::value, quern::wait_forever)
// The coordinator's and the runners' atoms are in quern/coordination.hpp.

#include <caf/atom.hpp>

namespace quern {

// An atom's text is at most 10 characters in CAF 0.17; the C++ names say
// what the message means.

// -- queue operations (docs/semantics.md, Queues) --
using enqueue_atom = caf::atom_constant<caf::atom("enqueue")>;
using enqueue_many_atom = caf::atom_constant<caf::atom("enq_many")>;
using dequeue_atom = caf::atom_constant<caf::atom("dequeue")>;
using dequeue_many_atom = caf::atom_constant<caf::atom("deq_many")>;
using dequeue_up_to_atom = caf::atom_constant<caf::atom("deq_up_to")>;
using close_atom = caf::atom_constant<caf::atom("close")>;
using size_atom = caf::atom_constant<caf::atom("size")>;
using is_closed_atom = caf::atom_constant<caf::atom("is_closed")>;
using spec_atom = caf::atom_constant<caf::atom("spec")>;
/// (queue_stats) -> queue_stats: the queue's own counters (quern/queue_stats.hpp).
using queue_stats_atom = caf::atom_constant<caf::atom("q_stats")>;

// -- a producer that retries (quern/batch_key.hpp) --
/// producer -> queue: (enqueue_keyed, key, batch, timeout) an enqueue_many
/// that stores batch `key.batch` of `key.producer` once, however often it is
/// sent.
using enqueue_keyed_atom = caf::atom_constant<caf::atom("enq_keyed")>;
/// producer -> queue: (producer_mark, producer) -> batch_key: the last batch
/// of the producer the queue stored whole, and the last attempt number seen.
using producer_mark_atom = caf::atom_constant<caf::atom("prod_mark")>;

// -- the streaming (credit) protocol (docs/queues.md) --
/// producer -> queue: rows to store, each an enqueue attempt in order.
using push_atom = caf::atom_constant<caf::atom("push")>;
/// queue -> producer: how many rows of one push were stored, and why not all.
using pushed_atom = caf::atom_constant<caf::atom("pushed")>;
/// producer -> queue: batches (leading dimension), their rows stored in
/// order as one enqueue attempt; answered with pushed like push. A writer
/// sends the batches pushed while earlier pushes await their answer together.
using push_batch_atom = caf::atom_constant<caf::atom("push_batch")>;
/// consumer -> queue: a demand (quern/demand.hpp): `count` batches of n rows.
using pull_atom = caf::atom_constant<caf::atom("pull")>;
/// queue -> consumer: the batches of a demand ready so far (every batch ready
/// at once travels in one message; the rows themselves for a demand
/// `as_rows`), and why the demand ended early (out_of_range at the end of
/// data, cancelled after unpull).
using pulled_atom = caf::atom_constant<caf::atom("pulled")>;
/// consumer -> queue: rows it received but will not take; they go back to
/// the front of the queue. Only as many as the queue handed to the sender
/// (answers to its dequeues and pulls, less what it gave back): the excess
/// is refused, and said so on stderr.
using give_back_atom = caf::atom_constant<caf::atom("give_back")>;
/// consumer -> queue: (taken, n) the consumer is done with the first n
/// units (rows, or batches) its pulls received, counted from its first pull:
/// its code took them, or it gave them back (give_back comes first); from a
/// remote queue's endpoint, the first n answers to its dequeues. A reader
/// sends taken(0) when it starts, a queue runner's worker before its first
/// pull of a queue of another process. The relay of a remote queue keeps
/// what a consumer was sent and has not confirmed, and gives it back to the
/// front of the queue if the consumer's process is lost; a queue in the
/// consumer's own process has nothing to keep and ignores it.
using taken_atom = caf::atom_constant<caf::atom("taken")>;
/// consumer -> queue: withdraw every pending pull and dequeue of the sender;
/// each is answered with cancelled (pulled(no rows, cancelled) for a pull),
/// and the rows it held go back.
using unpull_atom = caf::atom_constant<caf::atom("unpull")>;
/// producer -> queue: withdraw every pending push of the sender; each is
/// answered with pushed(rows stored so far, cancelled).
using unpush_atom = caf::atom_constant<caf::atom("unpush")>;

// -- who feeds a queue --
/// (feeder, declared, started, timeout): a queue runner of this queue was
/// made (declared +1), was dropped without a start (-1), started (started
/// +1, at each start) or ended (started -1). While the queue has runners
/// none of which ever started, a dequeue or pull that waited `timeout` (the
/// shortest declared) fails with failed_precondition instead of waiting
/// forever, as TensorFlow would. Runners made are counted per sender (a
/// local runner's handle sends anonymously) and forgotten when the sender
/// goes down: a runner of another process speaks through its queue's
/// endpoint, whose relay at the queue ends when that process is lost.
using feeder_atom = caf::atom_constant<caf::atom("feeder")>;

// -- checkpoints of a pipeline (docs/resume.md) --
/// producer -> queue: (barrier, token), answered (barrier_passed, token) to
/// its sender once every message that sender sent before it reached the
/// queue: a push before it is stored then, or waits for room among the
/// queue's waiting rows. A runner's worker sends it to a queue of another
/// process before it says it paused for a checkpoint (RS-12).
using barrier_atom = caf::atom_constant<caf::atom("barrier")>;
using barrier_passed_atom = caf::atom_constant<caf::atom("barrier_ok")>;
/// pipeline -> queue: (snapshot) -> queue_state, what the queue holds now.
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;
/// pipeline -> queue: (restore, queue_state) -> bool, before any other use.
using restore_atom = caf::atom_constant<caf::atom("restore")>;

// -- internal to an actor: a deadline of one pending attempt expired --
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;

} // namespace quern
