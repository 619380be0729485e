// stop_on_signals: SIGINT and SIGTERM as the coordinator's stop, as a
// TensorFlow program's KeyboardInterrupt reached coord.request_stop().

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>

#include "quern/actor_system.hpp"
#include "quern/coordinator.hpp"
#include "quern/messages.hpp"
#include "quern/stop_on_signals.hpp"

using namespace quern;
using namespace std::chrono_literals;

namespace {

std::atomic<int> previous_calls{0};
extern "C" void counting_handler(int) {
  ++previous_calls;
}

// Installs counting_handler for `sig` for the scope, then puts back what was.
struct counting_scope {
  explicit counting_scope(int s) : sig(s) {
    struct sigaction act {};
    act.sa_handler = counting_handler;
    sigemptyset(&act.sa_mask);
    sigaction(sig, &act, &old);
  }
  ~counting_scope() { sigaction(sig, &old, nullptr); }
  int sig;
  struct sigaction old {};
};

} // namespace

TEST_CASE(
    "stop_on_signals: the first SIGINT or SIGTERM requests stop, a second takes the "
    "previous action",
    "[coordinator][signals]") {
  auto sig = GENERATE(SIGINT, SIGTERM);
  INFO("signal " << sig);
  quern::config cfg;
  quern::actor_system sys{cfg};
  coordinator coord{sys};
  counting_scope previous{sig};
  previous_calls = 0;
  {
    stop_on_signals interrupt{coord};
    CHECK(interrupt.received() == 0);
    CHECK_FALSE(coord.should_stop());
    std::raise(sig);
    CHECK(coord.wait_for_stop(10s));
    CHECK(interrupt.received() == sig);
    CHECK(previous_calls == 0);
    // A second signal goes where it went before this object.
    std::raise(sig);
    CHECK(previous_calls == 1);
  }
  // Gone: the previous action is in place.
  std::raise(sig);
  CHECK(previous_calls == 2);
}

TEST_CASE("stop_on_signals: one at a time, and only signals that can be caught",
          "[coordinator][signals]") {
  quern::config cfg;
  quern::actor_system sys{cfg};
  coordinator coord{sys};
  counting_scope keep_int{SIGINT};
  counting_scope keep_term{SIGTERM};
  {
    stop_on_signals first{coord};
    CHECK_THROWS_MATCHES(
        stop_on_signals(coord), failed_precondition_error,
        Catch::Matchers::Message("stop_on_signals: another one is alive in "
                                 "this process; one at a time"));
  }
  stop_on_signals again{coord}; // the first is gone
  CHECK_THROWS_WITH(stop_on_signals(coord, {SIGKILL}),
                    Catch::Matchers::Contains("signal 9 cannot be caught"));
  CHECK_THROWS_AS(stop_on_signals(coord, {SIGKILL}), invalid_argument_error);
  CHECK_FALSE(coord.should_stop());
}
