// TensorFlow's LooperThread as quern::looper_thread (docs/semantics.md CO-9).
// Only counts, orders and bounded waits: no timing assertions.

#include "helpers.hpp"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "quern/looper.hpp"

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

// Records each call and the thread it ran in.
struct recording_looper : looper {
  std::mutex mtx;
  std::vector<std::string> calls;
  std::vector<std::thread::id> threads;
  int throw_at_run = -1; // run_loop throws disk_full on this run (0-based)
  int runs = 0;

  void record(const char* what) {
    std::lock_guard<std::mutex> guard{mtx};
    calls.emplace_back(what);
    threads.push_back(std::this_thread::get_id());
  }
  void start_loop() override { record("start"); }
  void run_loop() override {
    record("run");
    if (runs++ == throw_at_run)
      throw disk_full{runs};
  }
  void stop_loop() override { record("stop"); }

  std::vector<std::string> snapshot() {
    std::lock_guard<std::mutex> guard{mtx};
    return calls;
  }
  size_t count(const std::string& what) {
    auto xs = snapshot();
    return static_cast<size_t>(std::count(xs.begin(), xs.end(), what));
  }
};

// start, then `runs` times run, then stop.
bool well_ordered(const std::vector<std::string>& calls, size_t& runs) {
  if (calls.size() < 2 || calls.front() != "start" || calls.back() != "stop")
    return false;
  runs = calls.size() - 2;
  return std::all_of(calls.begin() + 1, calls.end() - 1,
                     [](const std::string& c) { return c == "run"; });
}

} // namespace

TEST_CASE("CO-9 a looper runs its target every interval until stop", "[CO-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  std::atomic<int> runs{0};
  looper_thread ticker{coord, 10ms, [&] { ++runs; }, "ticker"};
  REQUIRE(eventually([&] { return runs.load() >= 3; }));
  coord.request_stop();
  CHECK_NOTHROW(coord.join()); // waits for the registered looper
  auto after_join = runs.load();
  ticker.join(); // already ended: returns at once
  CHECK(runs.load() == after_join);
  CHECK(coord.status().live == 0);
}

TEST_CASE("CO-9 without an interval the target runs back to back", "[CO-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  std::atomic<int> runs{0};
  looper_thread spinner{coord, std::nullopt, [&] { ++runs; }, "spinner"};
  REQUIRE(eventually([&] { return runs.load() >= 1000; }));
  coord.request_stop();
  CHECK_NOTHROW(coord.join());
  auto after_join = runs.load();
  spinner.join();
  CHECK(runs.load() == after_join);
  SECTION("an interval of zero is back to back too") {
    coord.clear_stop();
    std::atomic<int> zero_runs{0};
    looper_thread zero{coord, 0ms, [&] { ++zero_runs; }, "zero"};
    REQUIRE(eventually([&] { return zero_runs.load() >= 1000; }));
    coord.request_stop();
    CHECK_NOTHROW(coord.join());
  }
}

TEST_CASE("CO-9 start_loop, run_loop and stop_loop run once, N times, once, in order",
          "[CO-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  auto body = std::make_shared<recording_looper>();
  looper_thread t{coord, 5ms, body, "recorder"};
  REQUIRE(eventually([&] { return body->count("run") >= 3; }));
  coord.request_stop();
  coord.join();
  auto calls = body->snapshot();
  size_t runs = 0;
  CHECK(well_ordered(calls, runs));
  CHECK(runs >= 3);
  // All in the looper's own thread, one thread for all of them.
  std::lock_guard<std::mutex> guard{body->mtx};
  REQUIRE(!body->threads.empty());
  CHECK(body->threads.front() != std::this_thread::get_id());
  CHECK(std::all_of(body->threads.begin(), body->threads.end(),
                    [&](auto id) { return id == body->threads.front(); }));
}

TEST_CASE("CO-9 a stop ends a one-hour wait at once", "[CO-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  auto body = std::make_shared<recording_looper>();
  looper_thread hourly{coord, std::chrono::hours(1), body, "hourly"};
  // The first run comes at once, then the looper waits an hour.
  REQUIRE(eventually([&] { return body->count("run") == 1; }));
  coord.request_stop();
  // Bounded by a safety limit far below the interval, not a timing check.
  CHECK(await_all_down(sys, {hourly.actor()}, std::chrono::seconds(60)) == 1);
  CHECK_NOTHROW(coord.join());
  CHECK(body->snapshot() == std::vector<std::string>{"start", "run", "stop"});
}

TEST_CASE("CO-9 a target's exception reaches join with its own type", "[CO-9][CO-4]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  SECTION("a function target") {
    coordinator coord{sys};
    std::atomic<int> runs{0};
    looper_thread t{coord, 1ms,
                    [&] {
                      if (++runs == 3)
                        throw disk_full{7};
                    },
                    "summaries"};
    CHECK(coord.wait_for_stop(30s)); // the exception requested stop
    try {
      coord.join();
      FAIL("join did not rethrow");
    } catch (const disk_full& d) {
      CHECK(d.device == 7);
      CHECK(std::string{d.what()} == "disk full");
    }
    CHECK(runs.load() == 3); // the looper ended with its exception
    CHECK(origin_of(coord.status().error) == "summaries");
  }
  SECTION("a subclass: stop_loop still runs once") {
    coordinator coord{sys};
    auto body = std::make_shared<recording_looper>();
    body->throw_at_run = 1;
    looper_thread t{coord, std::nullopt, body, "checkpoints"};
    t.join();
    CHECK_THROWS_AS(coord.join(), disk_full);
    CHECK(body->snapshot() == std::vector<std::string>{"start", "run", "run", "stop"});
    CHECK(origin_of(coord.status().error) == "checkpoints");
  }
  SECTION("an op_error keeps its class") {
    coordinator coord{sys};
    looper_thread t{coord, 1ms, [] { throw data_loss_error("bad record"); }, "reader"};
    t.join();
    CHECK_THROWS_MATCHES(coord.join(), data_loss_error,
                         Catch::Matchers::Message("bad record"));
  }
}

TEST_CASE("CO-9 out_of_range from the target is a clean stop", "[CO-9][CO-1]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  std::atomic<int> runs{0};
  looper_thread t{coord, std::nullopt,
                  [&] {
                    if (++runs == 2)
                      throw out_of_range_error("epoch limit reached");
                  },
                  "epochs"};
  CHECK(coord.wait_for_stop(30s)); // stop was requested, cleanly
  CHECK_NOTHROW(coord.join());
  CHECK_FALSE(coord.status().error);
  CHECK(runs.load() == 2);
}

TEST_CASE("CO-9 a looper started after stop never runs its target", "[CO-9][CO-7]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  coord.request_stop();
  // Repeated: the stop must win every time, not only when the looper is slow.
  for (int i = 0; i < 20; ++i) {
    std::atomic<int> runs{0};
    looper_thread t{coord, std::nullopt, [&] { ++runs; }, "late"};
    t.join();
    CHECK(runs.load() == 0);
  }
  // TensorFlow calls start_loop and stop_loop all the same.
  auto body = std::make_shared<recording_looper>();
  looper_thread t{coord, 10ms, body, "late_body"};
  t.join();
  CHECK(body->snapshot() == std::vector<std::string>{"start", "stop"});
  CHECK_NOTHROW(coord.join());
}

TEST_CASE("CO-9 join names a looper that ignores stop", "[CO-9][CO-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  std::atomic<bool> entered{false};
  std::atomic<bool> release{false};
  looper_thread stuck{coord, std::nullopt,
                      [&] {
                        entered = true;
                        while (!release.load()) // "I/O" that does not look at stop
                          std::this_thread::sleep_for(1ms);
                      },
                      "stuck_saver"};
  REQUIRE(eventually([&] { return entered.load(); }));
  coord.request_stop();
  try {
    coord.join({}, 50ms);
    FAIL("expected a straggler");
  } catch (const live_actors_error& e) {
    CHECK(e.names() == std::vector<std::string>{"stuck_saver"});
  }
  release = true;
  stuck.join(); // ends after its run returns
}

TEST_CASE("CO-9 loop() returns a started looper", "[CO-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  std::atomic<int> runs{0};
  auto t = quern::loop(coord, 10ms, [&] { ++runs; });
  CHECK(t.actor());
  CHECK(t.name() == "looper"); // TensorFlow's default thread name is "Thread-<n>"
  REQUIRE(eventually([&] { return runs.load() >= 2; }));
  coord.request_stop();
  CHECK_NOTHROW(coord.join());
  t.join();
}

TEST_CASE("CO-9 a looper needs a target", "[CO-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  CHECK_THROWS_AS(looper_thread(coord, 10ms, std::function<void()>{}), argument_error);
  CHECK_THROWS_AS(looper_thread(coord, 10ms, std::shared_ptr<looper>{}), argument_error);
  CHECK(coord.status().live == 0); // nothing was registered
}

TEST_CASE("CO-9 destroying a looper_thread stops its looper, not the coordinator",
          "[CO-9][exit]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto coord_actor = spawn_coordinator(sys);
  {
    coordinator coord{sys, coord_actor}; // not owning: never requests stop
    auto body = std::make_shared<recording_looper>();
    caf::actor a;
    {
      looper_thread t{coord, 10ms, body, "scoped"};
      a = t.actor();
      REQUIRE(eventually([&] { return body->count("run") >= 2; }));
    } // sends the looper an exit message, does not wait
    CHECK(await_all_down(sys, {a}) == 1);
    CHECK_FALSE(coord.should_stop());
    CHECK_FALSE(coord.status().error); // user_shutdown is not an error
    size_t runs = 0;
    CHECK(well_ordered(body->snapshot(), runs));
    CHECK_NOTHROW(coord.join()); // nothing left to wait for
  }
  caf::anon_send_exit(coord_actor, caf::exit_reason::user_shutdown);
}

TEST_CASE("CO-9 a detached looper runs until the coordinator stops", "[CO-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  std::atomic<int> runs{0};
  {
    auto t = quern::loop(
        coord, 5ms, [&] { ++runs; }, "daemon");
    t.detach();
    CHECK_FALSE(t.actor());
  }
  auto seen = runs.load();
  REQUIRE(eventually([&] { return runs.load() >= seen + 2; })); // still running
  CHECK(coord.status().live == 1);
  coord.request_stop();
  CHECK_NOTHROW(coord.join());
  CHECK(coord.status().live == 0);
}

TEST_CASE("CO-9 a looper ends when its coordinator goes", "[CO-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto coord_actor = spawn_coordinator(sys);
  coordinator coord{sys, coord_actor};
  auto t = quern::loop(
      coord, std::chrono::hours(1), [] {}, "orphan");
  caf::anon_send_exit(coord_actor, caf::exit_reason::user_shutdown); // no stop request
  CHECK(await_all_down(sys, {t.actor()}) == 1);
}

TEST_CASE("CO-9 a program that forgets request_stop and join still ends",
          "[CO-9][CO-8][exit]") {
  std::atomic<int> runs{0};
  SECTION("a looper kept in a handle") {
    quern::config cfg;
    caf::actor_system sys{cfg};
    coordinator coord{sys};
    looper_thread t{coord, 1ms, [&] { ++runs; }};
    REQUIRE(eventually([&] { return runs.load() >= 2; }));
  }
  SECTION("a detached looper") {
    quern::config cfg;
    caf::actor_system sys{cfg};
    coordinator coord{sys};
    quern::loop(coord, std::nullopt, [&] { ++runs; }).detach();
    REQUIRE(eventually([&] { return runs.load() >= 2; }));
  } // the coordinator's destructor requests stop
  SECTION("a detached looper of a coordinator nobody stops") {
    quern::config cfg;
    caf::actor_system sys{cfg};
    auto coord_actor = spawn_coordinator(sys);
    coordinator coord{sys, coord_actor};
    auto t = quern::loop(coord, 1ms, [&] { ++runs; });
    REQUIRE(eventually([&] { return runs.load() >= 2; }));
    t.detach();
    caf::anon_send_exit(coord_actor, caf::exit_reason::user_shutdown);
  } // the coordinator went down: the looper ends
  SUCCEED("every actor system above was destroyed");
}

// The LooperThread snippet of docs/coordination.md, byte for byte (column 0,
// so that it is exactly the text of the doc); the next test checks that.
TEST_CASE("CO-9 the LooperThread example of docs/coordination.md", "[CO-9][doc]") {
  // clang-format off
// docs-snippet-begin: LooperThread
// TensorFlow's LooperThread subclass: start_loop, run_loop, stop_loop.
struct step_logger : quern::looper {
  explicit step_logger(const std::atomic<int64_t>& step) : step(step) {}
  void start_loop() override { log.push_back("start"); }
  void run_loop() override { log.push_back("step " + std::to_string(step.load())); }
  void stop_loop() override { log.push_back("stop"); }
  const std::atomic<int64_t>& step;
  std::vector<std::string> log; // the looper's thread only, until join
};

quern::config cfg;
quern::actor_system sys{cfg};
quern::coordinator coord{sys};
std::atomic<int64_t> step{0};
// LooperThread(coord, 0.05) with run_loop overridden, then start().
auto logger = std::make_shared<step_logger>(step);
quern::looper_thread logging{coord, std::chrono::milliseconds(50), logger, "logger"};
// LooperThread.loop(coord, None, target): back to back until stop.
std::atomic<int64_t> heartbeats{0};
auto heart = quern::loop(coord, std::nullopt, [&] {
  ++heartbeats;
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
}, "heartbeat");
try {
  while (!coord.should_stop()) {
    if (++step == 200)
      throw quern::out_of_range_error("epoch limit reached");
    std::this_thread::sleep_for(std::chrono::milliseconds(1)); // a training step
  }
} catch (const std::exception& e) {
  coord.request_stop(e); // out_of_range: a clean stop
}
coord.request_stop();
coord.join(); // waits for both loopers; rethrows a looper's exception
// logger->log: "start", "step 0", "step 47", ..., "stop"
// docs-snippet-end
  // clang-format on
  REQUIRE(logger->log.size() >= 3); // start, the first run, stop
  CHECK(logger->log.front() == "start");
  CHECK(logger->log[1].rfind("step ", 0) == 0);
  CHECK(logger->log.back() == "stop");
  CHECK(heartbeats.load() > 0);
  CHECK(step.load() == 200);
}

TEST_CASE("CO-9 docs/coordination.md shows the example's code as it is tested",
          "[CO-9][doc]") {
  auto read = [](const std::string& path) {
    std::ifstream in{path};
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  };
  auto between = [](const std::string& text, const std::string& from,
                    const std::string& to) {
    auto b = text.find(from);
    auto e = b == std::string::npos ? b : text.find(to, b);
    return e == std::string::npos ? std::string{} : text.substr(b, e - b);
  };
  std::string here = __FILE__;
  auto root = here.substr(0, here.rfind("/tests/coordination/"));
  auto test = read(here);
  auto doc = read(root + "/docs/coordination.md");
  // The code between the markers of this file, without the markers' lines.
  auto code =
      between(test, "// docs-snippet-begin: LooperThread\n", "// docs-snippet-end");
  code = code.substr(code.find('\n') + 1);
  REQUIRE(code.size() > 100);
  CHECK(doc.find("```cpp\n" + code + "```\n") != std::string::npos);
}
