// The serving side of quern/remote.hpp: what a peer holds instead of a
// queue, the coordinator or a summary writer (the node hands them out,
// remote_node.cpp). No answer a peer sees comes from the exported actors
// themselves (CAF lets any peer send an untrappable exit_reason::kill to
// every actor whose address it learns), so a kill reaches at most what was
// made for that peer.
#include "internal.hpp"
#include "queue_passage.hpp"

#include "quern/blocking_queue.hpp" // detail::credit_ledger, detail::append_rows

#include <deque>
#include <iostream>

#include <caf/mailbox_element.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace quern::remote_detail {

namespace {

// A queue's answers to its streaming clients (docs/queues.md), which a
// relay passes on to its peer.
using client_relay_actor = remote_queue_actor::extend<
    caf::reacts_to<pushed_atom, int32_t, caf::error>,
    caf::reacts_to<barrier_passed_atom, uint64_t>,
    caf::reacts_to<pulled_atom, std::vector<element>, caf::error>>;

// -- one relay per client actor of a peer ------------------------------------------

// What a consumer of another process was sent and has not confirmed taking
// (taken, atoms.hpp), so that it can go back to the front of the queue if the
// consumer's process is lost: the units its pulls received (a reader), or the
// answers to its dequeues (a queue's endpoint, which confirms an answer when
// its caller dequeues again, remote_endpoint.cpp), or the units a queue
// runner's worker pulled (confirmed once a run's output was stored,
// runner_pipe.hpp). Only consumers that confirm are kept track of.
struct unconfirmed {
  bool tracking = false; // the client confirms what it takes
  bool as_rows = true;   // the shape of its demands (a reader keeps one)
  uint64_t confirmed = 0;
  // Sent and not confirmed, oldest first; `true` marks a batch (cut into
  // rows when given back).
  std::deque<std::pair<element, bool>> units;
  detail::credit_ledger owed; // its pulls not yet settled by the queue
  size_t dequeues = 0;        // its dequeues the queue has not answered yet
  bool draining = false;      // the client is gone; the queue answers unpull

  void sent(std::vector<element>& xs, const caf::error& err) {
    owed.answered(xs.size(), as_rows || err);
    if (tracking)
      for (auto& x : xs)
        units.emplace_back(x, !as_rows); // shares the buffers
  }
  /// The client asks for more: the queue owes it what `d` asks.
  void pulling(const demand& d) {
    as_rows = d.as_rows;
    owed.sent(static_cast<size_t>(d.as_rows ? d.n : d.count));
  }
  /// A dequeue's answer (a row, or a batch) handed to the client.
  void answered(element& x, bool batch) { units.emplace_back(x, batch); }
  void taken(uint64_t total) {
    tracking = true;
    while (confirmed < total && !units.empty()) {
      units.pop_front();
      ++confirmed;
    }
    confirmed = std::max(confirmed, total);
  }
  /// Nothing the queue still owes this client.
  bool settled() const { return owed.empty() && dequeues == 0; }
  std::vector<element> rows() {
    std::vector<element> out;
    for (auto& [x, batch] : units)
      detail::append_rows(out, std::move(x), batch);
    units.clear();
    return out;
  }
};

// The client's process is gone with units it never confirmed: they go back
// to the front of the queue, in order, and the host says so. Those its code
// took after the last confirmation that arrived here will be handed out
// again: one confirmation interval, or at most a window and an interval when
// a confirmation was still on its way (docs/distributed.md).
template <class Self>
void give_back_unconfirmed(Self self, const remote_queue_actor& q, unconfirmed& book) {
  auto rows = book.rows();
  if (rows.empty())
    return;
  std::cerr << "quern: a consumer of " << detail::exit_watch::name_of(q.address())
            << " was lost with " << rows.size()
            << " rows it had not confirmed taking; they went back to the front of "
               "the queue (those its code took since its last confirmation will be "
               "handed out again)\n";
  self->send(q, give_back_atom::value, std::move(rows));
}

// Once its client is lost, a relay ends when the queue owes it nothing more,
// after giving back what the client did not confirm. Whether it ended.
template <class Self>
bool end_if_drained(Self self, const remote_queue_actor& q, unconfirmed& book) {
  if (!book.draining || !book.settled())
    return false;
  give_back_unconfirmed(self, q, book);
  self->quit();
  return true;
}

// The relay ends with its queue, its facade or its client; a client lost
// with units it did not confirm has them given back first, once the queue
// has answered its withdrawn pulls.
template <class Self>
void watch_client(Self self, const remote_queue_actor& q,
                  const caf::strong_actor_ptr& client,
                  const std::shared_ptr<unconfirmed>& book) {
  self->set_down_handler([=](caf::down_msg& dm) {
    bool client_lost = client && dm.source == client->address();
    if (!client_lost || !book->tracking) {
      self->quit();
      return;
    }
    // Its pulls and dequeues still at the queue are withdrawn; their answers
    // (what was already on its way, then cancelled) are kept like the rest.
    book->draining = true;
    if (!end_if_drained(self, q, *book))
      self->send(q, unpull_atom::value);
  });
}

// A dequeue's answer is kept until the client confirms it (its endpoint
// does, when the caller dequeues again or the endpoint ends): a client lost
// before that has it given back, and one lost while the dequeue waits has it
// withdrawn (unpull) and what was on its way given back.
template <class Self, class... Ts>
caf::typed_response_promise<element> kept_dequeue(Self self, const remote_queue_actor& q,
                                                  std::shared_ptr<unconfirmed> book,
                                                  bool batch, Ts... xs) {
  book->tracking = true;
  ++book->dequeues;
  auto rp = self->template make_response_promise<element>();
  self->request(q, caf::infinite, xs...)
      .then(
          [=](element& x) mutable {
            --book->dequeues;
            book->answered(x, batch);
            rp.deliver(std::move(x));
            end_if_drained(self, q, *book);
          },
          [=](caf::error& err) mutable {
            --book->dequeues;
            rp.deliver(std::move(err));
            end_if_drained(self, q, *book);
          });
  return rp;
}

// Stands for one client actor of a peer (an endpoint, a reader, a writer) at
// the queue: the queue keys pending pulls and pushes by their sender and
// withdraws them when it goes down, so each client needs its own relay, which
// ends when its client does (its node lost) or the facade or queue ends. A
// consumer that confirms what it takes has what it did not confirm given
// back first.
client_relay_actor::behavior_type client_relay(client_relay_actor::pointer self,
                                               remote_queue_actor q,
                                               caf::strong_actor_ptr client,
                                               caf::actor facade) {
  auto book = std::make_shared<unconfirmed>();
  self->monitor(q);
  self->monitor(facade);
  if (client)
    self->monitor(caf::actor_cast<caf::actor>(client));
  drop_monitors_at_end(
      self, {q.address(), facade.address(), caf::actor_cast<caf::actor_addr>(client)});
  watch_client(self, q, client, book);
  ignore_remote_exits(self);
  // Enqueued directly: a typed actor may not send() to an untyped handle,
  // and the client may be any kind of actor (as the queue's completion does).
  auto back = [self, client](auto&&... xs) {
    if (client)
      client->enqueue(caf::make_mailbox_element(caf::strong_actor_ptr{self->ctrl()},
                                                caf::make_message_id(), {},
                                                std::forward<decltype(xs)>(xs)...),
                      self->context());
  };
  auto pass = [=](auto tag, auto a, auto&... xs) {
    using tag_t = decltype(tag);
    using R = typename tag_t::result;
    if constexpr (tag_t::how == passage::ask) {
      return ask<R>(self, q, a, std::move(xs)...);
    } else if constexpr (tag_t::how == passage::dequeue) {
      return kept_dequeue(self, q, book, answers_batch<decltype(a)>, a, xs...);
    } else if constexpr (tag_t::how == passage::receipt) {
      book->taken(xs...);
      return caf::result<void>{};
    } else {
      if constexpr (tag_t::how == passage::declaration) {
        // The queue keeps a runner's declaration until its sender goes
        // down; this relay of an anonymous sender never does. A peer's
        // runner speaks through its endpoint, which sends as itself.
        if (!client) {
          std::cerr << "quern: " << detail::exit_watch::name_of(q.address())
                    << " refused a feeder message of another process without a "
                       "sender: a queue runner's declaration must come from an "
                       "actor of its process (its queue's endpoint)\n";
          return caf::result<void>{};
        }
      }
      if constexpr (tag_t::how == passage::pull)
        book->pulling(xs...);
      // Streamed: sent as this relay, so the queue answers it (below). A
      // consumer confirms what it gives back after it (readers, workers):
      // until then it stays here, and one lost in between has it handed
      // out twice, never lost.
      self->send(q, a, std::move(xs)...);
      return caf::result<void>{};
    }
  };
  return queue_behavior<client_relay_actor>(
      pass,
      // The queue's answers to what this relay streamed.
      [=](pushed_atom a, int32_t n, caf::error& err) { back(a, n, std::move(err)); },
      [=](barrier_passed_atom a, uint64_t token) { back(a, token); },
      [=](pulled_atom a, std::vector<element>& xs, caf::error& err) {
        book->sent(xs, err);
        if (!book->draining)
          back(a, std::move(xs), std::move(err));
        end_if_drained(self, q, *book);
      });
}

// -- the facade a lookup hands out -------------------------------------------------

struct facade_state {
  remote_queue_actor queue;
  // The relay of each client actor of the peer; the anonymous sender too.
  std::map<caf::actor_addr, client_relay_actor> relays;
  // The presence of the peer's connection (remote_node.cpp); none for a
  // lookup from this process.
  caf::actor_addr presence;
  // The presence ended: the peer is gone, and the facade ends with its last
  // relay.
  bool peer_gone = false;
};

using facade_ptr = remote_queue_actor::stateful_pointer<facade_state>;

// Once the peer is gone: the relay of anonymous messages has no client to
// outlive and ends now (its pending attempts are withdrawn by the queue as
// for any relay), and the facade ends when no relay is left.
void end_if_unused(facade_ptr self) {
  auto& st = self->state;
  if (!st.peer_gone)
    return;
  if (auto i = st.relays.find(caf::actor_addr{}); i != st.relays.end())
    self->send_exit(i->second, caf::exit_reason::user_shutdown);
  if (st.relays.empty())
    self->quit();
}

client_relay_actor relay_of(facade_ptr self) {
  auto& src = self->current_sender();
  auto key = caf::actor_cast<caf::actor_addr>(src);
  auto& relays = self->state.relays;
  if (auto i = relays.find(key); i != relays.end())
    return i->second;
  auto r = self->spawn(client_relay, self->state.queue, src,
                       caf::actor_cast<caf::actor>(self));
  self->monitor(r);
  relays.emplace(key, r);
  if (!src)
    end_if_unused(self);
  return r;
}

// Every message goes to the relay of its sender, the sender kept (a
// delegation), so the relay answers the peer's client itself.
template <class... Ts>
auto pass(facade_ptr self, Ts&&... xs) {
  return self->delegate(caf::actor_cast<remote_queue_actor>(relay_of(self)),
                        std::forward<Ts>(xs)...);
}

// What a peer holds instead of the queue: one per lookup. Ending the facades
// at server::stop ends the service for every peer, whose endpoints see them
// go, while the queue lives on in its process. A facade whose peer is gone
// ends once its relays have (each ends when its client does, after giving
// back what that client did not confirm taking).
remote_queue_actor::behavior_type facade_behavior(facade_ptr self, remote_queue_actor q,
                                                  caf::actor presence) {
  self->state.queue = q;
  self->monitor(q);
  if (presence) {
    self->state.presence = presence.address();
    self->monitor(presence);
  }
  drop_monitors_at_end(self, {q.address(), presence.address()});
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source == st.queue.address()) {
      self->quit(dm.reason);
      return;
    }
    if (st.presence && dm.source == st.presence) {
      st.peer_gone = true;
      end_if_unused(self);
      return;
    }
    auto& relays = st.relays;
    for (auto i = relays.begin(); i != relays.end(); ++i)
      if (i->second.address() == dm.source) {
        relays.erase(i);
        break;
      }
    end_if_unused(self);
  });
  ignore_remote_exits(self);
  return queue_behavior<remote_queue_actor>(
      [=](auto, auto a, auto&... xs) { return pass(self, a, std::move(xs)...); });
}

// The coordinator's facade: its requests answered as the facade. (The
// coordinator's stop messages to remote runners it was given still come
// from the coordinator itself: docs/distributed.md, Limits.) The errors the
// peer reports and the actors it registers are placed at the peer's address
// as this node's middleman sees the connection (`remote-feeder@127.0.0.1:41237`),
// so that join's first error and its stragglers name their process.
coordinator_actor::behavior_type
coordinator_facade_behavior(coordinator_actor::pointer self, coordinator_actor c,
                            caf::node_id peer, caf::actor presence) {
  self->monitor(c);
  if (presence)
    self->monitor(presence); // the peer gone: nothing more to answer
  drop_monitors_at_end(self, {c.address(), presence.address()});
  self->set_down_handler([self](caf::down_msg& dm) { self->quit(dm.reason); });
  ignore_remote_exits(self);
  // Asked once, now: the peer's first report comes after its lookup is
  // answered, registers and runs, long after the answer (a local hop).
  auto where = std::make_shared<std::string>();
  if (peer && peer != self->node())
    self->request(transport(self->home_system()), std::chrono::seconds{5},
                  caf::get_atom::value, peer)
        .then(
            [where](const caf::node_id&, const std::string& host, uint16_t port) {
              if (!host.empty())
                *where = host + ":" + std::to_string(port);
            },
            [](caf::error&) {}); // unplaced, as in one process
  return {
      [=](request_stop_atom a, caf::error& e) {
        return ask<bool>(self, c, a, with_origin_at(std::move(e), *where));
      },
      [=](should_stop_atom a) { return ask<bool>(self, c, a); },
      [=](wait_for_stop_atom a, caf::timespan t) { return ask<bool>(self, c, a, t); },
      [=](clear_stop_atom a) { return ask<bool>(self, c, a); },
      [=](register_atom a, std::vector<registration>& rs) {
        for (auto& r : rs)
          r.name = placed_at(r.name, *where);
        return ask<int32_t>(self, c, a, std::move(rs));
      },
      [=](join_atom a, std::vector<caf::actor>& xs, caf::timespan grace, bool live) {
        return ask<join_report>(self, c, a, std::move(xs), grace, live);
      },
      [=](status_atom a) { return ask<coordinator_status>(self, c, a); },
      // A checkpoint member's name is its sections' name in the checkpoint
      // file: kept as the peer gives it.
      [=](add_member_atom a, caf::actor& m, std::string& name) {
        return ask<bool>(self, c, a, std::move(m), std::move(name));
      },
      [=](members_atom a) { return ask<std::vector<registration>>(self, c, a); },
      // The coordinator's own timer messages: a peer has no business sending them.
      [](join_timeout_atom, uint64_t) {},
      [](wait_timeout_atom, uint64_t) {},
      [](join_warning_atom, uint64_t) {},
  };
}

// The summary writer's facade: each add, flush, close, reopen and status
// goes on as this facade, a request as a request and a one-way add one-way
// (the writer keeps its error for the next request).
summary_writer_actor::behavior_type
writer_facade_behavior(summary_writer_actor::pointer self, summary_writer_actor w,
                       caf::actor presence) {
  self->monitor(w);
  if (presence)
    self->monitor(presence); // the peer gone: its adds arrived already
  drop_monitors_at_end(self, {w.address(), presence.address()});
  self->set_down_handler([self](caf::down_msg& dm) { self->quit(dm.reason); });
  ignore_remote_exits(self);
  return {
      [=](add_scalars_atom a, std::vector<scalar_event>& batch) -> caf::result<void> {
        return ask<void>(self, w, a, std::move(batch));
      },
      [=](add_summary_atom a, std::vector<summary_value>& values, int64_t step)
          -> caf::result<void> { return ask<void>(self, w, a, std::move(values), step); },
      [=](add_summary_atom a, std::vector<summary_value>& values, int64_t step,
          double wall_time) -> caf::result<void> {
        return ask<void>(self, w, a, std::move(values), step, wall_time);
      },
      [=](add_events_atom a, std::vector<summary_event>& events) -> caf::result<void> {
        return ask<void>(self, w, a, std::move(events));
      },
      [=](writer_flush_atom a) { return ask<writer_status>(self, w, a); },
      [=](close_atom a) -> caf::result<void> { return ask<void>(self, w, a); },
      [=](writer_reopen_atom a) -> caf::result<void> { return ask<void>(self, w, a); },
      [=](writer_status_atom a) { return ask<writer_status>(self, w, a); },
      // The writer's own timer message: a peer has no business sending it.
      [](writer_tick_atom) {},
  };
}

} // namespace

queue_actor spawn_queue_facade(caf::actor_system& sys, queue_actor q,
                               caf::actor presence) {
  // The queue serves keyed enqueues (keyed_enqueue_actor); taken stays with
  // the relays.
  auto facade =
      sys.spawn(facade_behavior, caf::actor_cast<remote_queue_actor>(std::move(q)),
                std::move(presence));
  return caf::actor_cast<queue_actor>(std::move(facade));
}

coordinator_actor spawn_coordinator_facade(caf::actor_system& sys, coordinator_actor c,
                                           caf::node_id peer, caf::actor presence) {
  return sys.spawn(coordinator_facade_behavior, std::move(c), std::move(peer),
                   std::move(presence));
}

summary_writer_actor spawn_writer_facade(caf::actor_system& sys, summary_writer_actor w,
                                         caf::actor presence) {
  return sys.spawn(writer_facade_behavior, std::move(w), std::move(presence));
}

} // namespace quern::remote_detail
