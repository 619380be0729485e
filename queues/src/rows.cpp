#include "rows.hpp"

#include <algorithm>

namespace quern::detail {

// -- row_list -----------------------------------------------------------------

void row_list::push_back(row_run r) {
  if (r.count <= 0)
    return;
  size_ += r.count;
  runs_.push_back(std::move(r));
}

void row_list::append(row_list&& other) {
  for (auto& r : other.runs_)
    runs_.push_back(std::move(r));
  size_ += other.size_;
  other.clear();
}

void row_list::prepend(row_list&& other) {
  runs_.insert(runs_.begin(), std::make_move_iterator(other.runs_.begin()),
               std::make_move_iterator(other.runs_.end()));
  size_ += other.size_;
  other.clear();
}

void row_list::move_front(int64_t n, row_list& out) {
  while (n > 0) {
    auto& r = runs_.front();
    if (r.count <= n) {
      n -= r.count;
      size_ -= r.count;
      out.push_back(std::move(r));
      runs_.pop_front();
    } else {
      // Split a batch run: the front part goes, the rest stays.
      out.push_back(row_run{r.data, r.begin, n, true});
      r.begin += n;
      r.count -= n;
      size_ -= n;
      n = 0;
    }
  }
}

element row_list::pop_front() {
  auto& r = runs_.front();
  --size_;
  if (!r.batched) {
    auto e = std::move(r.data);
    runs_.pop_front();
    return e;
  }
  auto e = r.row(0);
  ++r.begin;
  if (--r.count == 0)
    runs_.pop_front();
  return e;
}

std::vector<element> row_list::take_elements() {
  std::vector<element> out;
  out.reserve(static_cast<size_t>(size_));
  for (auto& r : runs_) {
    if (!r.batched)
      out.push_back(std::move(r.data));
    else
      for (int64_t i = 0; i < r.count; ++i)
        out.push_back(r.row(i));
  }
  clear();
  return out;
}

std::vector<element> row_list::elements() const {
  std::vector<element> out;
  out.reserve(static_cast<size_t>(size_));
  for (auto& r : runs_)
    for (int64_t i = 0; i < r.count; ++i)
      out.push_back(r.row(i));
  return out;
}
// -- batches ------------------------------------------------------------------

element take_batch(const queue_spec& spec, row_list& rows) {
  if (rows.runs().size() == 1) {
    auto& r = rows.runs().front();
    bool whole = r.batched && r.begin == 0 &&
                 r.data.components.size() == spec.num_components() &&
                 !spec.shapes.empty();
    for (size_t i = 0; whole && i < spec.num_components(); ++i)
      whole = spec.shapes[i].fully_defined() && r.data.components[i].dim0() == r.count;
    if (whole) {
      auto batch = std::move(rows.front_data());
      rows.clear();
      return batch;
    }
  }
  auto batch = make_batch(spec, rows);
  rows.clear();
  return batch;
}

element make_batch(const queue_spec& spec, const row_list& rows) {
  element batch;
  batch.components.reserve(spec.num_components());
  // Fully defined shapes: concatenate the runs; rows of one batch that went
  // through unchanged come back as a view of it (docs/queues.md, Storage).
  std::vector<tensor> slices;
  std::vector<tensor::rows_part> parts;
  std::vector<element> materialized; // padding needs the rows one by one
  for (size_t i = 0; i < spec.num_components(); ++i) {
    auto row_shape = spec.shapes[i];
    if (row_shape.fully_defined()) {
      slices.clear();
      parts.clear();
      slices.reserve(rows.runs().size());
      for (auto& r : rows.runs()) {
        const auto& t = r.data.components[i];
        if (!r.batched) {
          parts.push_back({&t, false});
        } else if (r.begin == 0 && r.count == t.dim0()) {
          parts.push_back({&t, true});
        } else {
          slices.push_back(t.rows(r.begin, r.count));
          parts.push_back({&slices.back(), true});
        }
      }
      batch.components.push_back(tensor::concat_rows(parts, spec.dtypes[i], row_shape));
      continue;
    }
    if (materialized.empty() && !rows.empty())
      materialized = rows.elements();
    std::vector<tensor> column;
    column.reserve(materialized.size());
    for (auto& r : materialized)
      column.push_back(r.components[i]);
    {
      // each unknown dimension is the largest of this batch (0 when
      // the batch is empty); rows are padded with zeros.
      auto dims = row_shape.dims();
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] >= 0)
          continue;
        int64_t m = 0;
        for (auto& t : column)
          m = std::max(m, t.shape().dim(d));
        dims[d] = m;
      }
      row_shape = tensor_shape(std::move(dims));
      for (auto& t : column)
        t = t.padded_to(row_shape);
    }
    batch.components.push_back(tensor::stack_or_empty(column, spec.dtypes[i], row_shape));
  }
  return batch;
}

} // namespace quern::detail
