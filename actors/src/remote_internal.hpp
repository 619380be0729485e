#pragma once
// What the files of quern/remote.hpp's implementation share (remote_*.cpp);
// not installed.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/error.hpp>
#include <caf/io/middleman_actor.hpp>

#include "quern/error.hpp"
#include "quern/remote.hpp"

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

// -- TLS (remote_tls.cpp) -----------------------------------------------------------

/// Whether `sys` loaded CAF's openssl manager (enable_tls): then every
/// serve and connect goes through it, never through a plain socket.
bool uses_tls(const caf::actor_system& sys);

/// Checks the TLS files of a configuration with OpenSSL before any socket
/// opens: certificate, key and CA present, readable, parsable, the
/// key opened with the passphrase and matching the certificate. Throws
/// invalid_argument_error (a bad file) or failed_precondition_error
/// (anonymous TLS) naming `what` (`quern::serve on 0.0.0.0:0`) and the file.
void check_tls_files(const caf::actor_system_config& cfg, const std::string& what);

/// The middleman actor serve and connect talk to: the openssl manager's with
/// TLS, the plain middleman's otherwise.
caf::io::middleman_actor transport(caf::actor_system& sys);

// -- the serving side (remote_facade.cpp) ---------------------------------------------

/// The facades a node handed out, so that server::stop ends them: they are
/// not linked to the node, which a peer may kill.
struct facade_set {
  std::mutex mtx;
  std::vector<caf::actor_addr> facades;
  void add(const caf::actor_addr& a);
  /// Ends every facade still alive (user_shutdown).
  void end_all();
};

node_actor spawn_node(caf::actor_system& sys, std::map<std::string, queue_actor> queues,
                      coordinator_actor coordinator, std::shared_ptr<facade_set> facades);

// -- the connecting side (remote_endpoint.cpp) ----------------------------------------

/// The local endpoint of the remote queue `remote` (`what`: "queue 'q' on
/// 127.0.0.1:7000").
queue_actor spawn_queue_endpoint(caf::actor_system& sys, queue_actor remote,
                                 std::string what);

/// The same for a remote coordinator.
coordinator_actor spawn_coordinator_endpoint(caf::actor_system& sys,
                                             coordinator_actor remote, std::string what);

} // namespace quern::remote_detail
