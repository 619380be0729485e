// runtime/ on its own: a blocking client shared by threads, errors thrown
// as the op_error they name, the command line's verdicts, the exit policy
// ending and naming an actor still alive when the system goes, and the
// task threads of blocking work.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <iostream>
#include <optional>
#include <pthread.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <caf/event_based_actor.hpp>

#include "quern/actor_system.hpp"
#include "quern/blocking_client.hpp"
#include "quern/command_line.hpp"
#include "quern/detail/task_threads.hpp"
#include "quern/error.hpp"
#include "quern/messages.hpp"

using namespace quern;
using namespace std::chrono_literals;

namespace {

using echo_atom = caf::atom_constant<caf::atom("echo")>;
using fail_atom = caf::atom_constant<caf::atom("fail")>;
using hold_atom = caf::atom_constant<caf::atom("hold")>;
using release_atom = caf::atom_constant<caf::atom("release")>;

// Answers echo(n) with n at once, fail with a quern error, and hold with 1
// only once release comes: a call that waits while others go on.
caf::behavior server(caf::event_based_actor* self) {
  auto held = std::make_shared<std::vector<caf::response_promise>>();
  return {
      [](echo_atom, int32_t n) { return n; },
      [](fail_atom) -> caf::result<int32_t> {
        return make_error(error_code::out_of_range, "nothing left");
      },
      [self, held](hold_atom) {
        held->push_back(self->make_response_promise());
        return held->back();
      },
      [held](release_atom) {
        for (auto& p : *held)
          p.deliver(int32_t{1});
        held->clear();
      },
  };
}

std::optional<int> parse(std::vector<std::string> args, std::string& err) {
  quern::config cfg;
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  std::stringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  auto status = parse_command_line(cfg, static_cast<int>(argv.size()), argv.data());
  std::cerr.rdbuf(old);
  err = captured.str();
  return status;
}

} // namespace

TEST_CASE("a blocking client shared by threads gives each its own answer while one waits",
          "[runtime]") {
  quern::config cfg;
  quern::actor_system sys{cfg};
  // A lambda, not the function itself: CAF 0.17.6 spawning a plain function
  // with no arguments binds a reference to a null tuple (UBSan).
  auto srv = sys.spawn([](caf::event_based_actor* self) { return server(self); });
  blocking_client client{sys};
  // One thread waits in a call that is answered only later.
  std::atomic<int32_t> held_answer{0};
  std::thread waiter{[&] { held_answer = client.call<int32_t>(srv, hold_atom::value); }};
  // Meanwhile others call the same client and get their own answers.
  std::vector<std::thread> callers;
  std::atomic<int> right{0};
  for (int32_t t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int32_t i = 0; i < 100; ++i)
        if (client.call<int32_t>(srv, echo_atom::value, t * 1000 + i) == t * 1000 + i)
          ++right;
    });
  for (auto& c : callers)
    c.join();
  CHECK(right == 400);
  CHECK(held_answer == 0);
  caf::anon_send(srv, release_atom::value);
  waiter.join();
  CHECK(held_answer == 1);
  caf::anon_send_exit(srv, caf::exit_reason::user_shutdown);
}

TEST_CASE("a blocking client throws the op_error an answer names", "[runtime]") {
  quern::config cfg;
  quern::actor_system sys{cfg};
  // A lambda, not the function itself: CAF 0.17.6 spawning a plain function
  // with no arguments binds a reference to a null tuple (UBSan).
  auto srv = sys.spawn([](caf::event_based_actor* self) { return server(self); });
  blocking_client client{sys};
  CHECK_THROWS_MATCHES(client.call<int32_t>(srv, fail_atom::value), out_of_range_error,
                       Catch::Matchers::Message("nothing left"));
  caf::anon_send_exit(srv, caf::exit_reason::user_shutdown);
}

TEST_CASE("TL-2 a thread's call meter is told of each blocking call, failed ones too",
          "[runtime][TL-2]") {
  struct recording_meter : detail::call_meter {
    std::vector<std::string> seen;
    void begin(caf::atom_value op, caf::actor_id dest) noexcept override {
      seen.push_back("begin " + caf::to_string(op) + " " + std::to_string(dest));
    }
    void end() noexcept override { seen.push_back("end"); }
  };
  quern::config cfg;
  quern::actor_system sys{cfg};
  auto srv = sys.spawn([](caf::event_based_actor* self) { return server(self); });
  blocking_client client{sys};
  client.call<int32_t>(srv, echo_atom::value, 1); // no meter: nothing is told
  recording_meter m;
  detail::call_meter::current() = &m;
  client.call<int32_t>(srv, echo_atom::value, 2);
  CHECK_THROWS_AS(client.call<int32_t>(srv, fail_atom::value), out_of_range_error);
  // Another thread has no meter.
  std::thread{[&] { client.call<int32_t>(srv, echo_atom::value, 3); }}.join();
  detail::call_meter::current() = nullptr;
  client.call<int32_t>(srv, echo_atom::value, 4);
  auto id = std::to_string(srv.id());
  CHECK(m.seen ==
        std::vector<std::string>{"begin echo " + id, "end", "begin fail " + id, "end"});
  caf::anon_send_exit(srv, caf::exit_reason::user_shutdown);
}

TEST_CASE("the command line says how a program goes on", "[runtime]") {
  std::string err;
  CHECK_FALSE(parse({"prog"}, err).has_value());
  CHECK(parse({"prog", "--quern.exit-grace=5s"}, err) == std::nullopt);
  CHECK(parse({"prog", "--verbose"}, err) == 2);
  CHECK_THAT(err, Catch::Contains("prog: unknown option '--verbose' (see --help)"));
  CHECK(parse({"prog", "data.csv"}, err) == 2);
  CHECK_THAT(err, Catch::Contains("prog: unexpected argument 'data.csv' (see --help)"));
}

TEST_CASE("at exit an actor that is still alive is ended and named", "[runtime]") {
  std::vector<std::string> report;
  caf::actor_addr srv_addr;
  {
    quern::config cfg;
    quern::actor_system sys{cfg};
    sys.exit_grace(200ms);
    sys.exit_reporter([&](const std::string& line) { report.push_back(line); });
    // An actor that would live forever (it holds a handle to itself), tracked
    // as quern's actors are.
    auto srv = sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
      auto me = caf::actor_cast<caf::actor>(self);
      return {[me](echo_atom, int32_t n) { return n; }};
    });
    srv_addr = srv.address();
    detail::exit_watch::track(sys, srv, "the test's server");
    CHECK(detail::exit_watch::alive(sys) == 1);
  }
  // The system's destructor returned: the actor was named, then ended.
  bool named = false;
  for (auto& line : report)
    if (line.find("the test's server") != std::string::npos)
      named = true;
  INFO("report:\n" << Catch::Detail::stringify(report));
  CHECK(named);
}

TEST_CASE("task threads run their tasks in order, under their name, and pass on a task's "
          "exception",
          "[runtime]") {
  std::vector<std::future<std::string>> done;
  std::vector<int> order;
  {
    detail::task_threads<std::string> threads{"quern.test.longer.than.15"};
    for (int i = 0; i < 5; ++i)
      done.push_back(threads.submit(std::packaged_task<std::string()>{[i, &order] {
        order.push_back(i); // one thread: no two tasks at once
        char name[16] = {};
        ::pthread_getname_np(::pthread_self(), name, sizeof name);
        return std::string{name};
      }}));
    done.push_back(threads.submit(std::packaged_task<std::string()>{
        []() -> std::string { throw std::runtime_error("the disk is full"); }}));
  } // destroyed: the tasks left run first
  for (int i = 0; i < 5; ++i)
    CHECK(done[static_cast<size_t>(i)].get() == "quern.test.long"); // Linux keeps 15
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4});
  CHECK_THROWS_WITH(done.back().get(), "the disk is full");
}

TEST_CASE("background task threads run as SCHED_BATCH, the others as the process does",
          "[runtime]") {
  auto policy_in = [](bool background) {
    detail::task_threads<int> threads{"quern.test", 1, background};
    return threads
        .submit(std::packaged_task<int()>{[] {
          int policy = -1;
          sched_param param{};
          ::pthread_getschedparam(::pthread_self(), &policy, &param);
          return policy;
        }})
        .get();
  };
  CHECK(policy_in(true) == SCHED_BATCH);
  CHECK(policy_in(false) == SCHED_OTHER);
}
