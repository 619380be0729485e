#pragma once

// What a queue is made of: queue_kind (TensorFlow's four queue classes), queue_options
// (the arguments of spawn_queue(), docs/semantics.md Q-1) and queue_spec, the validated
// description a queue reports (blocking_queue::spec()). element_from_names() builds an
// element from named components. Spawning and validation: quern/queue.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "quern/dtype.hpp"
#include "quern/element.hpp"
#include "quern/tensor_shape.hpp"

namespace quern {

/// The four queue kinds of TensorFlow 1.x. What each one does lives in
/// queues/src/kinds/ (one file per kind); quern/queue.hpp names them and checks their
/// options.
enum class queue_kind : uint8_t {
  fifo = 0,
  random_shuffle = 1,
  padding_fifo = 2,
  priority = 3,
};

/// What a queue is built from: docs/semantics.md Q-1 with the op-level defaults.
struct queue_options {
  /// Negative means unbounded.
  int32_t capacity = -1;
  std::vector<dtype> dtypes;
  /// Empty: shapes unspecified (elements may differ in shape, Q-6). Otherwise
  /// one shape per component; fully defined except for PaddingFIFOQueue.
  std::vector<tensor_shape> shapes;
  /// Optional component names, one per component when given.
  std::vector<std::string> names;
  /// Node name; the queue's resource name is `_<k>_<name>` unless shared_name
  /// is set (C-3). Empty: the kind's default ("fifo_queue", ...).
  std::string name;
  std::string shared_name;
  /// RandomShuffleQueue only.
  int32_t min_after_dequeue = 0;
  int64_t seed = 0;
  int64_t seed2 = 0;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, queue_options& x) {
    return f(caf::meta::type_name("quern::queue_options"), x.capacity, x.dtypes, x.shapes,
             x.names, x.name, x.shared_name, x.min_after_dequeue, x.seed, x.seed2);
  }
};

/// A validated queue description, as a queue reports it (spec_atom).
struct queue_spec {
  queue_kind kind = queue_kind::fifo;
  /// The name used in error messages (C-3).
  std::string resource_name;
  /// Capacity after the negative -> unbounded conversion (INT32_MAX).
  int32_t capacity = 0;
  /// For PriorityQueue the implicit int64 priority is component 0 here.
  std::vector<dtype> dtypes;
  std::vector<tensor_shape> shapes;
  std::vector<std::string> names;
  int32_t min_after_dequeue = 0;
  int64_t seed = 0;
  int64_t seed2 = 0;

  bool shapes_specified() const { return !shapes.empty(); }
  size_t num_components() const { return dtypes.size(); }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, queue_spec& x) {
    return f(caf::meta::type_name("quern::queue_spec"), x.kind, x.resource_name,
             x.capacity, x.dtypes, x.shapes, x.names, x.min_after_dequeue, x.seed,
             x.seed2);
  }
};

/// Builds an element from named components, in the queue's name order.
/// Throws invalid_argument_error when the key set does not match.
element element_from_names(const queue_spec& spec,
                           const std::vector<std::pair<std::string, tensor>>& named);

} // namespace quern
