// The connecting side of quern/remote.hpp: the local endpoint that stands
// for a remote queue, coordinator or summary writer and fails every waiting
// call when its node is lost.
#include "internal.hpp"
#include "quern/detail/receipts.hpp"
#include "queue_passage.hpp"

#include <cmath>
#include <iostream>
#include <map>
#include <set>
#include <unordered_map>

#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace quern::remote_detail {

namespace {

template <class Handle>
struct endpoint_state {
  Handle remote;
  std::string what; // "queue 'q' on 127.0.0.1:7000"
  uint64_t next_id = 0;
  // Requests forwarded and not yet answered: CAF does not fail them when
  // the connection drops, so the endpoint does (on the remote's down_msg).
  std::unordered_map<uint64_t, caf::response_promise> pending;
  // Set when the remote was lost and the endpoint lingers (a writer's):
  // every later call fails with it.
  caf::error lost;
};

// The answers the callers of a remote queue's dequeues were handed, for the
// relay at the queue (remote_facade.cpp), which keeps each one until it is
// confirmed (taken) and gives back what was not if this process is lost. An
// answer counts as taken when its caller dequeues again (the call returned:
// its code has the rows) or when the endpoint ends with its remote_node.
// Confirmation is a count of answers in the order they came, so an answer
// that one caller still holds holds back those of the others: if the
// process is lost they are given back too, taken twice, never lost.
struct dequeue_receipts {
  detail::prefix_receipts answers;
  std::map<caf::actor_addr, std::vector<uint64_t>> held; // by caller, not taken
  std::set<caf::actor_addr> watched;                     // callers monitored

  void arrived_for(const caf::actor_addr& caller) {
    held[caller].push_back(answers.arrive(1));
  }
  /// `caller` calls again: what it was handed is taken.
  void called(const caf::actor_addr& caller) {
    auto i = held.find(caller);
    if (i == held.end())
      return;
    for (auto n : i->second)
      answers.release(n, 1);
    held.erase(i);
  }
  void all_taken() {
    answers.release_all();
    held.clear();
  }
};

struct queue_endpoint_state : endpoint_state<remote_queue_actor> {
  dequeue_receipts receipts;
  // Rows each caller was answered through this endpoint's dequeues and has
  // not given back through it. The queue takes back only rows it handed to
  // the sender of a give_back (queue_actor.cpp), and it handed these to this
  // endpoint's relay: a caller gives them back as this endpoint (an async
  // run's sources, run.cpp), the rest (what its pulls brought, through its
  // own relay) with its sender kept.
  std::unordered_map<caf::actor_addr, int64_t> dequeued;
  // Its consumers confirm what they take (receipts.hpp, confirms_taking).
  static inline const char* name = detail::remote_queue_endpoint_name;
};

using endpoint_ptr = remote_queue_actor::stateful_pointer<queue_endpoint_state>;
using coordinator_endpoint_ptr =
    coordinator_actor::stateful_pointer<endpoint_state<coordinator_actor>>;
using writer_endpoint_ptr =
    summary_writer_actor::stateful_pointer<endpoint_state<summary_writer_actor>>;

caf::error unreachable(caf::actor_system& sys, const std::string& what,
                       const caf::error& reason) {
  std::string why;
  if (reason == caf::exit_reason::remote_link_unreachable)
    why = "the connection to its node was lost: the process died, or was silent for "
          "longer than middleman.connection-timeout";
  else if (reason == caf::exit_reason::user_shutdown)
    why = "its node stopped serving it";
  else
    why = "it ended: " + sys.render(reason);
  return make_error(error_code::unavailable, what + " is unreachable (" + why + ")");
}

// Forwards one request and keeps its promise until the answer comes or the
// remote actor is lost (T: void for an empty answer); `on_answer` sees an
// answer that reaches its caller. No CAF timeout: the
// remote enforces the caller's own deadline, and node loss is what the
// endpoint watches for. A one-way message without an answer (T void) goes
// on one-way.
template <class T, class Self, class OnAnswer, class... Ts>
caf::typed_response_promise<T> relay_then(Self self, OnAnswer on_answer, Ts... xs) {
  auto rp = self->template make_response_promise<T>();
  if (self->state.lost) {
    rp.deliver(self->state.lost);
    return rp;
  }
  if constexpr (std::is_void_v<T>) {
    if (!is_request(self)) {
      self->send(self->state.remote, std::move(xs)...);
      return {};
    }
  }
  auto id = self->state.next_id++;
  self->state.pending.emplace(id, static_cast<caf::response_promise&>(rp));
  auto settle = [self, id](auto&& x) {
    auto i = self->state.pending.find(id);
    if (i == self->state.pending.end())
      return;
    auto p = std::move(i->second);
    self->state.pending.erase(i);
    p.deliver(std::move(x));
  };
  auto req = self->request(self->state.remote, caf::infinite, std::move(xs)...);
  auto fail = [settle](caf::error& err) { settle(std::move(err)); };
  if constexpr (std::is_void_v<T>)
    req.then([settle] { settle(caf::unit); }, fail);
  else
    req.then(
        [self, id, settle, on_answer](T& x) mutable {
          if (self->state.pending.count(id) > 0) // its caller still waits
            on_answer(x);
          settle(std::move(x));
        },
        fail);
  return rp;
}

template <class T, class Self, class... Ts>
caf::typed_response_promise<T> relay(Self self, Ts... xs) {
  return relay_then<T>(
      self, [](auto&) {}, std::move(xs)...);
}

// `caller` dequeues again, or ended: what it was handed is taken, and the
// relay at the queue is told how far that confirms the answers.
void caller_moved_on(endpoint_ptr self, const caf::actor_addr& caller) {
  auto& receipts = self->state.receipts;
  receipts.called(caller);
  uint64_t n = 0;
  if (!self->state.lost && receipts.answers.tell(n))
    self->send(self->state.remote, taken_atom::value, n);
}

// The rows of a dequeue's answer: one row, or a batch's.
int64_t rows_in(const element& x, bool batch) {
  if (!batch)
    return 1;
  if (x.components.empty() || x.components[0].shape().rank() == 0)
    return 0;
  return x.components[0].dim0();
}

// A dequeue of a remote queue: what the caller was handed before is taken,
// and this answer is counted when it comes. A caller is watched from its
// first answer, so that one that never calls again (a handle made for one
// dequeue) confirms what it got when it ends instead of holding back the
// others' confirmations for good.
template <class... Ts>
caf::typed_response_promise<element> relay_dequeue(endpoint_ptr self, bool batch,
                                                   Ts... xs) {
  auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
  caller_moved_on(self, caller);
  return relay_then<element>(
      self,
      [self, caller, batch](element& x) {
        if (caller)
          self->state.dequeued[caller] += rows_in(x, batch);
        auto& receipts = self->state.receipts;
        receipts.arrived_for(caller);
        if (!receipts.watched.insert(caller).second)
          return;
        if (auto alive = caf::actor_cast<caf::actor>(caller)) {
          self->monitor(alive);
        } else { // gone already: no down message will come
          receipts.watched.erase(caller);
          if (caller) // (caf::actor_addr's hash dereferences it)
            self->state.dequeued.erase(caller);
          caller_moved_on(self, caller);
        }
      },
      std::move(xs)...);
}

// A down message of something other than the remote: a queue endpoint's
// caller ended.
template <class Self>
void other_down(Self, const caf::down_msg&) {
  // nop
}

void other_down(endpoint_ptr self, const caf::down_msg& dm) {
  if (dm.source)
    self->state.dequeued.erase(dm.source);
  if (self->state.receipts.watched.erase(dm.source) > 0)
    caller_moved_on(self, dm.source);
}

// A caller gives back rows: as many as it was answered through this
// endpoint's dequeues go as this endpoint, first; the rest with their
// sender kept (rows its pulls brought, which its own relay at the queue was
// handed). Rows given back are done with: its answers are confirmed.
caf::result<void> give_back_rows(endpoint_ptr self, give_back_atom a,
                                 std::vector<element>& rows) {
  auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
  auto i = caller ? self->state.dequeued.find(caller) : self->state.dequeued.end();
  if (i == self->state.dequeued.end() || rows.empty())
    return self->delegate(self->state.remote, a, std::move(rows));
  auto mine = std::min<int64_t>(i->second, static_cast<int64_t>(rows.size()));
  i->second -= mine;
  if (i->second == 0)
    self->state.dequeued.erase(i);
  std::vector<element> rest(rows.begin() + mine, rows.end());
  rows.resize(static_cast<size_t>(mine));
  self->send(self->state.remote, a, std::move(rows));
  caller_moved_on(self, caller);
  if (rest.empty())
    return caf::result<void>{};
  return self->delegate(self->state.remote, a, std::move(rest));
}

// An endpoint whose remote_node is destroyed ends (a queue's confirms its
// dequeues' answers first, below).
template <class Self>
void end_endpoint(Self self, caf::error reason) {
  self->quit(std::move(reason));
}

void end_endpoint(endpoint_ptr self, caf::error reason) {
  auto& receipts = self->state.receipts;
  receipts.all_taken(); // the process goes on with what its callers got
  uint64_t n = 0;
  if (!receipts.answers.tell(n)) {
    self->quit(std::move(reason));
    return;
  }
  self->send(self->state.remote, taken_atom::value, n);
  // The relay at the queue learns of this end straight from the middleman,
  // which can overtake the confirmation on its way through the node's
  // facade and have it give back rows the callers took: one answered
  // request the same way makes sure it arrived first (as a reader's end
  // does, blocking_queue.cpp). A lost node ends the wait (down handler).
  self->request(self->state.remote, std::chrono::seconds{10}, size_atom::value)
      .then([self, reason](int32_t) { self->quit(reason); },
            [self, reason](caf::error&) { self->quit(reason); });
}

// The endpoint watches its remote actor: on its loss every pending call
// fails with unavailable and the endpoint ends with that error, so local
// monitors (readers, writers) see it go. One that `lingers` stays instead
// and fails every later call with that error, which names what was lost
// (a call to an ended actor would only learn CAF's request_receiver_down);
// it ends with its remote_node, whose end fails the calls still waiting
// (CAF answers no promise of an actor that ends: they would wait forever).
template <class Self, class Handle>
void watch_remote(Self self, Handle remote, std::string what, bool lingers = false) {
  self->state.remote = std::move(remote);
  self->state.what = std::move(what);
  self->monitor(self->state.remote);
  auto fail_pending = [self](const caf::error& err) {
    auto pending = std::move(self->state.pending);
    self->state.pending.clear();
    for (auto& kv : pending)
      kv.second.deliver(err);
  };
  self->set_down_handler([self, lingers, fail_pending](caf::down_msg& dm) {
    if (dm.source != self->state.remote.address()) {
      other_down(self, dm);
      return;
    }
    auto err = unreachable(self->home_system(), self->state.what, dm.reason);
    fail_pending(err);
    if (lingers)
      self->state.lost = err;
    else
      self->quit(err);
  });
  self->set_exit_handler([self, fail_pending](caf::exit_msg& msg) {
    auto err = make_error(error_code::unavailable,
                          self->state.what +
                              " is unreachable (its quern::remote_node was destroyed)");
    fail_pending(err);
    self->state.lost = std::move(err); // a call still coming fails at once
    end_endpoint(self, std::move(msg.reason));
  });
}

coordinator_actor::behavior_type
coordinator_endpoint_behavior(coordinator_endpoint_ptr self, coordinator_actor remote,
                              std::string what) {
  watch_remote(self, std::move(remote), std::move(what));
  return {
      [self](request_stop_atom a, caf::error& e) {
        return relay<bool>(self, a, std::move(e));
      },
      [self](should_stop_atom a) { return relay<bool>(self, a); },
      [self](wait_for_stop_atom a, caf::timespan t) { return relay<bool>(self, a, t); },
      [self](clear_stop_atom a) { return relay<bool>(self, a); },
      [self](register_atom a, std::vector<registration>& rs) {
        return relay<int32_t>(self, a, std::move(rs));
      },
      [self](join_atom a, std::vector<caf::actor>& xs, caf::timespan grace, bool live) {
        return relay<join_report>(self, a, std::move(xs), grace, live);
      },
      [self](status_atom a) { return relay<coordinator_status>(self, a); },
      [self](add_member_atom a, caf::actor& m, std::string& name) {
        return relay<bool>(self, a, std::move(m), std::move(name));
      },
      [self](members_atom a) { return relay<std::vector<registration>>(self, a); },
      // The coordinator's own timer messages; never meant for a peer.
      [](join_timeout_atom, uint64_t) {},
      [](wait_timeout_atom, uint64_t) {},
      [](join_warning_atom, uint64_t) {},
  };
}

remote_queue_actor::behavior_type
endpoint_behavior(endpoint_ptr self, remote_queue_actor remote, std::string what) {
  watch_remote(self, std::move(remote), std::move(what));
  // Streamed messages go on with their sender kept: the node's relay for
  // that reader or writer answers it directly, and its answers never pass
  // here.
  return queue_behavior<remote_queue_actor>([self](auto tag, auto a, auto&... xs) {
    using tag_t = decltype(tag);
    if constexpr (tag_t::how == passage::ask)
      return relay<typename tag_t::result>(self, a, std::move(xs)...);
    else if constexpr (tag_t::how == passage::dequeue)
      return relay_dequeue(self, answers_batch<decltype(a)>, a, xs...);
    else if constexpr (tag_t::how == passage::return_rows)
      return give_back_rows(self, a, xs...);
    else if constexpr (tag_t::how == passage::declaration) {
      // A queue runner's feeder messages (sent anonymously by its handle,
      // or by start()'s caller) go as this endpoint: its relay at the queue
      // ends when this process is lost, and the queue then forgets the
      // runners it declared (queues/src/feeders.hpp).
      self->send(self->state.remote, a, std::move(xs)...);
      return caf::result<void>{};
    } else
      return self->delegate(self->state.remote, a, std::move(xs)...);
  });
}

summary_writer_actor::behavior_type writer_endpoint_behavior(writer_endpoint_ptr self,
                                                             summary_writer_actor remote,
                                                             std::string what) {
  // Nothing local monitors it; the summary_writer handle's later calls
  // learn what was lost.
  watch_remote(self, std::move(remote), std::move(what), true);
  return {
      [self](add_scalars_atom a, std::vector<scalar_event>& batch) -> caf::result<void> {
        return relay<void>(self, a, std::move(batch));
      },
      [self](add_summary_atom a, std::vector<summary_value>& values, int64_t step)
          -> caf::result<void> { return relay<void>(self, a, std::move(values), step); },
      [self](add_summary_atom a, std::vector<summary_value>& values, int64_t step,
             double wall_time) -> caf::result<void> {
        // A bare double crosses through CAF's packing, which never returns
        // for an infinity (docs/fuzzing.md): refused here, before it is sent.
        if (!std::isfinite(wall_time)) {
          auto err = make_error(error_code::invalid_argument,
                                "add_summary to " + self->state.what +
                                    ": the wall time " + std::to_string(wall_time) +
                                    " is not finite, and cannot cross processes");
          if (!is_request(self))
            std::cerr << "quern: " << message_of(err) << "; the summary was dropped\n";
          return err;
        }
        return relay<void>(self, a, std::move(values), step, wall_time);
      },
      [self](add_events_atom a, std::vector<summary_event>& events) -> caf::result<void> {
        return relay<void>(self, a, std::move(events));
      },
      [self](writer_flush_atom a) { return relay<writer_status>(self, a); },
      [self](close_atom a) -> caf::result<void> { return relay<void>(self, a); },
      [self](writer_reopen_atom a) -> caf::result<void> { return relay<void>(self, a); },
      [self](writer_status_atom a) { return relay<writer_status>(self, a); },
      // The writer's own timer message; never meant for a peer.
      [](writer_tick_atom) {},
  };
}

} // namespace

summary_writer_actor spawn_writer_endpoint(caf::actor_system& sys,
                                           summary_writer_actor remote,
                                           std::string what) {
  return sys.spawn(writer_endpoint_behavior, std::move(remote), std::move(what));
}

queue_actor spawn_queue_endpoint(caf::actor_system& sys, queue_actor remote,
                                 std::string what) {
  auto endpoint = sys.spawn(endpoint_behavior,
                            caf::actor_cast<remote_queue_actor>(remote), std::move(what));
  return caf::actor_cast<queue_actor>(std::move(endpoint));
}

coordinator_actor spawn_coordinator_endpoint(caf::actor_system& sys,
                                             coordinator_actor remote, std::string what) {
  return sys.spawn(coordinator_endpoint_behavior, std::move(remote), std::move(what));
}

} // namespace quern::remote_detail
