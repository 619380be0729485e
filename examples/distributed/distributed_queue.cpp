// One queue, three kinds of processes (docs/distributed.md):
//
//   examples/distributed --role=all
//       runs everything on 127.0.0.1: this process hosts queue 'examples'
//       and starts 2 producer and 2 consumer processes of this same
//       program; it closes the queue once the producers are done and checks
//       that the consumers took every row exactly once (row count and sum
//       of labels).
//
//   examples/distributed --role=host --listen=127.0.0.1:7000
//   examples/distributed --role=producer --connect=127.0.0.1:7000 --id=1
//   examples/distributed --role=consumer --connect=127.0.0.1:7000
//       the same, one process per terminal; the host closes the queue when
//       its stdin ends (Ctrl-D) and exits when Enter/Ctrl-D comes again.
//
// A row is the flagship's three float32 features and an int64 label that
// names its producer and number (id * 1000000 + i).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <quern/blocking_queue.hpp>
#include <quern/queue.hpp>
#include <quern/remote.hpp>

#include "command_line.hpp"

extern char** environ;

namespace {

namespace po = boost::program_options;

constexpr int32_t batch_rows = 100;

quern::queue_actor make_queue(quern::actor_system& sys) {
  return quern::spawn_fifo_queue(sys, 1000, {quern::dtype::float32, quern::dtype::int64},
                                 {quern::tensor_shape{3}, quern::tensor_shape{}},
                                 "examples");
}

int64_t label_of(int64_t id, int64_t i) {
  return id * 1000000 + i;
}

// The producer: batches of 100 rows through a queue_writer.
int producer(quern::actor_system& sys, const std::string& address, int64_t id,
             int64_t rows) {
  auto node = quern::connect(sys, address);
  quern::queue_writer writer{sys, node.queue("examples"), 4 * batch_rows};
  for (int64_t i = 0; i < rows; i += batch_rows) {
    auto n = std::min<int64_t>(batch_rows, rows - i);
    std::vector<float> features;
    std::vector<int64_t> labels;
    for (int64_t j = i; j < i + n; ++j) {
      // A tensor crosses as raw bytes; CAF 0.17.6's hang on infinite
      // float fields does not concern it (docs/distributed.md, "Limits").
      features.insert(features.end(), {0.5f * j, 1.0f, -0.25f * j});
      labels.push_back(label_of(id, j));
    }
    writer.push_batch(quern::element{
        quern::tensor::from_values(quern::tensor_shape{n, 3}, std::move(features)),
        quern::tensor::from_values(quern::tensor_shape{n}, std::move(labels))});
  }
  writer.flush();
  std::cout << "producer " << id << ": stored " << writer.stored() << " rows\n";
  return 0;
}

// The consumer: batches of up to 64 rows until the queue is closed and
// empty; prints what it took.
int consumer(quern::actor_system& sys, const std::string& address) {
  auto node = quern::connect(sys, address);
  quern::batch_reader reader{sys, node.queue("examples"), 64,
                             quern::batch_cut::dequeue_up_to};
  int64_t rows = 0;
  int64_t sum = 0;
  while (auto batch = reader.try_pull()) {
    for (auto label : (*batch)[1].values<int64_t>()) {
      ++rows;
      sum += label;
    }
  }
  std::cout << "consumer pid " << ::getpid() << ": took " << rows << " rows, label sum "
            << sum << "\n";
  return 0;
}

int host(quern::actor_system& sys, const std::string& listen) {
  auto [h, port] = quern::detail::parse_address(listen);
  auto q = make_queue(sys);
  auto srv = quern::serve(sys, {h, port, false, {{"examples", q}}});
  std::cout << "host: serving queue 'examples' on " << srv.address()
            << " (Ctrl-D closes it)" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  quern::blocking_queue{sys, q}.close();
  std::cout << "host: queue closed; Enter or Ctrl-D again stops serving" << std::endl;
  std::cin.clear();
  std::getline(std::cin, line);
  return 0;
}

// --role=all: the host here, the others as processes of this program.
int all(quern::actor_system& sys, const char* self_path, int64_t rows) {
  auto q = make_queue(sys);
  auto srv = quern::serve(sys, {"127.0.0.1", 0, false, {{"examples", q}}});
  std::cout << "host: serving queue 'examples' on " << srv.address() << std::endl;
  // A consumer's report comes back through a pipe (its stdout).
  auto start = [&](std::vector<std::string> args, int* report = nullptr) {
    args.insert(args.begin(), self_path);
    args.push_back("--connect=" + srv.address());
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    int fds[2] = {-1, -1};
    if (report != nullptr) {
      if (::pipe(fds) != 0)
        throw std::runtime_error("pipe failed");
      posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
      posix_spawn_file_actions_addclose(&fa, fds[0]);
    }
    pid_t pid = 0;
    auto rc = posix_spawn(&pid, self_path, &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (report != nullptr) {
      ::close(fds[1]);
      *report = fds[0];
    }
    if (rc != 0)
      throw std::runtime_error("cannot start " + std::string(self_path));
    return pid;
  };
  // "took <rows> rows, label sum <sum>" from a consumer's pipe.
  auto read_report = [](int fd, int64_t& rows, int64_t& sum) {
    std::string text;
    char buf[256];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
      text.append(buf, static_cast<size_t>(n));
    ::close(fd);
    std::cout << text;
    auto at = text.find("took ");
    if (at == std::string::npos)
      return;
    std::istringstream in{text.substr(at + 5)};
    int64_t r = 0;
    int64_t s = 0;
    std::string word;
    in >> r >> word >> word >> word >> s;
    rows += r;
    sum += s;
  };
  auto wait_ok = [](pid_t pid) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
  };
  int reports[2] = {-1, -1};
  std::vector<pid_t> consumers{start({"--role=consumer"}, &reports[0]),
                               start({"--role=consumer"}, &reports[1])};
  std::vector<pid_t> producers{
      start({"--role=producer", "--id=1", "--rows=" + std::to_string(rows)}),
      start({"--role=producer", "--id=2", "--rows=" + std::to_string(rows)})};
  bool ok = true;
  for (auto pid : producers)
    ok = wait_ok(pid) && ok;
  // Every producer flushed: every row is stored. Closing lets the consumers
  // drain the queue and end.
  quern::blocking_queue queue{sys, q};
  queue.close();
  int64_t took = 0;
  int64_t sum = 0;
  for (auto fd : reports)
    read_report(fd, took, sum);
  for (auto pid : consumers)
    ok = wait_ok(pid) && ok;
  int64_t expected = 0;
  for (int64_t id : {1, 2})
    for (int64_t i = 0; i < rows; ++i)
      expected += label_of(id, i);
  bool exact = ok && took == 2 * rows && sum == expected;
  std::cout << "host: " << 2 * rows << " rows made (label sum " << expected
            << "), consumers took " << took << " (label sum " << sum
            << "): " << (exact ? "every row exactly once" : "MISMATCH") << "\n";
  return exact ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  std::string role = "all";
  std::string listen = "127.0.0.1:7000";
  std::string connect_to;
  int64_t id = 1;
  int64_t rows = 10000;
  po::options_description desc{"distributed: one queue shared by processes on 127.0.0.1"};
  desc.add_options()("help", "this text")(
      "role", po::value(&role)->default_value(role),
      "all (everything, started from here), host, producer or consumer")(
      "listen", po::value(&listen)->default_value(listen),
      "host: the address to serve on")("connect", po::value(&connect_to),
                                       "producer, consumer: the host's address")(
      "id", po::value(&id)->default_value(id), "producer: its number (labels id*1e6+i)")(
      "rows", po::value(&rows)->default_value(rows), "producer: rows to store");
  po::variables_map vm;
  if (auto status = quern::cli::parse_options("distributed", argc, argv, desc, vm))
    return *status;
  quern::remote_config cfg; // loads CAF's middleman with quern's settings
  quern::actor_system sys{cfg};
  try {
    if (role == "all")
      return all(sys, "/proc/self/exe", rows);
    if (role == "host")
      return host(sys, listen);
    if ((role == "producer" || role == "consumer") && connect_to.empty()) {
      std::cerr << "distributed: --role=" << role << " needs --connect=host:port\n";
      return 2;
    }
    if (role == "producer")
      return producer(sys, connect_to, id, rows);
    if (role == "consumer")
      return consumer(sys, connect_to);
    std::cerr << "distributed: unknown role '" << role << "' (see --help)\n";
    return 2;
  } catch (const quern::op_error& e) {
    std::cerr << "distributed (" << role << "): " << quern::error_code_name(e.code())
              << ": " << e.what() << "\n";
    return 1;
  }
}
