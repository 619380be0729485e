#include "quern/tensor.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>
#include <type_traits>

namespace quern {

tensor::tensor() = default;

tensor::tensor(dtype type, tensor_shape shape,
               std::shared_ptr<const detail::tensor_buffer> buf, int64_t offset)
    : type_(type), shape_(std::move(shape)), buf_(std::move(buf)), offset_(offset) {}

void tensor::check_fully_defined(const tensor_shape& shape) {
  if (!shape.fully_defined())
    throw invalid_argument_error("a tensor needs a fully defined shape, got " +
                                 shape.to_string());
}

void tensor::check_count(const tensor_shape& shape, size_t count) {
  check_fully_defined(shape);
  if (static_cast<size_t>(shape.num_elements()) != count)
    throw invalid_argument_error("shape " + shape.to_string() + " needs " +
                                 std::to_string(shape.num_elements()) + " values, got " +
                                 std::to_string(count));
}

void tensor::check_type(dtype requested) const {
  if (requested != type_)
    throw invalid_argument_error(std::string("Type mismatch: tensor has dtype ") +
                                 dtype_name(type_) + ", requested " +
                                 dtype_name(requested));
}

tensor tensor::view_of(dtype type, tensor_shape shape,
                       std::shared_ptr<const tensor_buffer> buffer, int64_t offset) {
  check_fully_defined(shape);
  if (!buffer)
    throw invalid_argument_error("tensor::view_of: no buffer");
  if (offset < 0)
    throw invalid_argument_error("tensor::view_of: negative offset " +
                                 std::to_string(offset));
  auto n = static_cast<uint64_t>(shape.num_elements());
  auto first = static_cast<uint64_t>(offset);
  uint64_t have = 0;
  if (type == dtype::string) {
    have = buffer->strings.size();
  } else {
    auto size = static_cast<uint64_t>(dtype_size(type));
    if (reinterpret_cast<uintptr_t>(buffer->bytes.data()) % size != 0)
      throw invalid_argument_error("tensor::view_of: the buffer's bytes are not aligned "
                                   "for " +
                                   std::string(dtype_name(type)));
    have = buffer->bytes.size() / size;
  }
  if (first > have || n > have - first)
    throw invalid_argument_error("tensor::view_of: values " + std::to_string(first) +
                                 ".." + std::to_string(first + n) + " of shape " +
                                 shape.to_string() + " do not fit in a buffer of " +
                                 std::to_string(have) + " " +
                                 std::string(dtype_name(type)) + " values");
  return tensor(type, std::move(shape), std::move(buffer), offset);
}

const unsigned char* tensor::bytes() const {
  if (type_ == dtype::string)
    throw invalid_argument_error("a string tensor has no bytes of numeric values");
  return raw();
}

const unsigned char* tensor::raw() const {
  if (!buf_)
    return inline_;
  return buf_->bytes.data() + offset_ * static_cast<int64_t>(dtype_size(type_));
}

int64_t tensor::dim0() const {
  if (shape_.rank() == 0)
    throw invalid_argument_error("a scalar has no leading dimension");
  return shape_.dim(0);
}

int64_t tensor::row_elements() const {
  return shape_.without_leading().num_elements();
}

tensor tensor::zeros(dtype type, const tensor_shape& shape) {
  check_fully_defined(shape);
  auto n = static_cast<size_t>(shape.num_elements());
  if (shape.rank() == 0 && type != dtype::string) {
    tensor t;
    t.type_ = type;
    return t;
  }
  auto buf = std::make_shared<detail::tensor_buffer>();
  if (type == dtype::string)
    buf->strings.resize(n);
  else
    buf->bytes.assign(n * dtype_size(type), 0);
  return tensor(type, shape, std::move(buf), 0);
}

tensor tensor::row(int64_t i) const {
  if (shape_.rank() == 1 && type_ != dtype::string) {
    // A row of a vector is a numeric scalar: straight to inline storage.
    auto n = dim0();
    if (i < 0 || i >= n)
      throw invalid_argument_error(
          "rows [" + std::to_string(i) + ", " + std::to_string(i + 1) +
          ") out of range for leading dimension " + std::to_string(n));
    tensor t;
    t.type_ = type_;
    auto size = dtype_size(type_);
    std::memcpy(t.inline_, raw() + i * static_cast<int64_t>(size), size);
    return t;
  }
  return rows(i, 1).reshaped_row();
}

tensor tensor::rows(int64_t begin, int64_t count) const {
  auto n = dim0();
  if (begin < 0 || count < 0 || begin + count > n)
    throw invalid_argument_error(
        "rows [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
        ") out of range for leading dimension " + std::to_string(n));
  auto dims = shape_.dims();
  dims[0] = count;
  return tensor(type_, tensor_shape(std::move(dims)), buf_,
                offset_ + begin * row_elements());
}

tensor tensor::reshaped_row() const {
  // Drops the leading dimension of a one-row view. A numeric scalar goes
  // inline so that single values never keep a large batch buffer alive.
  auto row_shape = shape_.without_leading();
  if (row_shape.rank() == 0 && type_ != dtype::string) {
    tensor t;
    t.type_ = type_;
    std::memcpy(t.inline_, raw(), dtype_size(type_));
    return t;
  }
  return tensor(type_, std::move(row_shape), buf_, offset_);
}

tensor tensor::stack(const std::vector<tensor>& rows) {
  if (rows.empty())
    throw invalid_argument_error("cannot stack zero tensors without a dtype and shape");
  return stack_or_empty(rows, rows.front().type_, rows.front().shape_);
}

tensor tensor::stack_or_empty(const std::vector<tensor>& rows, dtype type,
                              const tensor_shape& row_shape) {
  auto n = static_cast<int64_t>(rows.size());
  auto shape = row_shape.with_leading(n);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].type_ != type)
      throw invalid_argument_error(std::string("cannot stack: row ") + std::to_string(i) +
                                   " has dtype " + dtype_name(rows[i].type_) +
                                   ", expected " + dtype_name(type));
    if (rows[i].shape_ != row_shape)
      throw invalid_argument_error("cannot stack: row " + std::to_string(i) +
                                   " has shape " + rows[i].shape_.to_string() +
                                   ", expected " + row_shape.to_string());
  }
  if (n == 0)
    return zeros(type, shape);
  auto per_row = row_shape.num_elements();
  // Zero-copy when the rows are consecutive views of one buffer (rows of a
  // batch that went through a queue unchanged).
  if (rows[0].buf_) {
    bool contiguous = true;
    for (int64_t i = 1; i < n && contiguous; ++i)
      contiguous = rows[i].buf_ == rows[0].buf_ &&
                   rows[i].offset_ == rows[0].offset_ + i * per_row;
    if (contiguous)
      return tensor(type, std::move(shape), rows[0].buf_, rows[0].offset_);
  }
  auto buf = std::make_shared<detail::tensor_buffer>();
  if (type == dtype::string) {
    buf->strings.reserve(static_cast<size_t>(n * per_row));
    for (auto& r : rows) {
      auto v = r.values<std::string>();
      buf->strings.insert(buf->strings.end(), v.begin(), v.end());
    }
  } else {
    auto row_bytes = static_cast<size_t>(per_row) * dtype_size(type);
    buf->bytes.resize(row_bytes * static_cast<size_t>(n));
    auto* out = buf->bytes.data();
    for (auto& r : rows) {
      if (row_bytes > 0)
        std::memcpy(out, r.raw(), row_bytes);
      out += row_bytes;
    }
  }
  return tensor(type, std::move(shape), std::move(buf), 0);
}

tensor tensor::concat_rows(const std::vector<rows_part>& parts, dtype type,
                           const tensor_shape& row_shape) {
  int64_t n = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& t = *parts[i].t;
    auto shape = parts[i].batched ? t.shape_.without_leading() : t.shape_;
    if (t.type_ != type)
      throw invalid_argument_error(
          std::string("cannot concatenate: part ") + std::to_string(i) + " has dtype " +
          dtype_name(t.type_) + ", expected " + dtype_name(type));
    if (shape != row_shape)
      throw invalid_argument_error("cannot concatenate: part " + std::to_string(i) +
                                   " has rows of shape " + shape.to_string() +
                                   ", expected " + row_shape.to_string());
    n += parts[i].batched ? t.dim0() : 1;
  }
  if (parts.size() == 1 && parts[0].batched)
    return *parts[0].t;
  auto shape = row_shape.with_leading(n);
  if (n == 0)
    return zeros(type, shape);
  auto per_row = row_shape.num_elements();
  // Consecutive views of one buffer (a batch that passed through a queue in
  // several pieces) need no copy.
  if (parts[0].t->buf_) {
    bool contiguous = true;
    auto next = parts[0].t->offset_;
    for (size_t i = 0; i < parts.size() && contiguous; ++i) {
      const auto& t = *parts[i].t;
      contiguous = t.buf_ == parts[0].t->buf_ && t.offset_ == next;
      next += (parts[i].batched ? t.dim0() : 1) * per_row;
    }
    if (contiguous)
      return tensor(type, std::move(shape), parts[0].t->buf_, parts[0].t->offset_);
  }
  auto buf = std::make_shared<detail::tensor_buffer>();
  if (type == dtype::string) {
    buf->strings.reserve(static_cast<size_t>(n * per_row));
    for (auto& p : parts) {
      auto v = p.t->values<std::string>();
      buf->strings.insert(buf->strings.end(), v.begin(), v.end());
    }
  } else {
    auto elem = dtype_size(type);
    buf->bytes.resize(static_cast<size_t>(n * per_row) * elem);
    auto* out = buf->bytes.data();
    for (auto& p : parts) {
      auto bytes = static_cast<size_t>(p.t->num_elements()) * elem;
      if (bytes > 0)
        std::memcpy(out, p.t->raw(), bytes);
      out += bytes;
    }
  }
  return tensor(type, std::move(shape), std::move(buf), 0);
}

namespace {

// Copies `src` (shape `sdims`) into `dst` (shape `ddims`, same rank, each
// dimension >= the source's), recursively over dimensions.
template <class T>
void copy_padded(const T* src, const std::vector<int64_t>& sdims, T* dst,
                 const std::vector<int64_t>& ddims, size_t dim) {
  if (dim == sdims.size()) {
    *dst = *src;
    return;
  }
  int64_t sstride = 1, dstride = 1;
  for (size_t k = dim + 1; k < sdims.size(); ++k) {
    sstride *= sdims[k];
    dstride *= ddims[k];
  }
  for (int64_t i = 0; i < sdims[dim]; ++i)
    copy_padded(src + i * sstride, sdims, dst + i * dstride, ddims, dim + 1);
}

} // namespace

tensor tensor::padded_to(const tensor_shape& target) const {
  if (target == shape_)
    return *this;
  if (target.rank() != shape_.rank())
    throw invalid_argument_error("cannot pad " + shape_.to_string() + " to " +
                                 target.to_string() + ": ranks differ");
  for (size_t i = 0; i < target.rank(); ++i)
    if (target.dim(i) < shape_.dim(i))
      throw invalid_argument_error("cannot pad " + shape_.to_string() + " to smaller " +
                                   target.to_string());
  auto n = static_cast<size_t>(target.num_elements());
  auto buf = std::make_shared<detail::tensor_buffer>();
  const auto& sd = shape_.dims();
  const auto& dd = target.dims();
  if (num_elements() == 0) {
    // nothing to copy
  }
  if (type_ == dtype::string) {
    buf->strings.resize(n);
    if (num_elements() > 0)
      copy_padded(values<std::string>().data(), sd, buf->strings.data(), dd, 0);
  } else {
    buf->bytes.assign(n * dtype_size(type_), 0);
    if (num_elements() > 0) {
      switch (dtype_size(type_)) {
      case 1:
        copy_padded(reinterpret_cast<const uint8_t*>(raw()), sd,
                    reinterpret_cast<uint8_t*>(buf->bytes.data()), dd, 0);
        break;
      case 4:
        copy_padded(reinterpret_cast<const uint32_t*>(raw()), sd,
                    reinterpret_cast<uint32_t*>(buf->bytes.data()), dd, 0);
        break;
      default:
        copy_padded(reinterpret_cast<const uint64_t*>(raw()), sd,
                    reinterpret_cast<uint64_t*>(buf->bytes.data()), dd, 0);
      }
    }
  }
  return tensor(type_, target, std::move(buf), 0);
}

bool tensor::shares_buffer_with(const tensor& other) const {
  return buf_ != nullptr && buf_ == other.buf_;
}

namespace {

template <class T>
void print_values(std::ostream& os, const tensor& t, size_t max_values) {
  auto v = t.values<T>();
  for (size_t i = 0; i < v.size() && i < max_values; ++i) {
    if (i > 0)
      os << ", ";
    if constexpr (std::is_same_v<T, std::string>)
      os << '"' << v[i] << '"';
    else if constexpr (std::is_same_v<T, uint8_t>)
      os << static_cast<int>(v[i]);
    else if constexpr (std::is_same_v<T, bool>)
      os << (v[i] ? "true" : "false");
    else
      os << v[i];
  }
  if (v.size() > max_values)
    os << ", ...";
}

} // namespace

std::string tensor::to_string(size_t max_values) const {
  std::ostringstream os;
  os << dtype_name(type_) << shape_.to_string() << '{';
  visit_dtype(type_, [&](auto tag) {
    print_values<typename decltype(tag)::type>(os, *this, max_values);
  });
  os << '}';
  return os.str();
}

std::string to_string(const tensor& t) {
  return t.to_string();
}

uint64_t tensor::digest() const {
  // std::hash of a string_view is libstdc++'s murmur-style hash of the bytes:
  // one pass, no copy.
  std::hash<std::string_view> bytes_hash;
  uint64_t d = static_cast<uint64_t>(type_);
  for (auto dim : shape_.dims())
    detail::hash_mix(d, static_cast<uint64_t>(dim));
  if (type_ == dtype::string) {
    for (const auto& s : values<std::string>())
      detail::hash_mix(d, bytes_hash(s));
  } else {
    auto n = static_cast<size_t>(num_elements()) * dtype_size(type_);
    detail::hash_mix(
        d, bytes_hash(std::string_view{reinterpret_cast<const char*>(raw()), n}));
  }
  return d;
}

bool operator==(const tensor& a, const tensor& b) {
  if (a.type_ != b.type_ || a.shape_ != b.shape_)
    return false;
  if (a.type_ == dtype::string) {
    auto x = a.values<std::string>();
    auto y = b.values<std::string>();
    return std::equal(x.begin(), x.end(), y.begin());
  }
  auto bytes = static_cast<size_t>(a.num_elements()) * dtype_size(a.type_);
  return bytes == 0 || std::memcmp(a.raw(), b.raw(), bytes) == 0;
}

detail::tensor_wire tensor::to_wire() const {
  detail::tensor_wire w;
  w.type = static_cast<uint8_t>(type_);
  w.shape = shape_;
  if (type_ == dtype::string) {
    auto v = values<std::string>();
    w.strings.assign(v.begin(), v.end());
  } else {
    auto bytes = static_cast<size_t>(num_elements()) * dtype_size(type_);
    w.bytes.assign(raw(), raw() + bytes);
  }
  return w;
}

tensor tensor::from_wire(detail::tensor_wire w) {
  if (!is_valid_dtype(w.type))
    throw invalid_argument_error("corrupt tensor: unknown dtype number " +
                                 std::to_string(w.type));
  auto type = static_cast<dtype>(w.type);
  if (!w.shape.fully_defined())
    throw invalid_argument_error("corrupt tensor: shape " + w.shape.to_string() +
                                 " is not fully defined");
  // Every product of dimensions a tensor computes (its element count, its
  // rows' sizes) must fit int64: the product of the non-zero dimensions does.
  int64_t bound = 1;
  for (auto d : w.shape.dims())
    if (d > 0 && __builtin_mul_overflow(bound, d, &bound))
      throw invalid_argument_error("corrupt tensor: shape " + w.shape.to_string() +
                                   " has too many elements");
  auto n = static_cast<size_t>(w.shape.num_elements());
  if (type == dtype::string) {
    check_count(w.shape, w.strings.size());
    return from_values(std::move(w.shape), std::move(w.strings));
  }
  // Divided, not multiplied: n * size may wrap around.
  if (w.bytes.size() % dtype_size(type) != 0 || w.bytes.size() / dtype_size(type) != n)
    throw invalid_argument_error("corrupt tensor: " + std::to_string(w.bytes.size()) +
                                 " bytes for " + std::to_string(n) + " values of dtype " +
                                 dtype_name(type));
  if (w.shape.rank() == 0) {
    tensor t;
    t.type_ = type;
    std::memcpy(t.inline_, w.bytes.data(), w.bytes.size());
    return t;
  }
  auto buf = std::make_shared<detail::tensor_buffer>();
  buf->bytes = std::move(w.bytes);
  return tensor(type, std::move(w.shape), std::move(buf), 0);
}

} // namespace quern
