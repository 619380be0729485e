#pragma once

// What differs between TensorFlow's queue kinds, behind one interface. Each
// kind is one file of this folder (fifo.cpp, random_shuffle.cpp,
// padding_fifo.cpp, priority.cpp); kind.cpp registers them. The queue's core,
// its actor and the validation of options and elements ask the kind and never
// test which one it is (docs/architecture.md, "Adding a queue kind").

#include <cstddef>
#include <memory>
#include <string>

#include "quern/element.hpp"
#include "quern/queue_spec.hpp"
#include "quern/queue_state.hpp"

#include "../rows.hpp"

namespace quern::detail {

/// Where the elements of a queue live.
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

  // -- checkpoints (queue_state.hpp) ----------------------------------------------

  /// The rows stored, in the storage's own order: pushed back in this order
  /// into an empty storage of the kind, they rebuild the same storage.
  virtual row_list copy_rows() const = 0;
  /// The kind's random generator (empty: the kind has none).
  virtual generator_state generator() const { return {}; }
  /// Sets the generator from generator()'s state; throws data_loss_error
  /// when its text is not one.
  virtual void restore_generator(const generator_state&) {}
};

/// One queue kind: its names, the checks of its options and elements, its
/// storage, and how its dequeues behave.
class queue_kind_rules {
public:
  virtual ~queue_kind_rules() = default;

  // -- names --------------------------------------------------------------------

  /// TensorFlow's class name: "FIFOQueue".
  virtual const char* name() const = 0;
  /// The node name when the user gives none (C-3): "fifo_queue".
  virtual const char* default_node_name() const = 0;
  /// The class that speaks in enqueue and single-dequeue messages:
  /// a kind that inherits FIFOQueue's enqueue says FIFOQueue.
  virtual const char* enqueue_class() const { return name(); }
  /// The error of dequeue_many/up_to on a queue without shapes.
  virtual std::string unshaped_dequeue_many_error() const;

  // -- options (make_queue_spec) ------------------------------------------------

  /// Adds the components the kind implies before the user's (PriorityQueue's
  /// int64 priority, Q-70) to dtypes, shapes and names given.
  virtual void add_implicit_components(queue_options&) const {}
  /// Checks the shapes given against the dtypes.
  virtual void check_shapes(const queue_options& opts) const;
  /// The kind's own options; `capacity` is already resolved.
  virtual void check_options(const queue_options&, int32_t /*capacity*/) const {}

  // -- elements (validate_enqueue) ----------------------------------------------

  /// An element to enqueue when the queue has no shapes.
  virtual void check_unshaped_element(const element&) const {}
  /// A batch to enqueue_many when the queue has no shapes.
  virtual void check_unshaped_batch(const element&) const {}

  // -- storage and dequeues -----------------------------------------------------

  virtual std::unique_ptr<queue_storage> make_storage(const queue_spec& spec) const = 0;
  /// Elements a dequeue may take now out of `stored`.
  virtual size_t available(size_t stored, bool /*closed*/, const queue_spec&) const {
    return stored;
  }
  /// Whether dequeue_many takes rows as they arrive or waits until
  /// all n are there.
  virtual bool incremental_batches() const { return true; }

  // -- sharing (Q-90) -----------------------------------------------------------

  /// Throws invalid_argument_error when a queue `have` cannot be shared by a
  /// request `want` of the same kind.
  virtual void check_shared(const queue_spec& have, const queue_spec& want) const;

protected:
  /// The checks every kind shares; `shapes_match` compares one component.
  static void check_shared_common(const queue_spec& have, const queue_spec& want,
                                  bool (*shapes_match)(const tensor_shape&,
                                                       const tensor_shape&));
};

/// The rules of `kind` (kind.cpp); null for a value that is no kind.
const queue_kind_rules* find_rules(queue_kind kind);
/// The same; throws invalid_argument_error for a value that is no kind.
const queue_kind_rules& rules_of(queue_kind kind);

// The kinds, one per file; registered in kind.cpp.
const queue_kind_rules& fifo_rules();
const queue_kind_rules& random_shuffle_rules();
const queue_kind_rules& padding_fifo_rules();
const queue_kind_rules& priority_rules();

/// Throws invalid_argument_error when a queue `have` cannot be shared by a
/// request `want`: another kind, or what the kind checks.
void check_shared_queue(const queue_spec& have, const queue_spec& want);

/// FIFOQueue's storage, shared by the kinds that keep FIFO order.
std::unique_ptr<queue_storage> make_fifo_storage();

} // namespace quern::detail
