// pipeline::telemetry (docs/input.md, "Where the pipeline waits";
// docs/semantics.md TL-1..TL-6): the figures the consumers and the runners'
// workers keep (runner/worker_meter.hpp), read over the span since the
// previous call, and the verdict drawn from them.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <caf/scoped_actor.hpp>

#include "pipeline_state.hpp"
#include "telemetry_members.hpp"

namespace quern {

namespace {

/// How long telemetry() waits for a queue's spec and counters.
constexpr auto ask_limit = std::chrono::seconds(5);

/// A queue as one reading sees it: its name, size and capacity, and what
/// its counters (TL-11) grew by over the span.
struct queue_info {
  std::string name;
  int32_t size = 0;
  int32_t capacity = 0;
  queue_stats delta;
  /// Which queue it is (TL-10): as the queue answered (empty: no answer).
  std::string node;
  uint64_t actor = 0;
};

/// Asks the queue for its counters (one round trip; its spec only when the
/// pipeline does not know its name yet) and moves its mark on. A queue that
/// does not answer within ask_limit is named by its actor id, size 0, its
/// mark kept.
queue_info ask_queue(caf::actor_system& sys, const consumer::state& st,
                     const queue_actor& q, detail::queue_mark& mark) {
  caf::scoped_actor self{sys};
  queue_info info;
  if (auto known = detail::known_name(st, q)) {
    info.name = *known;
  } else {
    info.name = "queue #" + std::to_string(q.id());
    self->request(q, ask_limit, spec_atom::value)
        .receive(
            [&](queue_spec& s) {
              info.name = checkpoint_name(s);
              detail::remember_name(st, q, info.name);
            },
            [](caf::error&) {});
  }
  self->request(q, ask_limit, queue_stats_atom::value)
      .receive(
          [&](queue_stats& now) {
            info.size = now.size;
            info.capacity = now.capacity;
            info.node = now.node;
            info.actor = now.actor;
            auto& d = info.delta;
            auto& before = mark.stats;
            d.enqueued_rows = now.enqueued_rows - before.enqueued_rows;
            d.dequeued_rows = now.dequeued_rows - before.dequeued_rows;
            d.enqueue_attempts = now.enqueue_attempts - before.enqueue_attempts;
            d.enqueue_wait_ns = now.enqueue_wait_ns - before.enqueue_wait_ns;
            d.dequeue_attempts = now.dequeue_attempts - before.dequeue_attempts;
            d.dequeue_wait_ns = now.dequeue_wait_ns - before.dequeue_wait_ns;
            before = now;
          },
          [](caf::error&) {});
  return info;
}

/// The mean wait of the span's attempts, in seconds (0 when none completed).
double mean_wait(int64_t wait_ns, int64_t attempts) {
  return attempts > 0
             ? static_cast<double>(wait_ns) * 1e-9 / static_cast<double>(attempts)
             : 0.0;
}

double share(int64_t ns, int64_t span) {
  return span > 0 ? static_cast<double>(ns) / static_cast<double>(span) : 0.0;
}

std::string micros(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f us", seconds * 1e6);
  return buf;
}

std::string percent(double x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f %%", 100.0 * x);
  return buf;
}

/// The verdict (TL-5): the consumer that waited most; if it waited less
/// than `kept_up` of its steps, the pipeline keeps up. Otherwise, from the
/// queue it dequeues from, upstream: the stage feeding a queue is the limit
/// unless its workers waited for input longer than they were busy and a
/// runner of this pipeline feeds that input, which is then looked at. A
/// stage that mostly waited for room kept its queue full: the stage below it
/// is the limit, or, below the first, the consumer's waits are its
/// dequeues' own cost.
void judge(pipeline_telemetry& t) {
  constexpr double kept_up = 0.10;
  std::map<std::string, queue_telemetry> queues;
  for (auto& q : t.queues)
    queues.emplace(q.name, q);
  const consumer_telemetry* c = nullptr;
  for (auto& x : t.consumers)
    if (x.dequeues > 0 && (!c || x.wait_fraction > c->wait_fraction))
      c = &x;
  if (!c) {
    t.verdict = "no consumer of the pipeline dequeued in the last " +
                std::to_string(static_cast<int64_t>(std::lround(t.span_seconds))) + " s";
    return;
  }
  auto fed =
      "the pipeline fed the trainer " + percent(1.0 - c->wait_fraction) + " of the time";
  auto feeding = [&](const std::string& q) {
    const runner_telemetry* best = nullptr;
    for (auto& r : t.runners)
      if (r.queue == q && (!best || r.busy > best->busy))
        best = &r;
    return best;
  };
  if (c->wait_fraction < kept_up) {
    t.verdict = fed + ": it keeps up";
    if (auto r = feeding(c->queue); r && r->waiting_for_room > 0.5)
      t.verdict += " (stage `" + r->name + "` waited for room " +
                   percent(r->waiting_for_room) +
                   " of its time: the trainer is the limit)";
    return;
  }
  auto q = c->queue;
  std::set<std::string> seen;
  const runner_telemetry* below = nullptr;
  for (;;) {
    auto r = feeding(q);
    if (!r) {
      t.verdict = fed + "; when it did not, queue `" + q +
                  "` was waiting for rows that no runner of this pipeline feeds";
      return;
    }
    seen.insert(r->name);
    if (r->waiting_for_room > r->busy && r->waiting_for_room > r->waiting_for_input) {
      if (!below) {
        t.verdict = fed + "; its dequeues took " + micros(c->wait_seconds / c->dequeues) +
                    " each while stage `" + r->name + "` waited for room " +
                    percent(r->waiting_for_room) +
                    " of its time: the wait is the dequeues' own cost, no stage "
                    "holds the trainer up";
        return;
      }
      r = below; // the stage below could not take what this one made
    } else {
      below = r;
    }
    bool upstream = r->waiting_for_input > r->busy && !r->input_queue.empty() &&
                    feeding(r->input_queue) && !seen.count(feeding(r->input_queue)->name);
    if (upstream) {
      q = r->input_queue;
      continue;
    }
    t.limiting_stage = r->name;
    t.verdict = fed + "; when it did not, stage `" + r->name + "` was busy " +
                percent(r->busy) + " of its time";
    if (r->waiting_for_input > 0.01)
      t.verdict += " and waited for input " + percent(r->waiting_for_input);
    if (auto in = queues.find(r->input_queue); in != queues.end())
      t.verdict +=
          ", its input queue `" + in->first + "` " + percent(in->second.fill) + " full";
    if (!r->straggler.empty())
      t.verdict += "; its slowest worker is `" + r->straggler + "`";
    return;
  }
}

/// What one reading of the figures works with: the span, the queues by
/// actor id (asked once each per reading; their marks moved on in `next`)
/// and their figures by name.
struct reading {
  reading(caf::actor_system& s, const consumer::state& state, detail::telemetry_marks& m)
      : sys(s), st(state), marks(m) {}
  caf::actor_system& sys;
  const consumer::state& st;
  detail::telemetry_marks& marks;
  std::map<caf::actor_id, detail::queue_mark> next; // the queues seen now
  int64_t span = 1;
  double seconds = 0;
  std::map<caf::actor_id, queue_info> infos;
  std::map<std::string, queue_telemetry> queues;

  queue_info& info(const queue_actor& q) {
    auto i = infos.find(q.id());
    if (i == infos.end()) {
      auto& mark = next[q.id()] = marks.queues[q.id()];
      i = infos.emplace(q.id(), ask_queue(sys, st, q, mark)).first;
    }
    return i->second;
  }
  std::string name_of(caf::actor_id id) const {
    auto i = infos.find(id);
    return id == 0 || i == infos.end() ? std::string{} : i->second.name;
  }
  double per_second(int64_t n) const { return static_cast<double>(n) / seconds; }
};

using worker_marks = detail::telemetry_marks::worker_map;

/// One worker's figures since `before` (TL-2).
worker_telemetry read_worker(reading& rd, const detail::worker_meter& m,
                             const detail::worker_reading& before,
                             const detail::worker_reading& now) {
  using detail::activity;
  auto d = [&](activity a) {
    auto i = static_cast<size_t>(a);
    return now.ns[i] - before.ns[i];
  };
  worker_telemetry w;
  w.name = m.name();
  w.busy = share(d(activity::busy), rd.span);
  w.waiting_for_input = share(d(activity::input), rd.span);
  w.waiting_for_room = share(d(activity::room), rd.span);
  w.rows_per_second = rd.per_second(now.rows_out - before.rows_out);
  w.runs = now.runs - before.runs;
  w.input_queue = rd.name_of(now.input);
  return w;
}

/// One runner's figures (TL-3): its workers', their means and its straggler.
runner_telemetry read_runner(reading& rd, const queue_runner& r, worker_marks& marks,
                             worker_marks& next) {
  runner_telemetry rt;
  rt.name = r.name();
  rt.queue = rd.info(r.queue()).name;
  size_t slowest = 0;
  std::set<std::string> inputs;
  for (auto& m : r.meters()->workers()) {
    auto now = m->read();
    auto w = read_worker(rd, *m, marks[m], now);
    next[m] = now;
    if (!w.input_queue.empty())
      inputs.insert(w.input_queue);
    if (!rt.workers.empty() && w.rows_per_second < rt.workers[slowest].rows_per_second)
      slowest = rt.workers.size();
    rt.busy += w.busy;
    rt.waiting_for_input += w.waiting_for_input;
    rt.waiting_for_room += w.waiting_for_room;
    rt.rows_per_second += w.rows_per_second;
    rt.workers.push_back(std::move(w));
  }
  if (!rt.workers.empty()) {
    auto n = static_cast<double>(rt.workers.size());
    rt.busy /= n;
    rt.waiting_for_input /= n;
    rt.waiting_for_room /= n;
  }
  if (inputs.size() == 1)
    rt.input_queue = *inputs.begin();
  if (rt.workers.size() > 1)
    rt.straggler = rt.workers[slowest].name;
  return rt;
}

/// One consumer's figures (TL-1).
consumer_telemetry read_consumer(reading& rd, const detail::consumer_meter& m,
                                 detail::consumer_meter::reading& before) {
  auto now = m.read();
  consumer_telemetry c;
  c.queue = rd.info(m.queue()).name;
  c.dequeues = now.dequeues - before.dequeues;
  c.rows = now.rows - before.rows;
  c.wait_seconds = static_cast<double>(now.wait_ns - before.wait_ns) * 1e-9;
  c.step_seconds = static_cast<double>(now.wall_ns - before.wall_ns) * 1e-9;
  c.wait_fraction = c.step_seconds > 0 ? c.wait_seconds / c.step_seconds : 0.0;
  before = now;
  return c;
}

} // namespace

namespace detail {

member_telemetry read_telemetry(caf::actor_system& sys, consumer::state& st,
                                telemetry_marks& marks) {
  std::vector<queue_runner> runners;
  std::vector<std::shared_ptr<consumer_meter>> consumers;
  {
    std::lock_guard<std::mutex> guard{st.mtx};
    runners = st.runners;
    consumers = st.consumer_meters;
  }
  member_telemetry out;
  out.node = caf::to_string(sys.node());
  reading rd{sys, st, marks};
  for (auto& r : runners)
    rd.info(r.queue());
  for (auto& c : consumers)
    rd.info(c->queue());
  auto& t = out.figures;
  auto now = steady_ns();
  rd.span = std::max<int64_t>(now - marks.span, 1);
  rd.seconds = static_cast<double>(rd.span) * 1e-9;
  marks.span = now;
  t.span_seconds = rd.seconds;
  // TL-4, TL-11: the queues' own counters, every producer and consumer of
  // them counted (of this process or another).
  for (auto& [id, qi] : rd.infos) {
    out.queues.push_back(queue_ref{qi.name, qi.node, qi.actor});
    auto& q = rd.queues[qi.name];
    q.name = qi.name;
    q.size = qi.size;
    q.capacity = qi.capacity;
    q.fill = qi.capacity > 0 ? static_cast<double>(qi.size) / qi.capacity : 0.0;
    if (!st.opts.telemetry)
      continue; // TL-7: the figures are zeros
    auto& d = qi.delta;
    q.enqueue_rate = rd.per_second(d.enqueued_rows);
    q.dequeue_rate = rd.per_second(d.dequeued_rows);
    q.enqueue_wait_seconds = mean_wait(d.enqueue_wait_ns, d.enqueue_attempts);
    q.dequeue_wait_seconds = mean_wait(d.dequeue_wait_ns, d.dequeue_attempts);
  }
  marks.queues = std::move(rd.next); // the queues of old starts are dropped
  telemetry_marks::worker_map next;  // the meters of old starts too
  for (auto& r : runners)
    t.runners.push_back(read_runner(rd, r, marks.workers, next));
  marks.workers = std::move(next);
  for (auto& m : consumers)
    t.consumers.push_back(read_consumer(rd, *m, marks.consumers[m]));
  for (auto& kv : rd.queues)
    t.queues.push_back(kv.second);
  if (!st.opts.telemetry)
    t.verdict = "telemetry is off (pipeline_options::telemetry)";
  return out;
}

} // namespace detail

pipeline_telemetry pipeline::telemetry() {
  auto& st = *state_;
  coordinator_actor coord;
  caf::actor self_member;
  {
    std::lock_guard<std::mutex> guard{st.mtx};
    coord = st.members_of;
    self_member = st.member;
  }
  // One reading at a time: each moves the marks the next one starts from.
  std::lock_guard<std::mutex> guard{st.telemetry_mtx};
  std::vector<detail::participant> all;
  all.push_back(detail::participant{{}, detail::read_telemetry(sys_, st, st.marks)});
  if (!st.opts.telemetry)
    return std::move(all.front().reading.figures);
  std::vector<std::string> missing;
  if (coord)
    detail::ask_members(sys_, coord, self_member, st.members_seen, all, missing);
  auto t = all.size() == 1 && missing.empty() ? std::move(all.front().reading.figures)
                                              : detail::merged_reading(all);
  judge(t);
  for (auto& m : missing)
    t.verdict += "; " + m;
  return t;
}

} // namespace quern
