// quern across processes (docs/distributed.md): real processes on
// 127.0.0.1, ports chosen by the OS, every wait bounded, every child reaped.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include <quern/blocking_queue.hpp>
#include <quern/coordinator.hpp>
#include <quern/queue.hpp>
#include <quern/remote.hpp>

#include "harness.hpp"

using namespace std::chrono_literals;
using namespace quern::test;

TEST_CASE("distributed NET-7 rows cross processes exactly once") {
  // Four producer processes (blocking enqueue, queue_writer, enqueue_many,
  // a queue runner) and three consumer processes (blocking dequeue, queue_reader,
  // batch_reader) share one queue in a host process.
  scratch_dir dir;
  auto host = start_host(dir);
  constexpr int64_t per_producer = 1500;
  std::map<std::string, std::string> consumers{{"dequeue", dir.file("c-dequeue.out")},
                                               {"reader", dir.file("c-reader.out")},
                                               {"batch", dir.file("c-batch.out")}};
  std::vector<std::unique_ptr<child>> cs;
  for (auto& [api, out] : consumers)
    cs.push_back(
        start_client(dir, "consumer-" + api, host.address,
                     {"--node.role=consume", "--node.api=" + api, "--node.out=" + out}));
  std::vector<std::unique_ptr<child>> ps;
  int id = 1;
  for (std::string api : {"enqueue", "writer", "batch", "runner"}) {
    ps.push_back(start_client(dir, "producer-" + api, host.address,
                              {"--node.role=produce", "--node.api=" + api,
                               "--node.id=" + std::to_string(id++),
                               "--node.count=" + std::to_string(per_producer)}));
  }
  for (auto& p : ps)
    require_exit(*p, 0);
  auto closer = start_client(dir, "closer", host.address, {"--node.role=close"});
  require_exit(*closer, 0);
  for (auto& c : cs)
    require_exit(*c, 0);
  host.proc->close_stdin();
  require_exit(*host.proc, 0);

  std::multiset<int64_t> got;
  for (auto& [api, out] : consumers) {
    auto vs = taken(out);
    INFO("consumer " << api << " took " << vs.size() << " rows");
    got.insert(vs.begin(), vs.end());
  }
  std::multiset<int64_t> made;
  for (int64_t p = 1; p <= 4; ++p)
    made.merge(rows_made(p, per_producer));
  REQUIRE(got.size() == made.size());
  REQUIRE(got == made);
}

TEST_CASE("distributed NET-2 NET-4 connect and serve errors are quern errors naming the "
          "problem") {
  quern::remote_config cfg;
  quern::actor_system sys{cfg};

  SECTION("a malformed address is invalid_argument") {
    for (std::string bad : {"", "127.0.0.1", "127.0.0.1:", ":7000", "127.0.0.1:x",
                            "127.0.0.1:0", "127.0.0.1:70000", "::1:7000", "[::1]7000"}) {
      INFO("address '" << bad << "'");
      try {
        quern::connect(sys, bad);
        FAIL("connect accepted a malformed address");
      } catch (const quern::invalid_argument_error& e) {
        CHECK(contains(e.what(), "'" + bad + "'"));
      }
    }
  }

  SECTION(
      "a timeout or an exit status out of range is invalid_argument, before connecting") {
    // Nothing listens there: a check made after trying would say unavailable.
    auto address = "127.0.0.1:" + std::to_string(free_port());
    for (int status : {-1, 256, 270}) {
      INFO("exit_status_on_loss " << status);
      quern::connect_options opts;
      opts.exit_status_on_loss = status;
      try {
        quern::connect(sys, address, opts);
        FAIL("connect accepted an exit status out of range");
      } catch (const quern::invalid_argument_error& e) {
        CHECK(contains(e.what(), "exit_status_on_loss must be 0 to 255, got " +
                                     std::to_string(status)));
        CHECK(contains(e.what(), address));
      }
    }
    try {
      quern::connect(sys, address, {std::chrono::milliseconds{0}});
      FAIL("connect accepted a timeout of 0");
    } catch (const quern::invalid_argument_error& e) {
      CHECK(contains(e.what(), "needs a positive timeout, got 0 ms"));
    }
  }

  SECTION("nothing listening is unavailable, long before the deadline") {
    auto address = "127.0.0.1:" + std::to_string(free_port());
    // A deadline far beyond a refused connection: the answer must be
    // unavailable, which only a refusal gives.
    try {
      quern::connect(sys, address, {std::chrono::milliseconds{60000}});
      FAIL("connect to a closed port succeeded");
    } catch (const quern::unavailable_error& e) {
      CHECK(contains(e.what(), address));
    }
  }

  SECTION("a peer that never completes the handshake is deadline_exceeded") {
    silent_listener silent;
    auto address = "127.0.0.1:" + std::to_string(silent.port);
    try {
      quern::connect(sys, address, {std::chrono::milliseconds{1500}});
      FAIL("connect to a silent peer succeeded");
    } catch (const quern::deadline_exceeded_error& e) {
      CHECK(contains(e.what(), address));
    }
  }

  SECTION("a port where another service answers is failed_precondition: not a quern "
          "node") {
    // What an SSH server says first; an HTTP server's answer; bytes of no
    // protocol (the first not a BASP message type, as every byte above 6).
    std::string noise(256, '\0');
    uint32_t x = 12345;
    for (auto& c : noise) {
      x = x * 1103515245u + 12345u;
      c = static_cast<char>(x >> 24);
    }
    noise[0] = static_cast<char>(0xC3);
    std::vector<std::pair<std::string, std::unique_ptr<talking_listener>>> others;
    others.emplace_back("an SSH server",
                        std::make_unique<talking_listener>(
                            "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n", false));
    others.emplace_back("an HTTP server",
                        std::make_unique<talking_listener>(
                            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                            "Content-Length: 11\r\nConnection: close\r\n\r\nBad Request",
                            true));
    others.emplace_back("random bytes", std::make_unique<talking_listener>(noise, false));
    for (auto& [what, other] : others) {
      auto address = "127.0.0.1:" + std::to_string(other->port());
      INFO(what << " at " << address);
      // A deadline far beyond the answer: the error must not be the deadline's.
      try {
        quern::connect(sys, address, {std::chrono::milliseconds{60000}});
        FAIL("connected to a port that is not a quern node");
      } catch (const quern::failed_precondition_error& e) {
        INFO(e.what());
        CHECK(contains(e.what(), address + " is not a quern node"));
      }
    }
  }

  SECTION("an unknown queue name is failed_precondition, a known one works") {
    scratch_dir dir;
    auto host = start_host(dir);
    auto node = quern::connect(sys, host.address);
    try {
      node.queue("nope");
      FAIL("an unknown queue name was accepted");
    } catch (const quern::failed_precondition_error& e) {
      CHECK(contains(e.what(), host.address));
      CHECK(contains(e.what(), "'nope'"));
      CHECK(contains(e.what(), "'rows'"));
    }
    // The same handle still serves the exported queue.
    quern::blocking_queue q{sys, node.queue("rows")};
    q.enqueue(quern::element{quern::tensor::scalar(int64_t{42})});
    CHECK(q.size() == 1);
    CHECK(q.dequeue()[0].scalar_value<int64_t>() == 42);
    CHECK(q.spec().dtypes == std::vector<quern::dtype>{quern::dtype::int64});
    // Its counters cross too (TL-11): what pipeline telemetry asks of it.
    auto stats = q.stats();
    CHECK(stats.size == 0);
    CHECK(stats.enqueued_rows == 1);
    CHECK(stats.dequeued_rows == 1);
    CHECK(stats.enqueue_attempts == 1);
    CHECK(stats.dequeue_attempts == 1);
    host.proc->close_stdin();
    require_exit(*host.proc, 0);
  }

  SECTION("serve refuses a non-loopback address, names TLS") {
    auto q = quern::spawn_fifo_queue(sys, 4, {quern::dtype::int64});
    for (std::string h : {"0.0.0.0", "192.0.2.1", "", "example.com"}) {
      INFO("host '" << h << "'");
      try {
        quern::serve(sys, {h, 0, false, {{"q", q}}});
        FAIL("serve listened on a non-loopback address");
      } catch (const quern::failed_precondition_error& e) {
        CHECK(contains(e.what(), "'" + h + "'"));
        CHECK(contains(e.what(), "TLS"));
      }
    }
    CHECK_THROWS_AS(quern::serve(sys, {"127.0.0.1", 0, false, {{"", q}}}),
                    quern::invalid_argument_error);
    CHECK_THROWS_AS(quern::serve(sys, {"127.0.0.1", 0, false, {{"q", {}}}}),
                    quern::invalid_argument_error);
    auto srv = quern::serve(sys, {"127.0.0.1", 0, false, {{"q", q}}});
    CHECK(srv.port() != 0);
    CHECK(srv.address() == "127.0.0.1:" + std::to_string(srv.port()));
  }
}

TEST_CASE("distributed NET-1 serve and connect need the middleman") {
  quern::config cfg; // quern's default config does not load it
  quern::actor_system sys{cfg};
  auto q = quern::spawn_fifo_queue(sys, 4, {quern::dtype::int64});
  try {
    quern::serve(sys, {"127.0.0.1", 0, false, {{"q", q}}});
    FAIL("serve without a middleman");
  } catch (const quern::failed_precondition_error& e) {
    CHECK(contains(e.what(), "remote_config"));
  }
  CHECK_THROWS_AS(quern::connect(sys, "127.0.0.1:7000"),
                  quern::failed_precondition_error);
}

TEST_CASE("distributed NET-3 a peer of another wire version is failed_precondition") {
  scratch_dir dir;
  auto host = start_host(dir, {"--middleman.app-identifiers=[\"quern-wire-0\"]"});
  quern::remote_config cfg;
  quern::actor_system sys{cfg};
  try {
    quern::connect(sys, host.address, {std::chrono::milliseconds{60000}});
    FAIL("connected to a peer of another wire version");
  } catch (const quern::failed_precondition_error& e) {
    CHECK(contains(e.what(), host.address));
    CHECK(contains(e.what(), quern::wire_identifier()));
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

namespace {

/// What a run with a consumer killed midway left: the rows the victim and
/// the survivor wrote down, and what the queue's process said.
struct consumer_kill_run {
  std::vector<int64_t> victim, survivor;
  std::string host_err;
  std::string report;
};

// A victim consumer (`victim_api`) is killed after it took `took_before`
// rows; a survivor (`survivor_api`) takes the rest of `count` rows until the
// queue is closed and drained. With `gives_back`, the queue is closed only
// once the queue's process has given the victim's rows back (the survivor
// would otherwise end before they are there).
consumer_kill_run kill_a_consumer(const std::string& victim_api,
                                  const std::string& survivor_api, int64_t count,
                                  size_t took_before, bool gives_back) {
  scratch_dir dir;
  auto host = start_host(dir);
  auto victim_out = dir.file("victim.out");
  auto survivor_out = dir.file("survivor.out");
  auto victim = start_client(dir, "victim", host.address,
                             {"--node.role=consume", "--node.api=" + victim_api,
                              "--node.pace-ms=2", "--node.out=" + victim_out});
  auto survivor = start_client(dir, "survivor", host.address,
                               {"--node.role=consume", "--node.api=" + survivor_api,
                                "--node.pace-ms=1", "--node.out=" + survivor_out});
  auto producer = start_client(dir, "producer", host.address,
                               {"--node.role=produce", "--node.api=writer", "--node.id=1",
                                "--node.count=" + std::to_string(count)});
  require_written(*victim, victim_out, took_before);
  victim->signal(SIGKILL);
  require_exit(*victim, 128 + SIGKILL);
  require_exit(*producer, 0);
  if (gives_back) {
    bool given_back = eventually(start_limit, [&] {
      return contains(host.proc->err(), "went back to the front of the queue");
    });
    INFO(host.proc->report());
    REQUIRE(given_back);
  }
  auto closer = start_client(dir, "closer", host.address, {"--node.role=close"});
  require_exit(*closer, 0);
  require_exit(*survivor, 0);
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
  return {taken(victim_out), taken(survivor_out), host.proc->err(), host.proc->report()};
}

} // namespace

namespace {

// A victim taking rows by blocking dequeues is killed: its last row (written
// down or not) and a row on its way to it go back to the queue, and its
// pending dequeue is withdrawn. The others take the rest, none is lost, and
// at most that one row is taken twice.
void check_dequeue_victim(const std::string& api) {
  constexpr int64_t count = 4000;
  auto run = kill_a_consumer(api, "reader", count, 20, false);
  std::multiset<int64_t> got(run.victim.begin(), run.victim.end());
  got.insert(run.survivor.begin(), run.survivor.end());
  std::set<int64_t> unique(got.begin(), got.end());
  INFO("victim took " << run.victim.size() << ", survivor " << run.survivor.size() << "\n"
                      << run.report);
  CHECK(unique.size() == static_cast<size_t>(count)); // none lost
  for (auto x : unique)
    CHECK((x >= 1000000 && x < 1000000 + count));
  CHECK(got.size() - unique.size() <= 1);
  CHECK(run.survivor.size() > 0);
}

} // namespace

TEST_CASE("distributed NET-10 SIGKILL of a consumer gives back the row it was handed "
          "last") {
  // One handle: a dequeue confirms the row its caller was handed before.
  check_dequeue_victim("dequeue");
}

TEST_CASE("distributed NET-10 SIGKILL of a consumer making a handle per row gives back "
          "at most its last row") {
  // A caller that never dequeues again confirms its row when it ends, so
  // the confirmations of those after it are not held back.
  check_dequeue_victim("fresh-dequeue");
}

namespace {

// A reader in a victim process is killed while it holds rows: what it had
// not confirmed taking goes back to the queue, so no row is lost, and at
// most `max_twice` rows are taken twice.
void check_reader_victim(const std::string& api, size_t max_twice) {
  constexpr int64_t count = 3000;
  auto run = kill_a_consumer(api, "dequeue", count, 100, true);
  std::multiset<int64_t> got(run.victim.begin(), run.victim.end());
  got.insert(run.survivor.begin(), run.survivor.end());
  std::set<int64_t> unique(got.begin(), got.end());
  INFO("victim took " << run.victim.size() << ", survivor " << run.survivor.size() << "\n"
                      << run.report);
  CHECK(unique.size() == static_cast<size_t>(count)); // none lost
  for (auto x : unique)
    CHECK((x >= 1000000 && x < 1000000 + count));
  CHECK(got.size() - unique.size() <= max_twice);
  CHECK(contains(run.host_err, "went back to the front of the queue"));
}

} // namespace

TEST_CASE("distributed NET-10 SIGKILL of a queue_reader gives back the rows it had not "
          "confirmed") {
  // The node's queue_reader has a window of 16 rows and confirms every 4:
  // rows taken twice are those it took since the last confirmation that
  // reached the queue's process, which is at most a window and an interval
  // behind (a pull follows the confirmation that precedes it).
  check_reader_victim("reader", 16 + 4);
}

TEST_CASE("distributed NET-10 SIGKILL of a batch_reader gives back the batches it had "
          "not confirmed") {
  // The node's batch_reader keeps 4 batches of up to 32 rows and confirms
  // every 2 batches: at most 6 batches twice, as above.
  check_reader_victim("batch", (4 + 2) * 32);
}

namespace {

// A mover (a queue runner of one async op in its own process) takes rows of
// the host's 'rows' by pulls and stores them in the host's 'moved' (capacity
// 8, drained 1 ms a row), beside a reader of 'rows'. With `kill_after`, the
// mover is killed once `kill_after` rows were drained from 'moved'. Returns
// every row the reader and the drainer took.
struct mover_run {
  std::vector<int64_t> taken; // by the reader of 'rows' and the drainer
  std::string host_err, report;
};

mover_run run_mover(int64_t count, size_t kill_after) {
  scratch_dir dir;
  auto host = start_host(dir);
  auto mover_out = dir.file("mover.out");
  auto reader_out = dir.file("reader.out");
  auto drainer_out = dir.file("drainer.out");
  auto drainer = start_client(dir, "drainer", host.address,
                              {"--node.role=consume", "--node.queue=moved",
                               "--node.pace-ms=1", "--node.out=" + drainer_out});
  auto mover = start_client(dir, "mover", host.address,
                            {"--node.role=move", "--node.out=" + mover_out});
  require_ready(*mover, mover_out);
  std::unique_ptr<child> reader;
  if (kill_after > 0)
    reader = start_client(dir, "reader", host.address,
                          {"--node.role=consume", "--node.api=reader", "--node.pace-ms=1",
                           "--node.out=" + reader_out});
  auto producer = start_client(dir, "producer", host.address,
                               {"--node.role=produce", "--node.api=writer", "--node.id=1",
                                "--node.count=" + std::to_string(count)});
  if (kill_after > 0) {
    require_written(*drainer, drainer_out, kill_after);
    mover->signal(SIGKILL);
    require_exit(*mover, 128 + SIGKILL);
  }
  require_exit(*producer, 0);
  if (kill_after > 0) {
    // What the mover had pulled and not stored goes back to 'rows'.
    bool given_back = eventually(start_limit, [&] {
      return contains(host.proc->err(), "went back to the front of the queue");
    });
    INFO(host.proc->report());
    REQUIRE(given_back);
  }
  auto close_rows = start_client(dir, "close-rows", host.address, {"--node.role=close"});
  require_exit(*close_rows, 0);
  if (reader)
    require_exit(*reader, 0);
  else
    require_exit(*mover, 0); // ends with the data of 'rows'
  auto close_moved = start_client(dir, "close-moved", host.address,
                                  {"--node.role=close", "--node.queue=moved"});
  require_exit(*close_moved, 0);
  require_exit(*drainer, 0);
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
  mover_run run{taken(drainer_out), host.proc->err(), host.proc->report()};
  if (reader)
    for (auto v : taken(reader_out))
      run.taken.push_back(v);
  return run;
}

} // namespace

TEST_CASE("distributed NET-7 a queue runner pulling from another process moves every row "
          "exactly once") {
  // Its worker confirms a run's rows once they are stored, and its end
  // waits for the last confirmation: the queue's process gives nothing back.
  constexpr int64_t count = 2000;
  auto run = run_mover(count, 0);
  std::multiset<int64_t> got(run.taken.begin(), run.taken.end());
  INFO(run.report);
  CHECK(got.size() == static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    CHECK(got.count(1000000 + i) == 1);
  CHECK_FALSE(contains(run.host_err, "went back"));
}

TEST_CASE("distributed NET-10 SIGKILL of a queue runner pulling from another process "
          "gives back the rows it had not stored") {
  // The worker's runs of 8 pulled rows wait to be stored in 'moved' (a
  // window of 2 pushes): they go back to 'rows', and are stored in 'moved'
  // too once it has room (a streamed push that reached a queue is stored).
  // So are the rows of a run whose confirmation was on its way: at most the
  // window and one run are taken twice (a later run's pull is answered only
  // after that confirmation arrived: they travel the same way).
  constexpr int64_t count = 3000;
  auto run = run_mover(count, 100);
  std::multiset<int64_t> got(run.taken.begin(), run.taken.end());
  std::set<int64_t> unique(got.begin(), got.end());
  INFO(run.report);
  CHECK(unique.size() == static_cast<size_t>(count)); // none lost
  for (auto x : unique)
    CHECK((x >= 1000000 && x < 1000000 + count));
  CHECK(got.size() - unique.size() <= (2 + 1) * 8);
}

namespace {

// Producer 1 storing rows 1000000 + i one blocking enqueue at a time (1 ms
// apart), writing each acknowledged one to `acked_out`, until it is killed.
std::unique_ptr<child> start_producer_victim(const scratch_dir& dir,
                                             const std::string& address,
                                             const std::string& acked_out) {
  return start_client(dir, "producer-victim", address,
                      {"--node.role=produce", "--node.api=enqueue", "--node.id=1",
                       "--node.count=1000000", "--node.pace-ms=1",
                       "--node.out=" + acked_out});
}

// Producer 1 (`id` 1, rows 1000000 + i) was killed storing one row per
// blocking enqueue, writing each acknowledged one to `acked_out`. Its rows
// reach the queue in order: those among `taken_rows` are a prefix of them,
// holding every acknowledged row and at most one more (the enqueue on its
// way, or acknowledged and not yet written down). Returns how many.
size_t check_killed_producer(const std::set<int64_t>& taken_rows,
                             const std::string& acked_out) {
  auto acked = taken(acked_out);
  std::vector<int64_t> victims;
  for (auto x : taken_rows)
    if (x >= 1000000 && x < 2000000)
      victims.push_back(x - 1000000);
  INFO("the producer victim had " << acked.size() << " rows acknowledged, "
                                  << victims.size() << " were taken");
  for (size_t i = 0; i < victims.size(); ++i)
    CHECK(victims[i] == static_cast<int64_t>(i));
  CHECK(victims.size() >= acked.size());
  CHECK(victims.size() <= acked.size() + 1);
  return victims.size();
}

} // namespace

TEST_CASE("distributed NET-11 SIGKILL of a producer: every row the queue acknowledged is "
          "taken once, and the others go on") {
  // The victim stores rows one blocking enqueue at a time and writes down
  // each one the queue acknowledged; it is killed midway. A second producer
  // (a queue_writer) and a consumer go on.
  scratch_dir dir;
  auto host = start_host(dir);
  auto consumer_out = dir.file("consumer.out");
  auto victim_out = dir.file("victim.out");
  auto consumer = start_client(
      dir, "consumer", host.address,
      {"--node.role=consume", "--node.api=reader", "--node.out=" + consumer_out});
  auto victim = start_producer_victim(dir, host.address, victim_out);
  constexpr int64_t survivor_count = 2000;
  auto survivor = start_client(dir, "survivor", host.address,
                               {"--node.role=produce", "--node.api=writer", "--node.id=2",
                                "--node.count=" + std::to_string(survivor_count)});
  require_written(*victim, victim_out, 50);
  victim->signal(SIGKILL);
  require_exit(*victim, 128 + SIGKILL);
  require_exit(*survivor, 0);
  auto closer = start_client(dir, "closer", host.address, {"--node.role=close"});
  require_exit(*closer, 0);
  require_exit(*consumer, 0);
  host.proc->close_stdin();
  require_exit(*host.proc, 0);

  auto got = taken(consumer_out);
  std::set<int64_t> unique(got.begin(), got.end());
  CHECK(unique.size() == got.size()); // no row twice
  for (auto x : rows_made(2, survivor_count))
    CHECK(unique.count(x) == 1); // the survivor's rows, all of them
  auto victims = check_killed_producer(unique, victim_out);
  CHECK(got.size() == victims + static_cast<size_t>(survivor_count));
}

TEST_CASE("distributed NET-10 NET-11 3 producers and 2 consumers, a producer and a "
          "consumer killed midway: every acknowledged row is taken, none is lost") {
  // Producers: a blocking enqueue that writes down each acknowledged row
  // (the victim), a queue_writer and enqueue_many; consumers: a
  // queue_reader (the victim) and a batch_reader. Both victims die while
  // rows flow.
  scratch_dir dir;
  auto host = start_host(dir);
  auto c_victim_out = dir.file("c-victim.out");
  auto c_survivor_out = dir.file("c-survivor.out");
  auto p_victim_out = dir.file("p-victim.out");
  auto c_victim = start_client(dir, "consumer-victim", host.address,
                               {"--node.role=consume", "--node.api=reader",
                                "--node.pace-ms=2", "--node.out=" + c_victim_out});
  auto c_survivor = start_client(dir, "consumer-survivor", host.address,
                                 {"--node.role=consume", "--node.api=batch",
                                  "--node.pace-ms=1", "--node.out=" + c_survivor_out});
  auto p_victim = start_producer_victim(dir, host.address, p_victim_out);
  constexpr int64_t count = 1500;
  std::vector<std::unique_ptr<child>> producers;
  for (auto [id, api] : {std::pair{2, "writer"}, std::pair{3, "batch"}})
    producers.push_back(start_client(
        dir, std::string("producer-") + api, host.address,
        {"--node.role=produce", std::string("--node.api=") + api,
         "--node.id=" + std::to_string(id), "--node.count=" + std::to_string(count)}));
  require_written(*p_victim, p_victim_out, 50);
  p_victim->signal(SIGKILL);
  require_written(*c_victim, c_victim_out, 100);
  c_victim->signal(SIGKILL);
  require_exit(*p_victim, 128 + SIGKILL);
  require_exit(*c_victim, 128 + SIGKILL);
  for (auto& p : producers)
    require_exit(*p, 0);
  // The consumer victim held rows it had not confirmed: closing before they
  // are back would let the survivor end without them.
  bool given_back = eventually(start_limit, [&] {
    return contains(host.proc->err(), "went back to the front of the queue");
  });
  INFO(host.proc->report());
  REQUIRE(given_back);
  auto closer = start_client(dir, "closer", host.address, {"--node.role=close"});
  require_exit(*closer, 0);
  require_exit(*c_survivor, 0);
  host.proc->close_stdin();
  require_exit(*host.proc, 0);

  auto got = taken(c_victim_out);
  auto survivor_got = taken(c_survivor_out);
  got.insert(got.end(), survivor_got.begin(), survivor_got.end());
  std::set<int64_t> unique(got.begin(), got.end());
  for (int64_t id : {2, 3})
    for (auto x : rows_made(id, count))
      CHECK(unique.count(x) == 1); // every row of the surviving producers
  auto victims = check_killed_producer(unique, p_victim_out);
  CHECK(unique.size() == victims + 2 * static_cast<size_t>(count)); // nothing else
  // Twice: only what the consumer victim took since its last confirmation
  // that arrived (a queue_reader's window and an interval, 16 + 4).
  CHECK(got.size() - unique.size() <= 16 + 4);
}

TEST_CASE("distributed NET-8 SIGKILL of the host fails blocked calls with unavailable") {
  // Two consumers wait on an empty queue, one in a blocking dequeue and one
  // in a queue_reader's pull; the host dies. Neither may hang.
  scratch_dir dir;
  auto host = start_host(dir);
  auto a_out = dir.file("dequeue.out");
  auto b_out = dir.file("reader.out");
  auto a =
      start_client(dir, "consumer-dequeue", host.address,
                   {"--node.role=consume", "--node.api=dequeue", "--node.out=" + a_out});
  auto b =
      start_client(dir, "consumer-reader", host.address,
                   {"--node.role=consume", "--node.api=reader", "--node.out=" + b_out});
  bool ready =
      eventually(start_limit, [&] { return is_ready(a_out) && is_ready(b_out); });
  INFO(a->report() << "\n" << b->report());
  REQUIRE(ready);
  host.proc->signal(SIGKILL);
  require_exit(*host.proc, 128 + SIGKILL);
  constexpr int unavailable = static_cast<int>(quern::error_code::unavailable);
  require_exit(*a, unavailable);
  require_exit(*b, unavailable);
  CHECK(contains(a->err(), "Unavailable"));
  CHECK(contains(a->err(), host.address)); // the endpoint names queue and address
  CHECK(contains(b->err(), "Unavailable"));
  CHECK(contains(b->err(), host.address)); // a reader ends with the endpoint's reason
}

TEST_CASE("distributed NET-8 SIGKILL of the host: a queue_writer names the rows it sent "
          "and never saw confirmed") {
  // A queue_writer fills the host's queue (capacity 4) and waits with
  // pushes at the queue; the host dies. Those rows may or may not have been
  // stored: the writer ends with unavailable and says how many.
  scratch_dir dir;
  auto host = start_host(dir, {"--node.capacity=4"});
  auto producer = start_client(
      dir, "producer-writer", host.address,
      {"--node.role=produce", "--node.api=writer", "--node.id=1", "--node.count=100"});
  quern::remote_config cfg;
  quern::actor_system sys{cfg};
  {
    auto node = quern::connect(sys, host.address);
    quern::blocking_queue q{sys, node.queue("rows")};
    // Full, with the writer's rows to spare: a push of it waits at the queue.
    bool full = eventually(start_limit, [&] { return q.size() == 4; });
    INFO(producer->report());
    REQUIRE(full);
  }
  host.proc->signal(SIGKILL);
  require_exit(*host.proc, 128 + SIGKILL);
  require_exit(*producer, static_cast<int>(quern::error_code::unavailable));
  INFO(producer->report());
  CHECK(contains(producer->err(), host.address));
  CHECK(contains(producer->err(), "row(s) this writer sent were never confirmed"));
}

TEST_CASE("distributed NET-9 a frozen host is detected by heartbeats") {
  // SIGSTOP keeps the host's sockets open: only quern's default heartbeats
  // (CAF's are off) let the client notice. The blocked call fails with
  // unavailable instead of waiting forever.
  scratch_dir dir;
  auto host = start_host(dir);
  auto out = dir.file("dequeue.out");
  auto c = start_client(
      dir, "consumer-dequeue", host.address,
      {"--node.role=consume", "--node.api=dequeue", "--node.out=" + out, quick_loss});
  require_ready(*c, out);
  host.proc->signal(SIGSTOP);
  require_exit(*c, static_cast<int>(quern::error_code::unavailable));
  CHECK(contains(c->err(), host.address));
  CHECK(contains(c->err(), "connection-timeout"));
  // The child's handle kills the stopped host.
}

TEST_CASE("distributed NET-9 NET-10 a frozen queue_reader's rows go back to the queue, "
          "and it ends with unavailable when it wakes") {
  // SIGSTOP of a consumer's process keeps its socket open: the queue's
  // process learns of it by heartbeats (connection-timeout, 5 s), gives back
  // what the reader had not confirmed taking, and serves the others. Woken,
  // the reader finds its node gone. It may still hand its code the rows it
  // held (its window, 16), which went back too: at most a window more than
  // after a kill -9 are taken twice.
  constexpr int64_t count = 3000;
  scratch_dir dir;
  auto host = start_host(dir);
  auto victim_out = dir.file("victim.out");
  auto survivor_out = dir.file("survivor.out");
  auto victim = start_client(dir, "victim", host.address,
                             {"--node.role=consume", "--node.api=reader",
                              "--node.pace-ms=2", "--node.out=" + victim_out});
  auto survivor = start_client(dir, "survivor", host.address,
                               {"--node.role=consume", "--node.api=dequeue",
                                "--node.pace-ms=1", "--node.out=" + survivor_out});
  auto producer = start_client(dir, "producer", host.address,
                               {"--node.role=produce", "--node.api=writer", "--node.id=1",
                                "--node.count=" + std::to_string(count)});
  require_written(*victim, victim_out, 100);
  victim->signal(SIGSTOP);
  bool given_back = eventually(start_limit, [&] {
    return contains(host.proc->err(), "went back to the front of the queue");
  });
  INFO(host.proc->report());
  REQUIRE(given_back);
  require_exit(*producer, 0);
  auto closer = start_client(dir, "closer", host.address, {"--node.role=close"});
  require_exit(*closer, 0);
  require_exit(*survivor, 0);
  victim->signal(SIGCONT);
  require_exit(*victim, static_cast<int>(quern::error_code::unavailable));
  host.proc->close_stdin();
  require_exit(*host.proc, 0);

  auto v = taken(victim_out);
  auto w = taken(survivor_out);
  std::multiset<int64_t> got(v.begin(), v.end());
  got.insert(w.begin(), w.end());
  std::set<int64_t> unique(got.begin(), got.end());
  INFO("victim took " << v.size() << ", survivor " << w.size());
  CHECK(unique.size() == static_cast<size_t>(count)); // none lost
  for (auto x : unique)
    CHECK((x >= 1000000 && x < 1000000 + count));
  CHECK(got.size() - unique.size() <= 16 + 4 + 16);
}

TEST_CASE("distributed NET-8 a host that exits cleanly fails blocked calls with "
          "unavailable") {
  scratch_dir dir;
  auto host = start_host(dir);
  auto a_out = dir.file("dequeue.out");
  auto b_out = dir.file("batch.out");
  auto a =
      start_client(dir, "consumer-dequeue", host.address,
                   {"--node.role=consume", "--node.api=dequeue", "--node.out=" + a_out});
  auto b =
      start_client(dir, "consumer-batch", host.address,
                   {"--node.role=consume", "--node.api=batch", "--node.out=" + b_out});
  bool ready =
      eventually(start_limit, [&] { return is_ready(a_out) && is_ready(b_out); });
  INFO(a->report() << "\n" << b->report());
  REQUIRE(ready);
  host.proc->close_stdin(); // the host's main returns: server::stop, then exit
  require_exit(*host.proc, 0);
  constexpr int unavailable = static_cast<int>(quern::error_code::unavailable);
  require_exit(*a, unavailable);
  require_exit(*b, unavailable);
  CHECK(contains(a->err(), host.address));
  CHECK(contains(b->err(), host.address));
}

TEST_CASE("distributed NET-15 the coordinator's calls cross processes") {
  // A process blocked in wait_for_stop() on the host's coordinator returns
  // when this process requests stop through its own connection; the stop
  // flag is the host's.
  scratch_dir dir;
  auto host = start_host(dir);
  auto out = dir.file("wait.out");
  auto waiter = start_client(dir, "waiter", host.address,
                             {"--node.role=wait-stop", "--node.out=" + out});
  require_ready(*waiter, out);
  {
    test_peer peer{host.address};
    auto coord = peer.coordinator();
    CHECK_FALSE(coord.should_stop());
    CHECK(coord.request_stop());
    CHECK(coord.should_stop());
  }
  require_exit(*waiter, 0);
  CHECK(contains(quern::test::read_file(out), "stopped"));
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE("distributed NET-8 SIGKILL of the host fails a blocked coordinator call") {
  scratch_dir dir;
  auto host = start_host(dir);
  auto out = dir.file("wait.out");
  auto waiter = start_client(dir, "waiter", host.address,
                             {"--node.role=wait-stop", "--node.out=" + out});
  require_ready(*waiter, out);
  host.proc->signal(SIGKILL);
  require_exit(*host.proc, 128 + SIGKILL);
  require_exit(*waiter, static_cast<int>(quern::error_code::unavailable));
  CHECK(contains(waiter->err(), "the coordinator on " + host.address));
}

TEST_CASE("distributed NET-15 a stop requested in one process stops a runner in "
          "another") {
  // The runner registered its workers with the host's coordinator through
  // its connection; this process requests stop through its own. The
  // coordinator pushes stop across, the runner's cancel_op closes the
  // host's queue (cancelling its pending pushes) and the runner ends.
  scratch_dir dir;
  auto host = start_host(dir);
  auto out = dir.file("feeder.out");
  auto feeder = start_client(dir, "feeder", host.address,
                             {"--node.role=feed-until-stop", "--node.out=" + out});
  require_ready(*feeder, out);
  {
    test_peer peer{host.address};
    quern::blocking_queue q{peer.sys, peer.node.queue("rows")};
    // The runner fills the queue (capacity 64) and waits for room.
    bool filled = eventually(start_limit, [&] { return q.size() == 64; });
    REQUIRE(filled);
    auto coord = peer.coordinator();
    CHECK(coord.request_stop());
    require_exit(*feeder, 0);
    CHECK(contains(quern::test::read_file(out), "stopped"));
    CHECK(q.is_closed());
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE("distributed NET-16 a remote runner's error is the coordinator's first error, "
          "naming its process") {
  // The runner's op fails in the feeder's process; the error reaches the
  // host's coordinator through the feeder's connection, placed at the
  // address the host sees it at, and join in a third process rethrows it.
  scratch_dir dir;
  auto host = start_host(dir);
  auto out = dir.file("feeder.out");
  auto feeder = start_client(
      dir, "feeder", host.address,
      {"--node.role=feed-until-stop", "--node.fail-after=10", "--node.out=" + out});
  require_exit(*feeder, 0);
  CHECK(contains(quern::test::read_file(out), "stopped"));
  {
    test_peer peer{host.address};
    auto coord = peer.coordinator();
    CHECK(coord.should_stop());
    try {
      coord.join();
      FAIL("join did not rethrow the remote runner's error");
    } catch (const quern::unknown_error& e) {
      CHECK(contains(e.what(), "the feeder's input broke at row 10"));
      INFO("origin '" << e.origin() << "'");
      CHECK(contains(e.origin(), "remote-feeder"));
      CHECK(contains(e.origin(), "@127.0.0.1:"));
    }
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE("distributed NET-17 a runner whose coordinator's process dies stops") {
  // The runner's coordinator handle is its process's endpoint, which ends
  // when the node is lost; a runner stops when its coordinator goes down.
  scratch_dir dir;
  auto host = start_host(dir);
  auto out = dir.file("feeder.out");
  auto feeder = start_client(dir, "feeder", host.address,
                             {"--node.role=feed-until-stop", "--node.out=" + out});
  require_ready(*feeder, out);
  host.proc->signal(SIGKILL);
  require_exit(*host.proc, 128 + SIGKILL);
  require_exit(*feeder, 0);
  CHECK(contains(quern::test::read_file(out), "stopped"));
}

TEST_CASE("distributed NET-16 joins of runners from two processes of one program wait "
          "each for its own") {
  // Two processes of the same program register runners with the host's
  // coordinator: their workers have the same actor ids. The coordinator
  // once kept its actors by id alone, took the second process's workers for
  // the first's, and answered the second's join when the first's runner
  // ended: the second then went on (and dropped its remote_node) while its
  // runner still ran, losing the rows it had not stored (the flagship over
  // processes lost rows this way on a loaded machine).
  scratch_dir dir;
  auto host = start_host(dir, {"--node.capacity=1000"});
  auto a_out = dir.file("a.out");
  auto a = start_client(dir, "feeder-1", host.address,
                        {"--node.role=feed-and-join", "--node.id=1", "--node.count=50",
                         "--node.pace-ms=10", "--node.out=" + a_out});
  require_ready(*a, a_out);
  auto b_out = dir.file("b.out");
  auto b = start_client(dir, "feeder-2", host.address,
                        {"--node.role=feed-and-join", "--node.id=2", "--node.count=250",
                         "--node.pace-ms=10", "--node.out=" + b_out});
  require_exit(*a, 0);
  require_exit(*b, 0);
  CHECK(contains(a->out(), "joined after 50 rows"));
  CHECK(contains(b->out(), "joined after 250 rows"));
  test_peer peer{host.address};
  CHECK(quern::blocking_queue{peer.sys, peer.node.queue("rows")}.size() == 300);
}

TEST_CASE("distributed NET-16 join while a remote runner's process dies ends, naming the "
          "lost runner") {
  // A runner of the feeder's process is registered with the host's
  // coordinator; this process waits in join() while the feeder is killed.
  // Its workers' loss is an error of theirs: stop is requested and join
  // rethrows it, naming them and where they were.
  scratch_dir dir;
  auto host = start_host(dir);
  auto out = dir.file("feeder.out");
  auto feeder = start_client(dir, "feeder", host.address,
                             {"--node.role=feed-until-stop", "--node.out=" + out});
  require_ready(*feeder, out);
  {
    test_peer peer{host.address};
    auto coord = peer.coordinator();
    std::thread killer{[&] {
      std::this_thread::sleep_for(200ms); // join is waiting by then, most likely
      feeder->signal(SIGKILL);
    }};
    std::string what;
    std::string origin;
    try {
      coord.join({}, std::chrono::seconds{30});
      what = "join returned";
    } catch (const quern::op_error& e) {
      what = std::string(quern::error_code_name(e.code())) + ": " + e.what();
      origin = e.origin();
    }
    killer.join();
    INFO(what << " (origin '" << origin << "')");
    CHECK(contains(what, "Unavailable"));
    CHECK(contains(origin, "remote-feeder"));
    CHECK(contains(origin, "@127.0.0.1:"));
    CHECK(coord.should_stop());
  }
  require_exit(*feeder, 128 + SIGKILL);
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE("distributed NET-22 a runner of a process killed before start() starves "
          "nobody") {
  // The declaring process's runner counts while it lives: a dequeue that
  // waited its starvation_timeout (200 ms) is told it was never started.
  // Killed, it is forgotten: a later dequeue just waits (its own deadline).
  scratch_dir dir;
  auto host = start_host(dir);
  auto out = dir.file("declare.out");
  auto declarer = start_client(dir, "declarer", host.address,
                               {"--node.role=declare", "--node.out=" + out});
  require_ready(*declarer, out);
  test_peer peer{host.address};
  quern::blocking_queue rows{peer.sys, peer.node.queue("rows")};
  std::string why;
  try {
    rows.dequeue(5s);
    why = "a row";
  } catch (const quern::op_error& e) {
    why = std::string(quern::error_code_name(e.code())) + ": " + e.what();
  }
  INFO(why);
  CHECK(contains(why, "FailedPrecondition: FIFOQueue '"));
  CHECK(contains(why, "rows' has 1 queue runner(s) that were never started"));
  declarer->signal(SIGKILL);
  require_exit(*declarer, 128 + SIGKILL);
  // The host learns of the loss when the connection drops: until then a
  // dequeue may still be told; bounded, each try waits 1 s.
  for (int i = 0; i < 20; ++i) {
    try {
      rows.dequeue(1s);
      why = "a row";
    } catch (const quern::op_error& e) {
      why = std::string(quern::error_code_name(e.code())) + ": " + e.what();
    }
    if (!contains(why, "never started"))
      break;
  }
  CHECK(why == "DeadlineExceeded: Timed out waiting for notification");
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE("distributed NET-10 rows a caller dequeued from another process go back when "
          "it gives them back") {
  // An async run's sources of a remote queue (async_run::dequeue) go back
  // with its caller as sender: the endpoint passes on as its own the rows
  // its dequeues answered that caller, which the queue handed to the
  // endpoint's relay, and the rest with the sender kept.
  scratch_dir dir;
  auto host = start_host(dir);
  {
    test_peer peer{host.address};
    auto rows = peer.node.queue("rows");
    quern::blocking_queue b{peer.sys, rows};
    for (int64_t i = 0; i < 3; ++i)
      b.enqueue(quern::element{quern::tensor::scalar(i)});
    caf::scoped_actor caller{peer.sys};
    std::vector<quern::element> got;
    for (int i = 0; i < 2; ++i)
      caller
          ->request(rows, caf::infinite, quern::dequeue_atom::value, quern::wait_forever)
          .receive([&](quern::element& e) { got.push_back(std::move(e)); },
                   [&](caf::error& e) { FAIL(peer.sys.render(e)); });
    REQUIRE(got.size() == 2);
    // Two rows it was handed and one it was not: the third is refused.
    got.push_back(quern::element{quern::tensor::scalar(int64_t{99})});
    caller->send(rows, quern::give_back_atom::value, got);
    CHECK(b.size() == 3);           // an answered request after the give-back
    for (int64_t i = 0; i < 3; ++i) // bounded: a row refused would never come
      CHECK(b.dequeue(10s)[0].scalar_value<int64_t>() == i);
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
  CHECK(contains(host.proc->err(), "refused 1 of 1 rows given back by a client it had "
                                   "handed only 0"));
}

TEST_CASE("distributed NET-8 destroying a remote_node fails the calls waiting on it") {
  // A blocking dequeue waits on an empty remote queue when the remote_node
  // it came from is destroyed: CAF answers no promise of an actor that ends,
  // so the endpoint must, or the call would wait forever.
  scratch_dir dir;
  auto host = start_host(dir);
  {
    quern::remote_config cfg;
    quern::actor_system sys{cfg};
    auto node = std::make_unique<quern::remote_node>(quern::connect(sys, host.address));
    quern::blocking_queue rows{sys, node->queue("rows")};
    std::string what = "still waiting";
    std::thread consumer{[&] {
      try {
        rows.dequeue();
        what = "a row came";
      } catch (const quern::op_error& e) {
        what = std::string(quern::error_code_name(e.code())) + ": " + e.what();
      }
    }};
    std::this_thread::sleep_for(200ms); // the dequeue is waiting by then, most likely
    node.reset();
    consumer.join();
    INFO(what);
    CHECK(contains(what, "Unavailable"));
    CHECK(contains(what, "queue 'rows' on " + host.address));
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE("distributed NET-21 a node releases the facades of a peer that is gone") {
  // This process serves; a consumer process stays connected throughout, and
  // a peer process makes 200 lookups (a remote_node each, a queue, the
  // coordinator, a row stored through each queue) and exits. The node's
  // running actors (facades and relays; CAF's registry counts them) come
  // back to what they were before that peer, and, once the consumer has
  // left too, to what they were before any peer.
  constexpr int64_t lookups = 200;
  scratch_dir dir;
  quern::remote_config cfg;
  quern::actor_system sys{cfg};
  auto q = quern::spawn_fifo_queue(sys, 1000, {quern::dtype::int64},
                                   {quern::tensor_shape{}}, "rows");
  auto coord = quern::spawn_coordinator(sys);
  auto srv = quern::serve(sys, {"127.0.0.1", 0, false, {{"rows", q}}, coord});
  quern::blocking_queue local{sys, q};
  local.enqueue(quern::element{quern::tensor::scalar(int64_t{-1})});
  auto& registry = sys.registry();
  auto before = registry.running();
  auto c_out = dir.file("consumer.out");
  auto consumer =
      start_client(dir, "consumer", srv.address(),
                   {"--node.role=consume", "--node.api=dequeue", "--node.out=" + c_out});
  // Taken its first row: its facade and relay are there, and stay.
  require_written(*consumer, c_out, 1);
  auto with_consumer = registry.running();
  CHECK(with_consumer > before);
  auto p_out = dir.file("lookups.out");
  auto start = dir.file("start");
  auto peer = start_client(dir, "lookups", srv.address(),
                           {"--node.role=lookups", "--node.id=7",
                            "--node.count=" + std::to_string(lookups),
                            "--node.out=" + p_out, "--node.start-file=" + start});
  require_ready(*peer, p_out);
  // Its facades are alive while it is connected: a queue's and the
  // coordinator's per lookup.
  CHECK(registry.running() >= with_consumer + 2 * lookups);
  { std::ofstream{start} << "go\n"; }
  require_exit(*peer, 0);
  bool released =
      eventually(start_limit, [&] { return registry.running() == with_consumer; });
  INFO("running actors: " << registry.running() << ", before that peer "
                          << with_consumer);
  REQUIRE(released);
  // The consumer, connected all along, takes every row that peer stored.
  local.close();
  require_exit(*consumer, 0);
  auto vs = taken(c_out);
  auto made = rows_made(7, lookups);
  made.insert(-1);
  CHECK(std::multiset<int64_t>(vs.begin(), vs.end()) == made);
  released = eventually(start_limit, [&] { return registry.running() == before; });
  INFO("running actors: " << registry.running() << ", before any peer " << before);
  REQUIRE(released);
}
