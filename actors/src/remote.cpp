#include "quern/remote.hpp"

#include <unistd.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <caf/actor_registry.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/io/network/multiplexer.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "quern/actor_system.hpp"
#include "quern/error.hpp"

namespace quern {

std::string wire_identifier() {
  return "quern-wire-" + std::to_string(wire_version);
}

void enable_remoting(caf::actor_system_config& cfg) {
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.app-identifiers", std::vector<std::string>{wire_identifier()});
  // A connecting endpoint counts as silent since the epoch until its
  // handshake completes, so a tick that falls inside a handshake cuts it
  // (connect() retries that); a 1 s interval keeps such ticks rare.
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds{1}});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::seconds{5}});
}

remote_config::remote_config() {
  enable_remoting(*this);
}

namespace detail {

std::pair<std::string, uint16_t> parse_address(const std::string& address) {
  auto bad = [&](const std::string& why) {
    return invalid_argument_error("malformed address '" + address + "': " + why +
                                  " (expected host:port, e.g. 127.0.0.1:7000, or "
                                  "[::1]:7000)");
  };
  std::string host;
  std::string port_text;
  if (!address.empty() && address.front() == '[') {
    auto close = address.find(']');
    if (close == std::string::npos)
      throw bad("'[' without ']'");
    host = address.substr(1, close - 1);
    if (close + 1 >= address.size() || address[close + 1] != ':')
      throw bad("no ':port' after ']'");
    port_text = address.substr(close + 2);
  } else {
    auto colon = address.rfind(':');
    if (colon == std::string::npos)
      throw bad("no ':port'");
    host = address.substr(0, colon);
    if (host.find(':') != std::string::npos)
      throw bad("an IPv6 address needs brackets");
    port_text = address.substr(colon + 1);
  }
  if (host.empty())
    throw bad("no host");
  if (port_text.empty() || port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(),
                   [](unsigned char c) { return std::isdigit(c) != 0; }))
    throw bad("the port must be a number from 1 to 65535");
  auto port = std::stoul(port_text);
  if (port == 0 || port > 65535)
    throw bad("the port must be a number from 1 to 65535");
  return {host, static_cast<uint16_t>(port)};
}

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1")
    return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  return false;
}

} // namespace detail

namespace {

using steady = std::chrono::steady_clock;

std::string seconds_text(std::chrono::milliseconds d) {
  auto ms = d.count();
  if (ms % 1000 == 0)
    return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

void require_middleman(caf::actor_system& sys, const char* who) {
  if (!sys.has_middleman())
    throw failed_precondition_error(
        std::string(who) +
        " needs CAF's middleman in the actor system: make it from a "
        "quern::remote_config, or call quern::enable_remoting(cfg) before");
}

// -- the node's published actor -----------------------------------------------------

// What a peer holds instead of the queue: one per lookup, delegating every
// message to the queue (answers go from the queue to the peer directly).
// Ending the facades at server::stop ends the service for every peer, whose
// endpoints see them go, while the queue lives on in its process.
queue_actor::behavior_type facade_behavior(queue_actor::pointer self, queue_actor q) {
  self->monitor(q);
  self->set_down_handler([self](caf::down_msg& dm) { self->quit(dm.reason); });
  // Exits from peers are ignored; the linked node actor's end is not.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (msg.source.node() == self->node())
      self->quit(msg.reason);
  });
  return {
      [self, q](enqueue_atom a, element& e, caf::timespan t) {
        return self->delegate(q, a, std::move(e), t);
      },
      [self, q](enqueue_many_atom a, element& e, caf::timespan t) {
        return self->delegate(q, a, std::move(e), t);
      },
      [self, q](dequeue_atom a, caf::timespan t) { return self->delegate(q, a, t); },
      [self, q](dequeue_many_atom a, int32_t n, caf::timespan t) {
        return self->delegate(q, a, n, t);
      },
      [self, q](dequeue_up_to_atom a, int32_t n, caf::timespan t) {
        return self->delegate(q, a, n, t);
      },
      [self, q](close_atom a, bool cancel) { return self->delegate(q, a, cancel); },
      [self, q](size_atom a) { return self->delegate(q, a); },
      [self, q](is_closed_atom a) { return self->delegate(q, a); },
      [self, q](spec_atom a) { return self->delegate(q, a); },
      [self, q](push_atom a, std::vector<element>& rows) {
        self->delegate(q, a, std::move(rows));
      },
      [self, q](push_batch_atom a, element& b) { self->delegate(q, a, std::move(b)); },
      [self, q](pull_atom a, int32_t n) { self->delegate(q, a, n); },
      [self, q](pull_batch_atom a, int32_t n) { self->delegate(q, a, n); },
      [self, q](pull_many_atom a, int32_t n, int32_t count, bool up_to) {
        self->delegate(q, a, n, count, up_to);
      },
      [self, q](give_back_atom a, std::vector<element>& rows) {
        self->delegate(q, a, std::move(rows));
      },
      [self, q](unpull_atom a) { self->delegate(q, a); },
      [self, q](unpush_atom a) { self->delegate(q, a); },
      [self, q](feeder_atom a, int32_t declared, int32_t started, caf::timespan t) {
        self->delegate(q, a, declared, started, t);
      },
      // The queue's own timer message: a peer has no business sending it.
      [](deadline_atom, uint64_t) {},
  };
}

// The coordinator's facade: the same for coordinator_actor.
coordinator_actor::behavior_type
coordinator_facade_behavior(coordinator_actor::pointer self, coordinator_actor c) {
  self->monitor(c);
  self->set_down_handler([self](caf::down_msg& dm) { self->quit(dm.reason); });
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (msg.source.node() == self->node())
      self->quit(msg.reason);
  });
  return {
      [self, c](request_stop_atom a, caf::error& e) {
        return self->delegate(c, a, std::move(e));
      },
      [self, c](should_stop_atom a) { return self->delegate(c, a); },
      [self, c](wait_for_stop_atom a, caf::timespan t) {
        return self->delegate(c, a, t);
      },
      [self, c](clear_stop_atom a) { return self->delegate(c, a); },
      [self, c](register_atom a, std::vector<registration>& rs) {
        return self->delegate(c, a, std::move(rs));
      },
      [self, c](join_atom a, std::vector<caf::actor>& xs, caf::timespan grace,
                bool live) { return self->delegate(c, a, std::move(xs), grace, live); },
      [self, c](status_atom a) { return self->delegate(c, a); },
      // The coordinator's own timer messages: a peer has no business sending them.
      [](join_timeout_atom, uint64_t) {},
      [](wait_timeout_atom, uint64_t) {},
      [](join_warning_atom, uint64_t) {},
  };
}

struct node_state {
  std::map<std::string, queue_actor> queues;
  coordinator_actor coordinator;
  std::string description;
};

node_actor::behavior_type node_behavior(node_actor::stateful_pointer<node_state> self,
                                        std::map<std::string, queue_actor> queues,
                                        coordinator_actor coordinator) {
  self->state.queues = std::move(queues);
  self->state.coordinator = std::move(coordinator);
  self->state.description = "quern node pid " + std::to_string(::getpid());
  // A peer may send this actor an exit; only this process ends it. (An
  // untrappable kill still ends it: docs/distributed.md, not yet done.)
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (msg.source.node() == self->node())
      self->quit(msg.reason);
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
      [self](lookup_queue_atom, const std::string& name) -> caf::result<queue_actor> {
        auto i = self->state.queues.find(name);
        if (i != self->state.queues.end())
          // Linked: the facades end with this actor (server::stop).
          return self->spawn<caf::linked>(facade_behavior, i->second);
        std::string names;
        for (auto& kv : self->state.queues)
          names += (names.empty() ? "'" : ", '") + kv.first + "'";
        return make_error(error_code::failed_precondition,
                          "no queue named '" + name + "' is exported (exported: " +
                              (names.empty() ? std::string("none") : names) + ")");
      },
      [self](lookup_coordinator_atom) -> caf::result<coordinator_actor> {
        if (!self->state.coordinator)
          return make_error(error_code::failed_precondition,
                            "no coordinator is exported");
        return self->spawn<caf::linked>(coordinator_facade_behavior,
                                        self->state.coordinator);
      },
  };
}

// -- the client's endpoint of one remote queue -----------------------------------

template <class Handle>
struct endpoint_state {
  Handle remote;
  std::string what; // "queue 'q' on 127.0.0.1:7000"
  uint64_t next_id = 0;
  // Requests forwarded and not yet answered: CAF does not fail them when
  // the connection drops, so the endpoint does (on the remote's down_msg).
  std::unordered_map<uint64_t, caf::response_promise> pending;
};

using endpoint_ptr = queue_actor::stateful_pointer<endpoint_state<queue_actor>>;
using coordinator_endpoint_ptr =
    coordinator_actor::stateful_pointer<endpoint_state<coordinator_actor>>;

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
// remote actor is lost. No CAF timeout: the remote enforces the caller's
// own deadline, and node loss is what the endpoint watches for.
template <class T, class Self, class... Ts>
caf::typed_response_promise<T> relay(Self self, Ts... xs) {
  auto rp = self->template make_response_promise<T>();
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
  self->request(self->state.remote, caf::infinite, xs...)
      .then([settle](T& x) { settle(std::move(x)); },
            [settle](caf::error& err) { settle(std::move(err)); });
  return rp;
}

// The endpoint watches its remote actor: on its loss every pending call
// fails with unavailable and the endpoint ends with that error, so local
// monitors (readers, writers) see it go.
template <class Self, class Handle>
void watch_remote(Self self, Handle remote, std::string what) {
  self->state.remote = std::move(remote);
  self->state.what = std::move(what);
  self->monitor(self->state.remote);
  self->set_down_handler([self](caf::down_msg& dm) {
    if (dm.source != self->state.remote.address())
      return;
    auto err = unreachable(self->home_system(), self->state.what, dm.reason);
    auto pending = std::move(self->state.pending);
    self->state.pending.clear();
    for (auto& kv : pending)
      kv.second.deliver(err);
    self->quit(err);
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
      // The coordinator's own timer messages; never meant for a peer.
      [](join_timeout_atom, uint64_t) {},
      [](wait_timeout_atom, uint64_t) {},
      [](join_warning_atom, uint64_t) {},
  };
}

queue_actor::behavior_type endpoint_behavior(endpoint_ptr self, queue_actor remote,
                                             std::string what) {
  watch_remote(self, std::move(remote), std::move(what));
  // Streamed messages go on with their sender kept: the remote queue
  // answers the reader or writer itself, and its answers never pass here.
  return {
      [self](enqueue_atom a, element& e, caf::timespan t) {
        return relay<int32_t>(self, a, std::move(e), t);
      },
      [self](enqueue_many_atom a, element& e, caf::timespan t) {
        return relay<int32_t>(self, a, std::move(e), t);
      },
      [self](dequeue_atom a, caf::timespan t) { return relay<element>(self, a, t); },
      [self](dequeue_many_atom a, int32_t n, caf::timespan t) {
        return relay<element>(self, a, n, t);
      },
      [self](dequeue_up_to_atom a, int32_t n, caf::timespan t) {
        return relay<element>(self, a, n, t);
      },
      [self](close_atom a, bool cancel) { return relay<bool>(self, a, cancel); },
      [self](size_atom a) { return relay<int32_t>(self, a); },
      [self](is_closed_atom a) { return relay<bool>(self, a); },
      [self](spec_atom a) { return relay<queue_spec>(self, a); },
      [self](push_atom a, std::vector<element>& rows) {
        self->delegate(self->state.remote, a, std::move(rows));
      },
      [self](push_batch_atom a, element& b) {
        self->delegate(self->state.remote, a, std::move(b));
      },
      [self](pull_atom a, int32_t n) { self->delegate(self->state.remote, a, n); },
      [self](pull_batch_atom a, int32_t n) { self->delegate(self->state.remote, a, n); },
      [self](pull_many_atom a, int32_t n, int32_t count, bool up_to) {
        self->delegate(self->state.remote, a, n, count, up_to);
      },
      [self](give_back_atom a, std::vector<element>& rows) {
        self->delegate(self->state.remote, a, std::move(rows));
      },
      [self](unpull_atom a) { self->delegate(self->state.remote, a); },
      [self](unpush_atom a) { self->delegate(self->state.remote, a); },
      [self](feeder_atom a, int32_t declared, int32_t started, caf::timespan t) {
        self->delegate(self->state.remote, a, declared, started, t);
      },
      // The queue's own timer message; never meant for a peer.
      [](deadline_atom, uint64_t) {},
  };
}

// Maps a failed connect to quern's error naming the address.
op_error connect_error(caf::actor_system& sys, const std::string& address,
                       const caf::error& err, std::chrono::milliseconds timeout) {
  auto caf_text = sys.render(err);
  if (err.category() == caf::atom("system")) {
    switch (static_cast<caf::sec>(err.code())) {
    case caf::sec::cannot_connect_to_node:
      return unavailable_error("cannot reach quern node " + address +
                               ": nothing accepts connections there (" + caf_text + ")");
    case caf::sec::request_timeout:
    case caf::sec::connection_timeout:
    case caf::sec::disconnect_during_handshake:
      return deadline_exceeded_error(
          "no complete handshake from " + address + " within " + seconds_text(timeout) +
          " (a frozen process, or not a quern node; " + caf_text + ")");
    case caf::sec::incompatible_application_ids:
      return failed_precondition_error(
          address + " speaks another wire version: this build speaks " +
          wire_identifier() + " (" + caf_text + ")");
    case caf::sec::request_receiver_down:
      return unavailable_error("lost the connection to " + address + " (" + caf_text +
                               ")");
    default:
      break;
    }
  }
  if (err.category() == error_category) {
    auto code = code_of(err);
    return op_error(code, address + ": " + message_of(err));
  }
  return unavailable_error("cannot connect to " + address + ": " + caf_text);
}

// Whether a TCP socket of this machine listens on `port` (Linux: the
// kernel's tables in /proc/net/tcp and tcp6; state 0A is LISTEN).
bool is_listening(uint16_t port) {
  char want[8];
  std::snprintf(want, sizeof want, ":%04X", static_cast<unsigned>(port));
  for (auto path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in{path};
    std::string line;
    std::getline(in, line); // the header
    while (std::getline(in, line)) {
      std::istringstream fields{line};
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state == "0A" && local.size() > 5 &&
          local.compare(local.size() - 5, 5, want) == 0)
        return true;
    }
  }
  return false;
}

[[noreturn]] void throw_op(const op_error& e) {
  // Rethrown as the subclass of its code, as every quern call does.
  throw_error(e.to_error());
}

} // namespace

// -- server -------------------------------------------------------------------------

struct server::impl {
  caf::actor_system* sys;
  node_actor node;
  std::vector<caf::actor_id> queues;
  std::string host;
  uint16_t port = 0;
  bool stopped = false;
};

server::server(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
server::server(server&&) noexcept = default;
server& server::operator=(server&& other) noexcept {
  if (this != &other) {
    stop();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
server::~server() {
  stop();
}

uint16_t server::port() const noexcept {
  return impl_ ? impl_->port : 0;
}

std::string server::address() const {
  if (!impl_)
    return {};
  auto h =
      impl_->host.find(':') != std::string::npos ? "[" + impl_->host + "]" : impl_->host;
  return h + ":" + std::to_string(impl_->port);
}

void server::stop() {
  if (!impl_ || impl_->stopped)
    return;
  impl_->stopped = true;
  // Unpublish first: CAF's actor system waits, without a bound, for a
  // published actor that nobody stops.
  static_cast<void>(impl_->sys->middleman().unpublish(impl_->node, impl_->port));
  // The middleman shuts the listening socket down later, in its I/O thread,
  // and takes the acceptor out of its loop one round after that; an actor
  // system that ends in between leaks the acceptor (a reference cycle in
  // CAF 0.17.6 that only that removal breaks; seen with LeakSanitizer).
  // Wait, bounded, until the port no longer listens, then for two rounds of
  // the I/O loop.
  auto until = steady::now() + std::chrono::seconds{2};
  while (is_listening(impl_->port) && steady::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  auto& backend = impl_->sys->middleman().backend();
  auto done = std::make_shared<std::promise<void>>();
  auto later = done->get_future();
  backend.post([&backend, done] { backend.post([done] { done->set_value(); }); });
  later.wait_until(until);
  caf::anon_send_exit(impl_->node, caf::exit_reason::user_shutdown);
  // A queue that answered a peer sits in CAF's registry (the sender of a
  // remote message is kept there for good); out of it, its lifetime is
  // again that of its handles in this process, and the process exits
  // without waiting for it.
  for (auto id : impl_->queues)
    impl_->sys->registry().erase(id);
}

server serve(caf::actor_system& sys, serve_options opts) {
  require_middleman(sys, "quern::serve");
  if (opts.host.empty() || !detail::is_loopback(opts.host))
    throw failed_precondition_error(
        "quern::serve refuses to listen on '" + opts.host +
        "': only loopback addresses (127.0.0.1, ::1, localhost) may serve without "
        "TLS, and quern's TLS is not built yet; anyone who reaches the port could "
        "use and kill the exported queues");
  for (auto& kv : opts.queues) {
    if (kv.first.empty())
      throw invalid_argument_error(
          "quern::serve: a queue is exported under an empty name");
    if (!kv.second)
      throw invalid_argument_error("quern::serve: queue '" + kv.first +
                                   "' is an invalid handle");
  }
  std::vector<caf::actor_id> ids;
  for (auto& kv : opts.queues)
    ids.push_back(kv.second->id());
  if (opts.coordinator)
    ids.push_back(opts.coordinator->id());
  auto node =
      sys.spawn(node_behavior, std::move(opts.queues), std::move(opts.coordinator));
  auto port =
      sys.middleman().publish(node, opts.port, opts.host.c_str(), opts.reuse_address);
  if (!port) {
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    throw unavailable_error("quern::serve cannot listen on " + opts.host + ":" +
                            std::to_string(opts.port) + ": " + sys.render(port.error()));
  }
  auto p = std::make_unique<server::impl>();
  p->sys = &sys;
  p->node = node;
  p->host = opts.host;
  p->port = *port;
  p->queues = std::move(ids);
  server s{std::move(p)};
  detail::exit_watch::track(sys, caf::actor_cast<caf::actor>(node),
                            "quern node serving on " + s.address() +
                                " (its quern::server is still alive)");
  return s;
}

// -- remote_node ---------------------------------------------------------------------

struct remote_node::impl {
  caf::actor_system* sys;
  std::string address;
  std::string description;
  node_actor node;
  std::chrono::milliseconds timeout;
  // queue() and coordinator() may be called by several threads.
  std::mutex mtx;
  std::map<std::string, queue_actor> endpoints;
  coordinator_actor coordinator;

  ~impl() {
    for (auto& kv : endpoints)
      caf::anon_send_exit(kv.second, caf::exit_reason::user_shutdown);
    if (coordinator)
      caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
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

queue_actor remote_node::queue(const std::string& name) {
  auto& st = *impl_;
  std::lock_guard<std::mutex> guard{st.mtx};
  if (auto i = st.endpoints.find(name); i != st.endpoints.end())
    return i->second;
  caf::scoped_actor self{*st.sys};
  queue_actor remote;
  caf::error err;
  self->request(st.node, st.timeout, lookup_queue_atom::value, name)
      .receive([&](queue_actor& q) { remote = std::move(q); },
               [&](caf::error& e) { err = std::move(e); });
  if (err)
    throw_op(connect_error(*st.sys, st.address, err, st.timeout));
  if (!remote)
    throw_op(failed_precondition_error(st.address + ": queue '" + name +
                                       "' came back as an invalid handle"));
  auto endpoint =
      st.sys->spawn(endpoint_behavior, remote, "queue '" + name + "' on " + st.address);
  detail::exit_watch::track(*st.sys, caf::actor_cast<caf::actor>(endpoint),
                            "the endpoint of queue '" + name + "' on " + st.address +
                                " (its quern::remote_node is still alive)");
  st.endpoints.emplace(name, endpoint);
  return endpoint;
}

coordinator_actor remote_node::coordinator() {
  auto& st = *impl_;
  std::lock_guard<std::mutex> guard{st.mtx};
  if (st.coordinator)
    return st.coordinator;
  caf::scoped_actor self{*st.sys};
  coordinator_actor remote;
  caf::error err;
  self->request(st.node, st.timeout, lookup_coordinator_atom::value)
      .receive([&](coordinator_actor& c) { remote = std::move(c); },
               [&](caf::error& e) { err = std::move(e); });
  if (err)
    throw_op(connect_error(*st.sys, st.address, err, st.timeout));
  if (!remote)
    throw_op(failed_precondition_error(
        st.address + ": the coordinator came back as an invalid handle"));
  auto what = "the coordinator on " + st.address;
  auto endpoint = st.sys->spawn(coordinator_endpoint_behavior, remote, what);
  detail::exit_watch::track(*st.sys, caf::actor_cast<caf::actor>(endpoint),
                            "the endpoint of " + what +
                                " (its quern::remote_node is still alive)");
  st.coordinator = endpoint;
  return endpoint;
}

remote_node connect(caf::actor_system& sys, const std::string& address,
                    connect_options opts) {
  auto [host, port] = detail::parse_address(address);
  require_middleman(sys, "quern::connect");
  if (opts.timeout <= std::chrono::milliseconds{0})
    throw invalid_argument_error("quern::connect to " + address +
                                 " needs a positive timeout, got " +
                                 std::to_string(opts.timeout.count()) + " ms");
  auto deadline = steady::now() + opts.timeout;
  auto left = [&] {
    return std::chrono::duration_cast<caf::timespan>(deadline - steady::now());
  };
  caf::scoped_actor self{sys};
  auto mm = sys.middleman().actor_handle();
  caf::strong_actor_ptr published;
  std::set<std::string> ifs;
  for (;;) {
    if (left() <= caf::timespan{0})
      throw_op(connect_error(sys, address, caf::sec::request_timeout, opts.timeout));
    caf::error err;
    self->request(mm, left(), caf::connect_atom_v, host, port)
        .receive(
            [&](caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>& xs) {
              published = std::move(ptr);
              ifs = std::move(xs);
            },
            [&](caf::error& e) { err = std::move(e); });
    if (!err)
      break;
    // With heartbeats on, CAF cuts a handshake that a heartbeat tick
    // overtakes (the endpoint looks silent since the epoch), and a peer
    // that is frozen fails this way at every tick: try again until the
    // deadline says no.
    if (err == caf::sec::connection_timeout ||
        err == caf::sec::disconnect_during_handshake) {
      std::this_thread::sleep_for(std::min<caf::timespan>(
          std::chrono::milliseconds{20}, std::max(left(), caf::timespan{0})));
      continue;
    }
    throw_op(connect_error(sys, address, err, opts.timeout));
  }
  if (!published)
    throw_op(failed_precondition_error(
        address + " is not a quern node: no actor is published there"));
  if (!sys.assignable<node_actor>(ifs))
    throw_op(failed_precondition_error(address + " is not a quern node of " +
                                       wire_identifier() +
                                       ": its published actor has another interface"));
  auto node = caf::actor_cast<node_actor>(published);
  // quern's own version check beside CAF's application identifiers.
  uint32_t peer_version = 0;
  std::string description;
  caf::error err;
  self->request(node, std::max(left(), caf::timespan{1}), hello_atom::value, wire_version)
      .receive(
          [&](uint32_t v, std::string& d) {
            peer_version = v;
            description = std::move(d);
          },
          [&](caf::error& e) { err = std::move(e); });
  if (err)
    throw_op(connect_error(sys, address, err, opts.timeout));
  if (peer_version != wire_version)
    throw_op(failed_precondition_error(address + " speaks quern wire version " +
                                       std::to_string(peer_version) + ", this build " +
                                       std::to_string(wire_version)));
  auto p = std::make_unique<remote_node::impl>();
  p->sys = &sys;
  p->address = address;
  p->description = std::move(description);
  p->node = std::move(node);
  p->timeout = opts.timeout;
  return remote_node{std::move(p)};
}

} // namespace quern
