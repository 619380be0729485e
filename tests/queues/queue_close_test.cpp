// close, cancel_pending_enqueues, is_closed and size (docs/semantics.md Q-40..Q-45).

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "Q-40 testBlockingEnqueueBeforeClose: close waits behind pending "
                 "enqueues",
                 "[Q-40]") {
  auto q = int_fifo(sys, 4);
  probe prod{sys, q};
  probe closer{sys, q};
  probe cons{sys, q};
  prod.enqueue_many(i64s({10, 20, 30, 40}));
  CHECK(prod.next().count() == 4);
  prod.enqueue(i64(50));
  CHECK(prod.pending());
  closer.close();
  CHECK(closer.pending());
  // The close has not taken effect: not closed, and it still waits.
  CHECK_FALSE(cons.is_closed());
  CHECK(closer.pending());
  CHECK(prod.pending());
  CHECK(dequeue_values(cons, 1) == ivec{10});
  CHECK(prod.next().count() == 1);
  CHECK(closer.next().flag());
  CHECK(cons.is_closed());
  CHECK(dequeue_values(cons, 4) == ivec{20, 30, 40, 50});
  cons.dequeue();
  CHECK(cons.next().code() == error_code::out_of_range);
}

TEST_CASE_METHOD(system_fixture, "Q-40 dequeuers are not released while the close waits",
                 "[Q-40]") {
  // A PriorityQueue's dequeue_many(n > capacity) can never complete while the
  // queue is open, so it is still waiting when the close is issued.
  auto q = spawn_priority_queue(sys, 2, {dtype::string}, {tensor_shape{}}, "pq");
  probe prod{sys, q};
  probe closer{sys, q};
  probe many{sys, q};
  probe single{sys, q};
  auto name = many.name();
  auto row = [](int64_t p, const char* s) {
    return element{tensor::scalar(p), tensor::scalar(s)};
  };
  prod.enqueue(row(2, "b"));
  prod.enqueue(row(1, "a"));
  CHECK(prod.next().count() == 1);
  CHECK(prod.next().count() == 1);
  many.dequeue_many(3);
  many.sync();
  single.dequeue();
  single.sync();
  prod.enqueue(row(0, "z")); // the queue is full
  prod.sync();
  closer.close();
  CHECK(closer.pending());
  CHECK(prod.pending());
  CHECK(many.pending());
  CHECK(single.pending());
  CHECK_FALSE(closer.is_closed());
  // Only a cancelling close can end this.
  probe canceller{sys, q};
  canceller.close(true);
  CHECK(canceller.next().flag());
  check_error(prod.next(), error_code::cancelled, "Enqueue operation was cancelled");
  check_error(closer.next(), error_code::cancelled, "Enqueue operation was cancelled");
  check_error(many.next(), error_code::out_of_range,
              "PriorityQueue '" + name +
                  "' is closed and has insufficient elements (requested 3, current "
                  "size 2)");
  auto e = single.next().elem();
  CHECK(e[0].scalar_value<int64_t>() == 1);
  CHECK(e[1].scalar_value<std::string>() == "a");
  CHECK(single.size() == 1);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-41 enqueues behind a pending close are refused once it takes effect",
                 "[Q-41]") {
  auto q = int_fifo(sys, 1);
  probe prod{sys, q};
  probe closer{sys, q};
  probe late{sys, q};
  probe cons{sys, q};
  auto name = cons.name();
  prod.enqueue(i64(1));
  CHECK(prod.next().count() == 1);
  prod.enqueue(i64(2));
  prod.sync();
  closer.close();
  closer.sync();
  late.enqueue(i64(3));
  late.sync();
  late.enqueue_many(i64s({4, 5}));
  CHECK(late.pending());
  CHECK(dequeue_values(cons, 1) == ivec{1});
  CHECK(prod.next().count() == 1);
  CHECK(closer.next().flag());
  check_error(late.next(), error_code::cancelled, "FIFOQueue '" + name + "' is closed.");
  check_error(late.next(), error_code::cancelled, "FIFOQueue '" + name + "' is closed.");
  CHECK(dequeue_values(cons, 1) == ivec{2});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-42 a close releases pending dequeues, stored elements stay",
                 "[Q-42]") {
  auto q = int_fifo(sys, 10);
  probe c1{sys, q};
  probe c2{sys, q};
  probe c3{sys, q};
  probe prod{sys, q};
  auto name = prod.name();
  c1.dequeue();
  c1.sync();
  c2.dequeue();
  c2.sync();
  c3.dequeue_many(2);
  CHECK(c3.pending());
  prod.enqueue(i64(1));
  CHECK(prod.next().count() == 1);
  CHECK(value_of(c1.next().elem()) == 1);
  CHECK(c2.pending());
  prod.close();
  CHECK(prod.next().flag());
  check_error(c2.next(), error_code::out_of_range,
              "FIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 1, current "
                  "size 0)");
  check_error(c3.next(), error_code::out_of_range,
              "FIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 2, current "
                  "size 0)");
}

TEST_CASE_METHOD(system_fixture, "Q-42 existing elements stay dequeueable after close",
                 "[Q-42]") {
  auto q = int_fifo(sys, 10);
  probe p{sys, q};
  p.enqueue_many(i64s({1, 2, 3}));
  CHECK(p.next().count() == 3);
  p.close();
  CHECK(p.next().flag());
  CHECK(p.size() == 3);
  CHECK(dequeue_values(p, 2) == ivec{1, 2});
  p.dequeue_many(1);
  CHECK(values_of(p.next().elem()) == ivec{3});
  p.dequeue();
  CHECK(p.next().code() == error_code::out_of_range);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-43 close(cancel_pending_enqueues) acts at once and cancels every "
                 "enqueue-side attempt",
                 "[Q-43]") {
  auto q = int_fifo(sys, 2);
  probe e1{sys, q};
  probe closer{sys, q};
  probe e2{sys, q};
  probe cons{sys, q};
  probe canceller{sys, q};
  e1.enqueue(i64(1));
  CHECK(e1.next().count() == 1);
  e1.enqueue_many(i64s({2, 3, 4})); // stores 2, then waits
  e1.sync();
  closer.close();
  closer.sync();
  e2.enqueue(i64(5));
  CHECK(e2.pending());
  CHECK(closer.pending());
  CHECK(e1.pending());
  CHECK_FALSE(cons.is_closed());
  canceller.close(true);
  CHECK(canceller.next().flag());
  check_error(e1.next(), error_code::cancelled, "Enqueue operation was cancelled");
  check_error(closer.next(), error_code::cancelled, "Enqueue operation was cancelled");
  check_error(e2.next(), error_code::cancelled, "Enqueue operation was cancelled");
  CHECK(cons.is_closed());
  // the row the enqueue_many stored stays.
  CHECK(cons.size() == 2);
  CHECK(dequeue_values(cons, 2) == ivec{1, 2});
  cons.dequeue();
  CHECK(cons.next().code() == error_code::out_of_range);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-43 close(cancel_pending_enqueues) releases pending dequeues",
                 "[Q-43]") {
  auto q = int_fifo(sys, 2);
  probe cons{sys, q};
  probe canceller{sys, q};
  auto name = cons.name();
  cons.dequeue();
  CHECK(cons.pending());
  canceller.close(true);
  CHECK(canceller.next().flag());
  check_error(cons.next(), error_code::out_of_range,
              "FIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 1, current "
                  "size 0)");
}

TEST_CASE_METHOD(system_fixture, "Q-44 closing an already closed queue", "[Q-44]") {
  auto q = int_fifo(sys, 2);
  probe p{sys, q};
  auto name = p.name();
  SECTION("first close without cancel") {
    p.close();
    CHECK(p.next().flag());
  }
  SECTION("first close with cancel") {
    p.close(true);
    CHECK(p.next().flag());
  }
  p.close();
  check_error(p.next(), error_code::cancelled, "Queue '" + name + "' is already closed.");
  p.close(true);
  CHECK(p.next().flag());
  CHECK(p.is_closed());
}

TEST_CASE_METHOD(system_fixture,
                 "Q-45 size counts stored rows: held rows no, partial enqueue_many rows "
                 "yes",
                 "[Q-45]") {
  auto q = int_fifo(sys, 3);
  probe prod{sys, q};
  probe cons{sys, q};
  CHECK(cons.size() == 0);
  CHECK_FALSE(cons.is_closed());
  prod.enqueue_many(i64s({1, 2, 3, 4, 5}));
  CHECK(prod.pending());
  CHECK(cons.size() == 3);
  cons.dequeue_many(6); // takes 1..5 as they come, holds them
  CHECK(prod.next().count() == 5);
  CHECK(cons.pending());
  CHECK(cons.size() == 0);
  prod.enqueue(i64(6));
  CHECK(prod.next().count() == 1);
  CHECK(values_of(cons.next().elem()) == ivec{1, 2, 3, 4, 5, 6});
  prod.close();
  CHECK(prod.next().flag());
  CHECK(cons.is_closed());
}
