#pragma once

// Making queues: spawn_fifo_queue, spawn_random_shuffle_queue, spawn_padding_fifo_queue
// and spawn_priority_queue, with TensorFlow's argument order (docs/semantics.md Q-1), or
// spawn_queue(sys, kind, options). Each returns a queue actor (docs/queues.md); bad
// options are refused with TensorFlow's texts, and a shared_name gives one queue per
// actor system.
//   auto q = quern::spawn_fifo_queue(sys, 100, {quern::dtype::float32},
//                                    {quern::tensor_shape{3}});
// main() uses q through a handle (quern/blocking_queue.hpp); actors send it messages.

#include <caf/actor_system.hpp>

#include "quern/interfaces.hpp"
#include "quern/queue_spec.hpp"

namespace quern {

/// "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue", "PriorityQueue";
/// "Queue" for a value that is no kind.
const char* queue_kind_name(queue_kind k);

/// Validates `opts` for a queue of `kind` (Q-1..Q-4, Q-50, Q-60, Q-71) and
/// returns the spec. Throws invalid_argument_error with TensorFlow's texts.
/// Assigns the process-wide resource-name counter when shared_name is empty.
queue_spec make_queue_spec(queue_kind kind, queue_options opts);

/// Checks one element against the spec for `enqueue`;
/// throws invalid_argument_error.
void validate_enqueue(const queue_spec& spec, const element& e);

/// Checks a batch for `enqueue_many` and returns its batch size.
int64_t validate_enqueue_many(const queue_spec& spec, const element& batch);

/// Spawns a queue actor of `kind`. Throws invalid_argument_error (with
/// TensorFlow's texts, docs/semantics.md Q-1..Q-4, Q-50, Q-60) for bad options.
/// With a non-empty shared_name, a second spawn in the same actor system
/// returns the existing queue when the options match and throws
/// invalid_argument_error otherwise.
queue_actor spawn_queue(caf::actor_system& sys, queue_kind kind, queue_options opts);

/// Shorthands with TensorFlow's argument order.
queue_actor spawn_fifo_queue(caf::actor_system& sys, int32_t capacity,
                             std::vector<dtype> dtypes,
                             std::vector<tensor_shape> shapes = {},
                             std::string name = {});
queue_actor spawn_random_shuffle_queue(caf::actor_system& sys, int32_t capacity,
                                       int32_t min_after_dequeue,
                                       std::vector<dtype> dtypes,
                                       std::vector<tensor_shape> shapes = {},
                                       int64_t seed = 0, int64_t seed2 = 0,
                                       std::string name = {});
queue_actor spawn_padding_fifo_queue(caf::actor_system& sys, int32_t capacity,
                                     std::vector<dtype> dtypes,
                                     std::vector<tensor_shape> shapes,
                                     std::string name = {});
queue_actor spawn_priority_queue(caf::actor_system& sys, int32_t capacity,
                                 std::vector<dtype> dtypes,
                                 std::vector<tensor_shape> shapes = {},
                                 std::string name = {});

} // namespace quern
