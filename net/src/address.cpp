#include "internal.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <memory>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <caf/io/middleman.hpp>
#include <caf/sec.hpp>

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

remote_config::remote_config(const tls_options& tls) {
  enable_remoting(*this);
  enable_tls(*this, tls);
}

namespace detail {

std::pair<std::string, uint16_t> parse_address(const std::string& address,
                                               bool to_listen) {
  auto range = to_listen ? "from 0 (the system chooses) to 65535" : "from 1 to 65535";
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
    throw bad(std::string("the port must be a number ") + range);
  auto port = std::stoul(port_text);
  if ((port == 0 && !to_listen) || port > 65535)
    throw bad(std::string("the port must be a number ") + range);
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

namespace remote_detail {

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

// Maps a failed connect to quern's error naming the address.
op_error connect_error(caf::actor_system& sys, const std::string& address,
                       const caf::error& err, std::chrono::milliseconds timeout) {
  auto caf_text = sys.render(err);
  if (err.category() == caf::atom("system")) {
    switch (static_cast<caf::sec>(err.code())) {
    case caf::sec::cannot_connect_to_node:
      // A TLS client that meets a port which accepts TCP (a plain node, a
      // refused certificate) is told so by caf_connect before this.
      return unavailable_error("cannot reach quern node " + address +
                               ": nothing accepts connections there (" + caf_text + ")");
    case caf::sec::request_timeout:
    case caf::sec::connection_timeout:
    case caf::sec::disconnect_during_handshake:
      return deadline_exceeded_error(
          "no complete handshake from " + address + " within " + seconds_text(timeout) +
          " (a frozen process, or not a quern node; " + caf_text + ")");
    case caf::sec::malformed_basp_message:
    case caf::sec::serializing_basp_payload_failed:
      // What answered the connection is no CAF node: an SSH or HTTP server,
      // or any other service, whose first bytes are no BASP handshake.
      return failed_precondition_error(
          address +
          " is not a quern node: what answers there does not speak CAF's "
          "protocol (BASP), as another service would (" +
          caf_text + ")");
    case caf::sec::incompatible_versions:
      return failed_precondition_error(
          address +
          " is not a quern node of this build: it speaks another version of "
          "CAF's protocol (BASP) (" +
          caf_text + ")");
    case caf::sec::incompatible_application_ids:
      return failed_precondition_error(
          address + " speaks another wire version: this build speaks " +
          wire_identifier() + " (" + caf_text + ")");
    case caf::sec::request_receiver_down:
      // The node's published actor ended while the connection stands: its
      // server stopped (a peer cannot end it, remote_node.cpp).
      return unavailable_error("the quern node at " + address +
                               " no longer answers: its server stopped (" + caf_text +
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

bool accepts_tcp(const std::string& host, uint16_t port,
                 std::chrono::milliseconds limit) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0)
    return false;
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addrs{found, ::freeaddrinfo};
  auto until = steady::now() + limit;
  for (auto* a = found; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                      a->ai_protocol);
    if (fd < 0)
      continue;
    bool ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!ok && errno == EINPROGRESS) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - steady::now());
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) == 1 &&
           ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(fd);
    if (ok)
      return true;
  }
  return false;
}

[[noreturn]] void throw_op(const op_error& e) {
  // Rethrown as the subclass of its code, as every quern call does.
  throw_error(e.to_error());
}

} // namespace remote_detail

} // namespace quern
