// TensorFlow's queue constructors (tf.FIFOQueue, tf.RandomShuffleQueue,
// tf.PaddingFIFOQueue, tf.PriorityQueue) as shorthands of spawn_queue
// (quern/queue.hpp): each fills the queue_options its constructor takes.
#include "quern/queue.hpp"

namespace quern {

namespace {

// The options every TensorFlow-style constructor takes.
queue_options options_of(int32_t capacity, std::vector<dtype> dtypes,
                         std::vector<tensor_shape> shapes, std::string name) {
  queue_options o;
  o.capacity = capacity;
  o.dtypes = std::move(dtypes);
  o.shapes = std::move(shapes);
  o.name = std::move(name);
  return o;
}

} // namespace

queue_actor spawn_fifo_queue(caf::actor_system& sys, int32_t capacity,
                             std::vector<dtype> dtypes, std::vector<tensor_shape> shapes,
                             std::string name) {
  return spawn_queue(
      sys, queue_kind::fifo,
      options_of(capacity, std::move(dtypes), std::move(shapes), std::move(name)));
}

queue_actor spawn_random_shuffle_queue(caf::actor_system& sys, int32_t capacity,
                                       int32_t min_after_dequeue,
                                       std::vector<dtype> dtypes,
                                       std::vector<tensor_shape> shapes, int64_t seed,
                                       int64_t seed2, std::string name) {
  auto o = options_of(capacity, std::move(dtypes), std::move(shapes), std::move(name));
  o.min_after_dequeue = min_after_dequeue;
  o.seed = seed;
  o.seed2 = seed2;
  return spawn_queue(sys, queue_kind::random_shuffle, std::move(o));
}

queue_actor spawn_padding_fifo_queue(caf::actor_system& sys, int32_t capacity,
                                     std::vector<dtype> dtypes,
                                     std::vector<tensor_shape> shapes, std::string name) {
  return spawn_queue(
      sys, queue_kind::padding_fifo,
      options_of(capacity, std::move(dtypes), std::move(shapes), std::move(name)));
}

queue_actor spawn_priority_queue(caf::actor_system& sys, int32_t capacity,
                                 std::vector<dtype> dtypes,
                                 std::vector<tensor_shape> shapes, std::string name) {
  return spawn_queue(
      sys, queue_kind::priority,
      options_of(capacity, std::move(dtypes), std::move(shapes), std::move(name)));
}


} // namespace quern
