// Deadlines, a queue that terminates, and clients that go down
// (docs/semantics.md; docs/queues.md). Timeouts are short and
// every test waits for the answer: the outcome is deterministic, only the
// moment is not.

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;
constexpr auto short_timeout = std::chrono::milliseconds(2);
const char* timed_out_text = "Timed out waiting for notification";

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "Q-80 testReusableAfterTimeout: timed-out dequeues consume nothing",
                 "[Q-80]") {
  auto q = int_fifo(sys, 10);
  probe p{sys, q};
  p.dequeue(short_timeout);
  check_error(p.next(), error_code::deadline_exceeded, timed_out_text);
  p.dequeue(short_timeout);
  check_error(p.next(), error_code::deadline_exceeded, timed_out_text);
  p.enqueue(i64(37));
  CHECK(p.next().count() == 1);
  p.dequeue();
  CHECK(value_of(p.next().elem()) == 37);
  CHECK(p.size() == 0);
  CHECK(p.pending()); // no late answer of the cancelled attempts
}

TEST_CASE_METHOD(system_fixture,
                 "Q-80 a timed-out enqueue stores nothing and the queue goes on",
                 "[Q-80]") {
  auto q = int_fifo(sys, 1);
  probe p{sys, q};
  p.enqueue(i64(1));
  CHECK(p.next().count() == 1);
  p.enqueue(i64(2), short_timeout);
  check_error(p.next(), error_code::deadline_exceeded, timed_out_text);
  CHECK(dequeue_values(p, 1) == ivec{1});
  CHECK(p.size() == 0);
  p.enqueue(i64(3), std::chrono::seconds(30));
  CHECK(p.next().count() == 1);
  CHECK(dequeue_values(p, 1) == ivec{3});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-80 an attempt that completes before its deadline is not answered "
                 "twice",
                 "[Q-80]") {
  auto q = int_fifo(sys, 10);
  probe p{sys, q};
  probe prod{sys, q};
  p.dequeue(std::chrono::milliseconds(5));
  p.sync();
  prod.enqueue(i64(5));
  CHECK(prod.next().count() == 1);
  // Either the deadline or the element came first; exactly one answer, and
  // the element is never lost.
  auto a = p.next();
  if (a.ok()) {
    CHECK(value_of(a.elem()) == 5);
    CHECK(p.size() == 0);
  } else {
    check_error(a, error_code::deadline_exceeded, timed_out_text);
    CHECK(dequeue_values(p, 1) == ivec{5});
  }
  p.dequeue(std::chrono::milliseconds(5));
  check_error(p.next(), error_code::deadline_exceeded, timed_out_text);
  CHECK(p.pending());
}

TEST_CASE_METHOD(system_fixture,
                 "Q-37 divergence: a timed-out dequeue_many gives its rows back in order",
                 "[Q-37]") {
  auto q = int_fifo(sys, 10);
  probe p{sys, q};
  p.enqueue_many(i64s({1, 2, 3}));
  CHECK(p.next().count() == 3);
  SECTION("dequeue_many") {
    p.dequeue_many(4, short_timeout);
  }
  SECTION("dequeue_up_to") {
    p.dequeue_up_to(4, short_timeout);
  }
  // TensorFlow drops the three held rows here; quern puts them back.
  check_error(p.next(), error_code::deadline_exceeded, timed_out_text);
  CHECK(p.size() == 3);
  p.enqueue(i64(4));
  CHECK(p.next().count() == 1);
  CHECK(dequeue_values(p, 4) == ivec{1, 2, 3, 4});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-37 a timed-out dequeue_many at the head releases later attempts",
                 "[Q-37]") {
  auto q = int_fifo(sys, 10);
  probe many{sys, q};
  probe single{sys, q};
  probe prod{sys, q};
  prod.enqueue(i64(1));
  CHECK(prod.next().count() == 1);
  many.dequeue_many(2, std::chrono::milliseconds(10));
  many.sync();
  single.dequeue();
  check_error(many.next(), error_code::deadline_exceeded, timed_out_text);
  // The held row went back and the next head attempt was served with it.
  CHECK(value_of(single.next().elem()) == 1);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-81 a queue that terminates answers pending attempts with CANCELLED",
                 "[Q-81]") {
  SECTION("dequeue side") {
    auto q = int_fifo(sys, 10);
    probe many{sys, q};
    probe deq{sys, q};
    probe up_to{sys, q};
    probe prod{sys, q};
    many.dequeue_many(3);
    many.sync();
    deq.dequeue();
    deq.sync();
    up_to.dequeue_up_to(2);
    up_to.sync();
    prod.enqueue_many(i64s({1, 2})); // held by the dequeue_many
    CHECK(prod.next().count() == 2);
    CHECK(many.pending());
    CHECK(deq.pending());
    CHECK(up_to.pending());
    caf::anon_send_exit(q, caf::exit_reason::user_shutdown);
    for (auto* p : {&many, &deq, &up_to})
      check_error(p->next(), error_code::cancelled, "Dequeue operation was cancelled");
  }
  SECTION("enqueue side") {
    auto q = int_fifo(sys, 2);
    probe enq{sys, q};
    probe many{sys, q};
    probe closer{sys, q};
    enq.enqueue(i64(1));
    CHECK(enq.next().count() == 1);
    many.enqueue_many(i64s({2, 3, 4})); // stores 2, then waits
    many.sync();
    enq.enqueue(i64(5));
    enq.sync();
    closer.close();
    CHECK(closer.pending());
    CHECK(enq.pending());
    CHECK(many.pending());
    caf::anon_send_exit(q, caf::exit_reason::user_shutdown);
    for (auto* p : {&many, &enq, &closer})
      check_error(p->next(), error_code::cancelled, "Enqueue operation was cancelled");
  }
}

TEST_CASE_METHOD(system_fixture,
                 "rule 2: a client that goes down gives back its held partial batch",
                 "[rule-2]") {
  auto q = int_fifo(sys, 10);
  probe prod{sys, q};
  {
    caf::scoped_actor client{sys};
    client->send(q, dequeue_many_atom::value, int32_t{3}, wait_forever);
    prod.sync(); // the dequeue_many arrived before the rows
    prod.enqueue_many(i64s({1, 2}));
    CHECK(prod.next().count() == 2);
    CHECK(prod.size() == 0); // held by the client's attempt
  }
  // The client is gone: its attempt is dropped and the rows are back, first.
  CHECK(prod.size() == 2);
  prod.enqueue(i64(3));
  CHECK(prod.next().count() == 1);
  CHECK(dequeue_values(prod, 3) == ivec{1, 2, 3});
}

TEST_CASE_METHOD(system_fixture,
                 "rule 2: waiting attempts of a client that goes down are dropped",
                 "[rule-2]") {
  auto q = int_fifo(sys, 1);
  probe p{sys, q};
  p.enqueue(i64(1));
  CHECK(p.next().count() == 1);
  {
    caf::scoped_actor client{sys};
    client->send(q, enqueue_atom::value, i64(9), wait_forever);
    client->send(q, enqueue_many_atom::value, i64s({10, 11}), wait_forever);
    p.sync();
  }
  // Its enqueues no longer block the list, and store nothing.
  p.enqueue(i64(2));
  p.sync();
  CHECK(dequeue_values(p, 1) == ivec{1});
  CHECK(p.next().count() == 1);
  CHECK(dequeue_values(p, 1) == ivec{2});
  CHECK(p.size() == 0);
  {
    caf::scoped_actor client{sys};
    client->send(q, dequeue_atom::value, wait_forever);
    p.sync();
  }
  // Its dequeue no longer takes anything.
  p.enqueue(i64(3));
  CHECK(p.next().count() == 1);
  CHECK(p.size() == 1);
  CHECK(dequeue_values(p, 1) == ivec{3});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-80 the deadline of a finished attempt does not keep the queue alive",
                 "[Q-80]") {
  caf::scoped_actor watcher{sys};
  {
    auto q = int_fifo(sys, 2);
    watcher->monitor(q);
    probe p{sys, q};
    p.enqueue(i64(1), std::chrono::minutes(10));
    CHECK(p.next().count() == 1);
    p.dequeue(std::chrono::minutes(10));
    CHECK(value_of(p.next().elem()) == 1);
  }
  // Every handle is gone: the queue terminates now, not in ten minutes (and
  // ~actor_system does not wait for the timers).
  bool down = false;
  watcher->receive([&](caf::down_msg&) { down = true; },
                   caf::after(std::chrono::seconds(30)) >> [] {});
  CHECK(down);
}
