#pragma once

// quern::tensor_shape: the dimensions of a tensor, or a partial shape (-1 for an unknown
// dimension, or an unknown rank) as a queue's spec may give one (PaddingFIFOQueue,
// docs/semantics.md Q-61). Printed as TensorFlow prints shapes (C-2): `[2,3]`, `[?,2]`,
// `<unknown>`. quern::tensor_shape{3} is a vector of 3 values, tensor_shape{} a scalar.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace quern {

/// A shape, possibly partial: a dimension of -1 is unknown, and the whole
/// rank may be unknown. A tensor's own shape is always fully defined; partial
/// shapes appear in queue specifications (PaddingFIFOQueue).
class tensor_shape {
public:
  static constexpr int64_t unknown_dim = -1;

  /// A scalar: rank 0.
  tensor_shape() = default;
  tensor_shape(std::initializer_list<int64_t> dims);
  explicit tensor_shape(std::vector<int64_t> dims);

  /// A shape whose rank is unknown (prints as `<unknown>`).
  static tensor_shape unknown_rank();

  bool known_rank() const { return known_rank_; }
  size_t rank() const { return dims_.size(); }
  int64_t dim(size_t i) const { return dims_.at(i); }
  const std::vector<int64_t>& dims() const { return dims_; }

  /// Known rank and every dimension known.
  bool fully_defined() const;

  /// Product of the dimensions (1 for a scalar); requires fully_defined().
  int64_t num_elements() const;

  /// Whether a concrete shape fits this partial one: same rank, and every
  /// known dimension equal (docs/semantics.md Q-61).
  bool compatible_with(const tensor_shape& concrete) const;

  /// `[n] + this`.
  tensor_shape with_leading(int64_t n) const;
  /// This shape without its first dimension; requires rank() >= 1.
  tensor_shape without_leading() const;

  /// `[d0,d1,...]`, `[]` for a scalar, `?` for an unknown dimension,
  /// `<unknown>` for an unknown rank (docs/semantics.md C-2).
  std::string to_string() const;

  friend bool operator==(const tensor_shape& a, const tensor_shape& b) {
    return a.known_rank_ == b.known_rank_ && a.dims_ == b.dims_;
  }
  friend bool operator!=(const tensor_shape& a, const tensor_shape& b) {
    return !(a == b);
  }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, tensor_shape& x) {
    return f(x.known_rank_, x.dims_);
  }

private:
  std::vector<int64_t> dims_;
  bool known_rank_ = true;
};

std::string to_string(const tensor_shape& s);

/// `[[2,3], [4]]` style rendering of a list of shapes.
std::string to_string(const std::vector<tensor_shape>& shapes);

} // namespace quern
