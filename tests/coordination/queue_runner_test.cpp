// The queue runner (docs/semantics.md QR-1..QR-10, CC-2) on the threaded scheduler.

#include "helpers.hpp"

#include <atomic>
#include <memory>
#include <numeric>
#include <set>

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

/// An async op that emits `per_run` consecutive numbers per run, starting at
/// `base`, for `runs` runs, then ends the input.
enqueue_op counting_op(int64_t base, int per_run, int runs, std::string name = {}) {
  return async_op(
      [base, per_run, runs](async_run& run) {
        if (run.index() >= static_cast<uint64_t>(runs)) {
          run.end();
          return;
        }
        for (int i = 0; i < per_run; ++i)
          run.emit(int_element(base + static_cast<int64_t>(run.index()) * per_run + i));
        run.done();
      },
      std::move(name));
}

/// An async op that produces forever.
enqueue_op endless_op() {
  return async_op([](async_run& run) {
    run.emit(int_element(static_cast<int64_t>(run.index())));
    run.done();
  });
}

std::vector<int64_t> drain(caf::actor_system& sys, const queue_actor& q) {
  blocking_queue bq{sys, q};
  std::vector<int64_t> xs;
  try {
    for (;;) {
      auto batch = bq.dequeue_up_to(1000);
      auto n = batch.batch_size();
      for (int64_t i = 0; i < n; ++i)
        xs.push_back(int_of(batch.row(i)));
    }
  } catch (const out_of_range_error&) {
  }
  return xs;
}

} // namespace

TEST_CASE("QR-1 CC-2 a runner needs a queue and enqueue ops", "[QR-1][CC-2]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}});
  CHECK_THROWS_MATCHES(queue_runner(q, {}), argument_error,
                       Catch::Matchers::Message("Must provide queue and enqueue_ops."));
  CHECK_THROWS_MATCHES(queue_runner(queue_actor{}, {endless_op()}), argument_error,
                       Catch::Matchers::Message("Must provide queue and enqueue_ops."));
  CHECK_THROWS_AS(queue_runner(q, {enqueue_op{}}), argument_error);
  queue_runner_options opts;
  opts.queue_closed_codes = {};
  CHECK_THROWS_AS(queue_runner(q, {endless_op()}, opts), argument_error);
}

TEST_CASE("QR-6 the last worker to run out of input closes the queue", "[QR-6][QR-2]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 7, {dtype::int64}, {tensor_shape{}}, "numbers");
  // Three workers of different lengths; the queue is smaller than the data.
  queue_runner qr{q,
                  {counting_op(0, 3, 10, "a"), counting_op(1000, 1, 5, "b"),
                   counting_op(2000, 5, 1, "c")}};
  auto actors = qr.start(sys);
  REQUIRE(actors.size() == 3); // one worker per op
  auto xs = drain(sys, q);
  CHECK(xs.size() == 30 + 5 + 5);
  std::set<int64_t> unique(xs.begin(), xs.end());
  CHECK(unique.size() == xs.size());
  blocking_queue bq{sys, q};
  CHECK(bq.is_closed());
  CHECK(await_all_down(sys, actors) == actors.size()); // ends by itself
  CHECK(qr.exceptions_raised().empty());
  CHECK_FALSE(qr.running());
}

TEST_CASE("QR-6 close_op is done before the last handle start() returned is down",
          "[QR-6][QR-2]") {
  // TensorFlow's last thread runs close_op before it exits: a caller that
  // joined the threads finds the queue closed. Repeated, with ops that end
  // at once, so that the workers' ends race the close.
  two_core_config cfg;
  caf::actor_system sys{cfg};
  auto ends_at_once = async_op([](async_run& run) {
    if (run.index() == 0)
      run.emit(int_element(1));
    run.end();
  });
  auto blocking_end = blocking_op([](blocking_run& run) { run.end(); });
  int not_closed = 0;
  int user_close_late = 0;
  for (int i = 0; i < 200; ++i) {
    auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}});
    queue_runner_options opts;
    std::shared_ptr<std::atomic<bool>> user_closed;
    if (i % 4 == 3) { // the user's own close_op, in a thread of its own
      user_closed = std::make_shared<std::atomic<bool>>(false);
      opts.close_op = [&sys, q, user_closed] {
        blocking_queue{sys, q}.close();
        *user_closed = true;
      };
    }
    std::vector<enqueue_op> ops{ends_at_once, ends_at_once};
    if (i % 2 == 1)
      ops.push_back(blocking_end);
    queue_runner qr{q, ops, opts};
    std::vector<caf::actor> handles;
    std::unique_ptr<coordinator> coord;
    if (i % 3 == 2) { // the closer is among the handles then
      coord = std::make_unique<coordinator>(sys);
      handles = qr.start(sys, coord->actor());
    } else {
      handles = qr.start(sys);
    }
    REQUIRE(await_all_down(sys, handles) == handles.size());
    if (user_closed && !*user_closed)
      ++user_close_late;
    if (!blocking_queue{sys, q}.is_closed())
      ++not_closed;
  }
  CHECK(not_closed == 0);
  CHECK(user_close_late == 0);
}

TEST_CASE("QR-2 close_op can be disabled", "[QR-2]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 100, {dtype::int64}, {tensor_shape{}});
  queue_runner_options opts;
  opts.close_op = std::nullopt;
  queue_runner qr{q, {counting_op(0, 4, 2)}, opts};
  auto actors = qr.start(sys);
  CHECK(await_all_down(sys, actors) == actors.size());
  blocking_queue bq{sys, q};
  CHECK_FALSE(bq.is_closed());
  CHECK(bq.size() == 8);
}

TEST_CASE("QR-4 start while running creates nothing", "[QR-4]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 2, {dtype::int64}, {tensor_shape{}});
  queue_runner qr{q, {endless_op()}};
  auto first = qr.start(sys);
  CHECK(first.size() == 1); // the worker; no closer without a coordinator
  CHECK(qr.running());
  CHECK(qr.start(sys).empty());
  qr.stop();
  CHECK(await_all_down(sys, first) == first.size());
  CHECK_FALSE(qr.running());
  // Once every worker ended, a new set may be started.
  auto second = qr.start(sys);
  CHECK(second.size() == 1);
  qr.stop();
  CHECK(await_all_down(sys, second) == second.size());
}

TEST_CASE("QR-5 QR-8 a stop cancels 1,000 workers blocked on a full queue",
          "[QR-8][QR-5]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "full");
  std::vector<enqueue_op> ops;
  for (int i = 0; i < 1000; ++i)
    ops.push_back(endless_op());
  queue_runner qr{q, ops};
  coordinator coord{sys};
  auto actors = qr.start(sys, coord.actor());
  REQUIRE(actors.size() == 1001);
  blocking_queue bq{sys, q};
  REQUIRE(eventually([&] { return bq.size() == 10; }));
  coord.request_stop();
  CHECK_NOTHROW(coord.join(actors));
  CHECK(await_all_down(sys, actors) == actors.size()); // every worker has ended
  CHECK(bq.is_closed());
  CHECK(qr.exceptions_raised().empty()); // the cancellations were expected
}

TEST_CASE("QR-7 a worker's error stops the runner and reaches join", "[QR-7]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 5, {dtype::int64}, {tensor_shape{}}, "records");
  auto bad = async_op(
      [](async_run& run) {
        if (run.index() == 3)
          throw std::runtime_error("corrupt record 3");
        run.emit(int_element(static_cast<int64_t>(run.index())));
        run.done();
      },
      "parser");
  queue_runner qr{q, {bad, endless_op(), endless_op()}};
  coordinator coord{sys};
  auto actors = qr.start(sys, coord.actor());
  // Consume until the pipeline stops.
  blocking_queue bq{sys, q};
  try {
    while (!coord.should_stop())
      bq.dequeue();
  } catch (const out_of_range_error&) {
  }
  CHECK_THROWS_MATCHES(coord.join(), std::runtime_error,
                       Catch::Matchers::Message("corrupt record 3"));
  CHECK(await_all_down(sys, actors) == actors.size());
  auto raised = qr.exceptions_raised();
  REQUIRE(raised.size() == 1);
  CHECK(message_of(raised[0]) == "corrupt record 3");
  CHECK(bq.is_closed()); // closed with cancel_pending_enqueues
}

TEST_CASE("QR-7 QR-9 without a coordinator the error is kept in exceptions_raised",
          "[QR-7][QR-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 100, {dtype::int64}, {tensor_shape{}});
  auto failing = blocking_op([](blocking_run& run) {
    if (run.index() == 2)
      throw invalid_argument_error("bad line 2");
    run.emit(int_element(static_cast<int64_t>(run.index())));
  });
  queue_runner qr{q, {failing}};
  auto actors = qr.start(sys);
  CHECK(await_all_down(sys, actors) == actors.size());
  auto raised = qr.exceptions_raised();
  REQUIRE(raised.size() == 1);
  CHECK(code_of(raised[0]) == error_code::invalid_argument);
  CHECK(message_of(raised[0]) == "bad line 2");
  CHECK(origin_of(raised[0]) == "fifo_queue/op0");
  // The runner cancels the queue (cancel_op) once the failed worker ended.
  if (auto r = qr.runner()) // invalid once it is gone
    CHECK(await_all_down(sys, {r}) == 1);
  blocking_queue bq{sys, q};
  CHECK(bq.is_closed());
  // Rows stored before the failure are still there (a cancelling close keeps them).
  CHECK(int_of(bq.dequeue()) == 0);
  CHECK(int_of(bq.dequeue()) == 1);
  CHECK_THROWS_AS(bq.dequeue(), out_of_range_error);
  // QR-9: a new start resets exceptions_raised. The queue is closed now, so
  // the first enqueue of the new start fails with cancelled.
  auto again = qr.start(sys);
  REQUIRE(again.size() == 1);
  CHECK(await_all_down(sys, again) == again.size());
  raised = qr.exceptions_raised();
  REQUIRE(raised.size() == 1);
  CHECK(code_of(raised[0]) == error_code::cancelled);
}

TEST_CASE("QR-2 queue-closed codes: an upstream cancel can mean end of input",
          "[QR-2][QR-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto up = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "up");
  auto down = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "down");
  // The op fails with cancelled: listed as a queue-closed code, it ends the
  // worker cleanly and the last one closes `down`.
  auto op = async_op([up](async_run& run) {
    run.self()
        ->request(up, caf::infinite, enqueue_atom::value, int_element(1), wait_forever)
        .then([&run](int32_t) { run.done(); },
              [&run](caf::error& err) { run.fail(std::move(err)); });
  });
  queue_runner_options opts;
  opts.queue_closed_codes = {error_code::out_of_range, error_code::cancelled};
  queue_runner qr{down, {op, op}, opts};
  blocking_queue bup{sys, up};
  bup.close();
  coordinator coord{sys};
  auto actors = qr.start(sys, coord.actor());
  CHECK_NOTHROW(coord.join(actors));
  CHECK_FALSE(coord.should_stop());
  CHECK(qr.exceptions_raised().empty());
  blocking_queue bdown{sys, down};
  CHECK(bdown.is_closed());
}

TEST_CASE("QR-5 an async op transforms elements of another queue", "[QR-5]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto src = spawn_fifo_queue(sys, 8, {dtype::int64}, {tensor_shape{}}, "src");
  auto dst = spawn_fifo_queue(sys, 8, {dtype::int64}, {tensor_shape{}}, "dst");
  queue_runner source{src, {counting_op(0, 5, 20)}};
  // Squares each element; dequeue_up_to gives 1..4 rows per run; the
  // upstream's out_of_range ends the worker.
  auto square = async_op([src](async_run& run) {
    run.dequeue_up_to(src, 4, [&run](element& batch) {
      for (int64_t i = 0; i < batch.batch_size(); ++i) {
        auto x = int_of(batch.row(i));
        run.emit(int_element(x * x));
      }
      run.done();
    });
  });
  queue_runner transform{dst, {square, square, square}};
  coordinator coord{sys};
  auto a = source.start(sys, coord.actor());
  auto b = transform.start(sys, coord.actor());
  auto xs = drain(sys, dst);
  CHECK_NOTHROW(coord.join());
  std::sort(xs.begin(), xs.end());
  REQUIRE(xs.size() == 100);
  for (int64_t i = 0; i < 100; ++i)
    CHECK(xs[static_cast<size_t>(i)] == i * i);
}

TEST_CASE("QR-7 async_run failures: exceptions in handlers and double completion",
          "[QR-7]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 8, {dtype::int64}, {tensor_shape{}});
  SECTION("an exception thrown in a response handler keeps its message") {
    auto op = async_op([q](async_run& run) {
      run.self()->request(q, caf::infinite, size_atom::value).then([](int32_t) {
        throw std::runtime_error("thrown in a response handler");
      });
    });
    queue_runner qr{q, {op}};
    coordinator coord{sys};
    qr.start(sys, coord.actor());
    CHECK_THROWS_WITH(coord.join(), "thrown in a response handler");
  }
  SECTION("completing a run twice is reported, not ignored") {
    auto op = async_op([](async_run& run) {
      run.done();
      run.done();
    });
    queue_runner qr{q, {op}};
    coordinator coord{sys};
    qr.start(sys, coord.actor());
    CHECK_THROWS_WITH(coord.join(), Catch::Matchers::Contains("completed twice"));
  }
}

TEST_CASE("QR-8 a worker that ignores stop is named by join", "[QR-8][CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 100, {dtype::int64}, {tensor_shape{}}, "slow");
  std::atomic<bool> release{false};
  std::atomic<bool> entered{false};
  // A blocking op stuck in "I/O" that does not look at should_stop().
  auto stuck = blocking_op(
      [&release, &entered](blocking_run&) {
        entered = true;
        while (!release.load())
          std::this_thread::sleep_for(1ms);
      },
      "stuck_reader");
  queue_runner_options opts;
  opts.name = "reader";
  queue_runner qr{q, {stuck, endless_op()}, opts};
  coordinator coord{sys};
  auto actors = qr.start(sys, coord.actor());
  REQUIRE(actors.size() == 3);                         // two workers and the closer
  REQUIRE(eventually([&] { return entered.load(); })); // stuck in its run
  coord.request_stop();
  // The well-behaved worker ends on stop; only the stuck one (and the closer,
  // which ends with the runner waiting for it) outlive the grace period.
  CHECK(await_all_down(sys, {actors[1]}) == 1);
  try {
    coord.join(actors, 50ms);
    FAIL("expected stragglers");
  } catch (const live_actors_error& e) {
    CHECK(e.names() == std::vector<std::string>{"reader/closer", "reader/stuck_reader"});
  }
  release = true;
  CHECK(await_all_down(sys, actors) == actors.size());
}

TEST_CASE("QR-8 blocking ops see should_stop and blocked ones are cancelled", "[QR-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, "lines");
  auto upstream = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, "files");
  auto looping = blocking_op([](blocking_run& run) {
    while (!run.should_stop())
      std::this_thread::sleep_for(1ms);
  });
  auto reader = blocking_op([&sys, upstream](blocking_run& run) {
    blocking_queue in{sys, upstream}; // blocks: nobody feeds `files`
    run.emit(in.dequeue());
  });
  auto writer = blocking_op([](blocking_run& run) { run.emit(int_element(7)); });
  queue_runner files_runner{upstream, {blocking_op([](blocking_run& run) {
                              // never produces, never ends by itself
                              while (!run.should_stop())
                                std::this_thread::sleep_for(1ms);
                            })}};
  queue_runner qr{q, {looping, reader, writer, writer}};
  coordinator coord{sys};
  auto a = files_runner.start(sys, coord.actor());
  auto b = qr.start(sys, coord.actor());
  blocking_queue bq{sys, q};
  REQUIRE(eventually([&] { return bq.size() == 4; })); // the writers are blocked
  coord.request_stop();
  CHECK_NOTHROW(coord.join());
  CHECK(await_all_down(sys, a) == a.size());
  CHECK(await_all_down(sys, b) == b.size());
}

TEST_CASE("QR-5 10,000 async workers on two threads complete and stop cleanly",
          "[QR-5][QR-6][scale]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  SECTION("the data runs out: the runner closes the queue and ends by itself") {
    auto q = spawn_fifo_queue(sys, 1000, {dtype::int64}, {tensor_shape{}}, "many");
    std::vector<enqueue_op> ops;
    for (int i = 0; i < 10000; ++i)
      ops.push_back(counting_op(int64_t{i} * 10, 5, 1));
    queue_runner qr{q, ops};
    coordinator coord{sys};
    auto actors = qr.start(sys, coord.actor());
    REQUIRE(actors.size() == 10001);
    auto xs = drain(sys, q);
    CHECK(xs.size() == 50000);
    CHECK(std::accumulate(xs.begin(), xs.end(), int64_t{0}) == [] {
      int64_t s = 0;
      for (int64_t i = 0; i < 10000; ++i)
        for (int64_t j = 0; j < 5; ++j)
          s += i * 10 + j;
      return s;
    }());
    CHECK_NOTHROW(coord.join());
    CHECK_FALSE(coord.should_stop());
  }
  SECTION("endless producers: request_stop ends all of them") {
    auto q = spawn_fifo_queue(sys, 1000, {dtype::int64}, {tensor_shape{}}, "endless");
    std::vector<enqueue_op> ops(10000, endless_op());
    queue_runner qr{q, ops};
    coordinator coord{sys};
    auto actors = qr.start(sys, coord.actor());
    blocking_queue bq{sys, q};
    int64_t got = 0;
    while (got < 20000)
      got += bq.dequeue_many(1000).batch_size();
    coord.request_stop();
    CHECK_NOTHROW(coord.join());
    CHECK(await_all_down(sys, actors) == actors.size());
    CHECK(bq.is_closed());
  }
}

TEST_CASE("QR-5 rows are stored in run order whatever the push window", "[QR-5]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  for (int32_t window : {1, 2, 8}) {
    auto q = spawn_fifo_queue(sys, 3, {dtype::int64}, {tensor_shape{}});
    queue_runner_options opts;
    opts.push_window = window;
    queue_runner qr{q, {counting_op(0, 2, 50)}, opts};
    auto actors = qr.start(sys);
    auto xs = drain(sys, q);
    REQUIRE(xs.size() == 100);
    for (size_t i = 0; i < xs.size(); ++i)
      CHECK(xs[i] == static_cast<int64_t>(i));
    CHECK(await_all_down(sys, actors) == actors.size());
  }
}

TEST_CASE("QR-5 an async op pulls rows from another queue", "[QR-5][QR-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto src = spawn_fifo_queue(sys, 16, {dtype::int64}, {tensor_shape{}}, "rows_in");
  auto dst = spawn_fifo_queue(sys, 16, {dtype::int64}, {tensor_shape{}}, "rows_out");
  queue_runner source{src, {counting_op(0, 10, 30)}};
  // Catch2 is not thread-safe: the workers only record what they saw.
  std::atomic<size_t> smallest{1000}, largest{0};
  auto negate = async_op([src, &smallest, &largest](async_run& run) {
    run.pull(src, 7, [&run, &smallest, &largest](std::vector<element>& rows) {
      auto n = rows.size();
      for (auto s = smallest.load(); n < s && !smallest.compare_exchange_weak(s, n);)
        ;
      for (auto l = largest.load(); n > l && !largest.compare_exchange_weak(l, n);)
        ;
      for (auto& r : rows)
        run.emit(int_element(-int_of(r)));
      run.done();
    });
  });
  queue_runner sink{dst, {negate, negate}};
  coordinator coord{sys};
  source.start(sys, coord.actor());
  sink.start(sys, coord.actor());
  auto xs = drain(sys, dst);
  CHECK_NOTHROW(coord.join());
  std::sort(xs.begin(), xs.end());
  REQUIRE(xs.size() == 300);
  for (size_t i = 0; i < xs.size(); ++i)
    CHECK(xs[i] == -299 + static_cast<int64_t>(i));
  CHECK(smallest.load() >= 1); // a pull gives 1..n rows
  CHECK(largest.load() <= 7);
}

TEST_CASE("QR-5 batches travel whole: emit_many and pull_batch", "[QR-5][QR-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto src = spawn_fifo_queue(sys, 64, {dtype::int64}, {tensor_shape{}}, "batches_in");
  auto dst = spawn_fifo_queue(sys, 64, {dtype::int64}, {tensor_shape{}}, "batches_out");
  // 20 runs of 25 rows each as one batch; mixed with single rows in between.
  auto source = async_op([](async_run& run) {
    if (run.index() >= 20) {
      run.end();
      return;
    }
    auto base = static_cast<int64_t>(run.index()) * 26;
    std::vector<int64_t> xs;
    for (int64_t i = 0; i < 25; ++i)
      xs.push_back(base + i);
    run.emit_many(element{tensor::vector<int64_t>(xs)});
    run.emit(int_element(base + 25));
    run.done();
  });
  auto plus_one = async_op([src](async_run& run) {
    run.pull_batch(src, 40, [&run](element& batch) {
      std::vector<int64_t> ys;
      for (auto x : batch[0].to_vector<int64_t>())
        ys.push_back(x + 1);
      run.emit_many(element{tensor::vector<int64_t>(ys)});
      run.done();
    });
  });
  queue_runner a{src, {source}};
  queue_runner b{dst, {plus_one}};
  coordinator coord{sys};
  a.start(sys, coord.actor());
  b.start(sys, coord.actor());
  auto xs = drain(sys, dst);
  CHECK_NOTHROW(coord.join());
  REQUIRE(xs.size() == 520);
  for (size_t i = 0; i < xs.size(); ++i)
    CHECK(xs[i] == static_cast<int64_t>(i) + 1); // one producer, one stage: in order
}
