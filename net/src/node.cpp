// The actor a node publishes on its port (quern/remote.hpp): it answers a
// peer's hello and hands out a facade for each lookup of what was exported
// by name, which ends once the peer's connection is gone. Not linked to
// anything, and deaf to exit messages until its server ends it: every peer
// holds it, and CAF lets a peer kill it.
#include "internal.hpp"

#include <unistd.h>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace quern::remote_detail {

namespace {

// Each connection a peer made its lookups over, as the middleman names it
// (the peer's host and port): facades made for the peer end once it is gone.
struct connection {
  std::string host;
  uint16_t port = 0;
  caf::actor presence; // ends when the connection does (peer_presence)
};

struct node_state {
  exports exported;
  std::string description;
  std::shared_ptr<facade_set> facades;
  std::map<caf::node_id, connection> peers;
};

// CAF 0.17.6 handles an exit message before any handler of the actor, and
// a kill (exit_reason::kill) cannot be trapped; its consume() is the one
// place to drop exits before that. An anonymous exit a peer sends carries
// the node's own address as its source, so no field of the message tells a
// peer's exit from this process's: the process's switch does.
class node_impl : public caf::stateful_actor<node_state, node_actor::base> {
public:
  using super = caf::stateful_actor<node_state, node_actor::base>;
  using super::super;

  caf::invoke_message_result consume(caf::mailbox_element& x) override {
    if (x.content().match_elements<caf::exit_msg>() && state.facades &&
        !state.facades->node_may_end.load())
      return caf::invoke_message_result::dropped;
    return super::consume(x);
  }
};

using node_ptr = node_impl*;

using peer_tick_atom = caf::atom_constant<caf::atom("q_ptick")>;

// How often a presence asks the middleman whether its connection stands.
constexpr auto presence_interval = std::chrono::seconds{1};

// Stands for one connection of a peer node (`host`:`port` as the middleman
// names it) and ends once the middleman no longer has it: the peer's process
// ended or was lost (CAF drops a silent peer after middleman.connection-timeout),
// or it connected again. The facades made for the peer watch it (CAF 0.17.6
// has no monitor of a node, and the actor that sent a lookup ends with it).
// Ends with the node too. Hidden: peers never learn of it.
caf::behavior peer_presence(caf::event_based_actor* self, node_actor node,
                            caf::node_id peer, std::string host, uint16_t port) {
  if (host.empty())
    return {}; // gone already: ends at once
  self->monitor(node);
  drop_monitors_at_end(self, {node.address()});
  self->set_down_handler([self](caf::down_msg&) { self->quit(); });
  self->delayed_send(self, presence_interval, peer_tick_atom::value);
  return {
      [=](peer_tick_atom) {
        auto again = [self] {
          self->delayed_send(self, presence_interval, peer_tick_atom::value);
        };
        self->request(transport(self->home_system()), std::chrono::seconds{5},
                      caf::get_atom::value, peer)
            .then(
                [=](const caf::node_id&, const std::string& h, uint16_t p) {
                  if (h != host || p != port)
                    self->quit();
                  else
                    again();
                },
                [=](caf::error&) { again(); }); // asked again at the next tick
      },
  };
}

// The presence of the connection `peer` has now (`host`:`port`): the one
// made for an earlier lookup over it, or a new one.
caf::actor presence_of(node_ptr self, const caf::node_id& peer, const std::string& host,
                       uint16_t port) {
  auto& c = self->state.peers[peer];
  if (c.presence && c.host == host && c.port == port)
    return c.presence;
  // A connection of its own: the one before, if any, ends on its own.
  c.host = host;
  c.port = port;
  c.presence = self->spawn<caf::hidden>(peer_presence, caf::actor_cast<node_actor>(self),
                                        peer, host, port);
  self->monitor(c.presence);
  return c.presence;
}

// Answers a lookup with `make(presence)`: the facade it makes, watching the
// presence of the connection the lookup came over, so that it ends when the
// peer is gone. A lookup from this process (a node that connected to
// itself) has none: its facade lasts until server::stop.
template <class Handle, class Make>
caf::result<Handle> for_sender(node_ptr self, Make make) {
  auto& sender = self->current_sender();
  if (!sender || sender->node() == self->node())
    return make(caf::actor{});
  auto peer = sender->node();
  auto rp = self->template make_response_promise<Handle>();
  // The middleman answers at once (a local actor); its error leaves the
  // facade without a presence, until server::stop.
  self->request(transport(self->home_system()), std::chrono::seconds{5},
                caf::get_atom::value, peer)
      .then(
          [=](const caf::node_id&, const std::string& host, uint16_t port) mutable {
            rp.deliver(make(presence_of(self, peer, host, port)));
          },
          [=](caf::error&) mutable { rp.deliver(make(caf::actor{})); });
  return rp;
}

// The facade `spawn(actor, presence)` makes for the entry `name` of
// `exported`, or failed_precondition naming what `kind`s are exported.
template <class Handle, class Spawn>
caf::result<Handle> lookup(node_ptr self, const std::map<std::string, Handle>& exported,
                           const std::string& name, const char* kind, Spawn spawn) {
  if (auto i = exported.find(name); i != exported.end()) {
    return for_sender<Handle>(
        self, [self, target = i->second, spawn](const caf::actor& presence) {
          auto f = spawn(self->home_system(), target, presence);
          self->state.facades->add(caf::actor_cast<caf::actor>(f));
          return f;
        });
  }
  std::string names;
  for (auto& kv : exported)
    names += (names.empty() ? "'" : ", '") + kv.first + "'";
  return make_error(error_code::failed_precondition,
                    std::string("no ") + kind + " named '" + name +
                        "' is exported (exported: " +
                        (names.empty() ? std::string("none") : names) + ")");
}

node_actor::behavior_type node_behavior(node_ptr self, exports exported,
                                        std::shared_ptr<facade_set> facades) {
  self->state.exported = std::move(exported);
  self->state.description = "quern node pid " + std::to_string(::getpid());
  self->state.facades = std::move(facades);
  // A presence that ended: its connection is gone.
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& peers = self->state.peers;
    for (auto i = peers.begin(); i != peers.end(); ++i)
      if (i->second.presence.address() == dm.source) {
        peers.erase(i);
        break;
      }
  });
  return {
      [self](hello_atom, uint32_t peer) -> caf::result<uint32_t, std::string> {
        if (peer != wire_version)
          return make_error(error_code::failed_precondition,
                            "this node speaks quern wire version " +
                                std::to_string(wire_version) + ", the peer " +
                                std::to_string(peer));
        return {wire_version, self->state.description};
      },
      [self](lookup_queue_atom, const std::string& name) {
        return lookup(self, self->state.exported.queues, name, "queue",
                      spawn_queue_facade);
      },
      [self](lookup_writer_atom, const std::string& name) {
        return lookup(self, self->state.exported.writers, name, "summary writer",
                      spawn_writer_facade);
      },
      [self](lookup_coordinator_atom) -> caf::result<coordinator_actor> {
        auto& st = self->state;
        if (!st.exported.coordinator)
          return make_error(error_code::failed_precondition,
                            "no coordinator is exported");
        auto& sender = self->current_sender();
        auto peer = sender ? sender->node() : caf::node_id{};
        return for_sender<coordinator_actor>(
            self, [self, peer](const caf::actor& presence) {
              auto f = spawn_coordinator_facade(
                  self->home_system(), self->state.exported.coordinator, peer, presence);
              self->state.facades->add(caf::actor_cast<caf::actor>(f));
              return f;
            });
      },
  };
}

} // namespace

void facade_set::add(const caf::actor& f) {
  auto id = f.id();
  {
    std::lock_guard<std::mutex> guard{mtx};
    facades.emplace(id, f.address());
  }
  // Run when the facade ends, in whichever thread ends it (at once if it
  // has ended already): its address goes, and with it the last hold on its
  // memory (an address keeps an ended actor's storage allocated).
  f->attach_functor([w = weak_from_this(), id] {
    if (auto self = w.lock()) {
      std::lock_guard<std::mutex> guard{self->mtx};
      self->facades.erase(id);
    }
  });
}

void facade_set::end_all() {
  std::map<caf::actor_id, caf::actor_addr> xs;
  {
    std::lock_guard<std::mutex> guard{mtx};
    xs.swap(facades);
  }
  for (auto& [id, a] : xs)
    if (auto f = caf::actor_cast<caf::actor>(a))
      caf::anon_send_exit(f, caf::exit_reason::user_shutdown);
}

void facade_set::end_node(const node_actor& node) {
  node_may_end = true;
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
}

node_actor spawn_node(caf::actor_system& sys, exports what,
                      std::shared_ptr<facade_set> facades) {
  return sys.spawn(node_behavior, std::move(what), std::move(facades));
}

} // namespace quern::remote_detail
