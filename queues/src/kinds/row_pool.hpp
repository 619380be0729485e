#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quern/dtype.hpp"
#include "quern/element.hpp"
#include "quern/tensor.hpp"
#include "quern/tensor_shape.hpp"

namespace quern {

/// Rows of one signature (dtypes and fully defined row shapes) kept in
/// buffers that the pool owns: RandomShuffleQueue's storage. append()
/// copies a run of rows in; take() removes rows by index, the last row
/// moving into each freed slot, and returns them as one batch whose
/// components share one new buffer.
///
/// Why copy rows in instead of keeping the enqueued batches and indexing
/// their rows: a shuffling queue reads every row at a random place. Rows a
/// reader thread has just written sit in that thread's core cache, and a
/// random read of each pays a cache-line transfer between cores; a
/// sequential copy streams a batch over at memory speed, and the random
/// reads then stay within the pool's own memory. The numeric components of
/// a row are kept side by side (one record per row), so that a random pick
/// touches one cache line, not one per component; the slots a take() will
/// read are prefetched a few picks ahead.
class row_pool {
public:
  /// Throws invalid_argument_error when the counts differ or a row shape is
  /// not fully defined.
  row_pool(std::vector<dtype> types, std::vector<tensor_shape> row_shapes);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Bytes held for numeric rows, live and spare. Spare room beyond four
  /// times what the live rows need (and beyond 1 MiB) is given back after a
  /// take(), so a pool that once held a full queue does not keep that
  /// memory once drained.
  size_t reserved_bytes() const { return records_.capacity(); }

  /// Appends rows [begin, begin + count) of `e`, whose components carry a
  /// leading dimension (`batched`), or `e` itself as one row (!batched,
  /// begin 0, count 1). Throws invalid_argument_error, appending nothing,
  /// when a component's dtype or shape does not match or the rows are out
  /// of range.
  void append(const element& e, int64_t begin, int64_t count, bool batched);

  /// Removes `n` rows and returns them, in the order taken, as a batch of
  /// shape [n] + row shape per component. The k-th row taken is the one at
  /// index `pick(m)` where m is the pool's size at that moment; `pick` must
  /// return a value below m. Throws invalid_argument_error when n > size().
  template <class Pick>
  element take(size_t n, Pick&& pick);

  /// Every row, in slot order, as one batch (a copy; the pool is unchanged):
  /// appended back in this order, the rows are in the same slots.
  element copy_all() const;

private:
  struct column {
    dtype type;
    tensor_shape row_shape;
    size_t row_values = 0;              // values per row
    size_t row_bytes = 0;               // 0 for strings
    std::vector<std::string> strings;   // string rows [0, size_), row_values each
    std::string* out_strings = nullptr; // take(): where the batch's strings go
  };
  /// A numeric column with bytes, as take()'s inner loop needs it.
  struct numeric_part {
    size_t component;   // its index in columns_ and in an element
    size_t at;          // where its bytes start in a record
    size_t bytes;       // per row
    unsigned char* out; // take(): where the batch's rows go
  };

  /// take(), once the slots are drawn into picks_: moves the n picked rows
  /// out (the last row into each freed slot) and returns them as one batch.
  element take_picked(size_t n);
  /// take(): a new buffer for n rows of every column; sets each column's out.
  void start_take(size_t n);
  /// take(): moves the strings of row j out as row i of the batch, those of
  /// row `last` into j.
  void move_strings_out(size_t j, size_t i, size_t last);
  /// take(): the batch of the n rows moved out since start_take; gives
  /// back spare room (see reserved_bytes).
  element finish_take(size_t n);

  std::vector<column> columns_;
  std::vector<numeric_part> numeric_; // the columns whose rows have bytes
  size_t size_ = 0;
  size_t record_bytes_ = 0;            // the numeric components of one row
  std::vector<unsigned char> records_; // rows [0, size_), then spare room
  bool has_strings_ = false;
  std::shared_ptr<detail::tensor_buffer> taking_; // take()'s buffer in progress
  std::vector<size_t> offsets_; // take(): each column's offset in taking_, in values
  std::vector<size_t> picks_;   // take(): the slots, drawn before any is read
  std::vector<unsigned char> staged_; // take(): the picked records, in pick order
};

template <class Pick>
element row_pool::take(size_t n, Pick&& pick) {
  if (n > size_)
    throw invalid_argument_error("row_pool: cannot take " + std::to_string(n) +
                                 " rows of " + std::to_string(size_));
  // The slots depend only on the sizes, so they are all drawn first; the
  // copying then runs without calls into the generator (take_picked).
  picks_.resize(n);
  for (size_t i = 0; i < n; ++i)
    picks_[i] = pick(size_ - i);
  return take_picked(n);
}

} // namespace quern
