// quern-node: serves queues, a coordinator and summary writers to other
// processes (docs/distributed.md, "quern-node"), as a TensorFlow 1.x
// parameter server held the queues its workers shared:
//
//   quern-node --listen 127.0.0.1:7000 --coordinator --writer train=runs/chief
//              --queue examples:fifo:1000:float32[3],int64[]
//
// and in another process quern::connect(sys, "127.0.0.1:7000").queue("examples").
// It runs until SIGINT or SIGTERM, then stops serving and closes its writers.
#include <signal.h>

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "files.hpp"
#include "flags.hpp"
#include "quern/coordinator.hpp"
#include "quern/queue.hpp"
#include "quern/remote.hpp"
#include "quern/summary/summary_writer.hpp"

namespace po = boost::program_options;
using namespace quern;

namespace {

struct settings {
  std::string listen = "127.0.0.1:7000";
  std::vector<std::string> queues;
  std::vector<std::string> writers;
  bool coordinator = false;
  std::string port_file;
  /// Without it (SO_REUSEADDR), a node killed and started again on its port
  /// serves at once, though sockets of its last run linger (TIME-WAIT).
  bool no_reuse_address = false;
  tls_options tls;
  /// What a peer may do before its handshake (serve_options; docs/distributed.md,
  /// "What a node withstands").
  int64_t handshake_timeout_ms = 10000;
  int64_t max_pending_handshakes = 256;
  int64_t max_message_bytes = int64_t{64} << 20;
};

// The front door's bounds, each refused by its flag's name when out of range.
void set_door_bounds(const settings& s, serve_options& opts) {
  if (s.handshake_timeout_ms <= 0)
    throw invalid_argument_error("--handshake-timeout-ms must be positive, got " +
                                 std::to_string(s.handshake_timeout_ms));
  if (s.max_pending_handshakes < 1)
    throw invalid_argument_error("--max-pending-handshakes must be at least 1, got " +
                                 std::to_string(s.max_pending_handshakes));
  if (s.max_message_bytes < 1024)
    throw invalid_argument_error("--max-message-bytes must be at least 1024, got " +
                                 std::to_string(s.max_message_bytes));
  opts.handshake_timeout = std::chrono::milliseconds{s.handshake_timeout_ms};
  opts.max_pending_handshakes = static_cast<size_t>(s.max_pending_handshakes);
  opts.max_message_bytes = static_cast<size_t>(s.max_message_bytes);
}

// The port into --port-file, for whoever started it to poll.
void write_port(const std::string& path, uint16_t port) {
  if (auto why = cli::write_file_whole(path, std::to_string(port) + "\n"); !why.empty())
    throw invalid_argument_error("--port-file: " + why);
}

int run(const settings& s, const sigset_t& stop_signals) {
  std::vector<node_tool::queue_flag> queue_flags;
  for (auto& q : s.queues)
    queue_flags.push_back(node_tool::parse_queue_flag(q));
  std::vector<node_tool::writer_flag> writer_flags;
  for (auto& w : s.writers)
    writer_flags.push_back(node_tool::parse_writer_flag(w));
  auto [host, port] = detail::parse_address(s.listen, true);
  bool tls = !s.tls.certificate.empty() || !s.tls.key.empty() || !s.tls.ca_file.empty();
  auto cfg =
      tls ? std::make_unique<remote_config>(s.tls) : std::make_unique<remote_config>();
  actor_system sys{*cfg};
  serve_options opts{host, port, !s.no_reuse_address};
  set_door_bounds(s, opts);
  std::string what;
  for (auto& q : queue_flags) {
    if (opts.queues.count(q.name))
      throw invalid_argument_error("--queue: the name '" + q.name + "' is given twice");
    try {
      opts.queues.emplace(q.name, spawn_queue(sys, q.kind, q.options));
    } catch (const op_error& e) {
      throw op_error(e.code(), "--queue '" + q.name + "': " + e.what());
    }
    what += "\n  queue '" + q.name + "': " + node_tool::describe(q);
  }
  std::optional<coordinator> coord;
  if (s.coordinator) {
    coord.emplace(sys);
    opts.coordinator = coord->actor();
    what += "\n  the coordinator";
  }
  std::map<std::string, std::unique_ptr<summary_writer>> writers;
  for (auto& w : writer_flags) {
    if (writers.count(w.name))
      throw invalid_argument_error("--writer: the name '" + w.name + "' is given twice");
    auto& h = writers[w.name] = std::make_unique<summary_writer>(sys, w.logdir);
    opts.writers.emplace(w.name, h->actor());
    what += "\n  summary writer '" + w.name + "' into " + w.logdir;
  }
  auto srv = serve(sys, std::move(opts));
  if (!s.port_file.empty())
    write_port(s.port_file, srv.port());
  std::cout << "quern-node: serving on " << srv.address() << (tls ? " with TLS" : "")
            << what << "\nquern-node: SIGINT (Ctrl-C) or SIGTERM stops it" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "quern-node: " << (sig == SIGINT ? "SIGINT" : "SIGTERM")
            << ": stopping; peers' calls now fail with Unavailable" << std::endl;
  srv.stop();
  for (auto& [name, w] : writers)
    w->close();
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // Blocked before any thread starts, so that every thread inherits the mask
  // and the signals wait for sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  settings s;
  po::options_description desc{
      "quern-node: serves queues, a coordinator and summary writers to other processes "
      "(quern::connect(sys, \"host:port\"))\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "listen", po::value(&s.listen)->default_value(s.listen),
      "host:port to serve on; port 0: the system chooses. Without TLS only loopback "
      "addresses")("queue", po::value(&s.queues)->composing(),
                   "NAME:KIND:CAPACITY:COMPONENTS[:OPTION=VALUE,...], e.g. "
                   "examples:fifo:1000:float32[3],int64[] (KIND fifo, random_shuffle, "
                   "padding_fifo, priority; CAPACITY -1 unbounded; OPTION "
                   "min_after_dequeue, seed, seed2); repeatable")(
      "coordinator", po::bool_switch(&s.coordinator), "serve a coordinator too")(
      "writer", po::value(&s.writers)->composing(),
      "NAME=LOGDIR: serve a summary writer of LOGDIR as NAME; repeatable")(
      "port-file", po::value(&s.port_file), "write the port served on to this file")(
      "no-reuse-address", po::bool_switch(&s.no_reuse_address),
      "do not listen while sockets of an earlier run linger on the port (by default "
      "a node started again on its port serves at once)")(
      "handshake-timeout-ms", po::value(&s.handshake_timeout_ms)->default_value(10000),
      "close a connection that has not finished its handshake this long after its "
      "accept")("max-pending-handshakes",
                po::value(&s.max_pending_handshakes)->default_value(256),
                "at most this many connections wait for their handshake; the oldest is "
                "closed for a new one (and at most half the descriptor limit)")(
      "max-message-bytes",
      po::value(&s.max_message_bytes)->default_value(int64_t{64} << 20),
      "close a connection whose message claims more bytes than this, before anything "
      "is allocated")("certificate", po::value(&s.tls.certificate),
                      "TLS: this node's PEM certificate")("key", po::value(&s.tls.key),
                                                          "TLS: its PEM private key")(
      "passphrase", po::value(&s.tls.passphrase), "TLS: the key's passphrase")(
      "ca-file", po::value(&s.tls.ca_file),
      "TLS: the CA certificates peers must be signed by (certificate, key and CA file "
      "go together: mutual authentication)");
  po::variables_map vm;
  if (auto status = cli::parse_options("quern-node", argc, argv, desc, vm))
    return *status;
  if (s.queues.empty() && s.writers.empty() && !s.coordinator) {
    std::cerr << "quern-node: nothing to serve: give --queue, --coordinator or --writer "
                 "(see --help)\n";
    return 2;
  }
  try {
    return run(s, stop_signals);
  } catch (const op_error& e) {
    // A bad value on the command line is a usage error, as Boost's are.
    bool usage = e.code() == error_code::invalid_argument;
    std::cerr << "quern-node: " << (usage ? "" : error_code_name(e.code()))
              << (usage ? "" : ": ") << e.what() << "\n";
    return usage ? 2 : 1;
  }
}
