// quern::serve and quern::server (quern/remote.hpp).
#include "internal.hpp"

#include <sys/resource.h>

#include <future>
#include <thread>

#include <caf/actor_registry.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/network/multiplexer.hpp>
#include <caf/scoped_actor.hpp>

#include "quern/actor_system.hpp"

namespace quern {

using namespace remote_detail;

struct server::impl {
  caf::actor_system* sys;
  node_actor node;
  std::shared_ptr<facade_set> facades;
  std::vector<caf::actor_id> exported; // queues, coordinator, writers
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

namespace {

// Unpublishes through the middleman actor that published (CAF 0.17.6's
// caf::openssl::unpublish does not compile), bounded.
void unpublish(caf::actor_system& sys, const node_actor& node, uint16_t port) {
  caf::scoped_actor self{sys};
  self->request(transport(sys), std::chrono::seconds{2}, caf::unpublish_atom::value,
                node.address(), port)
      .receive([] {}, [](caf::error&) {});
}

// Returns once the middleman's I/O loop has applied every change to its set
// of sockets requested before this call, or at `until`. Such changes take
// effect at the end of a round of the loop; a function posted from outside
// runs in some round and, posting again, lets a round end before the
// second one runs.
void await_io_round(caf::actor_system& sys, steady::time_point until) {
  auto& backend = sys.middleman().backend();
  auto done = std::make_shared<std::promise<void>>();
  auto later = done->get_future();
  backend.post([&backend, done] { backend.post([done] { done->set_value(); }); });
  later.wait_until(until);
}

// Returns once the broker that listens for the middleman took in the
// acceptor of a port just published, and its I/O loop added it, bounded.
// publish() answers as soon as the port listens and only then hands the
// acceptor to the broker: were it added and removed (a server stopped at
// once) in one round of the loop, CAF 0.17.6 would cancel the two changes
// and never release the acceptor (seen with LeakSanitizer).
void await_published(caf::actor_system& sys) {
  auto until = steady::now() + std::chrono::seconds{2};
  // The middleman actor hands this to the broker after the acceptor.
  caf::scoped_actor self{sys};
  self->request(transport(sys), std::chrono::seconds{2}, caf::get_atom::value,
                caf::node_id{})
      .receive([](caf::node_id&, std::string&, uint16_t) {}, [](caf::error&) {});
  await_io_round(sys, until);
}

} // namespace

void server::stop() {
  if (!impl_ || impl_->stopped)
    return;
  impl_->stopped = true;
  // Unpublish first: CAF's actor system waits, without a bound, for a
  // published actor that nobody stops.
  unpublish(*impl_->sys, impl_->node, impl_->port);
  // The middleman shuts the listening socket down later, in its I/O thread,
  // and takes the acceptor out of its loop one round after that; an actor
  // system that ends in between leaks the acceptor (a reference cycle in
  // CAF 0.17.6 that only that removal breaks; seen with LeakSanitizer).
  // Wait, bounded, until the port no longer listens, then for two rounds of
  // the I/O loop.
  auto until = steady::now() + std::chrono::seconds{2};
  while (is_listening(impl_->port) && steady::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  await_io_round(*impl_->sys, until);
  impl_->facades->end_all();
  impl_->facades->end_node(impl_->node);
  // An actor that answered a peer sits in CAF's registry (the sender of a
  // remote message is kept there for good): facades and relays. The
  // exported actors are taken out of it too, should one have got there, so
  // that an exported actor's lifetime is again that of its handles in this
  // process, and the process exits without waiting for it.
  for (auto id : impl_->exported)
    impl_->sys->registry().erase(id);
}

namespace {

// Raises this process's soft limit of file descriptors to its hard limit
// (best effort: the soft limit stays otherwise).
void raise_descriptor_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max)
    return;
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
}

void check_serve_options(caf::actor_system& sys, const serve_options& opts) {
  require_middleman(sys, "quern::serve");
  auto tls = uses_tls(sys);
  if (tls)
    check_tls_files(sys.config(),
                    "quern::serve on " + opts.host + ":" + std::to_string(opts.port));
  if (opts.host.empty())
    throw failed_precondition_error(
        "quern::serve refuses to listen on '': give an address, 127.0.0.1 for this "
        "machine only, or 0.0.0.0 for every interface (with TLS)");
  if (!tls && !detail::is_loopback(opts.host))
    throw failed_precondition_error(
        "quern::serve refuses to listen on '" + opts.host +
        "' without TLS: only loopback addresses (127.0.0.1, ::1, localhost) may serve "
        "without TLS (quern::enable_tls: certificate, key and CA file); anyone who "
        "reaches the port could use the exported queues");
  auto check = [](const auto& exported, const std::string& kind) {
    for (auto& kv : exported) {
      if (kv.first.empty())
        throw invalid_argument_error("quern::serve: a " + kind +
                                     " is exported under an empty name");
      if (!kv.second)
        throw invalid_argument_error("quern::serve: " + kind + " '" + kv.first +
                                     "' is an invalid handle");
    }
  };
  if (opts.max_pending_handshakes == 0)
    throw invalid_argument_error(
        "quern::serve: serve_options::max_pending_handshakes must be at least 1");
  if (opts.handshake_timeout <= std::chrono::milliseconds{0})
    throw invalid_argument_error(
        "quern::serve: serve_options::handshake_timeout must be positive, got " +
        std::to_string(opts.handshake_timeout.count()) + " ms");
  if (opts.max_message_bytes < 1024)
    throw invalid_argument_error(
        "quern::serve: serve_options::max_message_bytes must be at least 1024, got " +
        std::to_string(opts.max_message_bytes));
  check(opts.queues, "queue");
  check(opts.writers, "summary writer");
}

} // namespace

server serve(caf::actor_system& sys, serve_options opts) {
  check_serve_options(sys, opts);
  std::vector<caf::actor_id> ids;
  for (auto& kv : opts.queues)
    ids.push_back(kv.second->id());
  if (opts.coordinator)
    ids.push_back(opts.coordinator->id());
  for (auto& kv : opts.writers)
    ids.push_back(kv.second->id());
  // Every connection costs a descriptor: the hard limit, not the soft one
  // (often 1024), bounds what the node can hold.
  raise_descriptor_limit();
  set_door_limits(
      sys, {opts.max_pending_handshakes, opts.handshake_timeout, opts.max_message_bytes});
  auto facades = std::make_shared<facade_set>();
  auto node = spawn_node(
      sys, {std::move(opts.queues), std::move(opts.coordinator), std::move(opts.writers)},
      facades);
  // Through quern's door, with TLS or without (door.cpp).
  auto port = door_publish(sys, node, opts.port, opts.host, opts.reuse_address);
  if (!port) {
    facades->end_node(node);
    // CAF says only that the socket could not be made: say why when it can
    // be told (a listener on the port, or sockets that linger on it).
    std::string why = sys.render(port.error());
    if (opts.port != 0 && is_listening(opts.port))
      why = "the address is already in use (another socket listens on port " +
            std::to_string(opts.port) + ")";
    else if (opts.port != 0 && !opts.reuse_address)
      why += " (if sockets of an earlier process linger on port " +
             std::to_string(opts.port) + ", serve_options::reuse_address lets it listen)";
    throw unavailable_error("quern::serve cannot listen on " + opts.host + ":" +
                            std::to_string(opts.port) + ": " + why);
  }
  await_published(sys);
  auto p = std::make_unique<server::impl>();
  p->sys = &sys;
  p->node = node;
  p->facades = std::move(facades);
  p->host = opts.host;
  p->port = *port;
  p->exported = std::move(ids);
  server s{std::move(p)};
  // At the actor system's end (exit_watch::shut_down) the node may end.
  detail::exit_watch::track(sys, caf::actor_cast<caf::actor>(node),
                            "quern node serving on " + s.address() +
                                " (its quern::server is still alive)",
                            [f = s.impl_->facades] { f->node_may_end = true; });
  return s;
}

} // namespace quern
