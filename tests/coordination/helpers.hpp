#pragma once

// Helpers of the coordination tests: all run on the threaded scheduler.

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/scoped_actor.hpp>

#include "quern/blocking_queue.hpp"
#include "quern/coordinator.hpp"
#include "quern/element.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue.hpp"
#include "quern/queue_runner.hpp"
#include "quern/tensor.hpp"

#include "eventually.hpp"

namespace quern::test {

inline element int_element(int64_t x) {
  return element{tensor::scalar(x)};
}

inline int64_t int_of(const element& e) {
  return e[0].scalar_value<int64_t>();
}

/// A config with two scheduler threads, like the 2-core machines quern
/// targets.
struct two_core_config : quern::config {
  two_core_config() { set("scheduler.max-threads", 2); }
};

/// Waits (with a generous safety limit, not a timing assertion) until every
/// actor in `actors` has terminated; returns how many did.
inline size_t await_all_down(caf::actor_system& sys,
                             const std::vector<caf::actor>& actors,
                             std::chrono::seconds limit = std::chrono::seconds(60)) {
  caf::scoped_actor self{sys};
  for (auto& a : actors)
    self->monitor(a);
  size_t n = 0;
  bool timed_out = false;
  while (n < actors.size() && !timed_out) {
    self->receive([&](caf::down_msg&) { ++n; },
                  caf::after(limit) >> [&] { timed_out = true; });
  }
  return n;
}

/// An actor that ends only when it receives (stop). (Spawned with an
/// argument: CAF 0.17 trips UBSan on actors spawned without any.)
inline caf::behavior stop_listener(caf::event_based_actor* self, int /*tag*/) {
  return {[self](stop_atom) { self->quit(); }};
}

using test_done_atom = caf::atom_constant<caf::atom("t_done")>;

/// An actor that ignores (stop) and ends by itself after `life`.
inline caf::behavior stubborn(caf::event_based_actor* self, caf::timespan life) {
  self->delayed_send(self, life, test_done_atom::value);
  return {[](stop_atom) {}, [self](test_done_atom) { self->quit(); }};
}

/// An actor that throws `what` when it receives (t_done).
inline caf::behavior thrower(caf::event_based_actor* self, std::string what) {
  self->set_exception_handler(keep_exception_message);
  return {[what](test_done_atom) -> caf::result<void> { throw std::runtime_error(what); },
          [self](stop_atom) { self->quit(); }};
}

/// A user's own exception type, with data of its own: tests check that it
/// comes back as itself, not as a copy of its text.
struct disk_full : std::runtime_error {
  explicit disk_full(int dev) : std::runtime_error("disk full"), device(dev) {}
  int device;
};

/// The what() of the `Exception` that `f` throws; fails the test when it
/// throws nothing or something else.
template <class Exception, class F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const Exception& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("wrong exception class: " << e.what());
  }
  FAIL("nothing thrown");
  return {};
}

} // namespace quern::test
