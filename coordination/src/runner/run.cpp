// What an enqueue op sees of its run: async_run, blocking_run and the rows
// they collect (quern/queue_runner.hpp), and the async client behind
// async_run (async_client.hpp).

#include "quern/queue_runner.hpp"

#include <algorithm>

#include "async_client.hpp"
#include "worker_meter.hpp"

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

void give_back_all(caf::event_based_actor* self, std::vector<taken_rows>& taken) {
  for (auto& t : taken) {
    auto from = t.from;
    auto rows = std::move(t).to_rows();
    if (from && !rows.empty())
      self->send(from, give_back_atom::value, std::move(rows));
  }
}

// -- async_client -------------------------------------------------------------------

void async_client::reset(caf::event_based_actor* self, uint64_t index,
                         const std::atomic<bool>* stop) {
  self_ = self;
  index_ = index;
  state_ = state::running;
  out_.clear();
  error_ = caf::error{};
  stop_ = stop;
  taken_.clear();
}

std::vector<taken_rows> async_client::abandon() {
  state_ = state::abandoned;
  out_.clear();
  auto sources = std::move(taken_);
  taken_.clear();
  give_back_all(self_, sources);
  if (on_pulled_) {
    on_pulled_ = nullptr;
    self_->send(pull_from_, unpull_atom::value);
  }
  for (auto& q : asked_)
    self_->send(q, unpull_atom::value);
  return sources;
}

void async_client::took(const std::vector<element>& rows, uint64_t first) {
  taken_rows t;
  t.from = pull_from_;
  t.first_unit = first;
  t.units = first > 0 ? rows.size() : 0;
  // Kept flat: one allocation per pull, not one per row (a queue's rows
  // all have its number of components).
  t.width = rows.front().size();
  if (t.width == 0) {
    t.rows = rows;
    taken_.push_back(std::move(t));
    return;
  }
  t.flat.reserve(rows.size() * t.width);
  for (auto& e : rows) {
    if (e.size() != t.width) { // cannot happen for rows of one queue
      t.flat.clear();
      t.width = 0;
      t.rows = rows;
      break;
    }
    t.flat.insert(t.flat.end(), e.components.begin(), e.components.end());
  }
  taken_.push_back(std::move(t));
}

void async_client::took_batch(const element& batch, uint64_t first) {
  taken_rows t;
  t.from = pull_from_;
  t.first_unit = first;
  t.units = first > 0 ? 1 : 0;
  t.batch = batch;
  t.is_batch = true;
  taken_.push_back(std::move(t));
}

bool async_client::deliver_pulled(std::vector<element>& xs, caf::error& err) {
  if (!on_pulled_)
    return false;
  auto f = std::move(on_pulled_);
  on_pulled_ = nullptr;
  f(xs, err);
  return true;
}

void async_client::complete(state s) {
  if (abandoned()) // the worker was stopped; nothing the run does counts
    return;
  if (completed())
    throw std::logic_error("quern::async_run completed twice (done/end/fail)");
  state_ = s;
  if (on_complete_)
    on_complete_();
}

void async_client::fail(caf::error err) {
  if (!err)
    err = make_error(error_code::unknown, "async_run::fail without an error");
  if (abandoned())
    return;
  if (completed())
    throw std::logic_error("quern::async_run completed twice (done/end/fail)");
  error_ = std::move(err);
  complete(state::failed);
}

void async_client::take(const queue_actor& q, batch_cut cut, int32_t n,
                        std::function<void(element&)> f) {
  ++requests_pending_;
  if (std::find(asked_.begin(), asked_.end(), q) == asked_.end())
    asked_.push_back(q);
  if (meter_)
    meter_->waiting_for(q.id());
  auto on_answer = [this, q, f, batch = cut != batch_cut::any_size](element& e) mutable {
    if (answer_arrived(q, e, batch))
      guarded([&] { f(e); });
  };
  auto on_error = [this](caf::error& err) {
    if (answer_failed())
      fail(std::move(err));
  };
  switch (cut) {
  case batch_cut::any_size:
    self_->request(q, caf::infinite, dequeue_atom::value, wait_forever)
        .then(std::move(on_answer), std::move(on_error));
    break;
  case batch_cut::dequeue_many:
    self_->request(q, caf::infinite, dequeue_many_atom::value, n, wait_forever)
        .then(std::move(on_answer), std::move(on_error));
    break;
  case batch_cut::dequeue_up_to:
    self_->request(q, caf::infinite, dequeue_up_to_atom::value, n, wait_forever)
        .then(std::move(on_answer), std::move(on_error));
    break;
  }
}

void async_client::pull(const queue_actor& q, int32_t n, bool as_rows,
                        std::function<void(std::vector<element>&)> f) {
  if (on_pulled_)
    throw std::logic_error(as_rows
                               ? "quern::async_run::pull while a pull is pending"
                               : "quern::async_run::pull_batch while a pull is pending");
  on_pulled_ = [this, f](std::vector<element>& xs, caf::error& err) mutable {
    if (err)
      fail(std::move(err));
    else
      guarded([&] { f(xs); });
  };
  if (on_pull_)
    on_pull_(q);
  if (meter_)
    meter_->waiting_for(q.id());
  pull_from_ = q;
  pull_pending_ = true;
  pull_as_rows_ = as_rows;
  demand d;
  d.n = n;
  d.cut = batch_cut::any_size;
  d.as_rows = as_rows;
  self_->send(q, pull_atom::value, d);
}

void async_client::settle_if_abandoned() {
  if (!owed() && on_settled_)
    on_settled_();
}

bool async_client::answer_arrived(const queue_actor& q, const element& e, bool is_batch) {
  if (--requests_pending_ == 0)
    asked_.clear();
  taken_rows t;
  t.from = q;
  t.is_batch = is_batch;
  if (is_batch)
    t.batch = e;
  else
    t.rows.push_back(e);
  if (abandoned()) {
    std::vector<taken_rows> back;
    back.push_back(std::move(t));
    give_back_all(self_, back);
    settle_if_abandoned();
    return false;
  }
  taken_.push_back(std::move(t));
  if (meter_)
    meter_->to(activity::busy);
  return true;
}

bool async_client::answer_failed() {
  if (--requests_pending_ == 0)
    asked_.clear();
  if (abandoned()) {
    settle_if_abandoned();
    return false;
  }
  if (meter_)
    meter_->to(activity::busy);
  return true;
}

} // namespace detail

// -- async_run / blocking_run: the op's side ----------------------------------------

caf::event_based_actor* async_run::self() const noexcept {
  return client_->self();
}

uint64_t async_run::index() const noexcept {
  return client_->index();
}

bool async_run::should_stop() const noexcept {
  return client_->should_stop();
}

bool async_run::completed() const noexcept {
  return client_->completed();
}

void async_run::emit(element row) {
  client_->emit("emit", [&](detail::run_output& out) { out.add_row(std::move(row)); });
}

void async_run::emit_many(element batch) {
  client_->emit("emit_many",
                [&](detail::run_output& out) { out.add_batch(std::move(batch)); });
}

void async_run::emit(std::vector<element> rows) {
  client_->emit("emit", [&](detail::run_output& out) { out.add_rows(std::move(rows)); });
}

void async_run::if_refused(std::function<void()> take_back) {
  client_->emit("if_refused",
                [&](detail::run_output& out) { out.take_back = std::move(take_back); });
}

void async_run::done() {
  client_->done();
}

void async_run::end() {
  client_->end();
}

void async_run::fail(caf::error err) {
  client_->fail(std::move(err));
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

void async_run::take(const queue_actor& q, batch_cut cut, int32_t n, element_fn f) {
  client_->take(q, cut, n, std::move(f));
}

void async_run::pull_rows(const queue_actor& q, int32_t n,
                          std::function<void(std::vector<element>&)> f) {
  client_->pull(q, n, true, std::move(f));
}

void async_run::pull_one_batch(const queue_actor& q, int32_t n, element_fn f) {
  client_->pull(q, n, false, [f = std::move(f)](std::vector<element>& batches) mutable {
    f(batches.front());
  });
}

uint64_t blocking_run::index() const noexcept {
  return state_->index();
}

bool blocking_run::should_stop() const noexcept {
  return state_->should_stop();
}

void blocking_run::emit(element row) {
  state_->out().add_row(std::move(row));
}

void blocking_run::emit_many(element batch) {
  state_->out().add_batch(std::move(batch));
}

void blocking_run::emit(std::vector<element> rows) {
  state_->out().add_rows(std::move(rows));
}

void blocking_run::if_refused(std::function<void()> take_back) {
  state_->out().take_back = std::move(take_back);
}

void blocking_run::on_pause(std::function<void()> hurry) {
  state_->on_pause(std::move(hurry));
}

void blocking_run::before_pause(std::function<bool()> settle) {
  state_->before_pause(std::move(settle));
}

caf::timespan blocking_run::pause_limit() const noexcept {
  return state_->pause_limit();
}

void blocking_run::end() {
  state_->end();
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
