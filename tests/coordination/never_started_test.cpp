// Forgetting to start the queue runners (TensorFlow hangs forever): every
// consumer path gets the same diagnosis from the queue after the runner's
// starvation_timeout.

#include "helpers.hpp"

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

const std::string diagnosis =
    " has 1 queue runner(s) that were never started: call start_queue_runners (or "
    "queue_runner::start) before dequeuing (TensorFlow would hang here forever)";

enqueue_op ones() {
  return async_op([](async_run& run) {
    run.emit(int_element(1));
    run.done();
  });
}

queue_runner_options quick() {
  queue_runner_options opts;
  opts.starvation_timeout = 50ms;
  return opts;
}

} // namespace

TEST_CASE("a never-started runner: blocking_queue's dequeues fail with a diagnosis",
          "[QR-10][starvation]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "input");
  queue_runner qr{q, {ones()}, quick()};
  blocking_queue b{sys, q};
  auto name = b.spec().resource_name;
  CHECK(thrown<failed_precondition_error>([&] { b.dequeue(); }) ==
        "FIFOQueue '" + name + "'" + diagnosis);
  CHECK(thrown<failed_precondition_error>([&] { b.dequeue_many(4); }) ==
        "FIFOQueue '" + name + "'" + diagnosis);
  CHECK(thrown<failed_precondition_error>([&] { b.dequeue_up_to(4); }) ==
        "FIFOQueue '" + name + "'" + diagnosis);
  // Once started, the same calls are fed.
  auto threads = qr.start(sys);
  CHECK(int_of(b.dequeue()) == 1);
  CHECK(b.dequeue_many(4).batch_size() == 4);
  qr.stop();
  CHECK(await_all_down(sys, threads) == threads.size());
}

TEST_CASE("a never-started runner: queue_reader and batch_reader fail with a diagnosis",
          "[QR-10][starvation]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "input");
  queue_runner qr{q, {ones()}, quick()};
  {
    queue_reader r{sys, q, 16};
    auto text = thrown<failed_precondition_error>([&] { r.pull(); });
    CHECK(text.find(diagnosis) != std::string::npos);
  }
  for (auto cut :
       {batch_cut::any_size, batch_cut::dequeue_many, batch_cut::dequeue_up_to}) {
    batch_reader r{sys, q, 4, cut};
    auto text = thrown<failed_precondition_error>([&] { r.pull(); });
    CHECK(text.find(diagnosis) != std::string::npos);
  }
  CHECK(blocking_queue{sys, q}.size() == 0); // nothing was taken or lost
}

TEST_CASE("no diagnosis when the runner starts in time, or was dropped unstarted",
          "[QR-10][starvation]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "input");
  queue_runner_options opts;
  opts.starvation_timeout = 10s;
  queue_runner qr{q, {ones()}, opts};
  blocking_queue b{sys, q};
  std::thread late{[&] {
    std::this_thread::sleep_for(20ms);
    qr.start(sys);
  }};
  CHECK(int_of(b.dequeue()) == 1); // waits for the late start, then is fed
  late.join();
  qr.stop();
  // A runner made and dropped without a start no longer counts: the queue
  // is then fed by plain code, and its consumers wait as in TensorFlow.
  auto q2 = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "plain");
  { queue_runner dropped{q2, {ones()}, quick()}; }
  blocking_queue b2{sys, q2};
  std::thread feeder{[&] {
    std::this_thread::sleep_for(100ms); // longer than the dropped runner's timeout
    b2.enqueue(int_element(5));
  }};
  CHECK(int_of(b2.dequeue()) == 5);
  feeder.join();
}
