// A queue's checkpoint (docs/resume.md): what it holds, taken out as a
// queue_state and put back into a queue that was never used.

#include <cstring>
#include <memory>

#include "quern/error.hpp"
#include "quern/queue.hpp"

#include "queue_core.hpp"

namespace quern::detail {

namespace {

/// A batched run as a batch: a view of its rows.
element as_batch(const row_run& r) {
  element out;
  out.components.reserve(r.data.components.size());
  for (auto& t : r.data.components)
    out.components.push_back(t.rows(r.begin, r.count));
  return out;
}

/// Single rows in a row, stacked into one batch: a producer's rows of an
/// epoch are one batch of the checkpoint, not one each. The rows are of one
/// dtype and shape (stacks_with). Numeric values are copied straight into
/// the batch's buffers, each row visited once: a waiting enqueue of an
/// epoch's rows is copied while the pipeline is paused, and a tensor copied
/// for each value first made that several times slower.
element stack_rows(const std::vector<const element*>& rows) {
  auto& first = *rows.front();
  auto width = first.components.size();
  auto n = rows.size();
  std::vector<std::shared_ptr<detail::tensor_buffer>> bufs(width);
  std::vector<size_t> row_bytes(width, 0);
  for (size_t k = 0; k < width; ++k) {
    auto& t = first.components[k];
    if (t.type() == dtype::string)
      continue;
    row_bytes[k] = static_cast<size_t>(t.num_elements()) * dtype_size(t.type());
    bufs[k] = std::make_shared<detail::tensor_buffer>();
    bufs[k]->bytes.resize(row_bytes[k] * n);
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < width; ++k)
      if (bufs[k] && row_bytes[k] > 0)
        std::memcpy(bufs[k]->bytes.data() + i * row_bytes[k],
                    rows[i]->components[k].bytes(), row_bytes[k]);
  element out;
  out.components.reserve(width);
  std::vector<tensor> column;
  for (size_t k = 0; k < width; ++k) {
    auto& t = first.components[k];
    if (bufs[k]) {
      out.components.push_back(
          tensor::view_of(t.type(), t.shape().with_leading(static_cast<int64_t>(n)),
                          std::move(bufs[k]), 0));
      continue;
    }
    column.clear();
    for (auto* r : rows)
      column.push_back(r->components[k]);
    out.components.push_back(tensor::stack(column));
  }
  return out;
}

/// Whether `b` can join a stack of rows like `a` (the same dtypes and shapes).
bool stacks_with(const element& a, const element& b) {
  if (a.components.size() != b.components.size())
    return false;
  for (size_t k = 0; k < a.components.size(); ++k)
    if (a.components[k].type() != b.components[k].type() ||
        a.components[k].shape() != b.components[k].shape())
      return false;
  return true;
}

void append_batches(const row_list& rows, std::vector<element>& out) {
  std::vector<const element*> singles;
  auto flush = [&] {
    if (!singles.empty())
      out.push_back(stack_rows(singles));
    singles.clear();
  };
  for (auto& r : rows.runs()) {
    if (r.count <= 0)
      continue;
    if (r.batched) {
      flush();
      out.push_back(as_batch(r));
      continue;
    }
    if (!singles.empty() && !stacks_with(*singles.front(), r.data))
      flush();
    singles.push_back(&r.data);
  }
  flush();
}

/// The batches as runs, each checked against the queue's signature first.
row_list as_rows(const queue_spec& spec, std::vector<element>& batches,
                 const std::string& what) {
  row_list out;
  for (auto& b : batches) {
    try {
      validate_enqueue_many(spec, b);
    } catch (const op_error& e) {
      throw invalid_argument_error("the saved " + what + " do not fit queue '" +
                                   spec.resource_name + "': " + e.what());
    }
    auto n = b.batch_size();
    if (n > 0)
      out.push_back(row_run::batch(std::move(b), n));
  }
  return out;
}

} // namespace

queue_state queue_core::snapshot() const {
  queue_state s;
  s.closed = closed_;
  append_batches(storage_->copy_rows(), s.stored);
  for (auto& a : enqueues_) {
    if (a.what == enqueue_attempt::op::close) {
      // Enqueues behind a close are refused when it takes effect.
      s.close_waiting = true;
      break;
    }
    append_batches(a.rows, s.waiting);
  }
  s.generator = storage_->generator();
  return s;
}

void queue_core::restore(queue_state s) {
  if (closed_ || storage_->size() > 0 || !enqueues_.empty() || !dequeues_.empty())
    throw failed_precondition_error(
        "cannot restore queue '" + spec_.resource_name +
        "' from a checkpoint: it was used already (restore a pipeline before "
        "start_queue_runners and before anything enqueues or dequeues)");
  // Everything is checked before anything is taken.
  auto stored = as_rows(spec_, s.stored, "stored rows");
  auto waiting = as_rows(spec_, s.waiting, "rows waiting for room");
  if (!s.generator.empty() && storage_->generator().empty())
    throw invalid_argument_error("the checkpoint of queue '" + spec_.resource_name +
                                 "' holds a random generator, which a " + kind_.name() +
                                 " does not have");
  if (!s.generator.empty())
    storage_->restore_generator(s.generator);
  storage_->push(stored, stored.size());
  closed_ = s.closed;
  if (!waiting.empty()) {
    enqueue_attempt a;
    a.what = enqueue_attempt::op::enqueue_many;
    a.total = waiting.size();
    a.rows = std::move(waiting);
    enqueues_.push_back(std::move(a));
  }
  if (s.close_waiting) {
    enqueue_attempt a;
    a.what = enqueue_attempt::op::close;
    enqueues_.push_back(std::move(a));
  }
  flush();
}

} // namespace quern::detail
