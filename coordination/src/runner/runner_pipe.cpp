#include "runner_pipe.hpp"

#include <chrono>
#include <iostream>
#include <memory>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

namespace quern::detail {

namespace {

bool has_code(const std::vector<error_code>& codes, const caf::error& e) {
  if (!e || e.category() != error_category)
    return false;
  return std::find(codes.begin(), codes.end(), code_of(e)) != codes.end();
}

bool is_clean_exit(const caf::error& reason) {
  if (!reason)
    return true;
  if (reason.category() == caf::atom("exit")) {
    auto r = static_cast<caf::exit_reason>(reason.code());
    return r == caf::exit_reason::normal || r == caf::exit_reason::user_shutdown ||
           r == caf::exit_reason::unreachable;
  }
  return false;
}

} // namespace

void upstream_receipts::pulling(caf::event_based_actor* self, const queue_actor& q) {
  auto [i, fresh] = queues_.try_emplace(q.address());
  if (!fresh)
    return;
  i->second.queue = q;
  i->second.receipts = receipts_to(q);
  i->second.confirms = static_cast<bool>(i->second.receipts);
  if (i->second.confirms)
    self->send(i->second.receipts, taken_atom::value, uint64_t{0});
}

uint64_t upstream_receipts::arrive(const queue_actor& q, uint64_t n) {
  auto i = queues_.find(q.address());
  if (i == queues_.end() || !i->second.confirms || n == 0)
    return 0;
  return i->second.units.arrive(n);
}

void upstream_receipts::tell(caf::event_based_actor* self, queue_receipts& qr) {
  uint64_t n = 0;
  if (qr.confirms && qr.units.tell(n))
    self->send(qr.receipts, taken_atom::value, n);
}

upstream_receipts::queue_receipts* upstream_receipts::mark(const queue_actor& q,
                                                           uint64_t first, uint64_t n) {
  if (first == 0 || n == 0 || !q)
    return nullptr;
  auto i = queues_.find(q.address());
  if (i == queues_.end() || !i->second.confirms)
    return nullptr;
  i->second.units.release(first, n);
  return &i->second;
}

void upstream_receipts::release(caf::event_based_actor* self, const queue_actor& q,
                                uint64_t first, uint64_t n) {
  if (auto* qr = mark(q, first, n))
    tell(self, *qr);
}

void upstream_receipts::release(caf::event_based_actor* self,
                                const std::vector<taken_rows>& ts) {
  for (auto& t : ts)
    mark(t.from, t.first_unit, t.units);
  for (auto& kv : queues_)
    tell(self, kv.second);
}

std::vector<queue_actor> upstream_receipts::told() const {
  std::vector<queue_actor> out;
  for (auto& kv : queues_)
    if (kv.second.confirms)
      out.push_back(kv.second.queue);
  return out;
}

bool is_reportable(const std::vector<error_code>& closed_codes, bool stopping,
                   const caf::error& reason) {
  if (is_clean_exit(reason) || has_code(closed_codes, reason))
    return false;
  return !(stopping && is(reason, error_code::cancelled));
}

void take_back_refused(push_pipe& p) {
  for (auto i = p.take_backs.rbegin(); i != p.take_backs.rend(); ++i) {
    try {
      i->second();
    } catch (const std::exception& e) {
      p.rows_dropped += i->first;
      std::cerr << "quern: " << p.name << " could not take back " << i->first
                << " refused row(s), counted as dropped: " << e.what() << std::endl;
    }
  }
  p.take_backs.clear();
}

void record_end(caf::actor_id self, push_pipe& p, const caf::error& reason) {
  if (p.ended)
    return;
  p.ended = true;
  take_back_refused(p);
  if (p.runner)
    caf::anon_send(p.runner, worker_end_atom::value, uint64_t{self}, p.rows_dropped,
                   reason);
}

void end_worker(caf::event_based_actor* self, push_pipe& p, caf::error reason) {
  if (p.ended)
    return;
  p.ended = true;
  take_back_refused(p);
  if (!p.runner) {
    self->quit(std::move(reason));
    return;
  }
  // Quits once the runner counted it; the last worker to run out of input
  // is answered once close_op is done (QR-6). A runner that is gone fails
  // the request; a user's close_op that never returns holds the last worker
  // as it holds TensorFlow's last thread (at exit the worker is named).
  auto quit = [self, reason] { self->quit(reason); };
  self->request(p.runner, caf::infinite, worker_end_atom::value, uint64_t{self->id()},
                p.rows_dropped, reason)
      .then([quit](bool) { quit(); }, [quit](caf::error&) { quit(); });
}

/// Quits once the worker is finishing and nothing is owed to it: no push
/// unacknowledged, and (`owed`) no answer of an upstream queue pending.
void try_finish(caf::event_based_actor* self, push_pipe& p, bool owed) {
  if (!p.finish || !p.pushes.empty() || owed || p.ending || p.ended)
    return;
  auto upstream = p.upstream.told();
  if (upstream.empty()) {
    end_worker(self, p, *p.finish);
    return;
  }
  // The queues of other processes it pulled from learn of its end straight
  // from the middleman, which can overtake its last confirmation: one
  // answered request the same way each makes sure that arrived first (as a
  // reader's end does). A lost node fails the request.
  p.ending = true;
  auto left = std::make_shared<size_t>(upstream.size());
  auto one_done = [self, &p, left] {
    if (--*left == 0)
      end_worker(self, p, *p.finish);
  };
  for (auto& q : upstream)
    self->request(q, std::chrono::seconds{10}, size_atom::value)
        .then([one_done](int32_t) { one_done(); },
              [one_done](caf::error&) { one_done(); });
}

/// The worker ends with `reason` (a stop or an error): pushes still pending
/// are withdrawn, so that the worker learns at once which rows the queue
/// did not take (and gives their sources back) instead of waiting on a full
/// queue. The first reason is kept.
void wind_down(caf::event_based_actor* self, push_pipe& p, caf::error reason) {
  if (!p.finish)
    p.finish = std::move(reason);
  if (!p.pushes.empty() && !p.withdrawn) {
    p.withdrawn = true;
    self->send(p.queue, unpush_atom::value);
  }
}

/// A run failed. A queue-closed code is the end of the input: the rows
/// pushed before are still stored, as after end(). Any other error winds
/// the worker down.
void run_failed(caf::event_based_actor* self, push_pipe& p, caf::error err) {
  if (has_code(p.closed_codes, err)) {
    if (!p.finish)
      p.finish = std::move(err);
  } else {
    wind_down(self, p, std::move(err));
  }
}

/// Schedules the next run if the pipe has room for it and none is
/// scheduled (always through the mailbox, so that a pending stop is seen
/// first and the stack does not grow).
void schedule_run(caf::event_based_actor* self, push_pipe& p) {
  if (p.may_run() && !p.run_scheduled) {
    p.run_scheduled = true;
    self->send(self, worker_run_atom::value);
  }
}

int64_t output_rows(run_output& out) {
  int64_t rows = 0;
  for (auto& piece : out.pieces())
    rows += piece.is_batch ? piece.batch.batch_size()
                           : static_cast<int64_t>(piece.rows.size());
  return rows;
}

namespace {

/// A run's rows as one push, so that the queue stores them whole or refuses
/// them whole (a push that fits its capacity, docs/queues.md "What a stop
/// keeps"): one streamed push of rows, one push_batch of its batches, or,
/// for a run that emitted both, its batches split into rows (views, no
/// copy) among the others, in order.
void push_run(caf::event_based_actor* self, push_pipe& p, run_output& out) {
  auto& pieces = out.pieces();
  bool batches = true;
  for (auto& piece : pieces)
    batches = batches && piece.is_batch;
  auto rows = output_rows(out);
  p.pushes.push_back(rows);
  if (pieces.size() == 1 && !batches) {
    self->send(p.queue, push_atom::value, std::move(pieces.front().rows));
    return;
  }
  std::vector<element> xs;
  if (batches) {
    xs.reserve(pieces.size());
    for (auto& piece : pieces)
      xs.push_back(std::move(piece.batch));
    self->send(p.queue, push_batch_atom::value, std::move(xs));
    return;
  }
  xs.reserve(static_cast<size_t>(rows));
  for (auto& piece : pieces) {
    if (piece.is_batch) {
      auto n = piece.batch.batch_size();
      for (int64_t i = 0; i < n; ++i)
        xs.push_back(piece.batch.row(i));
    } else {
      for (auto& row : piece.rows)
        xs.push_back(std::move(row));
    }
  }
  self->send(p.queue, push_atom::value, std::move(xs));
}

} // namespace

/// After a run: push its rows, then end or schedule the next run (always
/// through the mailbox, so that a pending stop is seen first and the stack
/// does not grow).
void after_run(caf::event_based_actor* self, push_pipe& p, run_output& out, bool ended,
               std::vector<taken_rows> sources) {
  if (!out.empty()) {
    push_pipe::run_in_flight r;
    r.sources = std::move(sources);
    r.take_back = std::move(out.take_back);
    p.runs_in_flight.push_back(std::move(r));
    push_run(self, p, out);
  } else { // the run consumed its sources (a filter) or had none
    p.upstream.release(self, sources);
  }
  out.clear();
  if (p.meter) {
    p.meter->add_run();
    // A full window: the next run waits for the queue's room.
    p.meter->to(static_cast<int32_t>(p.pushes.size()) < p.window ? activity::idle
                                                                 : activity::room);
  }
  if (ended && !p.finish)
    p.finish = caf::error{};
  else if (!p.finish && p.max_runs > 0 && p.runs >= p.max_runs)
    p.finish = caf::make_error(caf::exit_reason::user_shutdown);
  if (p.finish) {
    try_finish(self, p, false);
    return;
  }
  schedule_run(self, p);
}

/// A run's push was acknowledged: if the queue refused all of it, its
/// sources go back; rows refused that cannot go back are counted.
void settle(caf::event_based_actor* self, push_pipe& p, push_pipe::run_in_flight& r) {
  if (r.refused > 0) {
    if (r.stored == 0 && !r.sources.empty())
      give_back_all(self, r.sources);
    else if (r.stored == 0 && r.take_back)
      p.take_backs.emplace_back(r.refused, std::move(r.take_back));
    else
      p.rows_dropped += r.refused;
  }
  // Stored, dropped or sent back: done with (after the give-back, so that a
  // process lost in between has them handed out twice, not lost).
  p.upstream.release(self, r.sources);
}

/// A push was acknowledged. Returns false if the worker is to end.
void on_pushed(caf::event_based_actor* self, push_pipe& p, int32_t stored,
               caf::error& err) {
  if (p.pushes.empty() || p.runs_in_flight.empty())
    return; // not ours (cannot happen: one sender, one queue)
  auto rows = p.pushes.front();
  p.pushes.pop_front();
  if (p.meter) {
    p.meter->add_rows_out(stored);
    if (p.meter->is(activity::room))
      p.meter->to(activity::idle);
  }
  auto& r = p.runs_in_flight.front();
  r.stored = stored;
  if (err)
    r.refused = std::max<int64_t>(rows - stored, 0);
  settle(self, p, r);
  p.runs_in_flight.pop_front();
  if (err)
    wind_down(self, p, std::move(err));
}

/// The worker's queue went down: no pending push will be answered.
void on_queue_down(caf::event_based_actor* self, push_pipe& p) {
  int64_t lost = 0;
  for (auto n : p.pushes)
    lost += n;
  p.rows_dropped += lost;
  p.pushes.clear();
  for (auto& r : p.runs_in_flight)
    p.upstream.release(self, r.sources); // gone with the queue
  p.runs_in_flight.clear();
  wind_down(self, p,
            make_error(error_code::cancelled, "the queue of " + p.name + " is gone"));
}

} // namespace quern::detail
