#pragma once
// What the distributed test files share: starting node processes (host,
// clients), bounded waits, a free port, a silent listener and one that
// speaks another protocol.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include <quern/coordinator.hpp>
#include <quern/remote.hpp>

#include "process.hpp"

namespace quern::test {

using namespace std::chrono_literals;

// Bounds for waits that normally take milliseconds; generous for the
// sanitizer build on a loaded machine. Hitting one is a failure, not a
// measurement.
inline constexpr auto start_limit = 60s;
inline constexpr auto run_limit = 120s;

inline const std::string node_binary = QUERN_TEST_NODE_BINARY;

inline std::vector<std::string> node_args(std::vector<std::string> args) {
  args.insert(args.begin(), node_binary);
  return args;
}

// A host process serving queue 'rows', and its address.
struct host_process {
  std::unique_ptr<child> proc;
  std::string address;
};

/// For a process whose test waits for it to notice a frozen peer: CAF's
/// connection timeout at 2 s instead of quern's 5 s (heartbeats stay at 1 s,
/// so handshakes behave as in production). Only for processes with no other
/// peer that must stay connected under load.
inline const std::string quick_loss = "--middleman.connection-timeout=2s";

inline host_process start_host(const scratch_dir& dir,
                               std::vector<std::string> extra = {}) {
  auto port_file = dir.file("host.port");
  std::vector<std::string> args{"--node.role=host", "--node.port-file=" + port_file};
  args.insert(args.end(), extra.begin(), extra.end());
  host_process h;
  h.proc = std::make_unique<child>("host", node_args(args), dir, true);
  bool up = eventually(start_limit, [&] {
    return std::filesystem::exists(port_file) || h.proc->wait(0ms).has_value();
  });
  INFO(h.proc->report());
  REQUIRE(up);
  REQUIRE(std::filesystem::exists(port_file));
  auto port = std::stoi(quern::test::read_file(port_file));
  h.address = "127.0.0.1:" + std::to_string(port);
  return h;
}

inline std::unique_ptr<child> start_client(const scratch_dir& dir,
                                           const std::string& name,
                                           const std::string& address,
                                           std::vector<std::string> args) {
  args.push_back("--node.address=" + address);
  return std::make_unique<child>(name, node_args(args), dir);
}

inline void require_exit(child& c, int status,
                         std::chrono::milliseconds limit = run_limit) {
  auto st = c.wait(limit);
  INFO(c.report());
  REQUIRE(st.has_value());
  REQUIRE(*st == status);
}

// The values a consumer wrote, one per line ("ready" skipped).
inline std::vector<int64_t> taken(const std::string& path) {
  std::vector<int64_t> vs;
  std::istringstream in{quern::test::read_file(path)};
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line != "ready")
      vs.push_back(std::stoll(line));
  return vs;
}

// The values producer `id` of node.cpp makes, `count` of them: id * 1000000 + i.
inline std::multiset<int64_t> rows_made(int64_t id, int64_t count) {
  std::multiset<int64_t> made;
  for (int64_t i = 0; i < count; ++i)
    made.insert(id * 1000000 + i);
  return made;
}

inline bool is_ready(const std::string& path) {
  return quern::test::read_file(path).rfind("ready", 0) == 0;
}

// Waits (bounded by start_limit) until `who` wrote "ready" to `out` (it is
// connected and waits where the test wants it).
inline void require_ready(child& who, const std::string& out) {
  bool ready = eventually(start_limit, [&] { return is_ready(out); });
  INFO(who.report());
  REQUIRE(ready);
}

// Waits (bounded by start_limit) until `who` wrote at least `n` values to
// `out` (taken rows, or rows the queue acknowledged).
inline void require_written(child& who, const std::string& out, size_t n) {
  bool written = eventually(start_limit, [&] { return taken(out).size() >= n; });
  INFO(who.report());
  REQUIRE(written);
}

// This test process as a peer of the node at `address`: an actor system
// with the middleman, connected.
struct test_peer {
  explicit test_peer(const std::string& address) : node(quern::connect(sys, address)) {}
  quern::remote_config cfg;
  quern::actor_system sys{cfg};
  quern::remote_node node;

  /// A coordinator handle on the node's coordinator.
  quern::coordinator coordinator() { return {sys, node.coordinator()}; }
};

// A loopback port on which nothing listens (bound by the OS, then freed).
inline uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A loopback socket that accepts TCP connections (the kernel does) but never
// says a word: a frozen or foreign peer.
struct silent_listener {
  int fd = -1;
  uint16_t port = 0;
  silent_listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 16) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
  }
  ~silent_listener() { ::close(fd); }
};

// A loopback socket that answers each connection at once with `words`, as
// another service would (an SSH banner, an HTTP answer), then closes it or
// keeps it open until the listener ends.
struct talking_listener {
  silent_listener listener;
  std::string words;
  bool close_after;
  std::atomic<bool> stop{false};
  std::thread thread;

  talking_listener(std::string w, bool close)
      : words(std::move(w)), close_after(close), thread([this] { serve(); }) {}
  ~talking_listener() {
    stop = true;
    thread.join();
  }
  uint16_t port() const { return listener.port; }

private:
  void serve() {
    std::vector<int> open;
    while (!stop) {
      pollfd p{listener.fd, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1)
        continue;
      int c = ::accept(listener.fd, nullptr, nullptr);
      if (c < 0)
        continue;
      size_t sent = 0;
      while (sent < words.size()) {
        auto n = ::send(c, words.data() + sent, words.size() - sent, MSG_NOSIGNAL);
        if (n <= 0)
          break;
        sent += static_cast<size_t>(n);
      }
      if (close_after)
        ::close(c);
      else
        open.push_back(c);
    }
    for (int c : open)
      ::close(c);
  }
};

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

} // namespace quern::test
