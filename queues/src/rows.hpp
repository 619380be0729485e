#pragma once

// Rows as a queue holds and hands them out: runs of batches and single
// elements, and the batch dequeue_many builds from them. Private to queues/.

#include <cstdint>
#include <deque>
#include <vector>

#include "quern/element.hpp"
#include "quern/queue_spec.hpp"

namespace quern::detail {

/// Consecutive rows kept together: one element (no batch dimension), or rows
/// [begin, begin + count) of a batch. Batches travel through a FIFO queue as
/// runs, so an enqueue_many costs the same for 1 row as for 10,000, and a
/// dequeue_many that takes rows of one batch returns a view of it.
struct row_run {
  element data;
  int64_t begin = 0;
  int64_t count = 1;
  bool batched = false;

  static row_run single(element e) { return row_run{std::move(e), 0, 1, false}; }
  static row_run batch(element b, int64_t rows) {
    return row_run{std::move(b), 0, rows, true};
  }

  int64_t size() const { return count; }
  /// Row `i` of this run as an element (a view when batched).
  element row(int64_t i) const { return batched ? data.row(begin + i) : data; }
};

/// Rows in order, as runs.
class row_list {
public:
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::deque<row_run>& runs() const { return runs_; }
  /// The element of the first run, to move out of a list about to be cleared.
  element& front_data() { return runs_.front().data; }

  void push_back(row_run r);
  void push_back(element single) { push_back(row_run::single(std::move(single))); }
  /// Appends every run of `other`, in order.
  void append(row_list&& other);
  /// Puts every run of `other` in front of this list, in order.
  void prepend(row_list&& other);
  /// Moves the first `n` rows (n <= size()) to the end of `out`.
  void move_front(int64_t n, row_list& out);
  /// Removes and returns the first row. Requires !empty().
  element pop_front();
  /// Every row as an element (views of batches, no copy of values).
  std::vector<element> elements() const;
  /// The same, moving single rows out instead of copying them; leaves the
  /// list empty.
  std::vector<element> take_elements();
  void clear() {
    runs_.clear();
    size_ = 0;
  }

private:
  std::deque<row_run> runs_;
  int64_t size_ = 0;
};

/// Builds the batch of `rows` for dequeue_many/up_to (padding included,
///
element make_batch(const queue_spec& spec, const row_list& rows);
/// The same, leaving `rows` empty: a list that is one whole batch (what a
/// shuffle take returns) is moved out as it is, without a copy.
element take_batch(const queue_spec& spec, row_list& rows);

} // namespace quern::detail
