#pragma once

// quern::tensor: a dtype, a fully defined shape and immutable values shared between
// copies, so that passing a tensor between actors copies no values; rows, and stacks of
// consecutive rows, are views. Made with scalar(), vector(), from_values() or build()
// (in place, for hot paths); read with values<T>() or scalar_value<T>():
//   auto t = quern::tensor::from_values<float>({2, 3}, {1, 2, 3, 4, 5, 6});
//   float x = t.values<float>()[4];  // 5
// Across processes a tensor travels as raw bytes (detail::tensor_wire).

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/detail/type_traits.hpp>
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/none.hpp>

#include "quern/detail/byte_pool.hpp"
#include "quern/dtype.hpp"
#include "quern/error.hpp"
#include "quern/tensor_shape.hpp"

namespace caf::detail {
/// CAF writes a byte_vector as one block of bytes (as a std::vector of
/// bytes, the same bytes on the wire), not byte by byte. (quern loads tensor
/// bytes through a std::string, see tensor_wire.)
template <>
struct is_byte_sequence<quern::detail::byte_vector> : std::true_type {};
} // namespace caf::detail

namespace quern {

/// A read-only view of a tensor's values (C++17 has no std::span).
template <class T>
class array_view {
public:
  array_view(const T* data, size_t size) : data_(data), size_(size) {}
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

private:
  const T* data_;
  size_t size_;
};

namespace detail {

/// Folds `value` into `seed` (boost::hash_combine's step with a 64-bit
/// constant): parts in another order hash differently. For digest().
inline void hash_mix(uint64_t& seed, uint64_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

/// Storage shared by every tensor that views it. Numeric values live in
/// `bytes` (little-endian host layout), strings in `strings`.
struct tensor_buffer {
  byte_vector bytes;
  std::vector<std::string> strings;
};

/// What a tensor looks like on the wire (CAF serialization). Its bytes come
/// from the pool and become the decoded tensor's buffer as they are.
struct tensor_wire {
  uint8_t type = static_cast<uint8_t>(dtype::float32);
  tensor_shape shape;
  byte_vector bytes;
  std::vector<std::string> strings;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, tensor_wire& x) {
    if constexpr (Inspector::reads_state) {
      return f(x.type, x.shape, x.bytes, x.strings);
    } else {
      // Loaded through a std::string, which has the same bytes on the wire:
      // CAF 0.17 resizes a byte vector to the length a message claims
      // before it checks that the message holds that many bytes (a 60-byte
      // message made it allocate 4 GiB); a string's length is checked first.
      std::string raw;
      auto load = [&]() -> caf::error {
        // From pointers of the vector's own type, so that it is one memcpy
        // (from char iterators GCC 12 copies byte by byte: it was a quarter
        // of a queue host's CPU).
        auto first = reinterpret_cast<const unsigned char*>(raw.data());
        x.bytes.assign(first, first + raw.size());
        return caf::none;
      };
      return f(x.type, x.shape, raw, x.strings, caf::meta::load_callback(load));
    }
  }
};

} // namespace detail

/// Storage that tensors share (tensor::view_of): numeric values in `bytes`,
/// strings in `strings`.
using tensor_buffer = detail::tensor_buffer;

/// A dtype, a fully defined shape and an immutable buffer shared between
/// copies: copying a tensor (or passing it between actors) copies no values.
/// Numeric scalars are stored inline and need no allocation at all. Slicing
/// rows (`row`, `rows`) gives views of the same buffer.
class tensor {
public:
  /// A float32 scalar 0 (CAF needs default-constructible message types).
  tensor();

  template <class T>
  static tensor scalar(T value);
  static tensor scalar(const char* value) { return scalar(std::string(value)); }

  /// A rank-1 tensor holding `values`.
  template <class T>
  static tensor vector(std::vector<T> values);

  /// A tensor of `shape` holding `values` in row-major order. Throws
  /// invalid_argument_error when the shape is not fully defined or the number
  /// of values does not match it.
  template <class T>
  static tensor from_values(tensor_shape shape, std::vector<T> values);

  /// A numeric tensor of `shape` whose values `fill` writes in place:
  /// `fill(T* values, size_t count)` gets the row-major values (zero when it
  /// starts) of a buffer no one else sees yet. No intermediate vector and no
  /// copy, where from_values allocates, fills and copies: how a producer
  /// makes a batch on its hot path. Throws invalid_argument_error when the
  /// shape is not fully defined.
  template <class T, class Fill>
  static tensor build(tensor_shape shape, Fill&& fill);

  /// Zeros (false, empty strings) of the given dtype and shape.
  static tensor zeros(dtype type, const tensor_shape& shape);

  /// A tensor of `type` and `shape` viewing values of `buffer` from value
  /// `offset` on: numeric values in `buffer->bytes` (the offset counts
  /// values of `type`, and the bytes must start at a multiple of its size),
  /// strings in `buffer->strings`. Several tensors may view one buffer: the
  /// components of a batch built in one allocation, as RandomShuffleQueue's
  /// storage builds them. The buffer must not change once shared. Throws
  /// invalid_argument_error when the shape is not fully defined, the offset
  /// is negative or the view does not fit in the buffer.
  static tensor view_of(dtype type, tensor_shape shape,
                        std::shared_ptr<const tensor_buffer> buffer, int64_t offset);

  dtype type() const { return type_; }
  const tensor_shape& shape() const { return shape_; }
  int64_t num_elements() const { return shape_.num_elements(); }
  /// Size of the leading dimension; throws invalid_argument_error for a scalar.
  int64_t dim0() const;

  /// The single value of a scalar (or one-element) tensor. Throws
  /// invalid_argument_error on a dtype mismatch or more than one value.
  template <class T>
  T scalar_value() const;

  /// All values, row-major. Throws invalid_argument_error on a dtype mismatch.
  template <class T>
  array_view<T> values() const;

  template <class T>
  std::vector<T> to_vector() const {
    return values<T>().to_vector();
  }

  /// Row `i` along the leading dimension, as a view (no copy).
  tensor row(int64_t i) const;
  /// Rows [begin, begin+count) as a view (no copy).
  tensor rows(int64_t begin, int64_t count) const;

  /// Stacks tensors of one dtype and shape S into a tensor of shape [n]+S.
  /// When the rows are consecutive views of one buffer the result is a view
  /// too; otherwise values are copied once. Throws invalid_argument_error on
  /// mixed dtypes or shapes. `rows` must not be empty; give `row_shape` and
  /// `type` through stack_or_empty for the n == 0 case.
  static tensor stack(const std::vector<tensor>& rows);
  static tensor stack_or_empty(const std::vector<tensor>& rows, dtype type,
                               const tensor_shape& row_shape);

  /// One piece of a concatenation along the leading dimension: a tensor
  /// with a leading dimension (`batched`), or a single row without one.
  struct rows_part {
    const tensor* t;
    bool batched;
  };

  /// Concatenates parts of one dtype and row shape into [n]+row_shape. One
  /// batched part, or consecutive views of one buffer, give a view (no
  /// copy); otherwise values are copied once. Throws invalid_argument_error
  /// on mixed dtypes or shapes.
  static tensor concat_rows(const std::vector<rows_part>& parts, dtype type,
                            const tensor_shape& row_shape);

  /// Copies this tensor into the top-left corner of a zero tensor of
  /// `target` shape (same rank, every dimension >= ours). Used by padding.
  tensor padded_to(const tensor_shape& target) const;

  /// The values of a numeric or bool tensor as bytes, row-major in the
  /// host's layout: num_elements() * dtype_size(type()) of them (a copy
  /// routine that works on any dtype reads them). Throws
  /// invalid_argument_error for a string tensor.
  const unsigned char* bytes() const;

  /// Whether both tensors view the same buffer (for tests of zero-copy paths).
  bool shares_buffer_with(const tensor& other) const;

  /// A hash of dtype, shape and values: equal tensors have equal digests,
  /// and views of one buffer hash as the values they show. For telling
  /// contents apart within one process (it is std::hash's, which differs
  /// between builds): never stored or sent.
  uint64_t digest() const;

  /// `int64[2,3]{1, 2, 3, 4, 5, 6}`; at most `max_values` values are shown.
  std::string to_string(size_t max_values = 8) const;

  friend bool operator==(const tensor& a, const tensor& b);
  friend bool operator!=(const tensor& a, const tensor& b) { return !(a == b); }

  detail::tensor_wire to_wire() const;
  /// Validates a wire form; throws invalid_argument_error on inconsistency.
  static tensor from_wire(detail::tensor_wire w);

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, tensor& x) {
    if constexpr (Inspector::reads_state) {
      auto w = x.to_wire();
      return f(caf::meta::type_name("quern::tensor"), w);
    } else {
      detail::tensor_wire w;
      auto load = [&]() -> caf::error {
        try {
          x = tensor::from_wire(std::move(w));
          return caf::none;
        } catch (const op_error& e) {
          return e.to_error();
        }
      };
      return f(caf::meta::type_name("quern::tensor"), w, caf::meta::load_callback(load));
    }
  }

private:
  tensor(dtype type, tensor_shape shape, std::shared_ptr<const detail::tensor_buffer> buf,
         int64_t offset);

  static void check_fully_defined(const tensor_shape& shape);
  static void check_count(const tensor_shape& shape, size_t count);
  void check_type(dtype requested) const;
  const unsigned char* raw() const;
  int64_t row_elements() const;
  tensor reshaped_row() const;

  dtype type_ = dtype::float32;
  tensor_shape shape_;
  std::shared_ptr<const detail::tensor_buffer> buf_; // null: numeric scalar stored inline
  int64_t offset_ = 0;                               // in values, into buf_
  alignas(8) unsigned char inline_[8] = {};
};

std::string to_string(const tensor& t);

// -- template implementations -------------------------------------------------

template <class T>
tensor tensor::scalar(T value) {
  using V = std::decay_t<T>;
  if constexpr (std::is_same_v<V, std::string>) {
    auto buf = std::make_shared<detail::tensor_buffer>();
    buf->strings.push_back(std::move(value));
    return tensor(dtype::string, tensor_shape{}, std::move(buf), 0);
  } else {
    static_assert(sizeof(V) <= 8, "unsupported scalar type");
    tensor t;
    t.type_ = dtype_of_v<V>;
    std::memcpy(t.inline_, &value, sizeof(V));
    return t;
  }
}

template <class T>
tensor tensor::vector(std::vector<T> values) {
  auto n = static_cast<int64_t>(values.size());
  return from_values(tensor_shape{n}, std::move(values));
}

template <class T>
tensor tensor::from_values(tensor_shape shape, std::vector<T> values) {
  check_count(shape, values.size());
  auto buf = std::make_shared<detail::tensor_buffer>();
  if constexpr (std::is_same_v<T, std::string>) {
    buf->strings = std::move(values);
  } else if constexpr (std::is_same_v<T, bool>) {
    buf->bytes.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      buf->bytes[i] = values[i] ? 1 : 0;
  } else {
    auto first = reinterpret_cast<const unsigned char*>(values.data());
    buf->bytes.assign(first, first + values.size() * sizeof(T)); // one memcpy
  }
  return tensor(dtype_of_v<T>, std::move(shape), std::move(buf), 0);
}

template <class T, class Fill>
tensor tensor::build(tensor_shape shape, Fill&& fill) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>,
                "tensor::build writes numeric values; strings and bools: from_values");
  check_fully_defined(shape);
  auto n = static_cast<size_t>(shape.num_elements());
  if (shape.rank() == 0) { // numeric scalars live inline
    T value{};
    fill(&value, size_t{1});
    return scalar(value);
  }
  auto buf = std::make_shared<detail::tensor_buffer>();
  buf->bytes.resize(n * sizeof(T));
  fill(reinterpret_cast<T*>(buf->bytes.data()), n);
  return tensor(dtype_of_v<T>, std::move(shape), std::move(buf), 0);
}

template <class T>
array_view<T> tensor::values() const {
  check_type(dtype_of_v<T>);
  auto n = static_cast<size_t>(num_elements());
  if constexpr (std::is_same_v<T, std::string>) {
    return array_view<T>(buf_->strings.data() + offset_, n);
  } else {
    return array_view<T>(reinterpret_cast<const T*>(raw()), n);
  }
}

template <class T>
T tensor::scalar_value() const {
  auto v = values<T>();
  if (v.size() != 1)
    throw invalid_argument_error("expected a scalar, got a tensor of shape " +
                                 shape_.to_string());
  return v[0];
}

} // namespace quern
