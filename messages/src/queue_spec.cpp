#include "quern/queue_spec.hpp"

#include <algorithm>
#include <atomic>
#include <limits>

#include "quern/error.hpp"

namespace quern {

const char* queue_kind_name(queue_kind k) {
  switch (k) {
  case queue_kind::fifo:
    return "FIFOQueue";
  case queue_kind::random_shuffle:
    return "RandomShuffleQueue";
  case queue_kind::padding_fifo:
    return "PaddingFIFOQueue";
  case queue_kind::priority:
    return "PriorityQueue";
  }
  return "Queue";
}

namespace {

const char* default_node_name(queue_kind k) {
  switch (k) {
  case queue_kind::fifo:
    return "fifo_queue";
  case queue_kind::random_shuffle:
    return "random_shuffle_queue";
  case queue_kind::padding_fifo:
    return "padding_fifo_queue";
  case queue_kind::priority:
    return "priority_queue";
  }
  return "queue";
}

// TensorFlow's process-wide counter behind `_<k>_<node name>` (C-3).
std::atomic<int64_t> resource_counter{0};

std::string dtype_list(const std::vector<dtype>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (i > 0)
      s += ", ";
    s += dtype_name(ts[i]);
  }
  return s;
}

[[noreturn]] void invalid(const std::string& msg) {
  throw invalid_argument_error(msg);
}

} // namespace

queue_spec make_queue_spec(queue_kind kind, queue_options opts) {
  queue_spec spec;
  spec.kind = kind;
  auto node = opts.name.empty() ? std::string(default_node_name(kind)) : opts.name;
  if (!opts.shared_name.empty() && opts.shared_name.front() == '_')
    invalid("shared_name cannot start with '_':" + opts.shared_name);
  if (opts.capacity == 0 || opts.capacity < -1)
    // TensorFlow accepts these; 0 then blocks every enqueue forever and
    // other negatives mean "unbounded". quern refuses both: -1 is the one
    // spelling of unbounded.
    invalid("capacity must be positive, or -1 for unbounded, but is " +
            std::to_string(opts.capacity));
  spec.capacity = opts.capacity < 0 ? std::numeric_limits<int32_t>::max() : opts.capacity;
  if (kind == queue_kind::priority) {
    // The priority is an implicit int64 scalar component 0.
    opts.dtypes.insert(opts.dtypes.begin(), dtype::int64);
    if (!opts.shapes.empty())
      opts.shapes.insert(opts.shapes.begin(), tensor_shape{});
  }
  if (!opts.shared_name.empty())
    spec.resource_name = opts.shared_name;
  else
    spec.resource_name = "_" + std::to_string(resource_counter++) + "_" + node;
  if (opts.dtypes.empty())
    invalid("Empty component types for queue " + spec.resource_name);
  if (!opts.shapes.empty() && opts.shapes.size() != opts.dtypes.size()) {
    if (kind == queue_kind::padding_fifo)
      invalid("Shapes must be provided for all components, but received " +
              std::to_string(opts.dtypes.size()) + " dtypes and " +
              std::to_string(opts.shapes.size()) + " shapes.");
    invalid("Different number of component types.  Types: " + dtype_list(opts.dtypes) +
            ", Shapes: " + to_string(opts.shapes));
  }
  if (kind == queue_kind::padding_fifo) {
    if (opts.shapes.empty())
      invalid("Shapes must be provided for all components, but received " +
              std::to_string(opts.dtypes.size()) + " dtypes and 0 shapes.");
    for (size_t i = 0; i < opts.shapes.size(); ++i)
      if (!opts.shapes[i].known_rank())
        invalid(
            "PaddingFIFOQueue needs a known rank for every component, but component " +
            std::to_string(i) + " has shape <unknown>");
  } else {
    for (auto& s : opts.shapes)
      if (!s.fully_defined())
        throw argument_error("All shapes must be fully defined: " +
                             to_string(opts.shapes));
  }
  if (!opts.names.empty()) {
    auto expected = opts.dtypes.size() - (kind == queue_kind::priority ? 1 : 0);
    if (opts.names.size() != expected)
      throw argument_error(
          "List of names must have the same length as the list of dtypes");
    if (kind == queue_kind::priority)
      opts.names.insert(opts.names.begin(), "priority");
  }
  if (kind == queue_kind::random_shuffle) {
    if (opts.min_after_dequeue < 0)
      invalid("min_after_dequeue " + std::to_string(opts.min_after_dequeue) +
              " must be >= 0");
    if (opts.min_after_dequeue >= spec.capacity)
      invalid("min_after_dequeue " + std::to_string(opts.min_after_dequeue) +
              " must be < capacity " + std::to_string(spec.capacity));
  }
  spec.dtypes = std::move(opts.dtypes);
  spec.shapes = std::move(opts.shapes);
  spec.names = std::move(opts.names);
  spec.min_after_dequeue = opts.min_after_dequeue;
  spec.seed = opts.seed;
  spec.seed2 = opts.seed2;
  return spec;
}

namespace {

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

void validate_enqueue(const queue_spec& spec, const element& e) {
  check_components(spec, e);
  if (spec.shapes_specified()) {
    for (size_t i = 0; i < e.size(); ++i)
      if (!spec.shapes[i].compatible_with(e.components[i].shape()))
        invalid("Shape mismatch in tuple component " + std::to_string(i) + ". Expected " +
                spec.shapes[i].to_string() + ", got " +
                e.components[i].shape().to_string());
  } else if (spec.kind == queue_kind::priority && e.components[0].shape().rank() != 0) {
    invalid("Expected the priority element to be a scalar, but received shape: " +
            e.components[0].shape().to_string());
  }
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
  } else {
    for (size_t i = 1; i < batch.size(); ++i)
      if (batch.components[i].dim0() != b)
        invalid(
            "All input tensors must have the same size in the 0th dimension. Component " +
            std::to_string(i) + " has " + std::to_string(batch.components[i].dim0()) +
            ", and should have " + std::to_string(b));
    if (spec.kind == queue_kind::priority && batch.components[0].shape().rank() != 1)
      invalid("Expected the priority element to be a vector, but received shape: " +
              batch.components[0].shape().to_string());
  }
  return b;
}

element element_from_names(const queue_spec& spec,
                           const std::vector<std::pair<std::string, tensor>>& named) {
  if (spec.names.empty())
    invalid("Queue must have names to enqueue a dictionary");
  std::vector<std::string> keys;
  for (auto& kv : named)
    keys.push_back(kv.first);
  auto sorted_keys = keys;
  std::sort(sorted_keys.begin(), sorted_keys.end());
  auto sorted_names = spec.names;
  std::sort(sorted_names.begin(), sorted_names.end());
  if (sorted_keys != sorted_names) {
    auto join = [](const std::vector<std::string>& v) {
      std::string s = "(";
      for (size_t i = 0; i < v.size(); ++i)
        s += (i > 0 ? ", '" : "'") + v[i] + "'";
      return s + ")";
    };
    invalid("Keys in dictionary to enqueue do not match names of Queue.  Dictionary: " +
            join(sorted_keys) + ", Queue: " + join(sorted_names));
  }
  element e;
  for (auto& n : spec.names)
    for (auto& kv : named)
      if (kv.first == n) {
        e.components.push_back(kv.second);
        break;
      }
  return e;
}

} // namespace quern
