// quern::connect and quern::remote_node (quern/remote.hpp).
#include "internal.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>
#include <thread>

#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/system_messages.hpp>

#include "quern/actor_system.hpp"

namespace quern {

using namespace remote_detail;

// -- remote_node ---------------------------------------------------------------------

struct remote_node::impl {
  caf::actor_system* sys;
  std::string address;
  std::string description;
  node_actor node;
  std::chrono::milliseconds timeout;
  // queue(), coordinator() and writer() may be called by several threads.
  std::mutex mtx;
  std::map<std::string, queue_actor> endpoints;
  coordinator_actor coordinator;
  std::map<std::string, summary_writer_actor> writers;
  // Ends the process when the node is lost (connect_options::exit_status_on_loss).
  caf::actor loss_watch;

  ~impl() {
    if (loss_watch)
      caf::anon_send_exit(loss_watch, caf::exit_reason::user_shutdown);
    for (auto& kv : endpoints)
      caf::anon_send_exit(kv.second, caf::exit_reason::user_shutdown);
    if (coordinator)
      caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
    for (auto& kv : writers)
      caf::anon_send_exit(kv.second, caf::exit_reason::user_shutdown);
  }
};

remote_node::remote_node(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
remote_node::remote_node(remote_node&&) noexcept = default;
remote_node& remote_node::operator=(remote_node&&) noexcept = default;
remote_node::~remote_node() = default;

const std::string& remote_node::address() const noexcept {
  return impl_->address;
}

const std::string& remote_node::description() const noexcept {
  return impl_->description;
}

namespace {

// Asks `node` for what `xs` look up (`what`: "queue 'q'") within `timeout`
// and spawns its local endpoint with `spawn`. Throws as connect does.
template <class Handle, class Spawn, class... Ts>
Handle endpoint_of(caf::actor_system& sys, const node_actor& node,
                   std::chrono::milliseconds timeout, const std::string& address,
                   const std::string& what, Spawn spawn, Ts... xs) {
  caf::scoped_actor self{sys};
  Handle remote;
  caf::error err;
  self->request(node, timeout, xs...)
      .receive([&](Handle& h) { remote = std::move(h); },
               [&](caf::error& e) { err = std::move(e); });
  if (err)
    throw_op(connect_error(sys, address, err, timeout));
  if (!remote)
    throw_op(failed_precondition_error(address + ": " + what +
                                       " came back as an invalid handle"));
  auto full = what + " on " + address;
  auto endpoint = spawn(sys, remote, full);
  detail::exit_watch::track(sys, caf::actor_cast<caf::actor>(endpoint),
                            "the endpoint of " + full +
                                " (its quern::remote_node is still alive)");
  return endpoint;
}

} // namespace

queue_actor remote_node::queue(const std::string& name) {
  auto& st = *impl_;
  std::lock_guard<std::mutex> guard{st.mtx};
  if (auto i = st.endpoints.find(name); i != st.endpoints.end())
    return i->second;
  auto endpoint = endpoint_of<queue_actor>(*st.sys, st.node, st.timeout, st.address,
                                           "queue '" + name + "'", spawn_queue_endpoint,
                                           lookup_queue_atom::value, name);
  st.endpoints.emplace(name, endpoint);
  return endpoint;
}

coordinator_actor remote_node::coordinator() {
  auto& st = *impl_;
  std::lock_guard<std::mutex> guard{st.mtx};
  if (!st.coordinator)
    st.coordinator = endpoint_of<coordinator_actor>(
        *st.sys, st.node, st.timeout, st.address, "the coordinator",
        spawn_coordinator_endpoint, lookup_coordinator_atom::value);
  return st.coordinator;
}

summary_writer_actor remote_node::writer(const std::string& name) {
  auto& st = *impl_;
  std::lock_guard<std::mutex> guard{st.mtx};
  if (auto i = st.writers.find(name); i != st.writers.end())
    return i->second;
  auto endpoint = endpoint_of<summary_writer_actor>(
      *st.sys, st.node, st.timeout, st.address, "summary writer '" + name + "'",
      spawn_writer_endpoint, lookup_writer_atom::value, name);
  st.writers.emplace(name, endpoint);
  return endpoint;
}

namespace {

// A handshake the peer cut this many times in a row is a refusal, not a
// heartbeat tick that overtook it (ticks are a second apart).
constexpr int refusals_before_giving_up = 3;

op_error refused_error(caf::actor_system& sys, const std::string& address) {
  if (!uses_tls(sys))
    return unauthenticated_error(
        address +
        " closed the connection during the handshake: it is a node with TLS, "
        "which refuses peers without it (quern::enable_tls), or not a quern node");
  auto& cfg = sys.config();
  return unauthenticated_error(
      "the TLS handshake with " + address +
      " failed: one side refused the other's certificate (mutual authentication: this "
      "node presents '" +
      cfg.openssl_certificate + "' and trusts the CA file '" + cfg.openssl_cafile +
      "'; a certificate of another CA, or one outside its validity dates by the other "
      "machine's clock), or it is a node without TLS, or not a quern node");
}

struct published_node {
  caf::strong_actor_ptr ptr;
  std::set<std::string> ifs;
};

// CAF's connect through the middleman actor (plain or TLS), bounded by
// `deadline`, never CAF's blocking remote_actor, which has no timeout.
published_node caf_connect(caf::actor_system& sys, const std::string& address,
                           const std::string& host, uint16_t port,
                           std::chrono::milliseconds timeout,
                           steady::time_point deadline) {
  auto left = [&] {
    return std::chrono::duration_cast<caf::timespan>(deadline - steady::now());
  };
  caf::scoped_actor self{sys};
  auto mm = transport(sys);
  published_node result;
  int refusals = 0;
  for (;;) {
    if (left() <= caf::timespan{0})
      throw_op(connect_error(sys, address, caf::sec::request_timeout, timeout));
    caf::error err;
    self->request(mm, left(), caf::connect_atom_v, host, port)
        .receive(
            [&](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>& xs) {
              result.ptr = std::move(ptr);
              result.ifs = std::move(xs);
            },
            [&](caf::error& e) { err = std::move(e); });
    if (!err)
      return result;
    // The door closed the connection: the port's answer claims a message
    // no quern node sends.
    if (auto why = door_refusal(sys, host + ":" + std::to_string(port)); !why.empty())
      throw_op(failed_precondition_error(address + " is not a quern node: " + why));
    // CAF's TLS client makes its first handshake step at once: when the
    // peer's answer is already there and one side refuses the other's
    // certificate in it, CAF says cannot_connect_to_node, as for a closed
    // port. A port that accepts a plain connection makes it a refusal.
    if (err == caf::sec::cannot_connect_to_node && uses_tls(sys) &&
        accepts_tcp(
            host, port,
            std::min<std::chrono::milliseconds>(
                std::chrono::seconds{1},
                std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left()),
                         std::chrono::milliseconds{0}))))
      err = caf::sec::disconnect_during_handshake;
    // With heartbeats on, CAF cuts a handshake that a heartbeat tick
    // overtakes (the endpoint looks silent since the epoch), and a peer
    // that is frozen fails this way at every tick: try again until the
    // deadline says no. A peer that cuts every handshake at once refuses
    // this node (TLS, or its lack).
    if (err == caf::sec::disconnect_during_handshake &&
        ++refusals >= refusals_before_giving_up)
      throw_op(refused_error(sys, address));
    if (err == caf::sec::connection_timeout ||
        err == caf::sec::disconnect_during_handshake) {
      std::this_thread::sleep_for(std::min<caf::timespan>(
          std::chrono::milliseconds{20}, std::max(left(), caf::timespan{0})));
      continue;
    }
    throw_op(connect_error(sys, address, err, timeout));
  }
}

// quern's own version check beside CAF's application identifiers; the
// node's description.
std::string hello(caf::actor_system& sys, const node_actor& node,
                  const std::string& address, std::chrono::milliseconds timeout,
                  steady::time_point deadline) {
  caf::scoped_actor self{sys};
  auto left = std::chrono::duration_cast<caf::timespan>(deadline - steady::now());
  uint32_t peer_version = 0;
  std::string description;
  caf::error err;
  self->request(node, std::max(left, caf::timespan{1}), hello_atom::value, wire_version)
      .receive(
          [&](uint32_t v, std::string& d) {
            peer_version = v;
            description = std::move(d);
          },
          [&](caf::error& e) { err = std::move(e); });
  if (err)
    throw_op(connect_error(sys, address, err, timeout));
  if (peer_version != wire_version)
    throw_op(failed_precondition_error(address + " speaks quern wire version " +
                                       std::to_string(peer_version) + ", this build " +
                                       std::to_string(wire_version)));
  return description;
}

// connect_options::exit_status_on_loss: stops the runners, ends quern's
// actors (writers close their files), waits at most the exit grace, exits.
[[noreturn]] void end_process(caf::actor_system& sys, const std::string& why,
                              int status) {
  std::cerr << "quern: " << why << "; this process ends with status " << status
            << " (connect_options::exit_status_on_loss)" << std::endl;
  detail::exit_watch::shut_down(sys);
  caf::timespan grace = std::chrono::seconds{2};
  if (auto* qs = dynamic_cast<quern::actor_system*>(&sys))
    grace = qs->exit_grace();
  auto deadline = steady::now() + grace;
  while (detail::exit_watch::alive(sys) > 0 && steady::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  // Not exit(): the process's own threads still use what static
  // destructors would destroy.
  std::_Exit(status);
}

// Watches the node actor; its loss (its process, its connection or its
// server's stop: no peer can end it) ends the process, from a thread of its
// own (the end blocks). Ends quietly with its remote_node.
caf::behavior loss_watch(caf::event_based_actor* self, node_actor node,
                         std::string address, int status) {
  self->monitor(node);
  self->set_down_handler([self, address, status](caf::down_msg& dm) {
    auto why = "the quern node at " + address + " was lost (" +
               self->system().render(dm.reason) + ")";
    std::thread{[sys = &self->system(), why, status] {
      end_process(*sys, why, status);
    }}.detach();
    self->quit();
  });
  return {[](const std::string&) {}}; // nothing to answer; it only watches
}

} // namespace

remote_node connect(caf::actor_system& sys, const std::string& address,
                    connect_options opts) {
  auto [host, port] = detail::parse_address(address);
  require_middleman(sys, "quern::connect");
  if (opts.timeout <= std::chrono::milliseconds{0})
    throw invalid_argument_error("quern::connect to " + address +
                                 " needs a positive timeout, got " +
                                 std::to_string(opts.timeout.count()) + " ms");
  // An exit status is one byte: 256 would end the process with 0, success.
  if (opts.exit_status_on_loss < 0 || opts.exit_status_on_loss > 255)
    throw invalid_argument_error("quern::connect to " + address +
                                 ": exit_status_on_loss must be 0 to 255, got " +
                                 std::to_string(opts.exit_status_on_loss));
  if (uses_tls(sys))
    check_tls_files(sys.config(), "quern::connect to " + address);
  if (opts.max_message_bytes < 1024)
    throw invalid_argument_error("quern::connect to " + address +
                                 ": max_message_bytes must be at least 1024, got " +
                                 std::to_string(opts.max_message_bytes));
  door_expect(sys, host + ":" + std::to_string(port), opts.max_message_bytes);
  auto deadline = steady::now() + opts.timeout;
  auto published = caf_connect(sys, address, host, port, opts.timeout, deadline);
  if (!published.ptr)
    throw_op(failed_precondition_error(
        address + " is not a quern node: no actor is published there"));
  if (!sys.assignable<node_actor>(published.ifs))
    throw_op(failed_precondition_error(address + " is not a quern node of " +
                                       wire_identifier() +
                                       ": its published actor has another interface"));
  auto node = caf::actor_cast<node_actor>(published.ptr);
  auto description = hello(sys, node, address, opts.timeout, deadline);
  auto p = std::make_unique<remote_node::impl>();
  p->sys = &sys;
  p->address = address;
  p->description = std::move(description);
  p->node = std::move(node);
  p->timeout = opts.timeout;
  if (opts.exit_status_on_loss != 0)
    p->loss_watch =
        sys.spawn<caf::hidden>(loss_watch, p->node, address, opts.exit_status_on_loss);
  return remote_node{std::move(p)};
}

} // namespace quern
