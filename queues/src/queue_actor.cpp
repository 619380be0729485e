#include "quern/queue.hpp"

#include "quern/actor_system.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <queue>
#include <tuple>
#include <type_traits>
#include <unordered_set>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "deadlines.hpp"
#include "feeders.hpp"
#include "producer_marks.hpp"
#include "queue_core.hpp"

namespace quern {

namespace {

using detail::completion;
using detail::dequeue_attempt;
using detail::enqueue_attempt;

/// One queue actor: a thin shell that validates requests, turns them
/// into attempts of the shared core, arms deadlines and watches clients.
/// The queue's own interface: the public one, keyed enqueues (a producer
/// that retries, stored once: producer_marks.hpp), the wake-up of its
/// deadlines, which no other actor sends (deadlines.cpp), and the
/// starvation watch of pipeline consumers of this process (feeders.hpp).
using queue_impl_actor = queue_actor::extend_with<keyed_enqueue_actor>::extend_with<
    checkpoint_queue_actor>::extend<caf::reacts_to<deadline_atom, uint64_t>,
                                    caf::reacts_to<detail::starving_atom, caf::timespan>>;

class queue_impl : public queue_impl_actor::base {
public:
  queue_impl(caf::actor_config& cfg, queue_spec spec)
      : queue_impl_actor::base(cfg), core_(this, std::move(spec)) {}

  const char* name() const override { return "quern.queue"; }

  behavior_type make_behavior() override {
    set_exception_handler(keep_exception_message);
    set_down_handler([this](caf::down_msg& dm) {
      watched_.erase(dm.source);
      feeders_.client_down(dm.source);
      core_.client_down(dm.source);
    });
    return {
        [this](enqueue_atom, element& e, caf::timespan timeout) {
          return enqueue_element(e, timeout);
        },
        [this](enqueue_many_atom, element& batch, caf::timespan timeout) {
          return enqueue_batch(batch, timeout);
        },
        [this](dequeue_atom, caf::timespan timeout) {
          auto rp = make_response_promise<element>();
          add_strict(one_row(), rp, timeout);
          return rp;
        },
        [this](dequeue_many_atom, int32_t n, caf::timespan timeout) {
          return dequeue_many(batch_cut::dequeue_many, n, timeout);
        },
        [this](dequeue_up_to_atom, int32_t n, caf::timespan timeout) {
          return dequeue_many(batch_cut::dequeue_up_to, n, timeout);
        },
        [this](close_atom, bool cancel_pending_enqueues) {
          return close(cancel_pending_enqueues);
        },
        [this](size_atom) { return core_.size(); },
        [this](is_closed_atom) { return core_.is_closed(); },
        [this](spec_atom) { return core_.spec(); },
        [this](queue_stats_atom) { return core_.stats(); },
        [this](enqueue_keyed_atom, const batch_key& key, element& batch,
               caf::timespan timeout) {
          auto rp = make_response_promise<int32_t>();
          if (auto a = marks_.admit(core_, key, batch, rp))
            add(std::move(*a), rp, timeout);
          return rp;
        },
        [this](producer_mark_atom, const std::string& producer) {
          return marks_.position(producer);
        },
        [this](snapshot_atom) { return core_.snapshot(); },
        [this](restore_atom, queue_state& s) -> caf::result<bool> {
          try {
            core_.restore(std::move(s));
            return true;
          } catch (const op_error& e) {
            return e.to_error();
          }
        },
        [this](push_atom, std::vector<element>& rows) { push_rows(rows); },
        [this](push_batch_atom, std::vector<element>& batches) { push_batch(batches); },
        [this](pull_atom, const demand& d) { pull(d); },
        [this](give_back_atom, std::vector<element>& rows) { give_back(rows); },
        [this](unpull_atom) {
          core_.unpull(caf::actor_cast<caf::actor_addr>(current_sender()));
        },
        [this](unpush_atom) {
          core_.unpush(caf::actor_cast<caf::actor_addr>(current_sender()));
        },
        [this](deadline_atom, uint64_t) { expire_due(); },
        [this](barrier_atom, uint64_t token) { pass_barrier(token); },
        [this](feeder_atom, int32_t declared, int32_t started, caf::timespan timeout) {
          // Runners declared by an actor are its own, forgotten when it goes
          // down (a relay of a lost process); an anonymous declaration (a
          // runner of this process) is kept until it is dropped.
          auto sender = caf::actor_cast<caf::actor_addr>(current_sender());
          if (declared != 0)
            watch(sender);
          if (feeders_.update(sender, declared, started, timeout))
            last_feeder_ended();
        },
        [this](detail::starving_atom, caf::timespan limit) {
          feeders_.watch_next(caf::actor_cast<caf::actor_addr>(current_sender()), limit);
        },
    };
  }

  void on_exit() override {
    // Nobody waits forever on a queue that is gone.
    core_.shutdown();
    deadlines_.stop();
  }

private:
  caf::typed_response_promise<int32_t> enqueue_element(element& e,
                                                       caf::timespan timeout) {
    auto rp = make_response_promise<int32_t>();
    try {
      validate_enqueue(core_.spec(), e);
    } catch (const op_error& ex) {
      return rp.deliver(ex.to_error());
    }
    enqueue_attempt a;
    a.what = enqueue_attempt::op::enqueue;
    a.rows.push_back(std::move(e));
    a.total = 1;
    add(std::move(a), rp, timeout);
    return rp;
  }

  caf::typed_response_promise<int32_t> enqueue_batch(element& batch,
                                                     caf::timespan timeout) {
    auto rp = make_response_promise<int32_t>();
    int64_t rows = 0;
    try {
      rows = validate_enqueue_many(core_.spec(), batch);
    } catch (const op_error& ex) {
      return rp.deliver(ex.to_error());
    }
    if (rows == 0) // succeeds at once, even on a closed queue
      return rp.deliver(int32_t{0});
    enqueue_attempt a;
    a.what = enqueue_attempt::op::enqueue_many;
    a.rows.push_back(detail::row_run::batch(std::move(batch), rows));
    a.total = rows;
    add(std::move(a), rp, timeout);
    return rp;
  }

  caf::typed_response_promise<bool> close(bool cancel_pending_enqueues) {
    auto rp = make_response_promise<bool>();
    if (cancel_pending_enqueues) {
      core_.close_cancelling(completion::promise(rp));
      return rp;
    }
    enqueue_attempt a;
    a.what = enqueue_attempt::op::close;
    add(std::move(a), rp, wait_forever);
    return rp;
  }

  // Messages of one sender arrive in order: what it sent before the
  // barrier is here (RS-12).
  void pass_barrier(uint64_t token) {
    if (auto& sender = current_sender())
      sender->enqueue(caf::make_mailbox_element(caf::strong_actor_ptr{ctrl()},
                                                caf::make_message_id(), {},
                                                barrier_passed_atom::value, token),
                      context());
  }

  void push_rows(std::vector<element>& rows) {
    auto done = detail::completion::pushed_to(current_sender());
    try {
      for (auto& r : rows)
        validate_enqueue(core_.spec(), r);
    } catch (const op_error& ex) {
      done.deliver_count(this, 0, ex.to_error());
      return;
    }
    detail::row_list list;
    for (auto& r : rows)
      list.push_back(std::move(r));
    push(std::move(list), std::move(done));
  }

  // Every batch is validated before any is stored: one that does not fit
  // refuses the whole push, as a row does push's.
  void push_batch(std::vector<element>& batches) {
    auto done = detail::completion::pushed_to(current_sender());
    detail::row_list list;
    try {
      for (auto& b : batches)
        if (auto rows = validate_enqueue_many(core_.spec(), b); rows > 0)
          list.push_back(detail::row_run::batch(std::move(b), rows));
    } catch (const op_error& ex) {
      done.deliver_count(this, 0, ex.to_error());
      return;
    }
    push(std::move(list), std::move(done));
  }

  // Validated like an enqueue: a row that does not fit the spec would break
  // the storage (a shuffle or priority queue) or reach a consumer malformed.
  // And only rows the queue handed to this client come back: a client may
  // give back at most the rows answered to its dequeues and pulls that it
  // has not given back yet (a counter per client), so that nobody fills a
  // queue past its capacity this way. The rows that fit go back, the first
  // of them up to that count; the others are refused and said so, and the
  // queue goes on serving.
  void give_back(std::vector<element>& rows) {
    auto client = caf::actor_cast<caf::actor_addr>(current_sender());
    detail::row_list list;
    size_t refused = 0;
    std::string first_error;
    for (auto& r : rows) {
      try {
        validate_enqueue(core_.spec(), r);
        list.push_back(std::move(r));
      } catch (const op_error& ex) {
        if (refused++ == 0)
          first_error = ex.what();
      }
    }
    const auto& name = core_.spec().resource_name;
    if (refused > 0)
      std::cerr << "quern: " << name << " refused " << refused << " of " << rows.size()
                << " rows given back that do not fit it: " << first_error << '\n';
    auto owed = core_.handed_to_client(client);
    if (list.size() > owed) {
      std::cerr << "quern: " << name << " refused " << list.size() - owed << " of "
                << rows.size() << " rows given back by "
                << (client ? "a client" : "an anonymous sender") << " it had handed only "
                << owed
                << " rows not given back yet (give_back returns rows a consumer "
                   "received from this queue)\n";
      detail::row_list kept;
      list.move_front(owed, kept);
      list = std::move(kept);
    }
    core_.give_back(client, std::move(list));
  }

  // A streamed push: rows (or one batch) as one enqueue attempt, answered
  // with pushed(stored, error). Empty pushes complete at once.
  void push(detail::row_list rows, detail::completion done) {
    if (rows.empty()) {
      done.deliver_count(this, 0, caf::none);
      return;
    }
    enqueue_attempt a;
    a.what = enqueue_attempt::op::push;
    a.id = next_id_++;
    a.total = rows.size();
    // Stored whole when it fits (attempts.hpp): nothing per row.
    a.whole = a.total <= static_cast<int64_t>(core_.spec().capacity);
    a.rows = std::move(rows);
    a.client = caf::actor_cast<caf::actor_addr>(done.client());
    a.done = std::move(done);
    core_.add(std::move(a));
  }

  // dequeue(): one row, as soon as there is one.
  static demand one_row() {
    demand d;
    d.cut = batch_cut::any_size;
    d.as_rows = true;
    return d;
  }

  // Why a demand cannot be served, or none.
  caf::error check_demand(const demand& d) const {
    if (d.n <= 0 || d.count <= 0)
      return make_error(error_code::invalid_argument,
                        "pull needs a positive batch size and batch count, got " +
                            std::to_string(d.n) + " and " + std::to_string(d.count));
    auto cut = static_cast<uint8_t>(d.cut);
    if (cut > static_cast<uint8_t>(batch_cut::dequeue_up_to))
      return make_error(error_code::invalid_argument,
                        "pull names no batch cut: " + std::to_string(cut));
    if (d.as_rows && d.count != 1)
      return make_error(error_code::invalid_argument,
                        "a pull of rows asks for one batch, got " +
                            std::to_string(d.count));
    const auto& spec = core_.spec();
    if (d.as_rows || spec.shapes_specified())
      return caf::none;
    if (d.cut == batch_cut::any_size)
      return make_error(error_code::invalid_argument,
                        std::string(queue_kind_name(spec.kind)) +
                            "'s batch pulls require the components to have specified "
                            "shapes.");
    return make_error(error_code::invalid_argument,
                      detail::rules_of(spec.kind).unshaped_dequeue_many_error());
  }

  // A streamed demand, answered with pulled(xs, error), possibly several
  // times.
  void pull(const demand& d) {
    auto client = current_sender();
    auto done = completion::pulled_to(client);
    if (auto err = check_demand(d)) {
      done.deliver_error(this, std::move(err));
      return;
    }
    dequeue_attempt a;
    a.id = next_id_++;
    a.want = d;
    a.client = caf::actor_cast<caf::actor_addr>(client);
    watch(a.client);
    a.done = std::move(done);
    auto id = a.id;
    auto who = a.client;
    if (core_.add(std::move(a)))
      watch_starvation(id, who);
  }

  caf::typed_response_promise<element> dequeue_many(batch_cut cut, int32_t n,
                                                    caf::timespan timeout) {
    auto rp = make_response_promise<element>();
    const auto& spec = core_.spec();
    bool up_to = cut == batch_cut::dequeue_up_to;
    if (!spec.shapes_specified()) {
      // checked before anything else, even for n == 0 or a closed queue.
      return rp.deliver(
          make_error(error_code::invalid_argument,
                     detail::rules_of(spec.kind).unshaped_dequeue_many_error()));
    }
    if (n < 0)
      return rp.deliver(
          make_error(error_code::invalid_argument,
                     std::string(up_to ? "DequeueUpToOp" : "DequeueManyOp") +
                         " requested " + std::to_string(n) + " < 0 elements"));
    if (n == 0)
      return rp.deliver(detail::make_batch(spec, {}));
    demand d;
    d.n = n;
    d.cut = cut;
    add_strict(d, rp, timeout);
    return rp;
  }

  // A strict dequeue: the one-batch case of a demand.
  void add_strict(const demand& d, caf::typed_response_promise<element>& rp,
                  caf::timespan timeout) {
    dequeue_attempt a;
    a.want = d;
    add(std::move(a), rp, timeout);
  }

  template <class Attempt, class Promise>
  void add(Attempt a, Promise& rp, caf::timespan timeout) {
    a.id = next_id_++;
    // the requester is the promise's source; making the
    // promise moved it out of the current message, so current_sender() is
    // null here.
    a.client = caf::actor_cast<caf::actor_addr>(
        static_cast<caf::response_promise&>(rp).source());
    watch(a.client);
    a.done = completion::promise(rp);
    auto id = a.id;
    auto who = a.client;
    // the queue enforces the deadline and answers itself;
    // only attempts that have to wait need a timer (a consumer that always
    // passes a timeout would otherwise cost a timer per call).
    if (!core_.add(std::move(a)))
      return;
    if (timeout != wait_forever)
      deadlines_.arm(id, std::max(timeout, caf::timespan{0}));
    if constexpr (std::is_same<Attempt, dequeue_attempt>::value)
      watch_starvation(id, who);
  }

  // A waiting dequeue of a queue whose runners were all made and none
  // started (start_queue_runners forgotten, the most reported TensorFlow
  // hang) fails after the runners' starvation_timeout with a diagnosis
  // instead. A pipeline consumer's dequeue is watched on its own terms
  // (feeders.hpp): after its limit, and when the last runner ends.
  void watch_starvation(uint64_t id, const caf::actor_addr& client) {
    using kind = detail::deadlines::kind;
    if (auto limit = feeders_.watching(client, id)) {
      if (*limit != caf::timespan::max())
        deadlines_.arm(id, *limit, kind::watch);
    } else if (feeders_.never_started()) {
      deadlines_.arm(id, feeders_.starvation_timeout(), kind::starvation);
    }
  }

  // The last running runner ended without closing the queue (a close
  // answers every waiting dequeue): watched dequeues past their limit fail.
  void last_feeder_ended() {
    for (auto id : feeders_.take_overdue())
      core_.fail_waiting_dequeue(id, feeders_.unfed_error(core_.dequeue_name()));
  }

  void watch(const caf::actor_addr& client) {
    if (client && watched_.insert(client).second)
      monitor(client);
  }

  void expire_due() {
    deadlines_.expire_due([this](uint64_t id, detail::deadlines::kind k) {
      // Each is nothing if the attempt completed.
      if (k == detail::deadlines::kind::timeout)
        core_.expire(id);
      else if (auto err = feeders_.due(id, k == detail::deadlines::kind::watch,
                                       core_.dequeue_name()))
        core_.fail_waiting_dequeue(id, std::move(*err));
    });
  }

  detail::deadlines deadlines_{this};
  /// Queue runners made for this queue, started, ended (feeder_atom).
  detail::feeders feeders_;
  detail::queue_core core_;
  /// Producers that retry (enqueue_keyed).
  detail::producer_marks marks_;
  uint64_t next_id_ = 1;
  std::unordered_set<caf::actor_addr> watched_;
};

// -- shared queues (Q-90) -------------------------------------------------------

struct shared_entry {
  caf::weak_actor_ptr queue;
  queue_spec spec;
};

std::mutex shared_mtx;
std::map<std::pair<caf::actor_system*, std::string>, shared_entry> shared_queues;

} // namespace

bool detail::is_local_queue(const queue_actor& q) {
  return dynamic_cast<queue_impl*>(caf::actor_cast<caf::abstract_actor*>(q)) != nullptr;
}

/// A new queue actor, named in exit reports (quern::actor_system).
static queue_actor spawn_tracked(caf::actor_system& sys, const queue_spec& spec) {
  auto q = caf::actor_cast<queue_actor>(sys.spawn<queue_impl>(spec));
  detail::exit_watch::track(sys, caf::actor_cast<caf::actor>(q),
                            std::string(queue_kind_name(spec.kind)) + " '" +
                                spec.resource_name + "'");
  return q;
}

queue_actor spawn_queue(caf::actor_system& sys, queue_kind kind, queue_options opts) {
  auto spec = make_queue_spec(kind, std::move(opts));
  if (spec.resource_name.empty() || spec.resource_name.front() == '_')
    return spawn_tracked(sys, spec);
  // A shared queue lives as long as somebody holds it; the registry keeps a
  // weak reference only.
  std::lock_guard<std::mutex> guard{shared_mtx};
  auto key = std::make_pair(&sys, spec.resource_name);
  auto i = shared_queues.find(key);
  if (i != shared_queues.end()) {
    if (auto strong = i->second.queue.lock()) {
      detail::check_shared_queue(i->second.spec, spec);
      return caf::actor_cast<queue_actor>(std::move(strong));
    }
  }
  auto q = spawn_tracked(sys, spec);
  shared_queues[key] =
      shared_entry{caf::actor_cast<caf::weak_actor_ptr>(q), std::move(spec)};
  return q;
}

} // namespace quern
