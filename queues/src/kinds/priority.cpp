// PriorityQueue (Q-70..Q-74): an implicit int64 priority as component 0,
// smallest first; dequeue_many waits for all its rows.

#include "kind.hpp"

#include <algorithm>

#include "quern/error.hpp"

namespace quern::detail {

namespace {

/// Rows are picked one by one, so they are stored one by one.
class row_storage : public queue_storage {
public:
  void push(row_list& from, int64_t n) override {
    for (int64_t i = 0; i < n; ++i)
      push_row(from.pop_front());
  }
  void take(size_t n, row_list& out) override {
    for (size_t i = 0; i < n; ++i)
      out.push_back(pop());
  }
  void put_back(row_list&& rows) override { push(rows, rows.size()); }

protected:
  virtual void push_row(element e) = 0;
  virtual element pop() = 0;
};

/// PriorityQueue: smallest int64 priority (component 0) first; a
/// binary heap, so equal priorities come out in no particular order.
class priority_storage : public row_storage {
public:
  size_t size() const override { return heap_.size(); }
  /// The heap in array order: pushed back in this order, every row stays
  /// where it was (each is already below its parent).
  row_list copy_rows() const override {
    row_list out;
    for (auto& e : heap_)
      out.push_back(e);
    return out;
  }

protected:
  void push_row(element e) override {
    heap_.push_back(std::move(e));
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  element pop() override {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    auto e = std::move(heap_.back());
    heap_.pop_back();
    return e;
  }

private:
  static bool later(const element& a, const element& b) {
    return a.components[0].scalar_value<int64_t>() >
           b.components[0].scalar_value<int64_t>();
  }
  std::vector<element> heap_;
};

class priority : public queue_kind_rules {
public:
  const char* name() const override { return "PriorityQueue"; }
  const char* default_node_name() const override { return "priority_queue"; }
  std::string unshaped_dequeue_many_error() const override {
    return "PriorityQueue's DequeueMany requires the components to have specified "
           "shapes.";
  }

  void add_implicit_components(queue_options& opts) const override {
    // the priority is an int64 scalar in front of the user's components.
    opts.dtypes.insert(opts.dtypes.begin(), dtype::int64);
    if (!opts.shapes.empty())
      opts.shapes.insert(opts.shapes.begin(), tensor_shape{});
    if (!opts.names.empty())
      opts.names.insert(opts.names.begin(), "priority");
  }

  void check_unshaped_element(const element& e) const override {
    if (e.components[0].shape().rank() != 0)
      throw invalid_argument_error(
          "Expected the priority element to be a scalar, but received shape: " +
          e.components[0].shape().to_string());
  }

  void check_unshaped_batch(const element& batch) const override {
    if (batch.components[0].shape().rank() != 1)
      throw invalid_argument_error(
          "Expected the priority element to be a vector, but received shape: " +
          batch.components[0].shape().to_string());
  }

  std::unique_ptr<queue_storage> make_storage(const queue_spec&) const override {
    return std::make_unique<priority_storage>();
  }

  bool incremental_batches() const override { return false; }
};

} // namespace

const queue_kind_rules& priority_rules() {
  static const priority rules;
  return rules;
}

} // namespace quern::detail
