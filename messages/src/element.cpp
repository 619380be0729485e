#include "quern/element.hpp"

namespace quern {

int64_t element::batch_size() const {
  if (components.empty())
    throw invalid_argument_error("an element with no components has no batch size");
  return components[0].dim0();
}

uint64_t element::digest() const {
  uint64_t d = components.size();
  for (const auto& c : components)
    detail::hash_mix(d, c.digest());
  return d;
}

element element::row(int64_t i) const {
  element r;
  r.components.reserve(components.size());
  for (auto& c : components)
    r.components.push_back(c.row(i));
  return r;
}

element stack_elements(const std::vector<element>& rows) {
  if (rows.empty())
    throw invalid_argument_error("cannot stack zero elements without a signature");
  auto n = rows.front().size();
  element out;
  out.components.reserve(n);
  std::vector<tensor> column;
  column.reserve(rows.size());
  for (size_t c = 0; c < n; ++c) {
    column.clear();
    for (size_t r = 0; r < rows.size(); ++r) {
      if (rows[r].size() != n)
        throw invalid_argument_error("cannot stack: element " + std::to_string(r) +
                                     " has " + std::to_string(rows[r].size()) +
                                     " components, expected " + std::to_string(n));
      column.push_back(rows[r].components[c]);
    }
    out.components.push_back(tensor::stack(column));
  }
  return out;
}

std::string to_string(const element& e) {
  std::string s = "(";
  for (size_t i = 0; i < e.components.size(); ++i) {
    if (i > 0)
      s += ", ";
    s += e.components[i].to_string();
  }
  s += ')';
  return s;
}

} // namespace quern
