#pragma once
// Raw TCP sockets on 127.0.0.1 for the tests that play a hostile or idle
// peer of a node (door_test.cpp, quern_node_test.cpp). Every wait is bounded.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace quern::test {

// A plain TCP connection to 127.0.0.1:port; -1 if refused.
inline int raw_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads the node's server handshake (its 32-byte header) from `fd`:
// whether it came within `limit`, i.e. the node accepted the connection.
inline bool accepted_within(int fd, std::chrono::milliseconds limit) {
  pollfd p{fd, POLLIN, 0};
  char buf[32];
  size_t got = 0;
  auto until = std::chrono::steady_clock::now() + limit;
  while (got < sizeof(buf)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0)
      return false;
    auto n = ::recv(fd, buf + got, sizeof(buf) - got, 0);
    if (n <= 0)
      return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// Whether the peer closes `fd` within `limit` (what it sends is read and
// dropped).
inline bool closed_within(int fd, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
      continue;
    auto n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
      return true;
  }
}

} // namespace quern::test
