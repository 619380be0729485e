// Producers that retry (quern::remote_producer, docs/distributed.md, Retried
// batches): node.cpp's produce-keyed role stores rows in batches of 5 into
// the host's queue 'rows' while the host freezes or the producer is killed
// and started again; a consumer then takes every row exactly once.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <exception>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <quern/blocking_queue.hpp>
#include <quern/error.hpp>

#include "harness.hpp"

using namespace std::chrono_literals;
using namespace quern::test;

namespace {

// Waits (bounded) until the host's queue holds `n` rows: with no consumer, a
// producer of batches of 5 into a queue of 8 has then stored its first batch
// and 3 rows of its second, which waits for room.
void require_queue_size(const host_process& host, int32_t n) {
  test_peer peer{host.address};
  quern::blocking_queue q{peer.sys, peer.node.queue("rows")};
  bool full = eventually(start_limit, [&] { return q.size() == n; });
  INFO(host.proc->report());
  REQUIRE(full);
}

size_t count_of(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (auto i = s.find(part); i != std::string::npos; i = s.find(part, i + 1))
    ++n;
  return n;
}

// A consumer that takes every row until the queue is closed, and its file.
std::pair<std::unique_ptr<child>, std::string> start_consumer(const scratch_dir& dir,
                                                              const host_process& host) {
  auto out = dir.file("consumer.out");
  return {
      start_client(dir, "consumer", host.address,
                   {"--node.role=consume", "--node.api=dequeue", "--node.out=" + out}),
      out};
}

// The rows of producer `id` the consumer took are exactly those it made.
void require_taken_once(const std::string& consumer_out, int64_t id, int64_t count) {
  auto got = taken(consumer_out);
  std::multiset<int64_t> took(got.begin(), got.end());
  CHECK(took.size() == static_cast<size_t>(count));
  CHECK(took == rows_made(id, count));
}

// The host was killed with batch 2 of producer 'p' (a retry_for of 1 s) on
// its way: `sends` gives up, naming the producer, the queue, the address and
// the last error, and `next`, a later call, is refused: only the queue knows
// what became of batch 2.
void require_gives_up(const host_process& host, const std::function<void()>& sends,
                      const std::function<void()>& next) {
  try {
    sends();
    FAIL("a batch was stored with its node gone");
  } catch (const quern::unavailable_error& e) {
    std::string text = e.what();
    CHECK(contains(text, "producer 'p' of queue 'rows' on " + host.address +
                             " found the node lost for 1 s while sending its batch 2"));
    CHECK(contains(text, "last: "));
  }
  try {
    next();
    FAIL("a producer that gave up took another batch");
  } catch (const quern::failed_precondition_error& e) {
    CHECK(contains(e.what(), "gave up on its batch 2"));
    CHECK(contains(e.what(), "resumed_after"));
  }
}

// A batch of one int64 row, `v`.
quern::element one_row_batch(int64_t v) {
  return quern::element{
      quern::tensor::from_values(quern::tensor_shape{1}, std::vector<int64_t>{v})};
}

} // namespace

TEST_CASE("distributed NET-12 a remote_producer whose host froze with a batch half "
          "stored stores every row once") {
  // SIGSTOP of the host while the producer's second batch waits with 3 of
  // its 5 rows stored: the producer finds the node lost (heartbeats), fails
  // to connect while the host sleeps (a 1 s connect timeout), and once it
  // wakes sends the batch again; the queue stores only its last 2 rows.
  // With push_batch, batches 3 to 5 wait behind it too: all four are sent
  // again, in order, and each is stored once.
  auto api = GENERATE(as<std::string>{}, "enqueue_many", "push");
  INFO("api " << api);
  constexpr int64_t count = 100;
  scratch_dir dir;
  auto host = start_host(dir, {"--node.capacity=8"});
  auto acked = dir.file("producer.out");
  auto producer =
      start_client(dir, "producer", host.address,
                   {"--node.role=produce-keyed", "--node.api=" + api, "--node.id=1",
                    "--node.count=" + std::to_string(count), "--node.timeout-ms=1000",
                    "--node.close-after", "--node.out=" + acked, quick_loss});
  require_queue_size(host, 8);
  host.proc->signal(SIGSTOP);
  // The node lost, then a connection that the sleeping host never answers.
  bool retrying =
      eventually(start_limit, [&] { return count_of(producer->err(), "retrying") >= 2; });
  INFO(producer->report());
  REQUIRE(retrying);
  host.proc->signal(SIGCONT);
  auto [consumer, out] = start_consumer(dir, host);
  require_exit(*producer, 0);
  require_exit(*consumer, 0);
  CHECK(contains(producer->out(), "resumed after 0 batches"));
  CHECK(contains(producer->out(), "reconnections "));
  CHECK_FALSE(contains(producer->out(), "reconnections 0"));
  require_taken_once(out, 1, count);
  auto got = taken(acked);
  CHECK(std::multiset<int64_t>(got.begin(), got.end()) == rows_made(1, count));
}

TEST_CASE("distributed NET-12 a remote_producer started again after a kill goes on where "
          "the queue stands, every row once") {
  // kill -9 of the producer while its second batch waits with 3 of its 5
  // rows stored. Started again under the same name, it learns that the
  // queue holds its first batch whole, sends the second again (the queue
  // stores its last 2 rows) and goes on.
  // With push_batch, batches 3 to 5 wait behind it: the queue's position is
  // still the last batch before the first it does not hold whole.
  auto api = GENERATE(as<std::string>{}, "enqueue_many", "push");
  INFO("api " << api);
  constexpr int64_t count = 100;
  scratch_dir dir;
  auto host = start_host(dir, {"--node.capacity=8"});
  std::vector<std::string> args{"--node.role=produce-keyed", "--node.api=" + api,
                                "--node.id=2", "--node.count=" + std::to_string(count),
                                "--node.out=" + dir.file("first.out")};
  auto first = start_client(dir, "first", host.address, args);
  require_queue_size(host, 8);
  first->signal(SIGKILL);
  require_exit(*first, 128 + SIGKILL);
  args.back() = "--node.out=" + dir.file("second.out");
  args.push_back("--node.close-after");
  auto second = start_client(dir, "second", host.address, args);
  auto [consumer, out] = start_consumer(dir, host);
  require_exit(*second, 0);
  require_exit(*consumer, 0);
  CHECK(contains(second->out(), "resumed after 1 batches"));
  require_taken_once(out, 2, count);
}

TEST_CASE("distributed NET-12 one remote_producer shared by two threads stores each of "
          "their batches once") {
  scratch_dir dir;
  auto host = start_host(dir, {"--node.capacity=1000"});
  test_peer peer{host.address};
  quern::remote_producer producer{peer.sys, host.address, "rows", "shared"};
  CHECK(producer.resumed_after() == 0);
  // Calls take turns; each thread's batches keep their order.
  auto feed = [&producer](int64_t id) {
    for (int64_t b = 0; b < 20; ++b) {
      std::vector<int64_t> vs;
      for (int64_t r = 0; r < 5; ++r)
        vs.push_back(id * 1000000 + b * 5 + r);
      producer.enqueue_many(
          quern::element{quern::tensor::from_values(quern::tensor_shape{5}, vs)});
    }
  };
  std::thread a{feed, 1};
  std::thread b{feed, 2};
  a.join();
  b.join();
  CHECK(producer.stored() == 40);
  CHECK(producer.reconnections() == 0);
  // The queue's mark: a producer started again under the name goes on after 40.
  quern::remote_producer again{peer.sys, host.address, "rows", "shared"};
  CHECK(again.resumed_after() == 40);
  quern::blocking_queue q{peer.sys, peer.node.queue("rows")};
  std::multiset<int64_t> took;
  for (int i = 0; i < 200; ++i)
    took.insert(q.dequeue()[0].scalar_value<int64_t>());
  auto made = rows_made(1, 100);
  auto theirs = rows_made(2, 100);
  made.insert(theirs.begin(), theirs.end());
  CHECK(took == made);
  CHECK(q.size() == 0);
}

TEST_CASE("distributed NET-12 one remote_producer's push_batch shared by four threads "
          "through a frozen host stores each batch once, each thread's in order") {
  // The queue (capacity 100, no consumer yet) fills, and the threads' next
  // batches wait for room, up to the window, while the host is frozen
  // (SIGSTOP): the producer finds the node lost, connects again once the
  // host wakes, and sends every unanswered batch again, whichever thread
  // pushed it.
  constexpr int64_t threads = 4, batches = 50, rows = 5;
  scratch_dir dir;
  auto host = start_host(dir, {"--node.capacity=100"});
  test_peer peer{host.address};
  quern::remote_producer_options opts;
  opts.connect.timeout = std::chrono::milliseconds{1000};
  std::atomic<int> retries{0};
  opts.on_retry = [&retries](const std::string&) { ++retries; };
  quern::remote_producer producer{peer.sys, host.address, "rows", "shared", opts};
  std::vector<std::exception_ptr> failed(threads);
  auto feed = [&](int64_t id) {
    try {
      for (int64_t b = 0; b < batches; ++b)
        producer.push_batch(quern::element{quern::tensor::build<int64_t>(
            quern::tensor_shape{rows}, [&](int64_t* v, size_t n) {
              for (size_t r = 0; r < n; ++r)
                v[r] = id * 1000000 + b * rows + static_cast<int64_t>(r);
            })});
    } catch (...) {
      failed[static_cast<size_t>(id - 1)] = std::current_exception();
    }
  };
  std::vector<std::thread> feeders;
  for (int64_t id = 1; id <= threads; ++id)
    feeders.emplace_back(feed, id);
  require_queue_size(host, 100);
  host.proc->signal(SIGSTOP);
  // The node lost, then a connection that the sleeping host never answers.
  bool retrying = eventually(start_limit, [&] { return retries >= 2; });
  host.proc->signal(SIGCONT);
  REQUIRE(retrying);
  test_peer consumer{host.address};
  quern::blocking_queue q{consumer.sys, consumer.node.queue("rows")};
  std::vector<int64_t> took;
  for (int64_t i = 0; i < threads * batches * rows; ++i)
    took.push_back(q.dequeue(std::chrono::seconds{60})[0].scalar_value<int64_t>());
  for (auto& f : feeders)
    f.join();
  for (auto& e : failed)
    if (e)
      std::rethrow_exception(e);
  producer.flush();
  CHECK(producer.stored() == static_cast<uint64_t>(threads * batches));
  CHECK(producer.refused() == 0);
  CHECK(producer.reconnections() >= 1);
  CHECK(q.size() == 0);
  std::multiset<int64_t> made;
  for (int64_t id = 1; id <= threads; ++id) {
    auto theirs = rows_made(id, batches * rows);
    made.insert(theirs.begin(), theirs.end());
    // Each thread's rows come in the order it pushed them.
    std::vector<int64_t> own;
    for (auto v : took)
      if (v / 1000000 == id)
        own.push_back(v);
    CHECK(std::is_sorted(own.begin(), own.end()));
  }
  CHECK(std::multiset<int64_t>(took.begin(), took.end()) == made);
}

TEST_CASE("distributed NET-13 remote_producer errors: no name, and a node lost for "
          "retry_for") {
  scratch_dir dir;
  auto host = start_host(dir);
  test_peer peer{host.address};
  CHECK_THROWS_WITH(quern::remote_producer(peer.sys, host.address, "rows", ""),
                    "a remote_producer of queue 'rows' on " + host.address +
                        " needs a producer name");
  quern::remote_producer_options opts;
  opts.connect.timeout = std::chrono::milliseconds{500};
  opts.retry_for = std::chrono::seconds{1};
  quern::remote_producer producer{peer.sys, host.address, "rows", "p", opts};
  auto batch = one_row_batch(7);
  producer.enqueue_many(batch);
  host.proc->signal(SIGKILL);
  require_exit(*host.proc, 128 + SIGKILL);
  require_gives_up(
      host, [&] { producer.enqueue_many(batch); }, [&] { producer.enqueue_many(batch); });
}

TEST_CASE("distributed NET-13 remote_producer push_batch errors: a window out of range, "
          "and a node lost for retry_for") {
  scratch_dir dir;
  auto host = start_host(dir);
  test_peer peer{host.address};
  quern::remote_producer_options opts;
  for (size_t window : {size_t{0}, quern::max_keyed_in_flight + 1}) {
    opts.window = window;
    CHECK_THROWS_WITH(quern::remote_producer(peer.sys, host.address, "rows", "p", opts),
                      "the window of remote_producer 'p' is " + std::to_string(window) +
                          " batches; it must be 1 to 64");
  }
  opts.window = 4;
  opts.connect.timeout = std::chrono::milliseconds{500};
  opts.retry_for = std::chrono::seconds{1};
  quern::remote_producer producer{peer.sys, host.address, "rows", "p", opts};
  auto batch = one_row_batch(7);
  producer.push_batch(batch);
  producer.flush();
  CHECK(producer.stored() == 1);
  host.proc->signal(SIGKILL);
  require_exit(*host.proc, 128 + SIGKILL);
  producer.push_batch(batch); // sent: its loss is learnt from its answer
  require_gives_up(
      host, [&] { producer.flush(); }, [&] { producer.push_batch(batch); });
  CHECK(producer.stored() == 1);
}

TEST_CASE("distributed NET-13 remote_producer push_batch: the queue's error for a batch "
          "is thrown by the next call, and every batch is counted") {
  scratch_dir dir;
  auto host = start_host(dir);
  test_peer peer{host.address};
  quern::remote_producer_options opts;
  opts.window = 2;
  quern::remote_producer producer{peer.sys, host.address, "rows", "p", opts};
  auto batch = one_row_batch(7);
  producer.push_batch(batch);
  quern::blocking_queue{peer.sys, peer.node.queue("rows")}.close();
  producer.push_batch(batch); // refused by the closed queue
  producer.push_batch(batch); // the window is full: waits for batch 1's answer
  CHECK_THROWS_AS(producer.flush(), quern::cancelled_error); // batch 2's
  CHECK(producer.stored() == 1);
  CHECK(producer.refused() == 2);
  producer.flush();           // the first error is thrown once (batch 3 was refused too)
  producer.push_batch(batch); // batch 4, refused in turn
  CHECK_THROWS_AS(producer.flush(), quern::cancelled_error);
  CHECK_THROWS_AS(producer.enqueue_many(batch), quern::cancelled_error); // batch 5
  CHECK(producer.stored() == 1);
  CHECK(producer.refused() == 4);
}
