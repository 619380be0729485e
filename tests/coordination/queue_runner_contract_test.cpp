// QueueRunner as TensorFlow defines it (QR-2, QR-4, QR-6, QR-8): the user's
// own close_op and cancel_op, what create_threads returns, enqueue ops that
// stay reachable and run by hand.

#include "helpers.hpp"

#include <atomic>

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

/// An async op that emits `runs` rows, one per run, then ends its input.
enqueue_op finite_op(int runs) {
  return async_op([runs](async_run& run) {
    if (run.index() >= static_cast<uint64_t>(runs)) {
      run.end();
      return;
    }
    run.emit(int_element(static_cast<int64_t>(run.index())));
    run.done();
  });
}

enqueue_op forever_op() {
  return async_op([](async_run& run) {
    run.emit(int_element(1));
    run.done();
  });
}

/// Waits until the runner actor of the last start has ended (it ends after
/// its workers, once its close_op or cancel_op is done).
void await_runner(caf::actor_system& sys, const queue_runner& qr) {
  if (auto r = qr.runner()) // invalid once it is gone
    CHECK(await_all_down(sys, {r}) == 1);
}

} // namespace

TEST_CASE(
    "QR-2 QR-6 close_op may be the user's own function, run once by the last worker",
    "[QR-2][QR-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 100, {dtype::int64}, {tensor_shape{}});
  auto downstream = spawn_fifo_queue(sys, 1, {dtype::int64}, {tensor_shape{}});
  std::atomic<int> closes{0};
  std::atomic<int> cancels{0};
  queue_runner_options opts;
  // Closes another queue too: it may block, as a blocking_queue call does.
  opts.close_op = [&] {
    ++closes;
    blocking_queue{sys, q}.close();
    blocking_queue{sys, downstream}.close();
  };
  opts.cancel_op = [&] { ++cancels; };
  queue_runner qr{q, {finite_op(3), finite_op(5), finite_op(1)}, opts};
  auto threads = qr.start(sys);
  CHECK(await_all_down(sys, threads) == threads.size());
  await_runner(sys, qr); // the runner waits for close_op
  CHECK(closes == 1);
  CHECK(cancels == 0);
  blocking_queue b{sys, q};
  CHECK(b.is_closed());
  CHECK(b.size() == 9);
  CHECK(blocking_queue{sys, downstream}.is_closed());
}

TEST_CASE("QR-2 QR-8 cancel_op may be the user's own function, run once on stop",
          "[QR-2][QR-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}});
  std::atomic<int> closes{0};
  std::atomic<int> cancels{0};
  queue_runner_options opts;
  opts.close_op = [&] { ++closes; };
  opts.cancel_op = [&] {
    ++cancels;
    blocking_queue{sys, q}.close(true); // releases the blocked workers
    throw std::runtime_error("ignored, as TensorFlow ignores it");
  };
  queue_runner qr{q, {forever_op(), forever_op()}, opts};
  coordinator coord{sys};
  auto threads = qr.start(sys, coord.actor());
  CHECK(eventually([&] { return blocking_queue{sys, q}.size() == 4; })); // full
  coord.request_stop();
  coord.request_stop(); // a second stop runs nothing more
  CHECK_NOTHROW(coord.join(threads));
  await_runner(sys, qr);
  CHECK(cancels == 1);
  CHECK(closes == 0);
  CHECK(qr.exceptions_raised().empty());
}

TEST_CASE("QR-4 create_threads returns one handle per enqueue op, then the closer",
          "[QR-4]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 2, {dtype::int64}, {tensor_shape{}}, "numbers");
  queue_runner_options opts;
  opts.name = "numbers";
  queue_runner qr{q, {forever_op(), forever_op(), forever_op()}, opts};
  coordinator coord{sys};
  auto threads = qr.start(sys, coord.actor());
  REQUIRE(threads.size() == 4);
  for (auto& t : threads)
    CHECK(t != qr.runner()); // the supervising runner actor is not one of them
  CHECK(qr.start(sys, coord.actor()).empty()); // while they run: nothing new
  // Every handle is registered: after a stop with no grace, join names them.
  coord.request_stop();
  coord.join(threads);
  CHECK(await_all_down(sys, threads) == threads.size());
  // Without a coordinator there is no closer.
  auto again = qr.start(sys);
  CHECK(again.size() == 3);
  qr.stop();
  CHECK(await_all_down(sys, again) == again.size());
}

TEST_CASE("QR-4 the closer is named in join's straggler list", "[QR-4][CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 2, {dtype::int64}, {tensor_shape{}});
  std::atomic<bool> release{false};
  queue_runner_options opts;
  opts.name = "slow";
  opts.cancel_op = [&] { // a cancel_op that takes its time
    while (!release.load())
      std::this_thread::sleep_for(1ms);
  };
  queue_runner qr{q, {forever_op()}, opts};
  coordinator coord{sys};
  auto threads = qr.start(sys, coord.actor());
  coord.request_stop();
  auto report = coord.join_report_of(threads, 500ms); // op0 ends well within it
  CHECK(report.stragglers == std::vector<std::string>{"slow/closer"});
  release = true;
  CHECK(await_all_down(sys, threads) == threads.size());
}

TEST_CASE("QR-5 the enqueue ops stay reachable and run once by hand", "[QR-5]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "hand");
  auto failing = blocking_op([](blocking_run& run) {
    if (run.index() == 0)
      throw std::domain_error("bad input");
  });
  queue_runner qr{q, {finite_op(2), failing}};
  REQUIRE(qr.enqueue_ops().size() == 2);
  CHECK(qr.run_enqueue_op(sys, 0)); // each run by hand is run 0 of its own
  CHECK(qr.run_enqueue_op(sys, 0));
  blocking_queue b{sys, q};
  CHECK(b.size() == 2);
  CHECK(int_of(b.dequeue()) == 0);
  CHECK_THROWS_AS(qr.run_enqueue_op(sys, 1), std::domain_error); // the op's own error
  CHECK_THROWS_WITH(qr.run_enqueue_op(sys, 2),
                    "run_enqueue_op: the runner has 2 enqueue ops, got index 2");
  // An op that ends its input at once enqueues nothing and says so.
  queue_runner ended{q, {finite_op(0)}};
  CHECK_FALSE(ended.run_enqueue_op(sys, 0));
  CHECK(b.size() == 1);
}

TEST_CASE("QR-2 an empty queue_closed_codes is a TypeError as in TensorFlow",
          "[QR-2][C-1]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 2, {dtype::int64}, {tensor_shape{}});
  queue_runner_options opts;
  opts.queue_closed_codes = {};
  try {
    queue_runner qr{q, {forever_op()}, opts};
    FAIL("nothing thrown");
  } catch (const argument_error& e) {
    CHECK(std::string{e.python_name()} == "TypeError");
  }
}

TEST_CASE("QR-4 one queue_runner shared by threads: one start wins, the others get none",
          "[QR-4][shared]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}});
  queue_runner qr{q, {forever_op(), forever_op()}};
  std::atomic<int> winners{0};
  std::atomic<size_t> handles{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, copy = qr]() mutable { // copies share one runner
      auto threads = copy.start(sys);
      if (!threads.empty()) {
        ++winners;
        handles += threads.size();
      }
      (void)copy.exceptions_raised();
      (void)copy.running();
    });
  for (auto& t : ts)
    t.join();
  CHECK(winners == 1);
  CHECK(handles == 2);
  qr.stop();
  await_runner(sys, qr);
  CHECK_FALSE(qr.running());
}
