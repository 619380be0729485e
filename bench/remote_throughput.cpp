// bench_remote_throughput: the flagship's batches (--rows rows of three
// float32 columns) moved between processes on 127.0.0.1 (docs/distributed.md),
// beside the same bytes over a plain loopback TCP socket in the same run, and
// beside the same batches through a queue in one process. Prints bytes/s of
// each, the ratios quern remote / raw socket and quern remote / in-process
// (medians of interleaved rounds; ratios hold on a noisy machine), single-row
// streaming over the remote queue beside in-process single rows, the CPU each
// process spent per batch (where the time goes), and peak RSS.
//
// One command runs everything: this program starts itself again
// (/proc/self/exe) in the roles below (--role, not shown by --help), reads
// their ports and results from pipes, and bounds every wait by --timeout:
//   host       serves FIFO queue 'rows' on 127.0.0.1:<OS-chosen port>, prints
//              the port, serves until its stdin (a pipe from here) ends
//   producer   connects; queue_writer::push_batch of every batch (or push of
//              every row, --mode single; or remote_producer::push_batch,
//              --mode keyed, a window of --batch-window up to 64); flush; close
//   consumer   connects; batch_reader, dequeue_up_to by default (or
//              queue_reader), until end of data, checking every row
//   raw-sink   listens on 127.0.0.1:<OS-chosen port>, reads batch frames of
//              the three columns with readv, checking every row
//   raw-source connects; builds each batch as the producer does and sends it
//              with one writev
//   raw-relay  between source and sink: reads whatever bytes are there (up
//              to 1 MiB at a time) and writes them on (two loopback hops, as
//              producer -> host -> consumer, at the fewest system calls)
//   inproc     a producer thread and a consumer thread with the same clients
//              on a FIFO queue of its own process
//   caf-sink, caf-relay, caf-source   the same batches through CAF alone: a
//              source requests each batch (the columns end to end in one
//              byte vector, --batch-window unanswered) of a relay actor in
//              a second process, which delegates it to a checking sink actor
//              in a third; CAF's defaults, no quern
// A TLS run ("remote TLS batches") repeats the remote one with mutual TLS
// (CAF's openssl module), its CA and certificate made by the openssl command
// in a directory under /tmp before anything is timed (left out, saying why,
// where that fails).
// Timing starts when the producer (source) has connected and begins, ends
// when the consumer (sink) checked the last row; the start and end come from
// different processes, read on CLOCK_MONOTONIC (one clock for the machine).
//
// Row g of a run (batch b = g / rows, row r = g % rows) is (x1 = b, x2 = r,
// y = -r): small integers, exact in a float32. One producer and a FIFO
// queue keep them in order, so the consumer finds a row lost, duplicated or
// out of order where it happens; it fails, naming it, and so does the run.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "command_line.hpp"

#include "peak_rss.hpp"
#include "quern/blocking_queue.hpp"
#include "quern/queue.hpp"
#include "quern/remote.hpp"

extern char** environ;

namespace po = boost::program_options;
using namespace quern;
using clk = std::chrono::steady_clock;

namespace {

constexpr const char* program = "bench_remote_throughput";

struct params {
  int32_t rows = 1024;
  int64_t batches = 40000;
  int64_t singles = 200000;
  int32_t capacity = 128;    // batches
  int32_t batch_window = 64; // batches
  size_t window = 1024;      // single rows
  std::string cut = "many";
  std::string only;
  // CAF's scheduler threads per process (0: CAF's default, 4 here): one
  // wakes fewer threads per message (docs/performance.md, "Across processes").
  size_t threads = 1;
  int rounds = 3;
  double timeout = 300;
  // A directory with ca.pem, node.pem and node.key: the processes of a TLS
  // run use them (one certificate for all, signed by the CA).
  std::string tls_dir;
};

// -- what every role shares --------------------------------------------------------

// steady_clock is CLOCK_MONOTONIC on Linux: the same clock in every process.
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             clk::now().time_since_epoch())
      .count();
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

/// The three columns of one batch.
struct columns {
  std::vector<float> x1, x2, y;
  explicit columns(size_t rows) : x1(rows), x2(rows), y(rows) {}
};

/// Row r of `batch` is (batch, r, -r), in three columns of `rows` floats.
void fill(float* x1, float* x2, float* y, size_t rows, int64_t batch) {
  for (size_t r = 0; r < rows; ++r) {
    x1[r] = static_cast<float>(batch);
    x2[r] = static_cast<float>(r);
    y[r] = -static_cast<float>(r);
  }
}

void fill(columns& c, int64_t batch) {
  fill(c.x1.data(), c.x2.data(), c.y.data(), c.x1.size(), batch);
}

/// Follows the rows a consumer takes: each must be the next of the run.
class sequence_check {
public:
  sequence_check(int32_t rows, int64_t expected) : rows_(rows), expected_(expected) {}

  /// Checks `n` rows; throws naming the first that is not the next one.
  void take(const float* x1, const float* x2, const float* y, size_t n) {
    size_t k = 0;
    while (k < n) {
      if (seen_ >= expected_)
        throw std::runtime_error("row " + std::to_string(seen_) + " arrived, but only " +
                                 std::to_string(expected_) +
                                 " were sent: a row arrived twice");
      // The rest of the current batch at most: compared without a branch
      // per row, so that the check costs little beside the transport.
      auto m = std::min<size_t>(n - k, static_cast<size_t>(rows_ - row_));
      m = std::min<size_t>(m, static_cast<size_t>(expected_ - seen_));
      auto b = static_cast<float>(batch_);
      int bad = 0;
      for (size_t j = 0; j < m; ++j) {
        auto r = static_cast<float>(row_ + static_cast<int32_t>(j));
        bad |= (x1[k + j] != b) | (x2[k + j] != r) | (y[k + j] != -r);
      }
      if (bad != 0)
        for (size_t j = 0; j < m; ++j) {
          auto r = static_cast<float>(row_ + static_cast<int32_t>(j));
          if (x1[k + j] != b || x2[k + j] != r || y[k + j] != -r) {
            std::ostringstream s;
            s << "row " << seen_ + static_cast<int64_t>(j) << " should be (batch " << b
              << ", row " << r << ") but is (" << x1[k + j] << ", " << x2[k + j] << ", "
              << y[k + j] << "): a row was lost, duplicated or reordered";
            throw std::runtime_error(s.str());
          }
        }
      k += m;
      seen_ += static_cast<int64_t>(m);
      row_ += static_cast<int32_t>(m);
      if (row_ == rows_) {
        row_ = 0;
        ++batch_;
      }
      if (seen_ == expected_)
        end_ns_ = now_ns();
    }
  }

  /// Throws unless every row came.
  void finish() const {
    if (seen_ != expected_)
      throw std::runtime_error("the data ended after " + std::to_string(seen_) +
                               " rows of " + std::to_string(expected_) +
                               ": rows were lost");
  }

  int64_t seen() const { return seen_; }
  int64_t end_ns() const { return end_ns_; }

private:
  int32_t rows_;
  int64_t expected_;
  int64_t seen_ = 0;
  int64_t batch_ = 0;
  int32_t row_ = 0;
  int64_t end_ns_ = 0;
};

/// What a role tells the parent: one line of `key value` pairs.
void report(const std::string& what, const std::map<std::string, std::string>& kv) {
  std::ostringstream s;
  s << what;
  for (auto& [k, v] : kv)
    s << ' ' << k << ' ' << v;
  s << '\n';
  std::cout << s.str() << std::flush;
}

std::string str(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

/// The queue of every quern run: a FIFO queue of three float32 scalars
/// (rows); batches go in and out whole.
queue_actor make_queue(caf::actor_system& sys, const params& p) {
  return spawn_fifo_queue(sys, p.capacity * p.rows,
                          {dtype::float32, dtype::float32, dtype::float32},
                          {tensor_shape{}, tensor_shape{}, tensor_shape{}}, "rows");
}

/// Pushes every batch (or row); returns when the queue stored them all.
void produce(caf::actor_system& sys, const queue_actor& q, const params& p, bool single) {
  if (single) {
    queue_writer w{sys, q, p.window};
    for (int64_t g = 0; g < p.singles; ++g) {
      auto r = static_cast<float>(g % p.rows);
      w.push(element{tensor::scalar(static_cast<float>(g / p.rows)), tensor::scalar(r),
                     tensor::scalar(-r)});
    }
    w.flush();
    return;
  }
  queue_writer w{sys, q,
                 static_cast<size_t>(p.batch_window) * static_cast<size_t>(p.rows)};
  for (int64_t b = 0; b < p.batches; ++b) {
    // Fresh buffers each batch: the tensors own them from here.
    columns c{static_cast<size_t>(p.rows)};
    fill(c, b);
    w.push_batch(element{tensor::vector<float>(std::move(c.x1)),
                         tensor::vector<float>(std::move(c.x2)),
                         tensor::vector<float>(std::move(c.y))});
  }
  w.flush();
}

/// Takes rows until end of data, checking each; the consumer's side of a
/// run. `ready` is called once the reader exists.
template <class Ready>
sequence_check consume(caf::actor_system& sys, const queue_actor& q, const params& p,
                       bool single, Ready ready) {
  sequence_check check{p.rows, single ? p.singles : p.batches * p.rows};
  if (single) {
    queue_reader r{sys, q, p.window};
    ready();
    while (auto e = r.try_pull()) {
      float x1 = (*e)[0].scalar_value<float>();
      float x2 = (*e)[1].scalar_value<float>();
      float y = (*e)[2].scalar_value<float>();
      check.take(&x1, &x2, &y, 1);
    }
  } else {
    auto cut = p.cut == "many" ? batch_cut::dequeue_up_to : batch_cut::any_size;
    batch_reader r{sys, q, p.rows, cut,
                   static_cast<size_t>(std::max(2, 2 * p.batch_window))};
    ready();
    while (auto batch = r.try_pull()) {
      auto x1 = (*batch)[0].values<float>();
      check.take(x1.data(), (*batch)[1].values<float>().data(),
                 (*batch)[2].values<float>().data(), x1.size());
    }
  }
  check.finish();
  return check;
}

std::map<std::string, std::string> usage(double cpu0) {
  return {{"cpu", str(cpu_seconds() - cpu0)}, {"rss", str(bench::peak_rss_mib())}};
}

// -- the roles ---------------------------------------------------------------------

/// quern's configuration, with --threads applied.
template <class Config>
void tune(Config& cfg, const params& p) {
  if (p.threads > 0)
    cfg.set("scheduler.max-threads", p.threads);
}

/// remote_config, over TLS (mutual, by the CA of --tls-dir) when given.
std::unique_ptr<remote_config> remote_config_of(const params& p) {
  auto cfg = p.tls_dir.empty() ? std::make_unique<remote_config>()
                               : std::make_unique<remote_config>(tls_options{
                                     p.tls_dir + "/node.pem", p.tls_dir + "/node.key", "",
                                     p.tls_dir + "/ca.pem"});
  tune(*cfg, p);
  return cfg;
}

/// Waits until the parent closes stdin (or dies).
void until_stdin_closes() {
  char buf[64];
  while (::read(0, buf, sizeof buf) > 0) {
  }
}

int host(const params& p) {
  auto cfg = remote_config_of(p);
  actor_system sys{*cfg};
  auto q = make_queue(sys, p);
  auto srv = serve(sys, {"127.0.0.1", 0, false, {{"rows", q}}});
  auto cpu0 = cpu_seconds();
  report("port", {{"port", std::to_string(srv.port())}});
  // Until the parent closes the pipe (or dies): the host never outlives it.
  until_stdin_closes();
  auto u = usage(cpu0);
  srv.stop();
  report("host", u);
  return 0;
}

/// The batches through a remote_producer: each stored exactly once, however
/// often the node is lost (none is here: this measures what that costs).
void produce_keyed(caf::actor_system& sys, const std::string& address, const params& p) {
  remote_producer_options opts;
  opts.window =
      std::min<size_t>(static_cast<size_t>(p.batch_window), max_keyed_in_flight);
  remote_producer w{sys, address, "rows", "bench-producer", opts};
  for (int64_t b = 0; b < p.batches; ++b) {
    columns c{static_cast<size_t>(p.rows)};
    fill(c, b);
    w.push_batch(element{tensor::vector<float>(std::move(c.x1)),
                         tensor::vector<float>(std::move(c.x2)),
                         tensor::vector<float>(std::move(c.y))});
  }
  w.flush();
}

int producer(const params& p, const std::string& address, bool single, bool keyed) {
  auto cfg = remote_config_of(p);
  actor_system sys{*cfg};
  auto node = connect(sys, address);
  auto q = node.queue("rows");
  auto cpu0 = cpu_seconds();
  auto t0 = now_ns();
  if (keyed)
    produce_keyed(sys, address, p);
  else
    produce(sys, q, p, single);
  auto kv = usage(cpu0);
  // Every row is stored: the close ends the consumer's data.
  blocking_queue{sys, q}.close();
  kv["start"] = std::to_string(t0);
  report("producer", kv);
  return 0;
}

int consumer(const params& p, const std::string& address, bool single) {
  auto cfg = remote_config_of(p);
  actor_system sys{*cfg};
  auto node = connect(sys, address);
  auto q = node.queue("rows");
  double cpu0 = 0;
  auto check = consume(sys, q, p, single, [&] {
    cpu0 = cpu_seconds();
    report("ready", {});
  });
  auto kv = usage(cpu0);
  kv["end"] = std::to_string(check.end_ns());
  kv["rows"] = std::to_string(check.seen());
  report("consumer", kv);
  return 0;
}

int inproc(const params& p, bool single) {
  config cfg;
  tune(cfg, p);
  actor_system sys{cfg};
  auto q = make_queue(sys, p);
  std::optional<sequence_check> check;
  std::string error;
  std::mutex m;
  std::condition_variable cv;
  bool ready = false;
  std::thread consumer_thread{[&] {
    try {
      check.emplace(consume(sys, q, p, single, [&] {
        std::lock_guard<std::mutex> lock{m};
        ready = true;
        cv.notify_one();
      }));
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock{m};
      error = e.what();
      ready = true;
      cv.notify_one();
    }
  }};
  {
    std::unique_lock<std::mutex> lock{m};
    cv.wait(lock, [&] { return ready; });
  }
  auto cpu0 = cpu_seconds();
  auto t0 = now_ns();
  if (error.empty())
    produce(sys, q, p, single);
  blocking_queue{sys, q}.close();
  consumer_thread.join();
  if (!error.empty())
    throw std::runtime_error(error);
  auto kv = usage(cpu0);
  kv["start"] = std::to_string(t0);
  kv["end"] = std::to_string(check->end_ns());
  kv["rows"] = std::to_string(check->seen());
  report("inproc", kv);
  return 0;
}

// -- the raw socket pair -------------------------------------------------------------

[[noreturn]] void sys_error(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

/// Moves the whole of `iov` (readv or writev, looping on short transfers).
/// Returns false on end of file before the first byte; throws on end of file
/// in the middle.
bool transfer(int fd, iovec* iov, int n, bool write) {
  size_t moved = 0;
  while (n > 0) {
    auto r = write ? ::writev(fd, iov, n) : ::readv(fd, iov, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      sys_error(write ? "writev" : "readv");
    if (r == 0) {
      if (moved == 0)
        return false;
      throw std::runtime_error("the connection ended in the middle of a batch");
    }
    moved += static_cast<size_t>(r);
    for (auto left = static_cast<size_t>(r); n > 0 && left > 0;) {
      if (left >= iov->iov_len) {
        left -= iov->iov_len;
        ++iov;
        --n;
      } else {
        iov->iov_base = static_cast<char*>(iov->iov_base) + left;
        iov->iov_len -= left;
        left = 0;
      }
    }
  }
  return true;
}

void frame(columns& c, iovec (&iov)[3]) {
  auto bytes = c.x1.size() * sizeof(float);
  iov[0] = {c.x1.data(), bytes};
  iov[1] = {c.x2.data(), bytes};
  iov[2] = {c.y.data(), bytes};
}

/// Listens on 127.0.0.1 (OS-chosen port), tells the parent the port, and
/// returns the one connection accepted.
int accept_one() {
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0)
    sys_error("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(lfd, 1) != 0 ||
      ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    sys_error("listen on 127.0.0.1");
  report("port", {{"port", std::to_string(ntohs(a.sin_port))}});
  int fd = ::accept(lfd, nullptr, nullptr);
  if (fd < 0)
    sys_error("accept");
  ::close(lfd);
  return fd;
}

int connect_to(const std::string& address) {
  auto [h, port] = detail::parse_address(address);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    sys_error("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, h.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error("not an IPv4 address: " + h);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    sys_error("connect to " + address);
  return fd;
}

int raw_sink(const params& p) {
  int fd = accept_one();
  auto cpu0 = cpu_seconds();
  sequence_check check{p.rows, p.batches * p.rows};
  columns c{static_cast<size_t>(p.rows)};
  for (;;) {
    iovec iov[3];
    frame(c, iov);
    if (!transfer(fd, iov, 3, false))
      break;
    check.take(c.x1.data(), c.x2.data(), c.y.data(), c.x1.size());
  }
  ::close(fd);
  check.finish();
  auto kv = usage(cpu0);
  kv["end"] = std::to_string(check.end_ns());
  kv["rows"] = std::to_string(check.seen());
  report("raw-sink", kv);
  return 0;
}

// The raw pair with a process between, as quern's host sits between
// producer and consumer: the bound of two loopback hops. It moves bytes, not
// frames: each read takes all that has arrived (up to 1 MiB), so that under
// load one pair of system calls carries many batches. (Frame by frame it
// reached 0.40x-0.48x of the pair here, against 0.52x-0.60x so.)
int raw_relay(const std::string& sink_address) {
  int out = connect_to(sink_address);
  int in = accept_one();
  auto cpu0 = cpu_seconds();
  std::vector<char> buffer(size_t{1} << 20);
  for (;;) {
    auto r = ::read(in, buffer.data(), buffer.size());
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      sys_error("read");
    if (r == 0)
      break;
    iovec iov{buffer.data(), static_cast<size_t>(r)};
    transfer(out, &iov, 1, true);
  }
  ::close(in);
  ::close(out);
  report("raw-relay", usage(cpu0));
  return 0;
}

int raw_source(const params& p, const std::string& address) {
  int fd = connect_to(address);
  auto cpu0 = cpu_seconds();
  auto t0 = now_ns();
  columns c{static_cast<size_t>(p.rows)};
  for (int64_t b = 0; b < p.batches; ++b) {
    // The producer's work per batch: fill the columns, hand them over (one
    // frame of the same size as quern's batch, one writev).
    fill(c, b);
    iovec iov[3];
    frame(c, iov);
    transfer(fd, iov, 3, true);
  }
  ::close(fd);
  auto kv = usage(cpu0);
  kv["start"] = std::to_string(t0);
  report("raw-source", kv);
  return 0;
}

// -- CAF alone: the same batches through CAF's middleman, without quern ---------------

using caf_batch_atom = caf::atom_constant<caf::atom("cafbatch")>;

/// A plain CAF actor system with the middleman: CAF's defaults but
/// --threads, as quern's processes.
struct caf_config : caf::actor_system_config {
  explicit caf_config(const params& p) {
    load<caf::io::middleman>();
    tune(*this, p);
  }
};

caf::actor caf_connect(caf::actor_system& sys, const std::string& address) {
  auto [host, port] = detail::parse_address(address);
  auto a = sys.middleman().remote_actor(host, port);
  if (!a)
    throw std::runtime_error("cannot reach " + address + ": " + sys.render(a.error()));
  return *a;
}

uint16_t caf_publish(caf::actor_system& sys, const caf::actor& a) {
  auto port = sys.middleman().publish(a, 0, "127.0.0.1");
  if (!port)
    throw std::runtime_error("cannot publish: " + sys.render(port.error()));
  return *port;
}

/// An actor that checks each batch (the three columns end to end in one byte
/// vector) and answers it; the last row ends the wait.
int caf_sink(const params& p) {
  caf_config cfg{p};
  caf::actor_system sys{cfg};
  sequence_check check{p.rows, p.batches * p.rows};
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::string error;
  auto finish = [&](std::string why) {
    std::lock_guard<std::mutex> lock{m};
    error = std::move(why);
    done = true;
    cv.notify_one();
  };
  auto sink = sys.spawn([&](caf::event_based_actor*) -> caf::behavior {
    return {[&](caf_batch_atom, uint64_t, const std::vector<char>& bytes) -> uint64_t {
      auto n = bytes.size() / (3 * sizeof(float));
      auto f = reinterpret_cast<const float*>(bytes.data());
      try {
        check.take(f, f + n, f + 2 * n, n);
        if (check.seen() == p.batches * p.rows)
          finish({});
      } catch (const std::exception& e) {
        finish(e.what());
      }
      return n;
    }};
  });
  auto port = caf_publish(sys, sink);
  auto cpu0 = cpu_seconds();
  report("port", {{"port", std::to_string(port)}});
  {
    std::unique_lock<std::mutex> lock{m};
    cv.wait(lock, [&] { return done; });
  }
  if (!error.empty())
    throw std::runtime_error(error);
  auto kv = usage(cpu0);
  kv["end"] = std::to_string(check.end_ns());
  kv["rows"] = std::to_string(check.seen());
  report("caf-sink", kv);
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
  return 0;
}

/// An actor that hands every batch on to the sink (delegated: the sink's
/// answer goes to the source), as a queue's host stands between two peers.
int caf_relay(const params& p, const std::string& sink_address) {
  caf_config cfg{p};
  caf::actor_system sys{cfg};
  auto sink = caf_connect(sys, sink_address);
  auto relay = sys.spawn([sink](caf::event_based_actor* self) -> caf::behavior {
    return {[self, sink](caf_batch_atom a, uint64_t b, std::vector<char>& bytes) {
      return self->delegate(sink, a, b, std::move(bytes));
    }};
  });
  auto port = caf_publish(sys, relay);
  auto cpu0 = cpu_seconds();
  report("port", {{"port", std::to_string(port)}});
  until_stdin_closes();
  report("caf-relay", usage(cpu0));
  caf::anon_send_exit(relay, caf::exit_reason::user_shutdown);
  return 0;
}

/// Sends each batch (fresh bytes each, as the producer's) as one request,
/// with at most --batch-window requests unanswered.
int caf_source(const params& p, const std::string& address) {
  caf_config cfg{p};
  caf::actor_system sys{cfg};
  auto relay = caf_connect(sys, address);
  caf::scoped_actor self{sys};
  auto cpu0 = cpu_seconds();
  auto t0 = now_ns();
  using reply = decltype(self->request(relay, caf::infinite, caf_batch_atom::value,
                                       uint64_t{0}, std::vector<char>{}));
  std::deque<reply> waiting;
  std::string error;
  auto take_answer = [&] {
    waiting.front().receive([](uint64_t) {},
                            [&](caf::error& e) { error = sys.render(e); });
    waiting.pop_front();
    if (!error.empty())
      throw std::runtime_error("the sink refused a batch: " + error);
  };
  auto rows = static_cast<size_t>(p.rows);
  for (int64_t b = 0; b < p.batches; ++b) {
    if (waiting.size() >= static_cast<size_t>(p.batch_window))
      take_answer();
    std::vector<char> bytes(3 * rows * sizeof(float));
    auto f = reinterpret_cast<float*>(bytes.data());
    fill(f, f + rows, f + 2 * rows, rows, b);
    waiting.push_back(self->request(relay, caf::infinite, caf_batch_atom::value,
                                    static_cast<uint64_t>(b), std::move(bytes)));
  }
  while (!waiting.empty())
    take_answer();
  auto kv = usage(cpu0);
  kv["start"] = std::to_string(t0);
  report("caf-source", kv);
  return 0;
}

// -- the parent: starts the roles, bounds every wait ----------------------------------

/// A failure of the run, naming who failed.
struct run_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One process of a run. Its stdout is a pipe read line by line; its stderr
/// is ours. Killed (SIGKILL) and reaped if still running when the handle
/// goes, so a failed or timed-out run leaves nothing behind.
class child {
public:
  child(std::string name, std::vector<std::string> args, clk::time_point deadline,
        bool pipe_stdin = false)
      : name_(std::move(name)), deadline_(deadline) {
    int out[2];
    int in[2] = {-1, -1};
    if (::pipe2(out, O_CLOEXEC) != 0 || (pipe_stdin && ::pipe2(in, O_CLOEXEC) != 0))
      throw run_failure("pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (pipe_stdin)
      posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    else
      posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    args.insert(args.begin(), "/proc/self/exe");
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    auto rc = posix_spawn(&pid_, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    out_ = out[0];
    if (pipe_stdin) {
      ::close(in[0]);
      in_ = in[1];
    }
    if (rc != 0)
      throw run_failure("cannot start the " + name_ + " process: " + std::strerror(rc));
  }
  ~child() {
    close_stdin();
    ::close(out_);
    if (!status_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }
  child(const child&) = delete;
  child& operator=(const child&) = delete;

  void close_stdin() {
    if (in_ >= 0)
      ::close(in_);
    in_ = -1;
  }

  /// The child's next line, which must start with `what`, as key/value
  /// pairs. Throws naming the child when it ends first or the deadline
  /// passes, or naming one of `watch` when that one fails meanwhile (a
  /// consumer that died leaves its producer blocked on a full queue).
  std::map<std::string, std::string> expect(const std::string& what,
                                            std::vector<child*> watch = {}) {
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::istringstream line{buf_.substr(0, nl)};
        buf_.erase(0, nl + 1);
        std::string word;
        line >> word;
        if (word != what)
          throw run_failure(who() + " said '" + word + "' where '" + what +
                            "' was expected");
        std::map<std::string, std::string> kv;
        for (std::string k, v; line >> k >> v;)
          kv[k] = v;
        return kv;
      }
      pollfd pfd{out_, POLLIN, 0};
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - clk::now());
      if (left.count() <= 0)
        throw run_failure("timed out waiting for '" + what + "' from " + who() +
                          " (--timeout): killed");
      auto r = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
      if (r < 0 && errno != EINTR)
        throw run_failure(std::string("poll: ") + std::strerror(errno));
      if (r <= 0) {
        for (auto* c : watch)
          c->check_alive();
        continue;
      }
      char chunk[512];
      auto n = ::read(out_, chunk, sizeof chunk);
      if (n > 0) {
        buf_.append(chunk, static_cast<size_t>(n));
        continue;
      }
      wait();
      throw run_failure(who() + " ended before it said '" + what + "'");
    }
  }

  /// Throws naming the child if it already ended with a failure.
  void check_alive() {
    int st = 0;
    if (!status_ && ::waitpid(pid_, &st, WNOHANG) == pid_)
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (status_ && *status_ != 0)
      throw run_failure(who() + " failed");
  }

  /// Waits for the child's end; throws naming it unless it exited with 0.
  void wait() {
    while (!status_) {
      int st = 0;
      auto r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      if (clk::now() >= deadline_)
        throw run_failure("timed out waiting for " + who() +
                          " to end (--timeout): killed");
      std::this_thread::sleep_for(std::chrono::milliseconds{2});
    }
    if (*status_ != 0)
      throw run_failure(who() + " failed");
  }

private:
  std::string who() const {
    return "the " + name_ + " process (pid " + std::to_string(pid_) +
           (status_ ? ", exit status " + std::to_string(*status_) : std::string()) + ")";
  }

  std::string name_;
  clk::time_point deadline_;
  pid_t pid_ = -1;
  int out_ = -1;
  int in_ = -1;
  std::string buf_;
  std::optional<int> status_;
};

/// What one run measured: its duration and, per process, CPU seconds and
/// peak RSS.
struct run_result {
  double seconds = 0;
  std::map<std::string, double> cpu;
  std::map<std::string, double> rss;
};

double seconds_between(const std::map<std::string, std::string>& from,
                       const std::map<std::string, std::string>& to) {
  return static_cast<double>(std::stoll(to.at("end")) - std::stoll(from.at("start"))) *
         1e-9;
}

class runner {
public:
  runner(const params& p, std::vector<std::string> args)
      : p_(p), args_(std::move(args)),
        deadline_(clk::now() + std::chrono::duration_cast<clk::duration>(
                                   std::chrono::duration<double>(p.timeout))) {}

  /// Producer process -> queue in the host process -> consumer process, over
  /// TLS with the certificates of `tls_dir` unless it is empty.
  /// `keyed`: the producer stores its batches with remote_producer::push_batch.
  run_result remote(bool single, const std::string& tls_dir = "", bool keyed = false) {
    auto mode = single ? "single" : keyed ? "keyed" : "batch";
    auto what =
        std::string("quern remote ") + mode + (tls_dir.empty() ? "" : " TLS") + " run: ";
    auto tls = [&](std::vector<std::string> args) {
      if (!tls_dir.empty()) {
        args.push_back("--tls-dir");
        args.push_back(tls_dir);
      }
      return with(std::move(args));
    };
    try {
      child host{"host", tls({"--role", "host"}), deadline_, true};
      auto address = "127.0.0.1:" + host.expect("port").at("port");
      child cons{"consumer",
                 tls({"--role", "consumer", "--mode", mode, "--address", address}),
                 deadline_};
      cons.expect("ready", {&host});
      child prod{"producer",
                 tls({"--role", "producer", "--mode", mode, "--address", address}),
                 deadline_};
      auto pr = prod.expect("producer", {&host, &cons});
      prod.wait();
      auto cr = cons.expect("consumer", {&host});
      cons.wait();
      host.close_stdin();
      auto hr = host.expect("host");
      host.wait();
      check_rows(cr, single);
      run_result r;
      r.seconds = seconds_between(pr, cr);
      note(r, "producer", pr);
      note(r, "host", hr);
      note(r, "consumer", cr);
      return r;
    } catch (const std::exception& e) {
      throw run_failure(what + e.what());
    }
  }

  /// The same bytes from one process to another over a loopback TCP socket.
  run_result raw() {
    try {
      child sink{"raw-sink", with({"--role", "raw-sink"}), deadline_};
      auto address = "127.0.0.1:" + sink.expect("port").at("port");
      child source{"raw-source", with({"--role", "raw-source", "--address", address}),
                   deadline_};
      auto so = source.expect("raw-source", {&sink});
      source.wait();
      auto si = sink.expect("raw-sink");
      sink.wait();
      check_rows(si, false);
      run_result r;
      r.seconds = seconds_between(so, si);
      note(r, "raw-source", so);
      note(r, "raw-sink", si);
      return r;
    } catch (const std::exception& e) {
      throw run_failure(std::string("raw socket run: ") + e.what());
    }
  }

  /// The same bytes through a relay process: two hops, as quern's.
  run_result raw_relay() { return three_hops("raw", false, "raw socket relay run: "); }

  /// The same batches through CAF alone (three processes, no quern).
  run_result caf_relay() { return three_hops("caf", true, "CAF relay run: "); }

  /// Roles `<kind>-source` -> `<kind>-relay` -> `<kind>-sink`, each in a
  /// process. A relay that serves until its stdin closes (`relay_serves`)
  /// is told to end once the sink has every row; another ends with its
  /// source's connection.
  run_result three_hops(const std::string& kind, bool relay_serves, const char* what) {
    try {
      child sink{kind + "-sink", with({"--role", kind + "-sink"}), deadline_};
      auto sink_address = "127.0.0.1:" + sink.expect("port").at("port");
      child relay{kind + "-relay",
                  with({"--role", kind + "-relay", "--address", sink_address}), deadline_,
                  relay_serves};
      auto address = "127.0.0.1:" + relay.expect("port", {&sink}).at("port");
      child source{kind + "-source",
                   with({"--role", kind + "-source", "--address", address}), deadline_};
      auto so = source.expect(kind + "-source", {&sink, &relay});
      source.wait();
      std::map<std::string, std::string> re;
      if (!relay_serves) {
        re = relay.expect(kind + "-relay", {&sink});
        relay.wait();
      }
      auto si = sink.expect(kind + "-sink", relay_serves ? std::vector<child*>{&relay}
                                                         : std::vector<child*>{});
      sink.wait();
      if (relay_serves) {
        relay.close_stdin();
        re = relay.expect(kind + "-relay");
        relay.wait();
      }
      check_rows(si, false);
      run_result r;
      r.seconds = seconds_between(so, si);
      note(r, kind + "-source", so);
      note(r, kind + "-relay", re);
      note(r, kind + "-sink", si);
      return r;
    } catch (const std::exception& e) {
      throw run_failure(what + std::string(e.what()));
    }
  }

  /// The same batches (rows) through a queue of one process, thread to thread.
  run_result inproc(bool single) {
    auto mode = single ? "single" : "batch";
    try {
      child c{"inproc", with({"--role", "inproc", "--mode", mode}), deadline_};
      auto res = c.expect("inproc");
      c.wait();
      check_rows(res, single);
      run_result r;
      r.seconds = seconds_between(res, res);
      note(r, single ? "inproc-single" : "inproc", res);
      return r;
    } catch (const std::exception& e) {
      throw run_failure(std::string("in-process ") + mode + " run: " + e.what());
    }
  }

  int64_t runs_checked() const { return runs_checked_; }
  const std::map<std::string, double>& peak_rss() const { return peak_rss_; }

private:
  std::vector<std::string> with(std::vector<std::string> role) const {
    role.insert(role.end(), args_.begin(), args_.end());
    return role;
  }

  void check_rows(const std::map<std::string, std::string>& res, bool single) {
    auto expected = single ? p_.singles : p_.batches * p_.rows;
    if (std::stoll(res.at("rows")) != expected)
      throw run_failure("the consumer took " + res.at("rows") + " rows of " +
                        std::to_string(expected));
    ++runs_checked_;
  }

  void note(run_result& r, const std::string& who,
            const std::map<std::string, std::string>& res) {
    r.cpu[who] = std::stod(res.at("cpu"));
    auto rss = std::stod(res.at("rss"));
    r.rss[who] = rss;
    peak_rss_[who] = std::max(peak_rss_[who], rss);
  }

  params p_;
  std::vector<std::string> args_;
  clk::time_point deadline_;
  int64_t runs_checked_ = 0;
  std::map<std::string, double> peak_rss_;
};

/// A CA and one certificate it signed (EC keys, made by the openssl command)
/// in a new directory under /tmp, for the TLS run; empty, with `why`, when
/// the command fails.
std::string make_tls_dir(std::string& why) {
  char dir[] = "/tmp/quern-bench-tls-XXXXXX";
  if (::mkdtemp(dir) == nullptr) {
    why = std::string("cannot make a directory: ") + std::strerror(errno);
    return {};
  }
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  for (const auto& args :
       {"req -x509 " + key + " -keyout ca.key -out ca.pem -days 2 -subj /CN=bench-ca",
        "req " + key + " -keyout node.key -out node.csr -subj /CN=bench-node",
        std::string("x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                    "-out node.pem -days 2")}) {
    auto cmd = std::string("cd ") + dir + " && openssl " + args + " >>openssl.log 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      why = "the openssl command failed (" + std::string(dir) + "/openssl.log)";
      return {};
    }
  }
  return dir;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

int parent(const params& p) {
  std::vector<std::string> args{"--rows",         std::to_string(p.rows),
                                "--batches",      std::to_string(p.batches),
                                "--singles",      std::to_string(p.singles),
                                "--capacity",     std::to_string(p.capacity),
                                "--batch-window", std::to_string(p.batch_window),
                                "--window",       std::to_string(p.window),
                                "--cut",          p.cut,
                                "--threads",      std::to_string(p.threads)};
  runner run{p, args};
  // TLS's certificates, made before anything is timed; without the openssl
  // command the TLS run is left out, and the output says why.
  std::string why_no_tls;
  auto tls_dir = make_tls_dir(why_no_tls);
  struct remove_at_end {
    std::string dir;
    ~remove_at_end() {
      std::error_code ec;
      if (!dir.empty())
        std::filesystem::remove_all(dir, ec);
    }
  } tls_files{tls_dir};
  auto batch_bytes = 3.0 * 4.0 * p.rows;
  std::printf(
      "%s: 127.0.0.1, medians of %d interleaved rounds\n"
      "  batches: %lld per run of %d rows x 3 float32 (%.0f bytes each, %.1f MB per "
      "run)\n  single rows: %lld per run\n",
      program, p.rounds, static_cast<long long>(p.batches), p.rows, batch_bytes,
      batch_bytes * static_cast<double>(p.batches) * 1e-6,
      static_cast<long long>(p.singles));
  std::fflush(stdout);
  // The scenarios, by name (--only picks some), and their runs.
  struct scenario {
    std::string name;
    std::function<run_result()> run;
    std::vector<run_result> results;
  };
  std::vector<scenario> batches{
      {"raw batches", [&] { return run.raw(); }, {}},
      {"remote batches", [&] { return run.remote(false); }, {}},
      {"inproc batches", [&] { return run.inproc(false); }, {}},
      {"raw relay batches", [&] { return run.raw_relay(); }, {}},
      {"remote TLS batches", [&] { return run.remote(false, tls_dir); }, {}},
      {"remote keyed batches", [&] { return run.remote(false, "", true); }, {}},
      {"caf relay batches", [&] { return run.caf_relay(); }, {}}};
  std::vector<scenario> singles{{"remote singles", [&] { return run.remote(true); }, {}},
                                {"inproc singles", [&] { return run.inproc(true); }, {}}};
  auto wanted = [&](const scenario& sc) {
    if (sc.name.find("TLS") != std::string::npos && tls_dir.empty())
      return false;
    return p.only.empty() || sc.name.find(p.only) != std::string::npos;
  };
  if (std::none_of(batches.begin(), batches.end(), wanted) &&
      std::none_of(singles.begin(), singles.end(), wanted))
    throw std::runtime_error("--only '" + p.only + "' names no scenario (see --help)");
  // Per round, `a`'s rate over `b`'s (both ran in it).
  std::map<std::string, std::vector<double>> ratios;
  for (int round = 0; round < p.rounds; ++round) {
    // Rotate the order so that no side always runs first (warm or cold).
    for (auto* group : {&batches, &singles}) {
      auto n = group->size();
      for (size_t k = 0; k < n; ++k) {
        auto& sc = (*group)[(static_cast<size_t>(round) + k) % n];
        if (wanted(sc))
          sc.results.push_back(sc.run());
      }
    }
    auto ratio = [&](const scenario& a, const scenario& b) {
      if (static_cast<int>(a.results.size()) == round + 1 &&
          static_cast<int>(b.results.size()) == round + 1)
        ratios[a.name + "/" + b.name].push_back(b.results.back().seconds /
                                                a.results.back().seconds);
    };
    ratio(batches[1], batches[0]);
    ratio(batches[1], batches[2]);
    ratio(batches[1], batches[3]);
    ratio(batches[4], batches[0]);
    ratio(batches[4], batches[1]);
    ratio(batches[5], batches[0]);
    ratio(batches[5], batches[1]);
    ratio(batches[6], batches[0]);
    ratio(batches[1], batches[6]);
    ratio(singles[0], singles[1]);
  }
  auto secs = [](const std::vector<run_result>& rs) {
    std::vector<double> xs;
    for (auto& r : rs)
      xs.push_back(r.seconds);
    return median(xs);
  };
  auto rows_b = static_cast<double>(p.batches * p.rows);
  auto rows_s = static_cast<double>(p.singles);
  auto print_ratio = [&](const char* name, const std::string& key) {
    if (ratios.count(key) != 0)
      std::printf("  %-42s %9.2fx\n", name, median(ratios[key]));
  };
  std::printf("\n%-44s %10s %14s\n", "batches", "MB/s", "rows/s");
  const char* labels[] = {"raw TCP socket, process to process",
                          "quern remote, producer -> host -> consumer",
                          "quern in-process, thread to thread",
                          "raw TCP, source -> relay process -> sink",
                          "quern remote over TLS (mutual)",
                          "quern remote, remote_producer (stored once)",
                          "CAF alone, source -> relay actor -> sink"};
  for (size_t i = 0; i < batches.size(); ++i)
    if (!batches[i].results.empty())
      std::printf("  %-42s %10.0f %14.0f\n", labels[i],
                  batch_bytes * static_cast<double>(p.batches) /
                      secs(batches[i].results) * 1e-6,
                  rows_b / secs(batches[i].results));
  print_ratio("quern remote / raw socket", "remote batches/raw batches");
  print_ratio("quern remote / in-process", "remote batches/inproc batches");
  print_ratio("quern remote / raw relay (two hops)", "remote batches/raw relay batches");
  print_ratio("quern remote over TLS / raw socket", "remote TLS batches/raw batches");
  print_ratio("quern remote over TLS / without TLS", "remote TLS batches/remote batches");
  print_ratio("remote_producer / raw socket", "remote keyed batches/raw batches");
  print_ratio("remote_producer / queue_writer", "remote keyed batches/remote batches");
  print_ratio("CAF alone / raw socket", "caf relay batches/raw batches");
  print_ratio("quern remote / CAF alone", "remote batches/caf relay batches");
  if (tls_dir.empty())
    std::printf("  quern remote over TLS: not run, %s\n", why_no_tls.c_str());
  std::printf("\n%-44s %10s %14s\n", "single rows (streamed)", "", "rows/s");
  const char* single_labels[] = {labels[1], labels[2]};
  for (size_t i = 0; i < singles.size(); ++i)
    if (!singles[i].results.empty())
      std::printf("  %-42s %10s %14.0f\n", single_labels[i], "",
                  rows_s / secs(singles[i].results));
  print_ratio("quern remote / in-process", "remote singles/inproc singles");

  // Where the time goes: CPU per batch (row) of each process from its
  // getrusage, medians of the rounds; "cores busy" is all of it over the
  // wall time (2.00: both cores of a 2-core machine).
  std::printf("\nCPU per batch (row) by process, getrusage\n");
  auto cpu_line = [&](const scenario& sc, double units, const char* unit) {
    if (sc.results.empty())
      return;
    std::map<std::string, std::vector<double>> per;
    std::vector<double> cores;
    for (auto& r : sc.results) {
      double total = 0;
      for (auto& [who, c] : r.cpu) {
        per[who].push_back(c / units * 1e6);
        total += c;
      }
      cores.push_back(total / r.seconds);
    }
    std::printf("  %-18s", sc.name.c_str());
    for (auto& [who, xs] : per)
      std::printf(" %s %.2f", who.c_str(), median(xs));
    std::printf(" us/%s; cores busy %.2f\n", unit, median(cores));
  };
  for (auto& sc : batches)
    cpu_line(sc, static_cast<double>(p.batches), "batch");
  for (auto& sc : singles)
    cpu_line(sc, rows_s, "row");

  std::printf("\npeak RSS by process (MiB):");
  for (auto& [who, rss] : run.peak_rss())
    std::printf(" %s %.1f", who.c_str(), rss);
  std::printf("\n");
  std::printf("every row arrived exactly once, in order (%lld runs checked)\n",
              static_cast<long long>(run.runs_checked()));
  bench::print_peak_rss();
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  params p;
  std::string role;
  std::string mode = "batch";
  std::string address;
  po::options_description desc{
      "bench_remote_throughput: the flagship's batches from a producer process through "
      "a queue in a host process to a consumer process (127.0.0.1), beside a raw "
      "loopback TCP socket and an in-process queue\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "rows", po::value<int32_t>(&p.rows)->default_value(p.rows),
      "rows per batch (three float32 columns each)")(
      "batches", po::value<int64_t>(&p.batches)->default_value(p.batches),
      "batches per run")("singles",
                         po::value<int64_t>(&p.singles)->default_value(p.singles),
                         "single rows per run of the streaming scenario")(
      "rounds", po::value<int>(&p.rounds)->default_value(p.rounds),
      "interleaved rounds (the median is printed)")(
      "capacity", po::value<int32_t>(&p.capacity)->default_value(p.capacity),
      "the queue's capacity, in batches")(
      "batch-window", po::value<int32_t>(&p.batch_window)->default_value(p.batch_window),
      "batches the writer may have in flight (the reader: twice as many)")(
      "window", po::value<size_t>(&p.window)->default_value(p.window),
      "credit window of the single-row writer and reader")(
      "cut", po::value<std::string>(&p.cut)->default_value(p.cut),
      "the batch_reader's cut: many (dequeue_up_to: batches ready together travel in "
      "one message) or any (each batch as enqueued, one message each)")(
      "threads", po::value<size_t>(&p.threads)->default_value(p.threads),
      "CAF scheduler threads of each process (scheduler.max-threads); 0: CAF's "
      "default (4 here); 1 wakes fewer threads per message")(
      "only", po::value<std::string>(&p.only)->default_value(""),
      "run only the scenarios whose name contains this text: raw batches, remote "
      "batches, inproc batches, raw relay batches, remote TLS batches, remote keyed "
      "batches, caf relay batches, remote singles, inproc singles "
      "(e.g. \"remote\")")(
      "timeout", po::value<double>(&p.timeout)->default_value(p.timeout),
      "seconds the whole run may take; processes still running then are killed");
  // The processes of a run; not for people, so --help leaves them out.
  po::options_description hidden;
  hidden.add_options()("role", po::value(&role))("mode", po::value(&mode))(
      "address", po::value(&address))("tls-dir", po::value(&p.tls_dir));
  bool is_child = std::any_of(argv + 1, argv + argc, [](const char* a) {
    return std::strncmp(a, "--role", 6) == 0;
  });
  po::options_description all;
  all.add(desc).add(hidden);
  po::variables_map vm;
  if (auto status = cli::parse_options(program, argc, argv, is_child ? all : desc, vm))
    return *status;
  if (p.rows <= 0 || p.batches <= 0 || p.singles <= 0 || p.rounds <= 0 ||
      p.capacity <= 0 || p.batch_window <= 0 || p.window < 4 || p.timeout <= 0 ||
      (p.cut != "any" && p.cut != "many") ||
      (mode != "batch" && mode != "single" && mode != "keyed")) {
    std::cerr << program
              << ": --rows, --batches, --singles, --rounds, --capacity, --batch-window "
                 "and --timeout must be positive, --window at least 4, --cut any or "
                 "many\n";
    return 2;
  }
  if (int64_t{p.capacity} * p.rows > INT32_MAX) {
    std::cerr << program
              << ": --capacity times --rows must fit a queue's capacity (2^31-1)\n";
    return 2;
  }
  if (p.batches >= (int64_t{1} << 24) || p.rows >= (1 << 24)) {
    // Rows carry their batch and row numbers as float32.
    std::cerr << program << ": --batches and --rows must be below 16777216\n";
    return 2;
  }
  if (!is_child)
    try {
      ::signal(SIGPIPE, SIG_IGN);
      return parent(p);
    } catch (const std::exception& e) {
      std::cerr << program << ": FAILED: " << e.what() << "\n";
      return 1;
    }
  // A child dies with its parent: no process of a run outlives it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1)
    return 1;
  // Named by role (threads started later inherit it): top, perf --sort comm.
  ::prctl(PR_SET_NAME, ("rt-" + role).c_str());
  ::signal(SIGPIPE, SIG_IGN);
  bool single = mode == "single";
  try {
    if (role == "host")
      return host(p);
    if (role == "producer")
      return producer(p, address, single, mode == "keyed");
    if (role == "consumer")
      return consumer(p, address, single);
    if (role == "raw-sink")
      return raw_sink(p);
    if (role == "raw-relay")
      return raw_relay(address);
    if (role == "raw-source")
      return raw_source(p, address);
    if (role == "inproc")
      return inproc(p, single);
    if (role == "caf-sink")
      return caf_sink(p);
    if (role == "caf-relay")
      return caf_relay(p, address);
    if (role == "caf-source")
      return caf_source(p, address);
    std::cerr << program << ": unknown --role '" << role << "'\n";
    return 2;
  } catch (const op_error& e) {
    std::cerr << program << " (" << role << "): " << error_code_name(e.code()) << ": "
              << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << program << " (" << role << "): " << e.what() << "\n";
    return 1;
  }
}
