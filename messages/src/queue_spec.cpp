#include "quern/queue_spec.hpp"

#include <algorithm>

#include "quern/error.hpp"

namespace quern {

namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw invalid_argument_error(msg);
}

} // namespace

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
