// The front door of a node (plain TCP or TLS): quern's own middleman actor,
// whose listening sockets and connections are quern's, in CAF's I/O loop.
// CAF 0.17.6's own accepts without a bound, keeps a connection that never
// finishes the BASP handshake for good, allocates whatever payload a BASP
// header claims before a byte of it arrives, retries accept() at once when
// no descriptor is left (a core spinning), and its TLS reads the
// certificate file for each connection (aborting when none is left). Here:
// - serve raised the descriptor limit to the hard one (serve.cpp);
// - a connection is "pending" from its accept until it delivered one whole
//   BASP message (the peer's handshake); at most door_limits::max_pending
//   (and half the descriptor limit) are, the oldest is closed for a new
//   one, and none longer than door_limits::handshake_timeout (a line on
//   stderr each time);
// - a BASP header claiming more than max_message_bytes closes its
//   connection before anything is allocated (a node logs it, a connect
//   fails with "not a quern node");
// - with no descriptor left, a connection is accepted on a spare descriptor
//   and closed at once; TLS uses one context, loaded once (door_io.hpp).
// The BASP broker behind (the protocol, the routing) is CAF's, unchanged.
#include "door_io.hpp"
#include "internal.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <iostream>
#include <thread>

#include <caf/actor_registry.hpp>
#include <caf/function_view.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/doorman.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor_impl.hpp>
#include <caf/io/network/acceptor_impl.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/interfaces.hpp>
#include <caf/io/network/native_socket.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/io/scribe.hpp>

namespace quern::remote_detail {

namespace {

using caf::io::network::native_socket;
using caf::io::network::rw_state;
using mpx_t = caf::io::network::default_multiplexer;

void say(const std::string& line) {
  std::cerr << "quern: " << line << std::endl;
}

} // namespace

// What every door of a process's actor system shares: the connections still
// pending (accepted, handshake not finished), oldest first, and the sweeper
// that closes those past their deadline.
class door_state {
public:
  explicit door_state(std::shared_ptr<SSL_CTX> tls)
      : tls(std::move(tls)), spare_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {
    sweeper_ = std::thread{[this] { sweep_loop(); }};
  }

  ~door_state() {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stopping_ = true;
    }
    cv_.notify_all();
    sweeper_.join();
    if (spare_ >= 0)
      ::close(spare_);
  }

  door_limits limits() {
    std::lock_guard<std::mutex> guard{mtx_};
    return limits_;
  }

  // From now on; the bound on pending connections is at most half the
  // descriptor limit, so that idle connections never take every descriptor.
  void set_limits(const door_limits& x) {
    rlimit lim{};
    size_t half = x.max_pending;
    if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
      half = std::max<size_t>(1, static_cast<size_t>(lim.rlim_cur) / 2);
    std::lock_guard<std::mutex> guard{mtx_};
    limits_ = x;
    max_pending_ = std::min(x.max_pending, half);
  }

  // A connection just accepted on `port`: pending from now on. Closes the
  // oldest pending ones beyond the bound. Returns its id (never 0).
  uint64_t admit(native_socket fd, uint16_t port) {
    std::lock_guard<std::mutex> guard{mtx_};
    auto id = ++last_id_;
    pending_.emplace(id, entry{fd, port, steady::now()});
    while (pending_.size() > max_pending_) {
      auto oldest = pending_.begin();
      tell("the node on port " + std::to_string(oldest->second.port) +
           " closes a connection that has not finished its handshake after " +
           seconds_text(age(oldest->second)) + ": more than " +
           std::to_string(max_pending_) +
           " connections are waiting for theirs (serve_options::max_pending_handshakes, "
           "at most half the descriptor limit)");
      ::shutdown(oldest->second.fd, SHUT_RDWR);
      pending_.erase(oldest);
    }
    return id;
  }

  // The connection `id` finished its handshake, or ended.
  void forget(uint64_t id) {
    std::lock_guard<std::mutex> guard{mtx_};
    pending_.erase(id);
  }

  // accept() found no descriptor left: takes the connection on the spare
  // descriptor and closes it, so the listening socket does not stay
  // readable (CAF would retry at once, forever). Returns whether one was
  // taken.
  bool refuse_one(native_socket listener, uint16_t port) {
    std::lock_guard<std::mutex> guard{mtx_};
    if (spare_ >= 0)
      ::close(spare_);
    auto fd = ::accept(listener, nullptr, nullptr);
    if (fd >= 0)
      ::close(fd);
    spare_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    auto now = steady::now();
    if (fd >= 0 && now - last_refusal_log_ >= std::chrono::seconds{1}) {
      last_refusal_log_ = now;
      say("the node on port " + std::to_string(port) +
          " refuses connections: no file descriptor is left (RLIMIT_NOFILE; " +
          std::to_string(pending_.size()) + " connections wait for their handshake)");
    }
    return fd >= 0;
  }

  // What refused a connection to host:port, if something did (a connect
  // reads it to say "not a quern node").
  void note_refusal(const std::string& where, std::string why) {
    std::lock_guard<std::mutex> guard{mtx_};
    refusals_[where] = std::move(why);
  }

  // The bound of the next connection to `where` (connect_options).
  void expect(const std::string& where, size_t max_message_bytes) {
    std::lock_guard<std::mutex> guard{mtx_};
    outgoing_max_[where] = max_message_bytes;
  }

  size_t outgoing_max(const std::string& where) {
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = outgoing_max_.find(where);
    return i == outgoing_max_.end() ? door_limits{}.max_message_bytes : i->second;
  }

  std::string take_refusal(const std::string& where) {
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = refusals_.find(where);
    if (i == refusals_.end())
      return {};
    auto why = std::move(i->second);
    refusals_.erase(i);
    return why;
  }

  /// The TLS context every connection shares (certificate, key and CA
  /// loaded once); null without TLS.
  const std::shared_ptr<SSL_CTX> tls;

private:
  struct entry {
    native_socket fd;
    uint16_t port;
    steady::time_point since;
  };

  // Says `line` (a connection closed), at most once a second: the lines
  // an attacker could make are counted in the next one. Under mtx_.
  void tell(const std::string& line) {
    auto now = steady::now();
    if (now - last_told_ < std::chrono::seconds{1}) {
      ++untold_;
      return;
    }
    say(untold_ == 0 ? line
                     : line + " (and " + std::to_string(untold_) +
                           " other connections closed since the last such line)");
    untold_ = 0;
    last_told_ = now;
  }

  static std::chrono::milliseconds age(const entry& e) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - e.since);
  }

  void sweep_loop() {
    std::unique_lock<std::mutex> guard{mtx_};
    while (!stopping_) {
      cv_.wait_for(guard, std::chrono::milliseconds{100});
      auto now = steady::now();
      for (auto i = pending_.begin(); i != pending_.end();) {
        if (now - i->second.since < limits_.handshake_timeout)
          break; // the rest are younger
        tell("the node on port " + std::to_string(i->second.port) +
             " closes a connection that has not finished its handshake within " +
             seconds_text(limits_.handshake_timeout) +
             " (serve_options::handshake_timeout)");
        ::shutdown(i->second.fd, SHUT_RDWR);
        i = pending_.erase(i);
      }
    }
  }

  std::mutex mtx_;
  std::condition_variable cv_;
  bool stopping_ = false;
  door_limits limits_;
  size_t max_pending_ = limits_.max_pending;
  uint64_t last_id_ = 0;
  std::map<uint64_t, entry> pending_; // by id: oldest first
  std::map<std::string, std::string> refusals_;
  std::map<std::string, size_t> outgoing_max_;
  native_socket spare_;
  steady::time_point last_refusal_log_;
  steady::time_point last_told_;
  size_t untold_ = 0;
  std::thread sweeper_;
};

namespace {

using door_io::door_policy;
using door_io::tls_link;

// A connection: CAF's scribe_impl, plus the bound on what a BASP header may
// claim and the end of its pending time. `id` 0: an outgoing connection
// (connect), never pending; `where`: host:port of its peer. (An accepted
// connection's id becomes 0 too once its handshake is done.)
class door_scribe : public caf::io::scribe {
public:
  door_scribe(mpx_t& mpx, native_socket fd, std::shared_ptr<door_state> door, uint64_t id,
              std::string where)
      : caf::io::scribe(caf::io::connection_handle::from_int(door_io::fresh_handle_id())),
        door_(std::move(door)), id_(id), outgoing_(id == 0), where_(std::move(where)),
        max_(outgoing_ ? door_->outgoing_max(where_) : door_->limits().max_message_bytes),
        stream_(mpx, fd, &refused_, &tls_) {
    if (door_->tls) {
      tls_.ssl = SSL_new(door_->tls.get());
      // A connection whose TLS cannot start reads as closed.
      if (tls_.ssl == nullptr || !tls_.start(fd, !outgoing_))
        refused_ = true;
    }
  }

  ~door_scribe() override {
    if (id_ != 0)
      door_->forget(id_);
  }

  // The BASP broker asks for a header's payload here, before the stream
  // allocates it.
  void configure_read(caf::io::receive_policy::config cfg) override {
    if (cfg.second > max_) {
      refuse(cfg.second);
      return;
    }
    // A header again after a whole message: the handshake is done.
    if (id_ != 0 && consumed_ && cfg.second == caf::io::basp::header_size) {
      door_->forget(id_);
      id_ = 0;
    }
    stream_.configure_read(cfg);
    if (!launched_)
      launch();
  }

  bool consume(caf::execution_unit* ctx, const void* buf, size_t n) override {
    consumed_ = true;
    return caf::io::scribe::consume(ctx, buf, n);
  }

  void ack_writes(bool enable) override { stream_.ack_writes(enable); }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }
  void flush() override { stream_.flush(this); }
  std::string addr() const override {
    auto x = caf::io::network::remote_addr_of_fd(stream_.fd());
    return x ? *x : std::string{};
  }
  uint16_t port() const override {
    auto x = caf::io::network::remote_port_of_fd(stream_.fd());
    return x ? *x : 0;
  }
  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override { stream_.passivate(); }

private:
  void launch() {
    launched_ = true;
    stream_.start(this);
    // TLS: a write event lets the handshake go on (CAF's openssl scribe).
    if (tls_.ssl != nullptr)
      stream_.force_empty_write(this);
  }

  // Closes the connection before anything is allocated: the next read
  // fails, and the broker learns of it as of any closed connection.
  void refuse(size_t claimed) {
    refused_ = true;
    auto why = "a BASP header of " + where_ + " claims a message of " +
               std::to_string(claimed) + " bytes, more than the " + std::to_string(max_) +
               " bytes allowed";
    if (outgoing_)
      door_->note_refusal(where_, why);
    say(why + ": the connection is closed (serve_options::max_message_bytes)");
    ::shutdown(stream_.fd(), SHUT_RDWR);
    if (!launched_)
      launch();
  }

  std::shared_ptr<door_state> door_;
  uint64_t id_;
  bool outgoing_;
  std::string where_;
  size_t max_;
  bool refused_ = false;
  bool consumed_ = false;
  bool launched_ = false;
  tls_link tls_;
  caf::io::network::stream_impl<door_policy> stream_;
};

class door_doorman : public caf::io::doorman {
public:
  door_doorman(mpx_t& mpx, native_socket fd, std::shared_ptr<door_state> door)
      : caf::io::doorman(caf::io::accept_handle::from_int(door_io::fresh_handle_id())),
        door_(door),
        acceptor_(mpx, fd, [door, port = local_port(fd)](native_socket listener) {
          door->refuse_one(listener, port);
        }) {}

  bool new_connection() override {
    if (detached())
      return false;
    auto& mpx = acceptor_.backend();
    auto fd = acceptor_.accepted_socket();
    caf::io::network::nonblocking(fd, true);
    auto port = local_port(acceptor_.fd());
    auto id = door_->admit(fd, port);
    auto peer = caf::io::network::remote_addr_of_fd(fd);
    auto peer_port = caf::io::network::remote_port_of_fd(fd);
    auto where = (peer ? *peer : std::string{"?"}) + ":" +
                 std::to_string(peer_port ? *peer_port : 0);
    auto s = caf::make_counted<door_scribe>(mpx, fd, door_, id, std::move(where));
    auto hdl = s->hdl();
    parent()->add_scribe(std::move(s));
    return caf::io::doorman::new_connection(&mpx, hdl);
  }

  void graceful_shutdown() override {
    acceptor_.graceful_shutdown();
    detach(&acceptor_.backend(), false);
  }
  void launch() override { acceptor_.start(this); }
  std::string addr() const override {
    auto x = caf::io::network::local_addr_of_fd(acceptor_.fd());
    return x ? *x : std::string{};
  }
  uint16_t port() const override { return local_port(acceptor_.fd()); }
  void add_to_loop() override { acceptor_.activate(this); }
  void remove_from_loop() override { acceptor_.passivate(); }

private:
  static uint16_t local_port(native_socket fd) {
    auto x = caf::io::network::local_port_of_fd(fd);
    return x ? *x : 0;
  }

  std::shared_ptr<door_state> door_;
  caf::io::network::acceptor_impl<door_io::door_accept_policy> acceptor_;
};

// CAF's middleman actor (the same messages, the same BASP broker), whose
// listening sockets and connections are the door's.
class door_middleman : public caf::io::middleman_actor_impl {
public:
  door_middleman(caf::actor_config& cfg, caf::actor broker,
                 std::shared_ptr<door_state> door)
      : caf::io::middleman_actor_impl(cfg, std::move(broker)), door_(std::move(door)) {}

  const char* name() const override { return "quern::door"; }

protected:
  caf::expected<caf::io::scribe_ptr> connect(const std::string& host,
                                             uint16_t port) override {
    auto fd = caf::io::network::new_tcp_connection(host, port);
    if (!fd)
      return std::move(fd.error());
    caf::io::network::nonblocking(*fd, true);
    auto where = host + ":" + std::to_string(port);
    door_->take_refusal(where);
    return caf::make_counted<door_scribe>(mpx(), *fd, door_, 0, std::move(where));
  }

  caf::expected<caf::io::doorman_ptr> open(uint16_t port, const char* addr,
                                           bool reuse) override {
    auto fd = caf::io::network::new_tcp_acceptor_impl(port, addr, reuse);
    if (!fd)
      return std::move(fd.error());
    return caf::make_counted<door_doorman>(mpx(), *fd, door_);
  }

private:
  mpx_t& mpx() { return static_cast<mpx_t&>(system().middleman().backend()); }

  std::shared_ptr<door_state> door_;
};

using door_atom = caf::atom_constant<caf::atom("q_door")>;

std::mutex door_mtx;

// The door of `sys`: its middleman actor, kept in the registry (which
// drops it at the system's end), and its state.
struct door_of_system {
  caf::io::middleman_actor handle;
  std::shared_ptr<door_state> state;
};

std::map<const caf::actor_system*, std::weak_ptr<door_state>> door_states;

door_of_system door_of(caf::actor_system& sys) {
  std::lock_guard<std::mutex> guard{door_mtx};
  auto& reg = sys.registry();
  if (auto h = reg.get(door_atom::value)) {
    if (auto st = door_states[&sys].lock())
      return {caf::actor_cast<caf::io::middleman_actor>(h), st};
  }
  auto st = std::make_shared<door_state>(
      uses_tls(sys) ? tls_context(sys.config(), "quern's TLS") : nullptr);
  auto broker = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  auto h = sys.spawn<door_middleman, caf::detached + caf::hidden>(broker, st);
  reg.put(door_atom::value, caf::actor_cast<caf::strong_actor_ptr>(h));
  // It ends with CAF's own middleman actor, which the middleman ends
  // first when the actor system does: the registry would otherwise hold it
  // until after the scheduler's end.
  auto mm = caf::actor_cast<caf::strong_actor_ptr>(sys.middleman().actor_handle());
  mm->get()->attach_functor([sys = &sys, door = caf::actor_cast<caf::actor_addr>(h)] {
    sys->registry().erase(door_atom::value);
    if (auto d = caf::actor_cast<caf::actor>(door))
      caf::anon_send_exit(d, caf::exit_reason::kill);
  });
  door_states[&sys] = st;
  return {h, st};
}

} // namespace

caf::io::middleman_actor door_transport(caf::actor_system& sys) {
  return door_of(sys).handle;
}

caf::expected<uint16_t> door_publish(caf::actor_system& sys, const node_actor& node,
                                     uint16_t port, const std::string& host, bool reuse) {
  auto f = caf::make_function_view(door_transport(sys));
  return f(caf::publish_atom::value, port, caf::actor_cast<caf::strong_actor_ptr>(node),
           sys.message_types(node), host, reuse);
}

void set_door_limits(caf::actor_system& sys, const door_limits& x) {
  door_of(sys).state->set_limits(x);
}

void door_expect(caf::actor_system& sys, const std::string& where,
                 size_t max_message_bytes) {
  door_of(sys).state->expect(where, max_message_bytes);
}

std::string door_refusal(caf::actor_system& sys, const std::string& where) {
  return door_of(sys).state->take_refusal(where);
}

} // namespace quern::remote_detail
