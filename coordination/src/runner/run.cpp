// What an enqueue op sees of its run: async_run, blocking_run and the rows
// they collect (quern/queue_runner.hpp).

#include "quern/queue_runner.hpp"

#include "runner_shared.hpp"

namespace quern {

// -- run_output -----------------------------------------------------------------------

namespace detail {

void run_output::add_row(element row) {
  if (pieces_.empty() || pieces_.back().is_batch)
    pieces_.emplace_back();
  pieces_.back().rows.push_back(std::move(row));
}

void run_output::add_rows(std::vector<element> rows) {
  if (rows.empty())
    return;
  if (pieces_.empty() || pieces_.back().is_batch) {
    pieces_.emplace_back();
    pieces_.back().rows = std::move(rows);
    return;
  }
  auto& dst = pieces_.back().rows;
  for (auto& r : rows)
    dst.push_back(std::move(r));
}

void run_output::add_batch(element batch) {
  if (batch.batch_size() == 0) // validates: throws for a non-batch
    return;
  piece p;
  p.is_batch = true;
  p.batch = std::move(batch);
  pieces_.push_back(std::move(p));
}

std::vector<element> taken_rows::to_rows() && {
  if (width > 0) {
    std::vector<element> out;
    out.reserve(flat.size() / width);
    for (size_t i = 0; i + width <= flat.size(); i += width)
      out.emplace_back(
          std::vector<tensor>(std::make_move_iterator(flat.begin() + i),
                              std::make_move_iterator(flat.begin() + i + width)));
    return out;
  }
  if (!is_batch)
    return std::move(rows);
  std::vector<element> out;
  if (batch.components.empty())
    return out;
  auto n = batch.batch_size();
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out.push_back(batch.row(i));
  return out;
}

} // namespace detail

// -- async_run / blocking_run ---------------------------------------------------------

bool async_run::should_stop() const noexcept {
  return stop_ != nullptr && stop_->load(std::memory_order_relaxed);
}

void async_run::emit(element row) {
  if (abandoned())
    return;
  if (completed())
    throw std::logic_error("quern::async_run::emit after the run was completed");
  out_.add_row(std::move(row));
}

void async_run::emit_many(element batch) {
  if (abandoned())
    return;
  if (completed())
    throw std::logic_error("quern::async_run::emit_many after the run was completed");
  out_.add_batch(std::move(batch));
}

void async_run::emit(std::vector<element> rows) {
  if (abandoned())
    return;
  if (completed())
    throw std::logic_error("quern::async_run::emit after the run was completed");
  out_.add_rows(std::move(rows));
}

void async_run::complete(state s) {
  if (abandoned()) // the worker was stopped; nothing the run does counts
    return;
  if (completed())
    throw std::logic_error("quern::async_run completed twice (done/end/fail)");
  state_ = s;
  if (on_complete_)
    on_complete_();
}

void async_run::done() {
  complete(state::done);
}

void async_run::end() {
  complete(state::end);
}

void async_run::fail(caf::error err) {
  if (!err)
    err = make_error(error_code::unknown, "async_run::fail without an error");
  if (abandoned())
    return;
  if (completed())
    throw std::logic_error("quern::async_run completed twice (done/end/fail)");
  error_ = std::move(err);
  complete(state::failed);
}

void async_run::fail(const std::exception& e) {
  if (auto op = dynamic_cast<const op_error*>(&e))
    fail(op->to_error());
  else
    fail(make_error(error_code::unknown, e.what()));
}

void async_run::fail(std::exception_ptr ep) {
  fail(error_from_exception(ep));
}

void async_run::request_sent(const queue_actor& q) {
  ++requests_pending_;
  if (std::find(asked_.begin(), asked_.end(), q) == asked_.end())
    asked_.push_back(q);
}

void async_run::pull_sent(const queue_actor& q) {
  if (on_pull_)
    on_pull_(q);
  pull_from_ = q;
  pull_pending_ = true;
}

bool async_run::answer_arrived(const queue_actor& q, const element& e, bool is_batch) {
  if (--requests_pending_ == 0)
    asked_.clear();
  detail::taken_rows t;
  t.from = q;
  t.is_batch = is_batch;
  if (is_batch)
    t.batch = e;
  else
    t.rows.push_back(e);
  if (abandoned()) {
    std::vector<detail::taken_rows> back;
    back.push_back(std::move(t));
    detail::async_worker_access::give_back_all(self_, back);
    if (!detail::async_worker_access::owed(*this) && on_settled_)
      on_settled_();
    return false;
  }
  taken_.push_back(std::move(t));
  return true;
}

bool async_run::answer_failed() {
  if (--requests_pending_ == 0)
    asked_.clear();
  if (abandoned()) {
    if (!detail::async_worker_access::owed(*this) && on_settled_)
      on_settled_();
    return false;
  }
  return true;
}

bool blocking_run::should_stop() const noexcept {
  return stop_ != nullptr && stop_->load(std::memory_order_relaxed);
}

void blocking_run::emit(std::vector<element> rows) {
  out_.add_rows(std::move(rows));
}

enqueue_op async_op(async_enqueue_fn fn, std::string name) {
  enqueue_op op;
  op.name = std::move(name);
  op.body = std::move(fn);
  return op;
}

enqueue_op blocking_op(blocking_enqueue_fn fn, std::string name) {
  enqueue_op op;
  op.name = std::move(name);
  op.body = std::move(fn);
  return op;
}

} // namespace quern
