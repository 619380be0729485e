#include "row_pool.hpp"

#include <algorithm>
#include <cstring>

#include "quern/error.hpp"

namespace quern {

namespace {

/// Room a pool may keep whatever it holds (records, or a take's staging):
/// below this, giving memory back would only mean allocating it again.
constexpr size_t keep_always = size_t{1} << 20;

// The copy loops of append() and take(), with the sizes that rows of
// scalars and small vectors have known at compile time: a copy of a
// constant size is one or two moves, where a run-time size is a call.

/// Runs Kernel::run<B>(args...) with the B of `Known` that equals `bytes`,
/// or with B = 0 (the size known only at run time). The kernels take their
/// pointers by value: byte stores may alias anything in memory, and
/// pointers kept there (a lambda's captures) would be reloaded after each.
template <class Kernel, size_t... Known, class... Args>
void with_size(size_t bytes, Args... args) {
  bool known = ((bytes == Known && (Kernel::template run<Known>(args...), true)) || ...);
  if (!known)
    Kernel::template run<0>(args...);
}

/// n copies of `bytes` bytes, the i-th from src + i * src_stride to
/// dst + i * dst_stride.
struct strided_copy_kernel {
  template <size_t Bytes>
  static void run(unsigned char* dst, size_t dst_stride, const unsigned char* src,
                  size_t src_stride, size_t bytes, size_t n) {
    const size_t b = Bytes > 0 ? Bytes : bytes;
    for (size_t i = 0; i < n; ++i, dst += dst_stride, src += src_stride)
      std::memcpy(dst, src, b);
  }
};

void strided_copy(unsigned char* dst, size_t dst_stride, const unsigned char* src,
                  size_t src_stride, size_t bytes, size_t n) {
  with_size<strided_copy_kernel, 1, 2, 4, 8, 16>(bytes, dst, dst_stride, src, src_stride,
                                                 bytes, n);
}

/// Copies the records at `picks` (slots of a pool of `size` records of
/// `bytes` each) to `staged` in pick order, moving the last record into
/// each freed slot: the random reads of a take, with prefetches a few picks
/// ahead so that their cache misses overlap.
struct stage_picks_kernel {
  template <size_t Bytes>
  static void run(unsigned char* records, size_t size, const size_t* picks, size_t n,
                  unsigned char* staged, size_t bytes) {
    const size_t rb = Bytes > 0 ? Bytes : bytes;
    constexpr size_t ahead = 8;
    for (size_t i = 0; i < n && i < ahead; ++i)
      __builtin_prefetch(records + picks[i] * rb);
    for (size_t i = 0; i < n; ++i) {
      if (i + ahead < n)
        __builtin_prefetch(records + picks[i + ahead] * rb);
      auto* slot = records + picks[i] * rb;
      const size_t last = size - 1 - i;
      std::memcpy(staged + i * rb, slot, rb);
      if (picks[i] != last)
        std::memcpy(slot, records + last * rb, rb);
    }
  }
};

void stage_picks(unsigned char* records, size_t size, const size_t* picks, size_t n,
                 unsigned char* staged, size_t bytes) {
  with_size<stage_picks_kernel, 4, 8, 12, 16, 24, 32>(bytes, records, size, picks, n,
                                                      staged, bytes);
}

} // namespace

row_pool::row_pool(std::vector<dtype> types, std::vector<tensor_shape> row_shapes) {
  if (types.size() != row_shapes.size())
    throw invalid_argument_error("row_pool: " + std::to_string(types.size()) +
                                 " dtypes for " + std::to_string(row_shapes.size()) +
                                 " shapes");
  columns_.resize(types.size());
  for (size_t k = 0; k < types.size(); ++k) {
    if (!row_shapes[k].fully_defined())
      throw invalid_argument_error("row_pool: component " + std::to_string(k) +
                                   " needs a fully defined shape, got " +
                                   row_shapes[k].to_string());
    auto& c = columns_[k];
    c.type = types[k];
    c.row_values = static_cast<size_t>(row_shapes[k].num_elements());
    c.row_bytes = c.row_values * dtype_size(c.type);
    c.row_shape = std::move(row_shapes[k]);
    if (c.row_bytes > 0)
      numeric_.push_back(numeric_part{k, record_bytes_, c.row_bytes, nullptr});
    record_bytes_ += c.row_bytes;
    has_strings_ = has_strings_ || c.type == dtype::string;
  }
  offsets_.resize(columns_.size());
}

void row_pool::append(const element& e, int64_t begin, int64_t count, bool batched) {
  if (e.components.size() != columns_.size())
    throw invalid_argument_error(
        "row_pool: an element of " + std::to_string(e.components.size()) +
        " components for a pool of " + std::to_string(columns_.size()));
  if (!batched && (begin != 0 || count != 1))
    throw invalid_argument_error("row_pool: a single row is appended as rows [0, 1)");
  if (begin < 0 || count < 0)
    throw invalid_argument_error("row_pool: rows [" + std::to_string(begin) + ", " +
                                 std::to_string(begin + count) + ") out of range");
  // Everything is checked before anything is copied: nothing half-appended.
  for (size_t k = 0; k < columns_.size(); ++k) {
    const auto& t = e.components[k];
    const auto& c = columns_[k];
    const auto& have = t.shape().dims();
    const auto& want = c.row_shape.dims();
    size_t skip = batched ? 1 : 0;
    bool same = t.type() == c.type && have.size() == want.size() + skip &&
                std::equal(want.begin(), want.end(), have.begin() + skip);
    if (!same)
      throw invalid_argument_error("row_pool: component " + std::to_string(k) + " is " +
                                   dtype_name(t.type()) + t.shape().to_string() +
                                   ", not " + (batched ? "a batch of " : "one row of ") +
                                   dtype_name(c.type) + c.row_shape.to_string());
    if (batched && begin + count > have[0])
      throw invalid_argument_error("row_pool: rows [" + std::to_string(begin) + ", " +
                                   std::to_string(begin + count) +
                                   ") out of range for leading dimension " +
                                   std::to_string(have[0]));
  }
  const auto rows = static_cast<size_t>(count);
  const auto first = static_cast<size_t>(begin);
  if (record_bytes_ > 0) {
    auto need = (size_ + rows) * record_bytes_;
    if (records_.size() < need)
      records_.resize(std::max(need, 2 * records_.size()));
    for (const auto& p : numeric_) // component by component: a sequential read of each
      strided_copy(records_.data() + size_ * record_bytes_ + p.at, record_bytes_,
                   e.components[p.component].bytes() + first * p.bytes, p.bytes, p.bytes,
                   rows);
  }
  for (size_t k = 0; k < columns_.size(); ++k) {
    auto& c = columns_[k];
    if (c.type != dtype::string)
      continue;
    auto v = e.components[k].values<std::string>();
    auto from = v.begin() + first * c.row_values;
    c.strings.insert(c.strings.end(), from, from + rows * c.row_values);
  }
  size_ += rows;
}

element row_pool::take_picked(size_t n) {
  start_take(n);
  if (record_bytes_ > 0) {
    // The picked records in pick order first, then each numeric column
    // copied out of them: the per-row loop does only the random reads and
    // the swap-remove, the column copies are strided loops of a known size.
    if (staged_.size() < n * record_bytes_)
      staged_.resize(n * record_bytes_);
    stage_picks(records_.data(), size_, picks_.data(), n, staged_.data(), record_bytes_);
    for (const auto& p : numeric_)
      strided_copy(p.out, p.bytes, staged_.data() + p.at, record_bytes_, p.bytes, n);
    if (staged_.size() > keep_always) // a huge take: not kept for the next
      std::vector<unsigned char>().swap(staged_);
  }
  if (has_strings_)
    for (size_t i = 0; i < n; ++i) // the same slots, the same swap-remove order
      move_strings_out(picks_[i], i, size_ - 1 - i);
  size_ -= n;
  return finish_take(n);
}

void row_pool::start_take(size_t n) {
  // One buffer for the whole batch: numeric columns at 8-byte aligned
  // offsets of its bytes, string columns one after another in its strings.
  size_t bytes = 0;
  size_t strings = 0;
  for (size_t k = 0; k < columns_.size(); ++k) {
    auto& c = columns_[k];
    if (c.type == dtype::string) {
      offsets_[k] = strings;
      strings += n * c.row_values;
    } else {
      bytes = (bytes + 7) & ~size_t{7};
      offsets_[k] = c.row_bytes > 0 ? bytes / dtype_size(c.type) : 0;
      bytes += n * c.row_bytes;
    }
  }
  taking_ = std::make_shared<detail::tensor_buffer>();
  taking_->bytes.resize(bytes);
  taking_->strings.resize(strings);
  for (size_t k = 0; k < columns_.size(); ++k)
    if (columns_[k].type == dtype::string)
      columns_[k].out_strings = taking_->strings.data() + offsets_[k];
  for (auto& p : numeric_)
    p.out = taking_->bytes.data() +
            offsets_[p.component] * dtype_size(columns_[p.component].type);
}

void row_pool::move_strings_out(size_t j, size_t i, size_t last) {
  for (auto& c : columns_) {
    if (c.type != dtype::string)
      continue;
    auto* slot = c.strings.data() + j * c.row_values;
    auto* tail = c.strings.data() + last * c.row_values;
    for (size_t v = 0; v < c.row_values; ++v) {
      c.out_strings[i * c.row_values + v] = std::move(slot[v]);
      if (j != last)
        slot[v] = std::move(tail[v]);
    }
    c.strings.resize(last * c.row_values);
  }
}

element row_pool::finish_take(size_t n) {
  // Hysteresis: shrink to twice the live rows only when four times as much
  // is held, so that a queue going up and down does not reallocate each time.
  auto live = size_ * record_bytes_;
  if (records_.capacity() > keep_always && records_.capacity() > 4 * live) {
    std::vector<unsigned char> smaller(std::max(2 * live, keep_always));
    std::memcpy(smaller.data(), records_.data(), live);
    records_.swap(smaller);
  }
  std::shared_ptr<const detail::tensor_buffer> buf = std::move(taking_);
  element batch;
  batch.components.reserve(columns_.size());
  for (size_t k = 0; k < columns_.size(); ++k) {
    auto& c = columns_[k];
    c.out_strings = nullptr;
    batch.components.push_back(
        tensor::view_of(c.type, c.row_shape.with_leading(static_cast<int64_t>(n)), buf,
                        static_cast<int64_t>(offsets_[k])));
  }
  return batch;
}

element row_pool::copy_all() const {
  element batch;
  batch.components.reserve(columns_.size());
  for (size_t k = 0; k < columns_.size(); ++k) {
    const auto& c = columns_[k];
    auto buf = std::make_shared<detail::tensor_buffer>();
    if (c.type == dtype::string) {
      buf->strings.assign(c.strings.begin(),
                          c.strings.begin() +
                              static_cast<std::ptrdiff_t>(size_ * c.row_values));
    } else if (c.row_bytes > 0) {
      buf->bytes.resize(size_ * c.row_bytes);
      auto part = std::find_if(numeric_.begin(), numeric_.end(),
                               [k](const numeric_part& p) { return p.component == k; });
      strided_copy(buf->bytes.data(), c.row_bytes, records_.data() + part->at,
                   record_bytes_, c.row_bytes, size_);
    }
    batch.components.push_back(
        tensor::view_of(c.type, c.row_shape.with_leading(static_cast<int64_t>(size_)),
                        std::move(buf), 0));
  }
  return batch;
}

} // namespace quern
