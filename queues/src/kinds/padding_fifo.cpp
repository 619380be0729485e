// PaddingFIFOQueue (Q-60..Q-65): a FIFOQueue whose shapes may leave
// dimensions unknown; dequeue_many pads each batch to its largest row (rows.cpp,
// make_batch).

#include "kind.hpp"

#include "quern/error.hpp"

namespace quern::detail {

namespace {

// two partial shapes are compatible when they have the same rank and
// every dimension known in both is equal.
bool compatible(const tensor_shape& a, const tensor_shape& b) {
  if (!a.known_rank() || !b.known_rank())
    return true;
  if (a.rank() != b.rank())
    return false;
  for (size_t d = 0; d < a.rank(); ++d)
    if (a.dim(d) >= 0 && b.dim(d) >= 0 && a.dim(d) != b.dim(d))
      return false;
  return true;
}

class padding_fifo : public queue_kind_rules {
public:
  const char* name() const override { return "PaddingFIFOQueue"; }
  const char* default_node_name() const override { return "padding_fifo_queue"; }
  // It inherits FIFOQueue's enqueue and single dequeue, and says so.
  const char* enqueue_class() const override { return "FIFOQueue"; }

  void check_shapes(const queue_options& opts) const override {
    // a shape for every component, each of known rank.
    if (opts.shapes.size() != opts.dtypes.size())
      throw invalid_argument_error("Shapes must be provided for all components, but "
                                   "received " +
                                   std::to_string(opts.dtypes.size()) + " dtypes and " +
                                   std::to_string(opts.shapes.size()) + " shapes.");
    for (size_t i = 0; i < opts.shapes.size(); ++i)
      if (!opts.shapes[i].known_rank())
        throw invalid_argument_error("PaddingFIFOQueue needs a known rank for every "
                                     "component, but component " +
                                     std::to_string(i) + " has shape <unknown>");
  }

  std::unique_ptr<queue_storage> make_storage(const queue_spec&) const override {
    return make_fifo_storage();
  }

  void check_shared(const queue_spec& have, const queue_spec& want) const override {
    check_shared_common(have, want, compatible);
  }
};

} // namespace

const queue_kind_rules& padding_fifo_rules() {
  static const padding_fifo rules;
  return rules;
}

} // namespace quern::detail
