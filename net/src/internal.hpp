#pragma once
// What the files of quern/remote.hpp's implementation share (remote_*.cpp);
// not installed.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/error.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/response_promise.hpp>
#include <caf/typed_response_promise.hpp>

#include "quern/error.hpp"
#include "quern/remote.hpp"

struct ssl_ctx_st; // OpenSSL's SSL_CTX

namespace quern::remote_detail {

using steady = std::chrono::steady_clock;

/// `5 s`, `250 ms`.
std::string seconds_text(std::chrono::milliseconds d);

/// Throws failed_precondition_error unless `sys` loaded the middleman.
void require_middleman(caf::actor_system& sys, const char* who);

/// Rethrows `e` as the subclass of its code, as every quern call does.
[[noreturn]] void throw_op(const op_error& e);

/// A failed connect or lookup as quern's error naming `address`.
op_error connect_error(caf::actor_system& sys, const std::string& address,
                       const caf::error& err, std::chrono::milliseconds timeout);

/// Whether a TCP socket of this machine listens on `port`.
bool is_listening(uint16_t port);

/// Whether a plain TCP connection to host:port completes within `limit`
/// (then closed at once): a port that accepts, whatever speaks behind it.
bool accepts_tcp(const std::string& host, uint16_t port, std::chrono::milliseconds limit);

// -- TLS (remote_tls.cpp) -----------------------------------------------------------

/// Whether `sys` loaded CAF's openssl manager (enable_tls): then every
/// serve and connect goes through it, never through a plain socket.
bool uses_tls(const caf::actor_system& sys);

/// Checks the TLS files of a configuration with OpenSSL before any socket
/// opens: certificate, key and CA present, readable, parsable, the
/// key opened with the passphrase and matching the certificate, the
/// certificate and its chain within their validity dates and the CA file
/// holding one that is (by this machine's clock). Throws
/// invalid_argument_error (a bad file) or failed_precondition_error
/// (anonymous TLS) naming `what` (`quern::serve on 0.0.0.0:0`) and the file.
void check_tls_files(const caf::actor_system_config& cfg, const std::string& what);

/// The context of quern's TLS connections, loaded once from the files of
/// `cfg` after the checks of check_tls_files (which throws as it does):
/// mutual authentication, as CAF's openssl module.
std::shared_ptr<ssl_ctx_st> tls_context(const caf::actor_system_config& cfg,
                                        const std::string& what);

/// The middleman actor serve and connect talk to: the door's (door.cpp),
/// with TLS or without.
caf::io::middleman_actor transport(caf::actor_system& sys);

// -- the front door (door.cpp) ------------------------------------------------------

/// What a node's door admits (serve_options says each).
struct door_limits {
  size_t max_pending = 256;
  std::chrono::milliseconds handshake_timeout{10000};
  size_t max_message_bytes = size_t{64} << 20;
};

/// quern's middleman actor of `sys` (plain TCP): CAF's BASP broker behind
/// quern's listening sockets and connections (door.cpp says what it bounds).
caf::io::middleman_actor door_transport(caf::actor_system& sys);

/// Publishes `node` on host:port through the door (CAF's publish, the
/// door's listening socket).
caf::expected<uint16_t> door_publish(caf::actor_system& sys, const node_actor& node,
                                     uint16_t port, const std::string& host, bool reuse);

/// The limits of the door of `sys` from now on.
void set_door_limits(caf::actor_system& sys, const door_limits& x);

/// The bound on what a message from `where` (host:port) may claim, for the
/// next connection to it (connect_options::max_message_bytes).
void door_expect(caf::actor_system& sys, const std::string& where,
                 size_t max_message_bytes);

/// Why the door refused the connection to `where` (host:port) a connect
/// made, once; empty if it did not.
std::string door_refusal(caf::actor_system& sys, const std::string& where);

// -- the serving side (remote_node.cpp, remote_facade.cpp) ---------------------------

/// Exits sent by peers are ignored; an exit from this process ends the actor.
/// (exit_reason::kill ends it whatever this says: CAF does not let it be
/// trapped.)
template <class Self>
void ignore_remote_exits(Self self) {
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (msg.source.node() == self->node())
      self->quit(msg.reason);
  });
}

/// Takes `self`'s monitors off `watched` when `self` ends. CAF 0.17.6 keeps
/// a monitor at the watched actor until that one ends, and with it the ended
/// watcher's memory (an address holds an actor's storage): a facade or relay
/// that ended would otherwise stay allocated for as long as its queue lives.
template <class Self>
void drop_monitors_at_end(Self self, std::vector<caf::actor_addr> watched) {
  self->attach_functor([self, watched] {
    for (auto& a : watched)
      self->demonitor(a);
  });
}

/// Whether the message `self` is handling wants an answer. A message sent
/// one-way goes on one-way: a summary writer keeps the error of a one-way
/// add for the next request, which an answer to a go-between would lose.
template <class Self>
bool is_request(Self self) {
  auto* e = self->current_mailbox_element();
  return e != nullptr && e->mid.is_request();
}

/// Asks `dest` and answers the sender with the result as this actor, so the
/// sender never learns `dest`'s address (T: void for an empty answer). No
/// timeout: a local queue, coordinator or writer always answers (a finite
/// wait is the queue's own deadline). A one-way message without an answer
/// (T void) is sent on one-way.
template <class T, class Self, class Dest, class... Ts>
caf::typed_response_promise<T> ask(Self self, const Dest& dest, Ts&&... xs) {
  if constexpr (std::is_void_v<T>) {
    if (!is_request(self)) {
      self->send(dest, std::forward<Ts>(xs)...);
      return {};
    }
  }
  auto rp = self->template make_response_promise<T>();
  caf::response_promise p = rp;
  auto fail = [p](caf::error& err) mutable { p.deliver(std::move(err)); };
  auto req = self->request(dest, caf::infinite, std::forward<Ts>(xs)...);
  if constexpr (std::is_void_v<T>)
    req.then([p]() mutable { p.deliver(caf::unit); }, fail);
  else
    req.then([p](T& x) mutable { p.deliver(std::move(x)); }, fail);
  return rp;
}

/// What a node exports (serve_options without the address).
struct exports {
  std::map<std::string, queue_actor> queues;
  coordinator_actor coordinator;
  std::map<std::string, summary_writer_actor> writers;
};

/// What server::stop needs to end a node's actors: the facades it handed
/// out that are still alive (not linked to the node) and the switch that
/// lets the node end.
struct facade_set : std::enable_shared_from_this<facade_set> {
  std::mutex mtx;
  /// Each goes when its facade ends.
  std::map<caf::actor_id, caf::actor_addr> facades;
  /// Until this process sets it (server::stop, or the actor system's end),
  /// the node drops every exit message: a peer holds the published node and
  /// could end it with CAF's untrappable kill, or with an anonymous exit,
  /// which arrives looking like a local one.
  std::atomic<bool> node_may_end{false};
  /// Keeps `f` until it ends. (Call on a facade_set owned by a shared_ptr.)
  void add(const caf::actor& f);
  /// Ends every facade still alive (user_shutdown).
  void end_all();
  /// Sets node_may_end and ends `node` (user_shutdown).
  void end_node(const node_actor& node);
};

node_actor spawn_node(caf::actor_system& sys, exports what,
                      std::shared_ptr<facade_set> facades);

// Every facade is one peer's, made for one lookup (remote_facade.cpp), and
// ends when the `presence` of that peer's connection ends (remote_node.cpp;
// none for a lookup from this process: then at server::stop), or when what
// it stands for ends.

/// What a peer holds instead of the queue `q`. Once the peer is gone it ends
/// when its last relay has (a relay gives back what its lost client did not
/// confirm taking first).
queue_actor spawn_queue_facade(caf::actor_system& sys, queue_actor q,
                               caf::actor presence);

/// What a peer on `peer` holds instead of the coordinator `c`: the errors it
/// reports and the actors it registers are placed at its address.
coordinator_actor spawn_coordinator_facade(caf::actor_system& sys, coordinator_actor c,
                                           caf::node_id peer, caf::actor presence);

/// What a peer holds instead of the summary writer `w`.
summary_writer_actor spawn_writer_facade(caf::actor_system& sys, summary_writer_actor w,
                                         caf::actor presence);

// -- the connecting side (remote_endpoint.cpp) ----------------------------------------

/// The local endpoint of the remote queue `remote` (`what`: "queue 'q' on
/// 127.0.0.1:7000").
queue_actor spawn_queue_endpoint(caf::actor_system& sys, queue_actor remote,
                                 std::string what);

/// The same for a remote coordinator.
coordinator_actor spawn_coordinator_endpoint(caf::actor_system& sys,
                                             coordinator_actor remote, std::string what);

/// The same for a remote summary writer.
summary_writer_actor spawn_writer_endpoint(caf::actor_system& sys,
                                           summary_writer_actor remote, std::string what);

} // namespace quern::remote_detail
