// The order a checkpoint pauses a pipeline's runners in (docs/semantics.md
// RS-18): a blocking run that waits inside for rows an asynchronous runner
// brings gets them, and pauses, instead of failing the checkpoint.

#include <atomic>
#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "quern/actor_system.hpp"
#include "quern/blocking_queue.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue.hpp"
#include "quern/queue_runner.hpp"

#include "helpers.hpp"

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

TEST_CASE("RS-18 a blocking run waiting for an async runner's rows pauses: the async "
          "runners pause after the blocking ones",
          "[RS-18]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto source = spawn_fifo_queue(sys, 1000, {dtype::int64}, {tensor_shape{}}, "source");
  auto middle = spawn_fifo_queue(sys, 1, {dtype::int64}, {tensor_shape{}}, "middle");
  auto out = spawn_fifo_queue(sys, 1000, {dtype::int64}, {tensor_shape{}}, "out");
  pipeline_options po;
  po.checkpoint_pause_limit = 2s;
  pipeline pipe{sys, po};
  // The async stage moves one row a run from `source` to `middle`.
  auto mover = async_op(
      [source](async_run& run) {
        run.dequeue(source, [&run](element& row) {
          run.emit(std::move(row));
          run.done();
        });
      },
      "mover");
  pipe.add_queue_runner(queue_runner{middle, {mover}});
  // The blocking stage waits inside its run for a row of `middle`.
  auto& system = sys;
  auto taker = blocking_op(
      [&system, middle](blocking_run& run) {
        blocking_queue in{system, middle};
        run.emit(in.dequeue());
      },
      "taker");
  pipe.add_queue_runner(queue_runner{out, {taker}});
  pipe.start_queue_runners();
  // Rows reach `source` slowly: the taker waits for `middle` most of the time.
  std::atomic<bool> done{false};
  std::thread feeder{[&] {
    blocking_queue s{sys, source};
    for (int64_t i = 0; !done; ++i) {
      s.enqueue(int_element(i));
      std::this_thread::sleep_for(2ms);
    }
  }};
  int64_t taken = 0;
  for (int i = 0; i < 10; ++i) {
    INFO("snapshot " << i);
    pipeline_snapshot s;
    CHECK_NOTHROW(s = pipe.snapshot(i));
    // Every row is in one place: moved rows are in `out` or `middle`.
    auto moved = s.queues["out"].stored_rows() + s.queues["middle"].stored_rows();
    CHECK(moved >= taken);
    taken = moved;
    std::this_thread::sleep_for(5ms);
  }
  CHECK(taken > 0);
  done = true;
  feeder.join();
}
