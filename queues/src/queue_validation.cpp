// The checks of queue options and elements that every kind shares, asking the
// kind (kinds/kind.hpp) for the rest: TensorFlow's texts and their order.

#include "quern/queue.hpp"

#include <atomic>
#include <limits>

#include "quern/error.hpp"

#include "kinds/kind.hpp"

namespace quern {

namespace {

// TensorFlow's process-wide counter behind `_<k>_<node name>` (C-3).
std::atomic<int64_t> resource_counter{0};

[[noreturn]] void invalid(const std::string& msg) {
  throw invalid_argument_error(msg);
}

void check_components(const queue_spec& spec, const element& e) {
  if (e.size() != spec.num_components())
    invalid("Wrong number of components in tuple. Expected " +
            std::to_string(spec.num_components()) + ", got " + std::to_string(e.size()));
  for (size_t i = 0; i < e.size(); ++i)
    if (e.components[i].type() != spec.dtypes[i])
      invalid("Type mismatch in tuple component " + std::to_string(i) + ". Expected " +
              dtype_name(spec.dtypes[i]) + ", got " + dtype_name(e.components[i].type()));
}

} // namespace

queue_spec make_queue_spec(queue_kind kind, queue_options opts) {
  const auto& rules = detail::rules_of(kind);
  queue_spec spec;
  spec.kind = kind;
  auto node = opts.name.empty() ? std::string(rules.default_node_name()) : opts.name;
  if (!opts.shared_name.empty() && opts.shared_name.front() == '_')
    invalid("shared_name cannot start with '_':" + opts.shared_name);
  if (opts.capacity == 0 || opts.capacity < -1)
    // TensorFlow accepts these; 0 then blocks every enqueue forever and
    // other negatives mean "unbounded". quern refuses both: -1 is the one
    // spelling of unbounded.
    invalid("capacity must be positive, or -1 for unbounded, but is " +
            std::to_string(opts.capacity));
  spec.capacity = opts.capacity < 0 ? std::numeric_limits<int32_t>::max() : opts.capacity;
  rules.add_implicit_components(opts);
  if (!opts.shared_name.empty())
    spec.resource_name = opts.shared_name;
  else
    spec.resource_name = "_" + std::to_string(resource_counter++) + "_" + node;
  if (opts.dtypes.empty())
    invalid("Empty component types for queue " + spec.resource_name);
  rules.check_shapes(opts);
  if (!opts.names.empty() && opts.names.size() != opts.dtypes.size())
    throw argument_error("List of names must have the same length as the list of dtypes");
  rules.check_options(opts, spec.capacity);
  spec.dtypes = std::move(opts.dtypes);
  spec.shapes = std::move(opts.shapes);
  spec.names = std::move(opts.names);
  spec.min_after_dequeue = opts.min_after_dequeue;
  spec.seed = opts.seed;
  spec.seed2 = opts.seed2;
  return spec;
}

void validate_enqueue(const queue_spec& spec, const element& e) {
  check_components(spec, e);
  if (!spec.shapes_specified()) {
    detail::rules_of(spec.kind).check_unshaped_element(e);
    return;
  }
  for (size_t i = 0; i < e.size(); ++i)
    if (!spec.shapes[i].compatible_with(e.components[i].shape()))
      invalid("Shape mismatch in tuple component " + std::to_string(i) + ". Expected " +
              spec.shapes[i].to_string() + ", got " +
              e.components[i].shape().to_string());
}

int64_t validate_enqueue_many(const queue_spec& spec, const element& batch) {
  check_components(spec, batch);
  for (size_t i = 0; i < batch.size(); ++i)
    if (batch.components[i].shape().rank() == 0)
      invalid("enqueue_many needs a leading batch dimension in every component, but "
              "component " +
              std::to_string(i) + " is a scalar");
  auto b = batch.components[0].dim0();
  if (spec.shapes_specified()) {
    for (size_t i = 0; i < batch.size(); ++i) {
      auto expected = spec.shapes[i].with_leading(b);
      if (!expected.compatible_with(batch.components[i].shape()))
        invalid("Shape mismatch in tuple component " + std::to_string(i) + ". Expected " +
                expected.to_string() + ", got " +
                batch.components[i].shape().to_string());
    }
    return b;
  }
  for (size_t i = 1; i < batch.size(); ++i)
    if (batch.components[i].dim0() != b)
      invalid(
          "All input tensors must have the same size in the 0th dimension. Component " +
          std::to_string(i) + " has " + std::to_string(batch.components[i].dim0()) +
          ", and should have " + std::to_string(b));
  detail::rules_of(spec.kind).check_unshaped_batch(batch);
  return b;
}

void detail::check_shared_queue(const queue_spec& have, const queue_spec& want) {
  // The existing queue checks the requesting op (TF: FIFOQueue::MatchesNodeDef
  // says "Expected FIFOQueue, found <requested op>").
  if (have.kind != want.kind)
    invalid(std::string("Expected ") + queue_kind_name(have.kind) + ", found " +
            queue_kind_name(want.kind));
  detail::rules_of(have.kind).check_shared(have, want);
}

} // namespace quern
