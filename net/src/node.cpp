// The actor a node publishes on its port (quern/remote.hpp): it answers a
// peer's hello and hands out a facade for each lookup of what was exported
// by name. Not linked to anything, and deaf to exit messages until its
// server ends it: every peer holds it, and CAF lets a peer kill it.
#include "internal.hpp"

#include <unistd.h>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace quern::remote_detail {

namespace {

struct node_state {
  exports exported;
  std::string description;
  std::shared_ptr<facade_set> facades;
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

// The facade `spawn(actor)` makes for the entry `name` of `exported`, or
// failed_precondition naming what `kind`s are exported.
template <class Handle, class Spawn>
caf::result<Handle> lookup(node_ptr self, const std::map<std::string, Handle>& exported,
                           const std::string& name, const char* kind, Spawn spawn) {
  if (auto i = exported.find(name); i != exported.end()) {
    auto f = spawn(self->home_system(), i->second);
    self->state.facades->add(f.address());
    return f;
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
        auto sender = self->current_sender();
        auto f = spawn_coordinator_facade(self->home_system(), st.exported.coordinator,
                                          sender ? sender->node() : caf::node_id{});
        st.facades->add(f.address());
        return f;
      },
  };
}

} // namespace

void facade_set::add(const caf::actor_addr& a) {
  std::lock_guard<std::mutex> guard{mtx};
  facades.push_back(a);
}

void facade_set::end_all() {
  std::vector<caf::actor_addr> xs;
  {
    std::lock_guard<std::mutex> guard{mtx};
    xs.swap(facades);
  }
  for (auto& a : xs)
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
