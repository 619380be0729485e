#include "kind.hpp"

#include "quern/error.hpp"

namespace quern::detail {

// The registry: one line per kind. A new kind is its value in queue_kind
// (messages/quern/queue_spec.hpp, the wire vocabulary), its file in this
// folder, and its line here.
const queue_kind_rules* find_rules(queue_kind kind) {
  switch (kind) {
  case queue_kind::fifo:
    return &fifo_rules();
  case queue_kind::random_shuffle:
    return &random_shuffle_rules();
  case queue_kind::padding_fifo:
    return &padding_fifo_rules();
  case queue_kind::priority:
    return &priority_rules();
  }
  return nullptr; // a corrupt value, e.g. a spec read from the wire
}

const queue_kind_rules& rules_of(queue_kind kind) {
  if (auto rules = find_rules(kind))
    return *rules;
  throw invalid_argument_error("unknown queue kind " +
                               std::to_string(static_cast<int>(kind)));
}

namespace {

std::string dtype_list(const std::vector<dtype>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i)
    s += (i > 0 ? ", " : "") + std::string(dtype_name(ts[i]));
  return s;
}

[[noreturn]] void invalid(const std::string& msg) {
  throw invalid_argument_error(msg);
}

} // namespace

std::string queue_kind_rules::unshaped_dequeue_many_error() const {
  return std::string(name()) +
         "'s DequeueMany and DequeueUpTo require the components to have specified "
         "shapes.";
}

void queue_kind_rules::check_shapes(const queue_options& opts) const {
  if (!opts.shapes.empty() && opts.shapes.size() != opts.dtypes.size())
    invalid("Different number of component types.  Types: " + dtype_list(opts.dtypes) +
            ", Shapes: " + to_string(opts.shapes));
  for (auto& s : opts.shapes)
    if (!s.fully_defined())
      throw argument_error("All shapes must be fully defined: " + to_string(opts.shapes));
}

void queue_kind_rules::check_shared(const queue_spec& have,
                                    const queue_spec& want) const {
  check_shared_common(
      have, want, [](const tensor_shape& a, const tensor_shape& b) { return a == b; });
}

void queue_kind_rules::check_shared_common(const queue_spec& have, const queue_spec& want,
                                           bool (*shapes_match)(const tensor_shape&,
                                                                const tensor_shape&)) {
  const auto& n = have.resource_name;
  if (have.capacity != want.capacity)
    invalid("Shared queue '" + n + "' has capacity " + std::to_string(have.capacity) +
            " but requested capacity was " + std::to_string(want.capacity));
  if (have.dtypes != want.dtypes)
    invalid("Shared queue '" + n + "' has component types " + dtype_list(have.dtypes) +
            " but requested component types were " + dtype_list(want.dtypes));
  bool shapes_ok = have.shapes.size() == want.shapes.size();
  for (size_t i = 0; shapes_ok && i < have.shapes.size(); ++i)
    shapes_ok = shapes_match(have.shapes[i], want.shapes[i]);
  if (!shapes_ok)
    invalid("Shared queue '" + n + "' has component shapes " + to_string(have.shapes) +
            " but requested component shapes were " + to_string(want.shapes));
}

} // namespace quern::detail

namespace quern {

const char* queue_kind_name(queue_kind k) {
  auto rules = detail::find_rules(k);
  return rules ? rules->name() : "Queue";
}

} // namespace quern
