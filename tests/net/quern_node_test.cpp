// quern-node (tools/quern_node/): its flags, and the program serving what
// they say to this test process.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include <catch2/catch.hpp>

#include <quern/blocking_queue.hpp>
#include <quern/coordinator.hpp>
#include <quern/error.hpp>
#include <quern/remote.hpp>
#include <quern/summary/reader.hpp>
#include <quern/summary/summary_writer.hpp>

#include "flags.hpp"
#include "harness.hpp"
#include "raw_socket.hpp"

using namespace std::chrono_literals;
using namespace quern::test;

namespace {

const std::string quern_node_binary = QUERN_NODE_BINARY;

std::unique_ptr<child> start_quern_node(const scratch_dir& dir,
                                        std::vector<std::string> args) {
  args.insert(args.begin(), quern_node_binary);
  return std::make_unique<child>("quern-node", args, dir);
}

} // namespace

TEST_CASE("NET-20 quern-node's --queue and --writer values are read or refused by name") {
  using quern::node_tool::parse_queue_flag;
  auto q = parse_queue_flag("examples:fifo:1000:float32[3],int64[]");
  CHECK(q.name == "examples");
  CHECK(q.kind == quern::queue_kind::fifo);
  CHECK(q.options.capacity == 1000);
  CHECK(q.options.dtypes ==
        std::vector<quern::dtype>{quern::dtype::float32, quern::dtype::int64});
  CHECK(q.options.shapes ==
        std::vector<quern::tensor_shape>{quern::tensor_shape{3}, quern::tensor_shape{}});
  CHECK(quern::node_tool::describe(q) == "FIFOQueue, capacity 1000, float[3], int64[]");
  auto s =
      parse_queue_flag("s:shuffle:unbounded:string:min_after_dequeue=7,seed=3,seed2=4");
  CHECK(s.kind == quern::queue_kind::random_shuffle);
  CHECK(s.options.capacity == -1);
  CHECK(s.options.shapes.empty());
  CHECK(s.options.min_after_dequeue == 7);
  CHECK(s.options.seed == 3);
  CHECK(s.options.seed2 == 4);
  auto p = parse_queue_flag("p:padding:8:int32[-1,2]");
  CHECK(p.options.shapes == std::vector<quern::tensor_shape>{quern::tensor_shape{-1, 2}});
  auto refused = [](const std::string& text, const std::string& why) {
    INFO(text);
    try {
      parse_queue_flag(text);
      FAIL("accepted");
    } catch (const quern::invalid_argument_error& e) {
      CHECK(contains(e.what(), "--queue '" + text + "': " + why));
    }
  };
  refused("x:fifo:10", "it has 3 ':'-separated parts");
  refused("x:lifo:10:int32", "unknown kind 'lifo'");
  refused("x:fifo:ten:int32", "capacity 'ten' is not a number");
  refused("x:fifo:10:int33", "unknown dtype 'int33'");
  refused("x:fifo:10:int32[3],float", "some components have a shape and others not");
  refused("x:fifo:10:int32[a]", "dimension 'a' of 'int32[a]' is not a size or -1");
  refused("x:fifo:10:int32[3", "component 'int32[3' has no closing ']'");
  refused("x:fifo:10:int32:bogus=1", "unknown option 'bogus'");
  refused("x:fifo:10:int32:seed", "option 'seed' is not OPTION=NUMBER");
  refused(":fifo:1:int32", "no name");
  refused("x:fifo:10:", "no components");
  auto w = quern::node_tool::parse_writer_flag("train=runs/chief");
  CHECK(w.name == "train");
  CHECK(w.logdir == "runs/chief");
  for (std::string bad : {"train", "=runs", "train="})
    CHECK_THROWS_AS(quern::node_tool::parse_writer_flag(bad),
                    quern::invalid_argument_error);
}

TEST_CASE("NET-20 quern-node serves the queues, coordinator and writer of its command "
          "line until SIGTERM") {
  scratch_dir dir;
  auto port_file = dir.file("node.port");
  auto logdir = dir.file("run");
  auto node = start_quern_node(
      dir, {"--listen=127.0.0.1:0", "--port-file=" + port_file,
            "--queue=rows:fifo:100:int64[]",
            "--queue=sh:random_shuffle:50:string:min_after_dequeue=5,seed=1",
            "--coordinator", "--writer=train=" + logdir});
  bool up = eventually(start_limit, [&] {
    return std::filesystem::exists(port_file) || node->wait(0ms).has_value();
  });
  INFO(node->report());
  REQUIRE(up);
  REQUIRE(std::filesystem::exists(port_file));
  auto address = "127.0.0.1:" + std::to_string(std::stoi(read_file(port_file)));
  {
    test_peer peer{address};
    auto& sys = peer.sys;
    quern::blocking_queue rows{sys, peer.node.queue("rows")};
    for (int64_t v : {4, 5, 6})
      rows.enqueue(quern::element{quern::tensor::scalar(v)});
    for (int64_t v : {4, 5, 6})
      CHECK(rows.dequeue()[0].values<int64_t>()[0] == v);
    quern::blocking_queue sh{sys, peer.node.queue("sh")};
    CHECK(sh.spec().kind == quern::queue_kind::random_shuffle);
    CHECK(sh.spec().min_after_dequeue == 5);
    auto coord = peer.coordinator();
    CHECK_FALSE(coord.should_stop());
    coord.request_stop();
    CHECK(coord.should_stop());
    quern::summary_writer writer{sys, peer.node.writer("train")};
    writer.scalar("from/test", 2.5, 7);
    CHECK(writer.flush().events >= 1);
  }
  node->signal(SIGTERM);
  require_exit(*node, 0);
  CHECK(contains(node->out(), "queue 'rows': FIFOQueue, capacity 100, int64[]"));
  CHECK(contains(node->out(), "SIGTERM: stopping"));
  auto runs = quern::find_runs(logdir);
  REQUIRE(runs);
  REQUIRE(runs->size() == 1);
  auto contents = quern::read_event_file(runs->front().files.at(0));
  bool found = false;
  for (auto& ev : contents.events)
    if (auto* s = caf::get_if<quern::summary_event::summary>(&ev.what))
      found = found || (ev.step == 7 && s->values.at(0).tag == "from/test");
  CHECK(found);
}

TEST_CASE("NET-20 quern-node refuses a bad command line with status 2, naming the "
          "value") {
  scratch_dir dir;
  auto run = [&](std::vector<std::string> args, int status, const std::string& says) {
    auto node = start_quern_node(dir, args);
    require_exit(*node, status);
    CHECK(contains(node->err(), says));
  };
  run({"--queue=x:fifo:10:int33"}, 2, "--queue 'x:fifo:10:int33': unknown dtype 'int33'");
  run({"--listen=127.0.0.1:0", "--queue=x:shuffle:10:int32:min_after_dequeue=20"}, 2,
      "--queue 'x': min_after_dequeue 20 must be < capacity 10");
  run({"--listen=127.0.0.1:0", "--queue=x:fifo:1:int32", "--queue=x:fifo:1:int32"}, 2,
      "the name 'x' is given twice");
  run({}, 2, "nothing to serve");
  run({"--writer=train"}, 2, "--writer 'train': no NAME=LOGDIR");
  run({"--coordinator", "--listen=127.0.0.1"}, 2, "malformed address '127.0.0.1'");
  run({"--coordinator", "--listen=0.0.0.0:0"}, 1,
      "refuses to listen on '0.0.0.0' without TLS");
  run({"--coordinator", "--certificate=/nonexistent.pem"}, 2,
      "TLS needs a certificate, its key and a CA file together");
  run({"--coordinator", "--listen=127.0.0.1:0", "--handshake-timeout-ms=0"}, 2,
      "--handshake-timeout-ms must be positive, got 0");
  run({"--coordinator", "--listen=127.0.0.1:0", "--max-pending-handshakes=0"}, 2,
      "--max-pending-handshakes must be at least 1, got 0");
  run({"--coordinator", "--listen=127.0.0.1:0", "--max-message-bytes=100"}, 2,
      "--max-message-bytes must be at least 1024, got 100");
}

namespace {

// Starts quern-node on `listen` with a queue `rows` and waits for its port.
uint16_t serve_rows(const scratch_dir& dir, std::unique_ptr<child>& node,
                    const std::string& listen, const std::string& port_file,
                    std::vector<std::string> extra = {}) {
  std::filesystem::remove(port_file);
  std::vector<std::string> args{"--listen=" + listen, "--port-file=" + port_file,
                                "--queue=rows:fifo:100:int64[]"};
  args.insert(args.end(), extra.begin(), extra.end());
  node = start_quern_node(dir, args);
  bool up = eventually(start_limit, [&] {
    return std::filesystem::exists(port_file) || node->wait(0ms).has_value();
  });
  INFO(node->report());
  REQUIRE(up);
  REQUIRE(std::filesystem::exists(port_file));
  return static_cast<uint16_t>(std::stoi(read_file(port_file)));
}

} // namespace

TEST_CASE("quern-node killed with SIGKILL and started again on its port serves at once") {
  scratch_dir dir;
  auto port_file = dir.file("node.port");
  std::unique_ptr<child> node;
  auto port = serve_rows(dir, node, "127.0.0.1:0", port_file);
  auto address = "127.0.0.1:" + std::to_string(port);
  {
    // A connection that the killed node's kernel closes first and the peer
    // after it, reading to the end: the node's end of it lingers on the port
    // (TIME-WAIT), which refuses a listener without SO_REUSEADDR.
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
    std::this_thread::sleep_for(200ms); // accepted; the node sent its handshake
    node->signal(SIGKILL);
    node->wait(run_limit);
    char buf[4096];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
    ::close(fd);
  }
  std::unique_ptr<child> again;
  CHECK(serve_rows(dir, again, address, port_file) == port);
  test_peer peer{address};
  quern::blocking_queue rows{peer.sys, peer.node.queue("rows")};
  rows.enqueue(quern::element{quern::tensor::scalar(int64_t{2})});
  CHECK(rows.dequeue()[0].values<int64_t>()[0] == 2);
  again->signal(SIGTERM);
  require_exit(*again, 0);
}

TEST_CASE("quern-node on a port another socket listens on says the address is in use") {
  scratch_dir dir;
  auto port_file = dir.file("node.port");
  std::unique_ptr<child> first;
  auto port = serve_rows(dir, first, "127.0.0.1:0", port_file);
  auto second = start_quern_node(dir, {"--listen=127.0.0.1:" + std::to_string(port),
                                       "--queue=rows:fifo:100:int64[]"});
  require_exit(*second, 1);
  CHECK(contains(second->err(),
                 "quern::serve cannot listen on 127.0.0.1:" + std::to_string(port) +
                     ": the address is already in use (another socket "
                     "listens on port " +
                     std::to_string(port) + ")"));
  first->signal(SIGTERM);
  require_exit(*first, 0);
}

TEST_CASE("NET-24 quern-node's --max-pending-handshakes and --handshake-timeout-ms bound "
          "the connections that never finish their handshake") {
  scratch_dir dir;
  std::unique_ptr<child> node;
  auto port = serve_rows(dir, node, "127.0.0.1:0", dir.file("node.port"),
                         {"--max-pending-handshakes=2", "--handshake-timeout-ms=60000"});
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) {
    fds.push_back(raw_connect(port));
    REQUIRE(fds.back() >= 0);
    REQUIRE(accepted_within(fds.back(), 20s)); // never sends after
  }
  // Only the bound closes here (the timeout is a minute away): the two
  // oldest go for the two newest, at once (the default bound of 256 would
  // keep them until the default timeout, 10 s).
  CHECK(closed_within(fds[0], 8s));
  CHECK(closed_within(fds[1], 8s));
  CHECK_FALSE(closed_within(fds[3], 500ms));
  test_peer peer{"127.0.0.1:" + std::to_string(port)};
  CHECK(peer.node.description().find("quern node") != std::string::npos);
  for (int fd : fds)
    ::close(fd);
  node->signal(SIGTERM);
  require_exit(*node, 0);
}
