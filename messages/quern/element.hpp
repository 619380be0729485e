#pragma once

// quern::element, one tuple of a queue (docs/semantics.md C-4): a tensor per component.
// A batch is an element whose components share a leading dimension: row(i) is one of
// its rows (a view), stack_elements() makes one from rows. Every queue operation and
// client takes and gives elements:
//   q.enqueue({quern::tensor::scalar(1.5f), quern::tensor::scalar("a")});

#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "quern/tensor.hpp"

namespace quern {

/// One tuple of a queue: a tensor per component (docs/semantics.md C-4).
/// A *batch* is an element whose components all carry a leading batch
/// dimension of the same size (enqueue_many, dequeue_many).
struct element {
  /// A std::vector whose memory is recycled between threads: a row is made
  /// by one thread and freed by another (detail/byte_pool.hpp).
  using component_vector = std::vector<tensor, detail::recycling_allocator<tensor>>;
  component_vector components;

  element() = default;
  element(std::initializer_list<tensor> cs) : components(cs) {}
  explicit element(component_vector cs) : components(std::move(cs)) {}
  explicit element(std::vector<tensor> cs)
      : components(std::make_move_iterator(cs.begin()),
                   std::make_move_iterator(cs.end())) {}

  size_t size() const { return components.size(); }
  const tensor& operator[](size_t i) const { return components.at(i); }

  /// Leading dimension of component 0 (the batch size of a batch). Throws
  /// invalid_argument_error when there are no components or it is a scalar.
  int64_t batch_size() const;

  /// Row `i` of every component: element `i` of a batch (views, no copy).
  element row(int64_t i) const;

  /// Every component's tensor::digest, combined (same caveats: within one
  /// process only).
  uint64_t digest() const;

  friend bool operator==(const element& a, const element& b) {
    return a.components == b.components;
  }
  friend bool operator!=(const element& a, const element& b) { return !(a == b); }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, element& x) {
    return f(caf::meta::type_name("quern::element"), x.components);
  }
};

/// Stacks elements (all of one signature) into a batch: component i gets
/// shape [n] + shape_i. Throws invalid_argument_error on inconsistent rows.
element stack_elements(const std::vector<element>& rows);

/// `(int64[]{3}, string[]{"a"})`.
std::string to_string(const element& e);

} // namespace quern
