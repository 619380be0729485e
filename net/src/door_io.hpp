#pragma once
// The byte level of a node's front door (door.cpp): the calls a connection
// reads and writes with, plain TCP or TLS over the door's one context.
// Only door.cpp includes it. Also the names connections get.
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>

#include <caf/io/network/native_socket.hpp>
#include <caf/io/network/rw_state.hpp>
#include <caf/policy/tcp.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace quern::remote_detail::door_io {

using caf::io::network::native_socket;
using caf::io::network::rw_state;

// The name CAF's BASP broker knows a connection or a listening socket by.
// CAF 0.17.6 names each by its descriptor, and forgets a closed connection
// later, through its queue of received messages: a connection accepted in
// between on the same descriptor number (the OS hands out the lowest free
// one) was taken for the closed one's peer. Its handshake was dropped and
// its messages answered to that peer, so clients that started together
// failed their connect now and then. A door's names are never reused (and
// above any descriptor number, should CAF make a name of its own).
inline int64_t fresh_handle_id() {
  static std::atomic<int64_t> last{int64_t{1} << 40};
  return ++last;
}

// OpenSSL writes to a socket with write(): a peer gone raises SIGPIPE,
// which is blocked around each call and the pending one dropped after (as
// CAF's openssl session does).
class sigpipe_blocked {
public:
  sigpipe_blocked() {
    sigemptyset(&mask_);
    sigaddset(&mask_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &mask_, &saved_);
  }
  ~sigpipe_blocked() {
    timespec zero{};
    sigtimedwait(&mask_, nullptr, &zero);
    pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }
  sigpipe_blocked(const sigpipe_blocked&) = delete;
  sigpipe_blocked& operator=(const sigpipe_blocked&) = delete;

private:
  sigset_t mask_;
  sigset_t saved_;
};

// The TLS state of one connection (ssl null: plain TCP): the calls of CAF's
// openssl session, over the door's shared context.
struct tls_link {
  SSL* ssl = nullptr;
  bool connecting = false;
  bool accepting = false;

  tls_link() = default;
  tls_link(const tls_link&) = delete;
  tls_link& operator=(const tls_link&) = delete;
  ~tls_link() {
    if (ssl != nullptr)
      SSL_free(ssl);
  }

  static bool may_go_on(SSL* ssl, int ret) {
    auto err = SSL_get_error(ssl, ret);
    return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
  }

  // Starts the handshake on `fd`; false if it failed at once.
  bool start(native_socket fd, bool accept) {
    sigpipe_blocked guard;
    SSL_set_fd(ssl, fd);
    if (accept)
      SSL_set_accept_state(ssl);
    else
      SSL_set_connect_state(ssl);
    auto ret = accept ? SSL_accept(ssl) : SSL_connect(ssl);
    if (ret == 1)
      return true;
    (accept ? accepting : connecting) = true;
    return may_go_on(ssl, ret);
  }

  template <class F>
  rw_state some(F f, size_t& result, void* buf, size_t len, bool writing) {
    sigpipe_blocked guard;
    result = 0;
    auto step = [&](int ret) {
      switch (SSL_get_error(ssl, ret)) {
      case SSL_ERROR_WANT_READ:
        return len == 0 && writing ? rw_state::indeterminate : rw_state::success;
      case SSL_ERROR_WANT_WRITE:
        return rw_state::success;
      default:
        ERR_clear_error();
        return rw_state::failure;
      }
    };
    if (connecting) {
      auto ret = SSL_connect(ssl);
      if (ret != 1)
        return step(ret);
      connecting = false;
    }
    if (accepting) {
      auto ret = SSL_accept(ssl);
      if (ret != 1)
        return step(ret);
      accepting = false;
    }
    if (len == 0)
      return rw_state::indeterminate;
    auto ret = f(ssl, buf, static_cast<int>(len));
    if (ret > 0) {
      result = static_cast<size_t>(ret);
      return rw_state::success;
    }
    if (may_go_on(ssl, ret))
      return rw_state::success;
    ERR_clear_error();
    return rw_state::failure;
  }
};

// CAF's TCP calls, or its TLS calls over the door's context, except that a
// connection refused by its scribe reads as closed.
struct door_policy {
  door_policy(const bool* refused, tls_link* tls) : refused(refused), tls(tls) {}

  rw_state read_some(size_t& result, native_socket fd, void* buf, size_t len) {
    if (*refused) {
      result = 0;
      return rw_state::failure;
    }
    if (tls->ssl == nullptr)
      return caf::policy::tcp::read_some(result, fd, buf, len);
    return tls->some([](SSL* s, void* b, int n) { return SSL_read(s, b, n); }, result,
                     buf, len, false);
  }

  rw_state write_some(size_t& result, native_socket fd, const void* buf, size_t len) {
    if (tls->ssl == nullptr)
      return caf::policy::tcp::write_some(result, fd, buf, len);
    return tls->some([](SSL* s, void* b, int n) { return SSL_write(s, b, n); }, result,
                     const_cast<void*>(buf), len, true);
  }

  bool must_read_more(native_socket, size_t threshold) {
    return tls->ssl != nullptr && static_cast<size_t>(SSL_pending(tls->ssl)) >= threshold;
  }

  const bool* refused;
  tls_link* tls;
};

// CAF's accept, except that no descriptor left calls `full` with the
// listening socket (which closes a connection: door_state::refuse_one)
// instead of leaving it for the next round, at once.
struct door_accept_policy {
  explicit door_accept_policy(std::function<void(native_socket)> full)
      : full(std::move(full)) {}

  bool try_accept(native_socket& result, native_socket listener) {
    result = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (result >= 0)
      return true;
    if (errno == EMFILE || errno == ENFILE)
      full(listener);
    result = caf::io::network::invalid_native_socket;
    return true;
  }

  std::function<void(native_socket)> full;
};

} // namespace quern::remote_detail::door_io
