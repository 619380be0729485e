// The coordinator keeps the exception itself (CO-4, CO-5, CO-6), clean stops
// by type (CO-1), names what join waits for (CO-8), and one handle serves
// many threads.

#include "helpers.hpp"

#include <atomic>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

// A user's own "we are done" type.
struct epoch_done : std::exception {
  const char* what() const noexcept override { return "epoch done"; }
};

} // namespace

TEST_CASE("CO-4 join rethrows the very exception object given in its catch block",
          "[CO-4][CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  try {
    throw disk_full{3};
  } catch (const std::exception& e) { // the guide's shape: catch the base class
    CHECK(coord.request_stop(e));
  }
  try {
    coord.join();
    FAIL("join did not rethrow");
  } catch (const disk_full& d) {
    CHECK(d.device == 3);
    CHECK(std::string{d.what()} == "disk full");
  }
  try {
    coord.raise_requested_exception();
    FAIL("raise_requested_exception did not rethrow");
  } catch (const disk_full& d) {
    CHECK(d.device == 3);
  }
}

TEST_CASE("CO-4 a temporary or an exception_ptr keeps its type", "[CO-4]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  coord.request_stop(std::logic_error("wrong turn"));
  CHECK_THROWS_AS(coord.join(), std::logic_error);
  try {
    coord.raise_requested_exception();
  } catch (const op_error&) {
    FAIL("a std::logic_error came back as an op_error");
  } catch (const std::logic_error& e) {
    CHECK(std::string{e.what()} == "wrong turn");
  }
  coord.clear_stop();
  coord.request_stop(std::make_exception_ptr(disk_full{9}));
  try {
    coord.join();
  } catch (const disk_full& d) {
    CHECK(d.device == 9);
  }
  // An op_error stays the op_error it was.
  coord.clear_stop();
  coord.request_stop(invalid_argument_error("bad shape"));
  CHECK_THROWS_MATCHES(coord.join(), invalid_argument_error,
                       Catch::Matchers::Message("bad shape"));
}

TEST_CASE("CO-4 a base-class reference outside a catch block keeps its text", "[CO-4]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  disk_full d{1};
  const std::exception& base = d;
  coord.request_stop(base); // not in flight, and a copy would be sliced
  CHECK_THROWS_MATCHES(coord.join(), unknown_error,
                       Catch::Matchers::Message("disk full"));
}

TEST_CASE("CO-5 after join, a non-clean exception is raised at once as itself",
          "[CO-5]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  coord.request_stop();
  coord.join();
  try {
    coord.request_stop(disk_full{4});
    FAIL("request_stop after join did not raise");
  } catch (const disk_full& d) {
    CHECK(d.device == 4);
  }
}

TEST_CASE("CO-1 clean stops by exception type", "[CO-1]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator_options opts;
  opts.clean_stop_exception_types = {exception_type<epoch_done>()};
  coordinator coord{sys, opts};
  try {
    throw epoch_done{};
  } catch (const std::exception& e) {
    CHECK(coord.request_stop(e));
  }
  CHECK(coord.should_stop());
  CHECK_FALSE(coord.status().error);
  CHECK_NOTHROW(coord.join());
  CHECK_NOTHROW(coord.request_stop(epoch_done{})); // clean after join too
  // Another type is not clean, and out_of_range still is (the default codes).
  coord.clear_stop();
  coord.request_stop(out_of_range_error("end"));
  CHECK_NOTHROW(coord.join());
  coord.clear_stop();
  coord.request_stop(disk_full{2});
  CHECK_THROWS_AS(coord.join(), disk_full);
}

TEST_CASE("CO-8 a runner's exception reaches join as itself, naming its op",
          "[CO-8][QR-7]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}});
  auto failing = blocking_op(
      [](blocking_run& run) {
        if (run.index() == 2)
          throw disk_full{7};
        run.emit(int_element(static_cast<int64_t>(run.index())));
      },
      "reader");
  queue_runner_options ro;
  ro.name = "input";
  queue_runner qr{q, {failing}, ro};
  coordinator coord{sys};
  auto actors = qr.start(sys, coord.actor());
  CHECK(coord.wait_for_stop(30s));
  try {
    coord.join();
    FAIL("join did not rethrow");
  } catch (const disk_full& d) {
    CHECK(d.device == 7);
  }
  CHECK(await_all_down(sys, actors) == actors.size());
  auto raised = qr.exceptions_raised();
  REQUIRE(raised.size() == 1);
  CHECK(origin_of(raised[0]) == "input/reader");
  CHECK(message_of(raised[0]) == "disk full");
}

TEST_CASE("an op error from a runner names its op when rethrown as op_error", "[QR-7]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}});
  queue_runner_options ro;
  ro.name = "parse";
  queue_runner qr{
      q,
      {blocking_op([](blocking_run&) { throw data_loss_error("bad record"); }, "csv")},
      ro};
  auto actors = qr.start(sys);
  CHECK(await_all_down(sys, actors) == actors.size());
  auto raised = qr.exceptions_raised();
  REQUIRE(raised.size() == 1);
  CHECK(origin_of(raised[0]) == "parse/csv");
  // Across a process boundary only the code, text and origin travel.
  auto remote = make_error(code_of(raised[0]), message_of(raised[0]));
  remote = with_origin(remote, origin_of(raised[0]));
  try {
    throw_error(remote);
  } catch (const data_loss_error& e) {
    CHECK(std::string{e.what()} == "bad record");
    CHECK(e.origin() == "parse/csv");
  }
}

TEST_CASE("CO-8 join names unnamed actors by what they are", "[CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  auto slow = sys.spawn(stubborn, caf::timespan{1s});
  coord.register_actor(slow);
  coord.request_stop();
  auto report = coord.join_report_of({}, 0ms);
  REQUIRE(report.stragglers.size() == 1);
  auto name = report.stragglers[0];
  CHECK(name.rfind("actor#", 0) == std::string::npos);
  CHECK(name == "scheduled_actor#" + std::to_string(slow.id()));
  CHECK(await_all_down(sys, {slow}) == 1);
}

TEST_CASE("CO-8 a join waiting with no stop requested says what it waits for", "[CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  std::mutex mtx;
  std::vector<std::string> warnings;
  coordinator_options opts;
  opts.join_warning_after = 50ms;
  opts.on_join_warning = [&](const std::string& text) {
    std::lock_guard<std::mutex> guard{mtx};
    warnings.push_back(text);
  };
  coordinator coord{sys, opts};
  auto worker = sys.spawn(stop_listener, 0);
  coord.register_actor(worker, "trainer-2");
  std::thread joiner{[&] { coord.join(); }};
  CHECK(eventually([&] {
    std::lock_guard<std::mutex> guard{mtx};
    return !warnings.empty();
  }));
  coord.request_stop(); // join keeps waiting as asked, then returns
  joiner.join();
  std::lock_guard<std::mutex> guard{mtx};
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "Coordinator.join has waited 0.05 s with no stop requested for "
                       "threads still running: trainer-2");
}

TEST_CASE("a join waiting in one thread returns when another destroys the coordinator",
          "[CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto slow = sys.spawn(stubborn, caf::timespan{2s}); // ignores stop for 2 s
  std::atomic<bool> returned{false};
  std::string error;
  std::thread joiner;
  {
    coordinator coord{sys};
    coord.register_actor(slow, "slow");
    joiner = std::thread{[&] {
      try {
        coord.join(); // 120 s of grace by default
      } catch (const cancelled_error& e) {
        error = e.what();
      }
      returned = true;
    }};
    CHECK(eventually([&] { return coord.status().live == 1; }));
    std::this_thread::sleep_for(20ms); // let the join reach the coordinator
  } // the owning handle goes: stop, then the coordinator shuts down
  joiner.join();
  CHECK(returned);
  CHECK(error == "the coordinator was shut down while this call waited");
  CHECK(await_all_down(sys, {slow}) == 1);
}

TEST_CASE("coordinator: one handle shared by many threads", "[CO-2][CO-3][shared]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  std::atomic<int> set_flag{0};
  std::atomic<int64_t> steps{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t)
    workers.emplace_back([&] {
      while (!coord.should_stop())
        if (++steps == 400 && coord.request_stop())
          ++set_flag;
      if (coord.request_stop()) // every thread tries; only one sets the flag
        ++set_flag;
    });
  std::thread waiter{[&] { CHECK(coord.wait_for_stop()); }};
  coord.join();
  for (auto& w : workers)
    w.join();
  waiter.join();
  CHECK(set_flag == 1);
  CHECK(steps >= 400);
}
