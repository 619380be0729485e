// quern::actor_system's exit policy (docs/coordination.md, "At exit"): the
// program ends even when a thread is still blocked in a quern call, a queue
// runner outlives the system, or a blocking op ignores stop, and what held
// it is reported by name.

#include "helpers.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

#include "quern/actor_system.hpp"

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

/// The lines an actor system reported at exit.
struct exit_lines {
  std::mutex mtx;
  std::vector<std::string> lines;

  void add(const std::string& s) {
    std::lock_guard<std::mutex> guard{mtx};
    lines.push_back(s);
  }
  bool any(const std::string& part) {
    std::lock_guard<std::mutex> guard{mtx};
    for (auto& l : lines)
      if (l.find(part) != std::string::npos)
        return true;
    return false;
  }
  std::string all() {
    std::lock_guard<std::mutex> guard{mtx};
    std::string s;
    for (auto& l : lines)
      s += l + "\n";
    return s;
  }
  size_t count(const std::string& part) {
    std::lock_guard<std::mutex> guard{mtx};
    size_t n = 0;
    for (auto& l : lines)
      n += l.find(part) != std::string::npos;
    return n;
  }
};

} // namespace

namespace {

/// How a thread that was still blocked in a quern call when its actor system
/// went fared: 1 cancelled_error, 2 anything else (0: not yet known).
using outcome_flag = std::shared_ptr<std::atomic<int>>;

// An actor system ends while a detached thread waits in `wait(sys, q)` on
// FIFO queue `name`, which nobody feeds. Returns what the system reported.
template <class Wait>
std::shared_ptr<exit_lines> exit_while_waiting(const std::string& name,
                                               const outcome_flag& outcome, Wait wait) {
  auto seen = std::make_shared<exit_lines>();
  {
    quern::config cfg;
    quern::actor_system sys{cfg};
    sys.exit_grace(100ms);
    sys.exit_reporter([seen](const std::string& s) { seen->add(s); });
    auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, name);
    std::atomic<bool> waiting{false};
    std::thread{[&sys, q, outcome, &waiting, wait] {
      try {
        wait(sys, q, waiting);
        *outcome = 2;
      } catch (const cancelled_error&) {
        *outcome = 1;
      } catch (...) {
        *outcome = 2;
      }
    }}.detach();
    REQUIRE(eventually([&] { return waiting.load(); }));
    std::this_thread::sleep_for(20ms); // into the wait
  } // the destructor returns instead of waiting forever
  return seen;
}

} // namespace

TEST_CASE("at exit a thread still blocked in dequeue gets CancelledError and the "
          "program ends",
          "[exit]") {
  auto outcome = std::make_shared<std::atomic<int>>(0);
  auto seen = exit_while_waiting(
      "never_fed", outcome,
      [](quern::actor_system& sys, const queue_actor& q, std::atomic<bool>& waiting) {
        blocking_queue b{sys, q};
        waiting = true;
        b.dequeue(); // nobody ever enqueues
      });
  INFO(seen->all());
  CHECK(*outcome == 1);
  CHECK(seen->any("still running after 0.1 s"));
  CHECK(seen->any("in dequeue on FIFOQueue '"));
  CHECK(seen->any("never_fed' is still running"));
}

TEST_CASE("at exit a thread still waiting in a queue_reader's pull is named, gets "
          "CancelledError and the program ends",
          "[exit]") {
  auto outcome = std::make_shared<std::atomic<int>>(0);
  auto seen = exit_while_waiting(
      "never_pushed", outcome,
      [](quern::actor_system& sys, const queue_actor& q, std::atomic<bool>& waiting) {
        queue_reader r{sys, q, 8};
        waiting = true;
        r.pull(); // nobody ever pushes
      });
  INFO(seen->all());
  CHECK(eventually([&] { return outcome->load() != 0; }));
  CHECK(*outcome == 1);
  CHECK(seen->any("in pull on FIFOQueue '"));
  CHECK(seen->any("never_pushed"));
}

TEST_CASE("at exit a queue runner declared before the actor system does not hang it",
          "[exit]") {
  auto seen = std::make_shared<exit_lines>();
  std::unique_ptr<queue_runner> runner; // destroyed after the system
  std::unique_ptr<queue_runner> started;
  {
    quern::config cfg;
    quern::actor_system sys{cfg};
    sys.exit_grace(100ms);
    sys.exit_reporter([seen](const std::string& s) { seen->add(s); });
    auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, "held");
    auto q2 = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, "fed");
    auto op = async_op([](async_run& run) {
      run.emit(int_element(1));
      run.done();
    });
    runner = std::make_unique<queue_runner>(q, std::vector<enqueue_op>{op});
    started = std::make_unique<queue_runner>(q2, std::vector<enqueue_op>{op});
    started->start(sys); // fills q2 and waits on it, full
  }
  INFO(seen->all());
  CHECK(seen->any("held' is still running"));
  runner.reset(); // after the system: nothing left to send to
  started.reset();
}

TEST_CASE("at exit a blocking op that ignores stop is named until it returns", "[exit]") {
  auto seen = std::make_shared<exit_lines>();
  auto release = std::make_shared<std::atomic<bool>>(false);
  {
    quern::config cfg;
    quern::actor_system sys{cfg};
    sys.exit_grace(100ms);
    sys.exit_reporter([seen, release](const std::string& s) {
      seen->add(s);
      // Let the op go once the system has said twice that it waits for it.
      if (seen->count("has been inside its blocking op") >= 2)
        *release = true;
    });
    auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}}, "slow");
    std::atomic<bool> inside{false};
    queue_runner_options opts;
    opts.name = "stubborn";
    queue_runner qr{q,
                    {blocking_op(
                        [release, &inside](blocking_run&) {
                          inside = true;
                          while (!*release) // ignores run.should_stop()
                            std::this_thread::sleep_for(1ms);
                        },
                        "sleeper")},
                    opts};
    qr.start(sys);
    REQUIRE(eventually([&] { return inside.load(); }));
  }
  CHECK(seen->any("worker 'stubborn/sleeper' has been inside its blocking op"));
  CHECK(seen->any("still waiting for"));
}

TEST_CASE("at exit nothing is reported when everything ended in time", "[exit]") {
  auto seen = std::make_shared<exit_lines>();
  {
    quern::config cfg;
    quern::actor_system sys{cfg};
    sys.exit_reporter([seen](const std::string& s) { seen->add(s); });
    auto q = spawn_fifo_queue(sys, 4, {dtype::int64}, {tensor_shape{}});
    blocking_queue b{sys, q};
    b.enqueue(int_element(1));
    CHECK(int_of(b.dequeue()) == 1);
  }
  CHECK(seen->lines.empty());
}

TEST_CASE("quern.exit-grace is read from the config", "[exit]") {
  quern::config cfg;
  cfg.set("quern.exit-grace", caf::timespan{250ms});
  quern::actor_system sys{cfg};
  CHECK(sys.exit_grace() == caf::timespan{250ms});
}
