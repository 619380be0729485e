// Who feeds a queue (feeder messages, queues/src/feeders.hpp): the runners
// an actor declared are its own, and forgotten when it goes down, so that a
// process lost before it started its runner (its relay at the queue ends)
// starves nobody. A local runner's handle declares anonymously, which is
// kept until it is dropped (tests/coordination/never_started_test.cpp).

#include "probe.hpp"

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

const std::string diagnosis =
    " queue runner(s) that were never started: call start_queue_runners (or "
    "queue_runner::start) before dequeuing (TensorFlow would hang here forever)";

/// A runner declared by an actor that ends at once.
void declare_and_end(caf::actor_system& sys, const queue_actor& q, caf::timespan limit) {
  caf::scoped_actor gone{sys};
  gone->send(q, feeder_atom::value, int32_t{1}, int32_t{0}, limit);
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "CC-2 a runner declared by an actor that ended is not waited for as "
                 "never started",
                 "[CC-2][starvation][feeder]") {
  auto q = int_fifo(sys, 10);
  probe p{sys, q};
  declare_and_end(sys, q, 200ms);
  p.sync();    // the declaration is in, and the queue learnt that its sender is gone
  p.dequeue(); // would fail after 200 ms while the runner counted
  // A marker: its own deadline (400 ms) comes after the 200 ms of the
  // diagnosis, which would have answered both dequeues first.
  p.dequeue(400ms);
  auto first = p.next();
  CHECK(first.text() == "Timed out waiting for notification");
  CHECK(p.pending()); // the first dequeue still waits, undiagnosed
  p.close();
  bool closed = false, ended = false;
  for (int i = 0; i < 2; ++i) {
    auto a = p.next();
    if (!a.ok()) {
      CHECK(a.code() == error_code::out_of_range);
      ended = true;
    } else {
      closed = a.flag();
    }
  }
  CHECK(closed);
  CHECK(ended);
}

TEST_CASE_METHOD(system_fixture,
                 "CC-2 runners declared are counted per sender: those of an ended one "
                 "are forgotten, a live one's still diagnose",
                 "[CC-2][starvation][feeder]") {
  auto q = int_fifo(sys, 10);
  probe p{sys, q};
  caf::scoped_actor alive{sys};
  alive->send(q, feeder_atom::value, int32_t{1}, int32_t{0}, caf::timespan{100ms});
  declare_and_end(sys, q, 100ms);
  p.sync();
  p.dequeue();
  check_error(p.next(), error_code::failed_precondition,
              "FIFOQueue '" + p.name() + "' has 1" + diagnosis);
  // A sender cannot drop the runners of another: the live one still counts.
  p.send(feeder_atom::value, int32_t{-1}, int32_t{0}, caf::timespan{0});
  p.dequeue();
  check_error(p.next(), error_code::failed_precondition,
              "FIFOQueue '" + p.name() + "' has 1" + diagnosis);
}
