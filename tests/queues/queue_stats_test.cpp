// A queue's own counters (docs/semantics.md TL-11): rows stored and handed
// out, and per side the attempts that completed and how long the ones that
// were parked waited in the queue's line. The waits are checked against a
// lower bound the test makes certain (the attempt is parked before the
// sleep starts and completes after it ends), never against an upper bound.

#include <chrono>
#include <thread>

#include "probe.hpp"

using namespace quern;
using namespace quern::test;
using namespace std::chrono_literals;

namespace {

constexpr auto pause = 60ms;

int64_t ns(std::chrono::nanoseconds d) {
  return d.count();
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "TL-11 attempts served at once are counted and waited nothing",
                 "[TL-11][stats]") {
  auto q = int_fifo(sys, 8);
  blocking_queue b{sys, q};
  auto fresh = b.stats();
  CHECK(fresh.size == 0);
  CHECK(fresh.capacity == 8);
  CHECK(fresh.enqueued_rows == 0);
  CHECK(fresh.dequeued_rows == 0);
  CHECK(fresh.enqueue_attempts == 0);
  CHECK(fresh.dequeue_attempts == 0);
  b.enqueue_many(i64s({1, 2, 3}));
  b.enqueue(i64(4));
  CHECK(values_of(b.dequeue_many(2)) == std::vector<int64_t>{1, 2});
  CHECK(value_of(b.dequeue()) == 3);
  auto s = b.stats();
  CHECK(s.size == 1);
  CHECK(s.capacity == 8);
  CHECK(s.enqueued_rows == 4);
  CHECK(s.dequeued_rows == 3);
  CHECK(s.enqueue_attempts == 2);
  CHECK(s.dequeue_attempts == 2);
  // The queue says which it is (TL-10): its node and actor id.
  CHECK(s.actor == q.id());
  CHECK(s.node == caf::to_string(sys.node()));
  // Nothing was parked: no clock was read, no wait added.
  CHECK(s.enqueue_wait_ns == 0);
  CHECK(s.dequeue_wait_ns == 0);
  // A close is no enqueue attempt; a refused enqueue completes nothing.
  b.close();
  CHECK_THROWS_AS(b.enqueue(i64(5)), cancelled_error);
  auto closed = b.stats();
  CHECK(closed.enqueue_attempts == 2);
  CHECK(closed.enqueued_rows == 4);
}

TEST_CASE_METHOD(system_fixture,
                 "TL-11 a dequeue that waits for a later enqueue counts its wait at the "
                 "queue",
                 "[TL-11][stats]") {
  auto q = int_fifo(sys, 4);
  caf::scoped_actor self{sys};
  // The dequeue is sent first; the size asked after it is answered once the
  // queue has parked it (one sender's messages arrive in order).
  auto dequeue = self->request(q, caf::infinite, dequeue_atom::value, wait_forever);
  self->request(q, caf::infinite, size_atom::value)
      .receive([](int32_t n) { CHECK(n == 0); },
               [](caf::error& e) { FAIL(caf::to_string(e)); });
  std::this_thread::sleep_for(pause);
  blocking_queue b{sys, q};
  b.enqueue(i64(7));
  dequeue.receive([](element& e) { CHECK(value_of(e) == 7); },
                  [](caf::error& e) { FAIL(caf::to_string(e)); });
  auto s = b.stats();
  CHECK(s.dequeue_attempts == 1);
  CHECK(s.dequeued_rows == 1);
  CHECK(s.dequeue_wait_ns >= ns(pause));
  // The enqueue found the dequeue waiting and was served at once.
  CHECK(s.enqueue_attempts == 1);
  CHECK(s.enqueue_wait_ns == 0);
}

TEST_CASE_METHOD(system_fixture,
                 "TL-11 an enqueue that waits for room counts its wait at the queue",
                 "[TL-11][stats]") {
  auto q = int_fifo(sys, 1);
  blocking_queue b{sys, q};
  b.enqueue(i64(1));
  caf::scoped_actor self{sys};
  auto enqueue =
      self->request(q, caf::infinite, enqueue_atom::value, i64(2), wait_forever);
  self->request(q, caf::infinite, size_atom::value)
      .receive([](int32_t n) { CHECK(n == 1); },
               [](caf::error& e) { FAIL(caf::to_string(e)); });
  std::this_thread::sleep_for(pause);
  CHECK(value_of(b.dequeue()) == 1);
  enqueue.receive([](int32_t n) { CHECK(n == 1); },
                  [](caf::error& e) { FAIL(caf::to_string(e)); });
  auto s = b.stats();
  CHECK(s.enqueue_attempts == 2);
  CHECK(s.enqueued_rows == 2);
  CHECK(s.enqueue_wait_ns >= ns(pause));
  CHECK(s.dequeue_attempts == 1);
  CHECK(s.dequeue_wait_ns == 0);
}

TEST_CASE_METHOD(system_fixture,
                 "TL-11 each batch of a streamed demand counts as one dequeue attempt",
                 "[TL-11][stats]") {
  auto q = int_fifo(sys, 8);
  blocking_queue b{sys, q};
  b.enqueue_many(i64s({1, 2, 3, 4}));
  probe p{sys, q};
  demand d;
  d.n = 2;
  d.count = 3;
  d.cut = batch_cut::dequeue_many;
  d.as_rows = false;
  p.send(pull_atom::value, d);
  // Two batches at once, in one answer; the third waits for rows.
  size_t batches = 0;
  auto next_pulled = [&] {
    p.self()->receive(
        [&](pulled_atom, std::vector<element>& xs, caf::error& err) {
          CHECK_FALSE(err);
          batches += xs.size();
        },
        caf::after(std::chrono::seconds(30)) >> [] { FAIL("no pulled within 30 s"); });
  };
  next_pulled();
  CHECK(batches == 2);
  p.sync(); // the demand is parked for its third batch
  auto mid = b.stats();
  CHECK(mid.dequeue_attempts == 2);
  CHECK(mid.dequeued_rows == 4);
  CHECK(mid.dequeue_wait_ns == 0);
  std::this_thread::sleep_for(pause);
  b.enqueue_many(i64s({5, 6}));
  next_pulled();
  CHECK(batches == 3);
  auto s = b.stats();
  CHECK(s.dequeue_attempts == 3);
  CHECK(s.dequeued_rows == 6);
  CHECK(s.dequeue_wait_ns >= ns(pause));
}
