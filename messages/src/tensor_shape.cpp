#include "quern/tensor_shape.hpp"

#include "quern/error.hpp"

namespace quern {

tensor_shape::tensor_shape(std::initializer_list<int64_t> dims) : dims_(dims) {}

tensor_shape::tensor_shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

tensor_shape tensor_shape::unknown_rank() {
  tensor_shape s;
  s.known_rank_ = false;
  return s;
}

bool tensor_shape::fully_defined() const {
  if (!known_rank_)
    return false;
  for (auto d : dims_)
    if (d < 0)
      return false;
  return true;
}

int64_t tensor_shape::num_elements() const {
  if (!fully_defined())
    throw invalid_argument_error("shape " + to_string() + " is not fully defined");
  int64_t n = 1;
  for (auto d : dims_)
    n *= d;
  return n;
}

bool tensor_shape::compatible_with(const tensor_shape& concrete) const {
  if (!known_rank_)
    return true;
  if (!concrete.known_rank_ || concrete.rank() != rank())
    return false;
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i] >= 0 && dims_[i] != concrete.dims_[i])
      return false;
  return true;
}

tensor_shape tensor_shape::with_leading(int64_t n) const {
  if (!known_rank_)
    return *this;
  std::vector<int64_t> dims;
  dims.reserve(dims_.size() + 1);
  dims.push_back(n);
  dims.insert(dims.end(), dims_.begin(), dims_.end());
  return tensor_shape(std::move(dims));
}

tensor_shape tensor_shape::without_leading() const {
  if (!known_rank_)
    return *this;
  if (dims_.empty())
    throw invalid_argument_error("a scalar has no leading dimension");
  return tensor_shape(std::vector<int64_t>(dims_.begin() + 1, dims_.end()));
}

std::string tensor_shape::to_string() const {
  if (!known_rank_)
    return "<unknown>";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i > 0)
      s += ',';
    s += dims_[i] < 0 ? std::string("?") : std::to_string(dims_[i]);
  }
  s += ']';
  return s;
}

std::string to_string(const tensor_shape& s) {
  return s.to_string();
}

std::string to_string(const std::vector<tensor_shape>& shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i > 0)
      s += ", ";
    s += shapes[i].to_string();
  }
  s += ']';
  return s;
}

} // namespace quern
