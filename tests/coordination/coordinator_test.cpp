// The coordinator (docs/semantics.md CO-1..CO-8, CC-1) on the threaded scheduler.

#include "helpers.hpp"

#include <atomic>
#include <thread>

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

TEST_CASE("CO-1 out_of_range is a clean stop by default", "[CO-1]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  CHECK(coord.request_stop(out_of_range_error("FIFOQueue 'q' is closed")));
  CHECK(coord.should_stop());
  CHECK_NOTHROW(coord.join());
  CHECK_NOTHROW(coord.raise_requested_exception());
  CHECK_FALSE(coord.status().error);
}

TEST_CASE("CO-1 the clean-stop codes are configurable", "[CO-1]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator_options opts;
  opts.clean_stop_codes = {error_code::cancelled};
  coordinator coord{sys, opts};
  coord.request_stop(out_of_range_error("end of data"));
  CHECK_THROWS_MATCHES(coord.join(), out_of_range_error,
                       Catch::Matchers::Message("end of data"));
  coord.clear_stop();
  coord.request_stop(cancelled_error("Enqueue operation was cancelled"));
  CHECK_NOTHROW(coord.join());
}

TEST_CASE("CO-2 should_stop and wait_for_stop", "[CO-2]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  CHECK_FALSE(coord.should_stop());
  CHECK_FALSE(coord.wait_for_stop(10ms)); // times out: returns the flag
  CHECK_FALSE(coord.wait_for_stop(0ms));
  std::thread other{[&] {
    coordinator h{sys, coord.actor()}; // a non-owning handle in another thread
    h.request_stop();
  }};
  CHECK(coord.wait_for_stop()); // no timeout: answered by the stop request
  other.join();
  CHECK(coord.should_stop());
  CHECK(coord.wait_for_stop(1ms));
}

TEST_CASE("CO-3 CC-1 request_stop may be called any number of times", "[CO-3][CC-1]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  CHECK(coord.request_stop());
  CHECK_FALSE(coord.request_stop());
  CHECK_FALSE(coord.request_stop(std::runtime_error("late")));
  CHECK_FALSE(coord.request_stop());
  CHECK_NOTHROW(coord.join());       // the late error was reported after stop: ignored
  CHECK_FALSE(coord.request_stop()); // and after join, a clean stop is fine
}

TEST_CASE("CO-4 only the first error is kept", "[CO-4]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  CHECK(coord.request_stop(std::runtime_error("first failure")));
  CHECK_FALSE(coord.request_stop(invalid_argument_error("second failure")));
  // The exception itself comes back: a std::runtime_error, not an op_error.
  try {
    coord.raise_requested_exception();
    FAIL("nothing raised");
  } catch (const op_error&) {
    FAIL("the std::runtime_error came back as an op_error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string{e.what()} == "first failure");
  }
  CHECK_THROWS_MATCHES(coord.join(), std::runtime_error,
                       Catch::Matchers::Message("first failure"));
}

TEST_CASE("CO-4 an op_error keeps its code and message", "[CO-4]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  try {
    throw invalid_argument_error(
        "Shape mismatch in tuple component 0. Expected [], got [2]");
  } catch (const std::exception& e) {
    coord.request_stop(e);
  }
  CHECK_THROWS_MATCHES(coord.join(), invalid_argument_error,
                       Catch::Matchers::Message(
                           "Shape mismatch in tuple component 0. Expected [], got [2]"));
}

TEST_CASE("CO-5 a non-clean error after join is raised at once", "[CO-5]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  coord.request_stop();
  coord.join();
  CHECK(coord.joined());
  CHECK_THROWS_MATCHES(coord.request_stop(std::runtime_error("too late")),
                       std::runtime_error, Catch::Matchers::Message("too late"));
  CHECK_NOTHROW(coord.request_stop(out_of_range_error("clean"))); // clean: no raise
  CHECK_FALSE(coord.status().error);                              // nor recorded
}

TEST_CASE("CO-6 clear_stop, raise_requested_exception, stop_on_exception", "[CO-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  CHECK(coord.stop_on_exception([] {}));
  CHECK_FALSE(coord.should_stop());
  CHECK_FALSE(coord.stop_on_exception([] { throw std::logic_error("in the body"); }));
  CHECK(coord.should_stop());
  CHECK_THROWS_WITH(coord.raise_requested_exception(), "in the body");
  CHECK_THROWS_WITH(coord.raise_requested_exception(), "in the body"); // not cleared
  CHECK_THROWS_WITH(coord.join(), "in the body");
  coord.clear_stop();
  auto s = coord.status();
  CHECK_FALSE(s.stop_requested);
  CHECK_FALSE(s.joined);
  CHECK_FALSE(s.error);
  CHECK_NOTHROW(coord.raise_requested_exception());
  // After clear_stop the coordinator works again, and clean stops are clean.
  CHECK_FALSE(coord.stop_on_exception([] { throw out_of_range_error("epoch limit"); }));
  CHECK(coord.should_stop());
  CHECK_NOTHROW(coord.join());
}

TEST_CASE("CO-7 registered actors get stop pushed and are joined", "[CO-7]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  std::vector<caf::actor> actors;
  for (int i = 0; i < 5; ++i) {
    actors.push_back(sys.spawn(stop_listener, 0));
    coord.register_actor(actors.back(), "listener" + std::to_string(i));
  }
  CHECK(coord.status().live == 5);
  coord.request_stop(); // nobody polls: the coordinator pushes (stop)
  CHECK_NOTHROW(coord.join({}, 60s));
  CHECK(await_all_down(sys, actors) == actors.size());
  CHECK(coord.status().live == 0); // CO-8 step 4 cleared the registered set
}

TEST_CASE("CO-7 an actor registered after stop is stopped at once", "[CO-7]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  coord.request_stop();
  auto a = sys.spawn(stop_listener, 0);
  coord.register_actor(a, "late");
  CHECK(await_all_down(sys, {a}) == 1);
  CHECK_NOTHROW(coord.join());
}

TEST_CASE("CO-8 join returns without stop when every actor ended", "[CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  auto a = sys.spawn(stubborn, caf::timespan{20ms});
  auto b = sys.spawn(stubborn, caf::timespan{1ms});
  coord.register_actor(a, "a");
  // b is not registered, but given to join.
  CHECK_NOTHROW(coord.join({b}));
  CHECK_FALSE(coord.should_stop());
  CHECK(coord.joined());
}

TEST_CASE("CO-8 join names every straggler after the grace period", "[CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  auto fine = sys.spawn(stop_listener, 0);
  auto slow1 = sys.spawn(stubborn, caf::timespan{2s});
  auto slow2 = sys.spawn(stubborn, caf::timespan{2s});
  coord.register_actor(fine, "fine");
  coord.register_actor(slow1, "slow-reader");
  coord.register_actor(slow2, "slow-writer");
  coord.request_stop();
  CHECK(await_all_down(sys, {fine}) == 1);
  try {
    coord.join({}, 50ms);
    FAIL("join did not report the stragglers");
  } catch (const live_actors_error& e) {
    CHECK(std::string{e.what()} ==
          "Coordinator stopped with threads still running: slow-reader slow-writer");
    CHECK(e.names() == std::vector<std::string>{"slow-reader", "slow-writer"});
  }
  CHECK(await_all_down(sys, {fine, slow1, slow2}) == 3);
}

TEST_CASE("CO-8 ignore_live only reports, and an error takes precedence", "[CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  auto slow = sys.spawn(stubborn, caf::timespan{1s});
  coord.register_actor(slow, "slow");
  coord.request_stop();
  CHECK_NOTHROW(coord.join({}, 10ms, true));
  auto report = coord.join_report_of({slow}, 0ms);
  CHECK(report.stragglers == std::vector<std::string>{"slow"});
  coord.clear_stop();
  coord.register_actor(slow, "slow");
  coord.request_stop(std::runtime_error("the real cause"));
  CHECK_THROWS_MATCHES(coord.join({}, 10ms), std::runtime_error,
                       Catch::Matchers::Message("the real cause"));
  CHECK(await_all_down(sys, {slow}) == 1);
}

TEST_CASE("CO-8 a registered actor's exception reaches join with its message",
          "[CO-8][CO-4]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  auto a = sys.spawn(thrower, std::string{"disk on fire"});
  auto b = sys.spawn(stop_listener, 0);
  coord.register_actor(a, "thrower");
  coord.register_actor(b, "bystander");
  caf::anon_send(a, test_done_atom::value);
  CHECK(coord.wait_for_stop()); // the error exit requested stop
  CHECK_THROWS_MATCHES(coord.join(), std::runtime_error,
                       Catch::Matchers::Message("disk on fire"));
  CHECK(await_all_down(sys, {a, b}) == 2); // b got (stop) pushed
}

TEST_CASE("CO-8 concurrent joins each get the report", "[CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  auto a = sys.spawn(stop_listener, 0);
  coord.register_actor(a, "a");
  std::atomic<int> raised{0};
  std::thread t{[&] {
    coordinator h{sys, coord.actor()};
    try {
      h.join({a});
    } catch (const std::runtime_error& e) {
      if (std::string{e.what()} == "boom")
        ++raised;
    }
  }};
  coord.request_stop(std::runtime_error("boom"));
  CHECK_THROWS_WITH(coord.join({a}), "boom");
  t.join();
  CHECK(raised == 1);
}
