#pragma once

// How a pipeline consumer of this process asks its queue to diagnose a
// dequeue that nobody feeds (quern::pipeline's consumer, coordination/): the
// one message of the queue actor's own interface that another layer sends.
// Not part of the wire protocol.

#include <caf/atom.hpp>

#include "quern/interfaces.hpp"

namespace quern::detail {

/// consumer -> queue: (starving, limit). The next dequeue of the sender that
/// has to wait is watched: once it waited `limit`, it fails with the
/// diagnosis if no runner feeds the queue (failed_precondition: runners
/// were made and none was started; unavailable: none was made, or every one
/// that started has ended without closing the queue); if runners still feed
/// it, it fails at the moment the last of them ends. `limit == max()`: the
/// next dequeue is not diagnosed at all (its consumer already was). Sent by
/// pipeline consumers only, on the queue's own interface (queue_impl_actor),
/// never over the wire.
using starving_atom = caf::atom_constant<caf::atom("starving")>;

/// Whether `q` is a queue actor of this process (not a remote queue's
/// facade): only those understand starving_atom (queue_actor.cpp).
bool is_local_queue(const queue_actor& q);

} // namespace quern::detail
