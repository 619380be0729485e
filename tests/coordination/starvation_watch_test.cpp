// A pipeline consumer's dequeue is one request that its queue watches: the
// queue answers it when no runner feeds the queue after starvation_timeout,
// or at the moment its last runner ends without closing it. Nobody polls.

#include "helpers.hpp"

#include <future>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

/// A runner whose one op waits for `gate`, then ends the input without
/// emitting anything, and leaves the queue open (close_op nullopt).
queue_runner ends_open(const queue_actor& q, std::shared_future<void> gate) {
  queue_runner_options opts;
  opts.close_op = std::nullopt;
  return queue_runner{q,
                      {blocking_op([gate](blocking_run& run) {
                        gate.wait();
                        run.end();
                      })},
                      opts};
}

/// What a call made in another thread came to (Catch2's assertions stay in
/// the test's thread).
struct result {
  std::optional<int64_t> value;
  std::string error; // the what() of what it threw
  std::string kind;  // failed_precondition, out_of_range or other
};

/// Runs `f` (which returns a row) in a thread of its own.
template <class F>
std::thread call_in_thread(result& r, F f) {
  return std::thread{[&r, f]() mutable {
    try {
      r.value = int_of(f());
    } catch (const failed_precondition_error& e) {
      r.error = e.what();
      r.kind = "failed_precondition";
    } catch (const out_of_range_error& e) {
      r.error = e.what();
      r.kind = "out_of_range";
    } catch (const std::exception& e) {
      r.error = e.what();
      r.kind = "other";
    }
  }};
}

} // namespace

TEST_CASE("a waiting consumer fails when the last runner ends without closing the queue",
          "[CC-2][starvation]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, "left_open");
  std::promise<void> gate;
  pipeline_options opts;
  opts.starvation_timeout = 20ms;
  opts.when_unfed = starvation_action::fail;
  pipeline pipe{sys, opts};
  pipe.add_queue_runner(ends_open(q, gate.get_future().share()));
  pipe.start_queue_runners();
  auto in = pipe.make_consumer(q);
  result r;
  auto consumer = call_in_thread(r, [&] { return in.dequeue(); });
  // Long enough for the consumer's 20 ms to pass while the runner still
  // feeds the queue (if not, the queue answers when they pass: the same).
  std::this_thread::sleep_for(200ms);
  gate.set_value(); // the runner's last worker ends; nobody closes the queue
  consumer.join();
  CHECK(r.kind == "failed_precondition");
  CHECK_THAT(r.error,
             Catch::Matchers::Contains("left_open' has waited") &&
                 Catch::Matchers::Contains("every queue runner of this queue has "
                                           "ended without closing it"));
  blocking_queue b{sys, q};
  CHECK_FALSE(b.is_closed());
  b.enqueue(int_element(3));
  CHECK(int_of(in.dequeue()) == 3); // the same consumer, served by plain code
}

TEST_CASE("warn: the consumer keeps waiting after the last runner ended, and is served",
          "[CC-2][starvation]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, "fed_by_hand");
  std::promise<void> gate;
  pipeline_options opts;
  opts.starvation_timeout = 20ms; // when_unfed: warn
  pipeline pipe{sys, opts};
  pipe.add_queue_runner(ends_open(q, gate.get_future().share()));
  pipe.start_queue_runners();
  auto in = pipe.make_consumer(q);
  result r;
  auto consumer = call_in_thread(r, [&] { return in.dequeue(); });
  std::this_thread::sleep_for(100ms);
  gate.set_value();
  CHECK(eventually([&] { return !pipe.queue_runners()[0].running(); }));
  std::this_thread::sleep_for(100ms); // the consumer warned and waits on
  blocking_queue{sys, q}.enqueue(int_element(7));
  consumer.join();
  CHECK(r.error.empty());
  CHECK(r.value == std::optional<int64_t>{7});
}

TEST_CASE("a consumer that warned about runners never started is served once they start",
          "[CC-2][starvation]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, "late_start");
  pipeline_options opts;
  opts.starvation_timeout = 20ms;
  opts.when_never_started = starvation_action::warn;
  pipeline pipe{sys, opts};
  // The runner's own diagnosis would fail a plain dequeue after 50 ms; the
  // consumer already warned, so its dequeue is not failed by it.
  queue_runner_options ropts;
  ropts.starvation_timeout = 50ms;
  pipe.add_queue_runner(queue_runner{q,
                                     {async_op([](async_run& run) {
                                       run.emit(int_element(9));
                                       run.done();
                                     })},
                                     ropts});
  auto in = pipe.make_consumer(q);
  result r;
  auto consumer = call_in_thread(r, [&] { return in.dequeue(); });
  std::this_thread::sleep_for(300ms);
  pipe.start_queue_runners();
  consumer.join();
  CHECK(r.error.empty());
  CHECK(r.value == std::optional<int64_t>{9});
  pipe.stop();
}

TEST_CASE("a waiting consumer keeps its place in line: one request, not one per slice",
          "[CC-2][starvation][Q-80]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, "in_line");
  pipeline_options opts;
  opts.starvation_timeout = 30s;
  pipeline pipe{sys, opts};
  auto in = pipe.make_consumer(q);
  result first;
  result second;
  auto a = call_in_thread(first, [&] { return in.dequeue(); });
  // A consumer that re-asked in slices would have gone behind the plain
  // dequeue that arrives now; the queue serves waiting dequeues in order.
  std::this_thread::sleep_for(500ms);
  auto b = call_in_thread(second, [&] { return blocking_queue{sys, q}.dequeue(); });
  std::this_thread::sleep_for(500ms);
  blocking_queue feed{sys, q};
  feed.enqueue(int_element(1));
  feed.enqueue(int_element(2));
  a.join();
  b.join();
  CHECK(first.value == std::optional<int64_t>{1});
  CHECK(second.value == std::optional<int64_t>{2});
}

TEST_CASE("a long starvation_timeout does not delay the end of the actor system",
          "[CC-2][starvation][exit]") {
  auto begin = std::chrono::steady_clock::now();
  {
    quern::config cfg;
    caf::actor_system sys{cfg};
    auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, "long_watch");
    pipeline_options opts;
    opts.starvation_timeout = std::chrono::hours(1);
    pipeline pipe{sys, opts};
    auto in = pipe.make_consumer(q);
    result r;
    auto consumer = call_in_thread(r, [&] { return in.dequeue(); });
    std::this_thread::sleep_for(100ms);
    blocking_queue{sys, q}.close(); // the consumer's watch (1 h) is still armed
    consumer.join();
    CHECK(r.kind == "out_of_range");
  }
  // Not a timing assertion: a system kept alive by the hour-long watch would
  // take an hour (and hit the test's timeout).
  CHECK(std::chrono::steady_clock::now() - begin < std::chrono::minutes(10));
}
