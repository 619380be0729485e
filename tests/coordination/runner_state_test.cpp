// The runner's state is its actor's: the handle asks the runner while it
// lives, and reads what it published once it ended.

#include "helpers.hpp"

#include <future>

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

TEST_CASE("a runner answers for its workers while it finishes, and publishes as it ends",
          "[QR-7][QR-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "state");
  std::promise<void> gate;
  auto opened = gate.get_future().share();
  queue_runner_options opts;
  // The runner lives until its cancel_op returns: its workers are all down
  // by then, and the handle has to ask the runner actor itself.
  opts.cancel_op = [opened] { opened.wait(); };
  queue_runner qr{
      q,
      {async_op([](async_run& run) { run.end(); }, "ends"),
       async_op([](async_run& run) { run.fail(std::runtime_error("broken record")); },
                "fails")},
      opts};
  auto workers = qr.start(sys);
  REQUIRE(workers.size() == 2);
  CHECK(await_all_down(sys, workers) == workers.size());
  auto runner = qr.runner();
  REQUIRE(runner);
  // Answered by the runner actor, which is still waiting for cancel_op.
  CHECK_FALSE(qr.running());
  auto raised = qr.exceptions_raised();
  REQUIRE(raised.size() == 1);
  CHECK(origin_of(raised[0]) == "state/fails");
  CHECK(qr.rows_dropped() == 0);
  gate.set_value();
  qr.stop();
  CHECK(await_all_down(sys, {runner}) == 1);
  // Read from what the runner published as it ended.
  CHECK_FALSE(qr.running());
  CHECK(qr.exceptions_raised().size() == 1);
  CHECK(qr.rows_dropped() == 0);
}
