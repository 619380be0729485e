// FIFOQueue through the actor: the pending-attempt model (docs/semantics.md
// Q-10..Q-14), enqueue/enqueue_many (Q-20..Q-23) and the dequeue family
// (Q-30..Q-36). Deterministic: answers are awaited, never timed.

#include <limits>

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;

} // namespace

TEST_CASE_METHOD(system_fixture, "Q-10 each side is one FIFO list of attempts",
                 "[Q-10]") {
  auto q = int_fifo(sys, 10);
  probe c1{sys, q};
  probe c2{sys, q};
  probe c3{sys, q};
  probe prod{sys, q};
  // Three dequeue attempts from three clients, in a known arrival order.
  c1.dequeue();
  c1.sync();
  c2.dequeue();
  c2.sync();
  c3.dequeue();
  CHECK(c3.pending());
  CHECK(c1.pending());
  CHECK(c2.pending());
  prod.enqueue_many(i64s({1, 2, 3}));
  CHECK(prod.next().count() == 3);
  CHECK(value_of(c1.next().elem()) == 1);
  CHECK(value_of(c2.next().elem()) == 2);
  CHECK(value_of(c3.next().elem()) == 3);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-11 flush alternates sides: enqueue_many larger than capacity meets "
                 "a dequeue_many",
                 "[Q-11]") {
  auto q = int_fifo(sys, 1);
  probe cons{sys, q};
  probe prod{sys, q};
  cons.dequeue_many(5);
  CHECK(cons.pending());
  // Capacity 1: every row needs the dequeue side to make room, within one flush.
  prod.enqueue_many(i64s({1, 2, 3, 4, 5}));
  CHECK(prod.next().count() == 5);
  CHECK(values_of(cons.next().elem()) == ivec{1, 2, 3, 4, 5});
  CHECK(prod.size() == 0);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-12 a blocked dequeue_many at the head blocks a later dequeue",
                 "[Q-12]") {
  auto q = int_fifo(sys, -1);
  probe many{sys, q};
  probe single{sys, q};
  probe prod{sys, q};
  many.dequeue_many(10);
  many.sync();
  single.dequeue();
  CHECK(single.pending());
  for (int64_t i = 0; i < 3; ++i)
    prod.enqueue(i64(i));
  for (int i = 0; i < 3; ++i)
    CHECK(prod.next().count() == 1);
  // Elements arrived, but the head attempt holds them; the later dequeue waits.
  CHECK(single.pending());
  CHECK(many.pending());
  CHECK(prod.size() == 0);
  prod.enqueue_many(i64s({3, 4, 5, 6, 7, 8, 9}));
  CHECK(prod.next().count() == 7);
  CHECK(values_of(many.next().elem()) == ivec{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(single.pending());
  prod.enqueue(i64(10));
  CHECK(prod.next().count() == 1);
  CHECK(value_of(single.next().elem()) == 10);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-12 a blocked enqueue_many at the head blocks a later enqueue",
                 "[Q-12]") {
  auto q = int_fifo(sys, 2);
  probe big{sys, q};
  probe small{sys, q};
  probe cons{sys, q};
  big.enqueue_many(i64s({1, 2}));
  CHECK(big.next().count() == 2);
  big.enqueue_many(i64s({3, 4, 5}));
  big.sync();
  small.enqueue(i64(6));
  CHECK(small.pending());
  CHECK(big.pending());
  // Each dequeue frees one slot; the head enqueue_many takes it first.
  CHECK(dequeue_values(cons, 1) == ivec{1});
  CHECK(small.pending());
  CHECK(big.pending());
  CHECK(cons.size() == 2);
  CHECK(dequeue_values(cons, 2) == ivec{2, 3});
  CHECK(big.next().count() == 3);
  CHECK(small.pending()); // the queue holds 4, 5
  CHECK(dequeue_values(cons, 1) == ivec{4});
  CHECK(small.next().count() == 1);
  CHECK(dequeue_values(cons, 2) == ivec{5, 6});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-13 FIFO output order is enqueue-attempt order, batches contiguous",
                 "[Q-13]") {
  auto q = int_fifo(sys, -1);
  probe a{sys, q};
  probe b{sys, q};
  a.enqueue(i64(1));
  a.sync();
  b.enqueue_many(i64s({2, 3, 4}));
  b.sync();
  a.enqueue_many(i64s({5, 6}));
  a.sync();
  b.enqueue(i64(7));
  b.sync();
  a.dequeue_many(7);
  CHECK(a.next().count() == 1);
  CHECK(a.next().count() == 2);
  CHECK(values_of(a.next().elem()) == ivec{1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-14 a cancelled attempt is answered at once and never served",
                 "[Q-14]") {
  auto q = int_fifo(sys, 2);
  probe early{sys, q};
  probe late{sys, q};
  probe prod{sys, q};
  // A timed-out dequeue at the head is discarded: it takes nothing later.
  early.dequeue(std::chrono::milliseconds(2));
  check_error(early.next(), error_code::deadline_exceeded,
              "Timed out waiting for notification");
  late.dequeue();
  CHECK(late.pending());
  prod.enqueue(i64(7));
  CHECK(prod.next().count() == 1);
  CHECK(value_of(late.next().elem()) == 7);
  CHECK(early.pending()); // no second answer for the cancelled attempt
  // A cancelled enqueue at the head of the enqueue list no longer blocks.
  prod.enqueue_many(i64s({1, 2}));
  CHECK(prod.next().count() == 2);
  early.enqueue(i64(3), std::chrono::milliseconds(2));
  check_error(early.next(), error_code::deadline_exceeded,
              "Timed out waiting for notification");
  late.enqueue(i64(4));
  CHECK(late.pending());
  CHECK(dequeue_values(prod, 1) == ivec{1});
  CHECK(late.next().count() == 1);
  CHECK(dequeue_values(prod, 2) == ivec{2, 4});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-20 malformed enqueues are refused with TF's texts and never block",
                 "[Q-20]") {
  // Component 0: float [3,3]; component 1: int64 scalar.
  auto q = spawn_fifo_queue(sys, 1, {dtype::float32, dtype::int64},
                            {tensor_shape{3, 3}, tensor_shape{}}, "q");
  probe p{sys, q};
  auto good = element{tensor::zeros(dtype::float32, {3, 3}), tensor::scalar(int64_t{1})};
  p.enqueue(good);
  CHECK(p.next().count() == 1);
  // The queue is full now: a valid enqueue would block, malformed ones do not.
  p.enqueue(element{tensor::zeros(dtype::float32, {3, 3})});
  check_error(p.next(), error_code::invalid_argument,
              "Wrong number of components in tuple. Expected 2, got 1");
  p.enqueue(element{tensor::zeros(dtype::float32, {3, 3}), tensor::scalar(int32_t{1})});
  check_error(p.next(), error_code::invalid_argument,
              "Type mismatch in tuple component 1. Expected int64, got int32");
  p.enqueue(element{tensor::zeros(dtype::float32, {3, 4}), tensor::scalar(int64_t{1})});
  check_error(p.next(), error_code::invalid_argument,
              "Shape mismatch in tuple component 0. Expected [3,3], got [3,4]");
  p.enqueue_many(
      element{tensor::zeros(dtype::float32, {2, 3, 4}), tensor::vector<int64_t>({1, 2})});
  check_error(p.next(), error_code::invalid_argument,
              "Shape mismatch in tuple component 0. Expected [2,3,3], got [2,3,4]");
  p.enqueue_many(element{tensor::zeros(dtype::float32, {2, 3, 3}),
                         tensor::vector<int64_t>({1, 2, 3})});
  check_error(p.next(), error_code::invalid_argument,
              "Shape mismatch in tuple component 1. Expected [2], got [3]");
  p.enqueue_many(
      element{tensor::zeros(dtype::float32, {2, 3, 3}), tensor::vector<int32_t>({1, 2})});
  check_error(p.next(), error_code::invalid_argument,
              "Type mismatch in tuple component 1. Expected int64, got int32");
  // The queue keeps serving.
  CHECK(p.size() == 1);
  p.dequeue();
  CHECK(p.next().elem() == good);
  p.enqueue(good);
  CHECK(p.next().count() == 1);
  CHECK(p.size() == 1);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-20 shapes unspecified: enqueue_many needs one batch size", "[Q-20]") {
  auto q = spawn_fifo_queue(sys, -1, {dtype::int64, dtype::string}, {}, "q");
  probe p{sys, q};
  p.enqueue_many(element{tensor::vector<int64_t>({1, 2}),
                         tensor::vector<std::string>({"a", "b", "c"})});
  check_error(p.next(), error_code::invalid_argument,
              "All input tensors must have the same size in the 0th dimension. "
              "Component 1 has 3, and should have 2");
  // Differently shaped elements are fine without specified shapes.
  p.enqueue(element{tensor::vector<int64_t>({1, 2, 3}), tensor::scalar("x")});
  CHECK(p.next().count() == 1);
  p.enqueue_many(
      element{tensor::vector<int64_t>({4, 5}), tensor::vector<std::string>({"a", "b"})});
  CHECK(p.next().count() == 2);
  p.dequeue();
  auto e = p.next().elem();
  CHECK(e[0].to_vector<int64_t>() == ivec{1, 2, 3});
  CHECK(e[1].scalar_value<std::string>() == "x");
  p.dequeue();
  CHECK(p.next().elem()[1].scalar_value<std::string>() == "a");
  CHECK(p.size() == 1);
}

TEST_CASE_METHOD(system_fixture, "Q-21 enqueue on a closed queue is CANCELLED",
                 "[Q-21]") {
  auto q = int_fifo(sys, 2);
  probe p{sys, q};
  auto name = p.name();
  p.close();
  CHECK(p.next().flag());
  p.enqueue(i64(1));
  check_error(p.next(), error_code::cancelled, "FIFOQueue '" + name + "' is closed.");
}

TEST_CASE_METHOD(system_fixture, "Q-21 enqueue waits while the queue is full", "[Q-21]") {
  auto q = int_fifo(sys, 1);
  probe p{sys, q};
  probe cons{sys, q};
  p.enqueue(i64(1));
  CHECK(p.next().count() == 1);
  p.enqueue(i64(2));
  CHECK(p.pending());
  CHECK(dequeue_values(cons, 1) == ivec{1});
  CHECK(p.next().count() == 1);
  CHECK(cons.size() == 1);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-22 an empty enqueue_many succeeds even on a closed queue", "[Q-22]") {
  auto q = int_fifo(sys, 2);
  probe p{sys, q};
  auto name = p.name();
  p.enqueue_many(i64s({}));
  CHECK(p.next().count() == 0);
  p.close();
  CHECK(p.next().flag());
  p.enqueue_many(i64s({}));
  CHECK(p.next().count() == 0);
  p.enqueue_many(i64s({1}));
  check_error(p.next(), error_code::cancelled, "FIFOQueue '" + name + "' is closed.");
  CHECK(p.size() == 0);
}

TEST_CASE_METHOD(system_fixture, "Q-22 enqueue_many larger than capacity fills and waits",
                 "[Q-22]") {
  auto q = int_fifo(sys, 2);
  probe prod{sys, q};
  probe cons{sys, q};
  prod.enqueue_many(i64s({1, 2, 3, 4, 5}));
  CHECK(prod.pending());
  CHECK(cons.size() == 2);
  CHECK(dequeue_values(cons, 2) == ivec{1, 2});
  CHECK(prod.pending());
  CHECK(cons.size() == 2);
  CHECK(dequeue_values(cons, 1) == ivec{3});
  CHECK(prod.next().count() == 5);
  CHECK(dequeue_values(cons, 2) == ivec{4, 5});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-23 rows of a cancelled enqueue_many stay in the queue", "[Q-23]") {
  auto q = int_fifo(sys, 3);
  probe prod{sys, q};
  probe other{sys, q};
  prod.enqueue(i64(1));
  CHECK(prod.next().count() == 1);
  SECTION("cancelled by close(cancel_pending_enqueues=true)") {
    prod.enqueue_many(i64s({2, 3, 4, 5}));
    CHECK(prod.pending());
    CHECK(other.size() == 3);
    other.close(true);
    CHECK(other.next().flag());
    check_error(prod.next(), error_code::cancelled, "Enqueue operation was cancelled");
  }
  SECTION("cancelled by its deadline") {
    prod.enqueue_many(i64s({2, 3, 4, 5}), std::chrono::milliseconds(2));
    check_error(prod.next(), error_code::deadline_exceeded,
                "Timed out waiting for notification");
  }
  CHECK(other.size() == 3);
  CHECK(dequeue_values(other, 3) == ivec{1, 2, 3});
}

TEST_CASE_METHOD(system_fixture, "Q-30 dequeue waits, then fails once closed and empty",
                 "[Q-30]") {
  auto q = int_fifo(sys, 5);
  probe cons{sys, q};
  probe prod{sys, q};
  auto name = cons.name();
  cons.dequeue();
  CHECK(cons.pending());
  prod.enqueue(i64(4));
  CHECK(prod.next().count() == 1);
  CHECK(value_of(cons.next().elem()) == 4);
  cons.dequeue();
  CHECK(cons.pending());
  prod.close();
  CHECK(prod.next().flag());
  check_error(cons.next(), error_code::out_of_range,
              "FIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 1, current "
                  "size 0)");
}

TEST_CASE_METHOD(system_fixture, "Q-31 negative n is refused, n == 0 gives [0]+shape",
                 "[Q-31]") {
  auto q = spawn_fifo_queue(sys, 4, {dtype::float32, dtype::int64},
                            {tensor_shape{2, 3}, tensor_shape{}}, "q");
  probe p{sys, q};
  p.dequeue_many(-1);
  check_error(p.next(), error_code::invalid_argument,
              "DequeueManyOp requested -1 < 0 elements");
  p.dequeue_up_to(-7);
  check_error(p.next(), error_code::invalid_argument,
              "DequeueUpToOp requested -7 < 0 elements");
  auto check_empty = [&](const element& e) {
    REQUIRE(e.size() == 2);
    CHECK(e[0].type() == dtype::float32);
    CHECK(e[0].shape() == tensor_shape{0, 2, 3});
    CHECK(e[1].type() == dtype::int64);
    CHECK(e[1].shape() == tensor_shape{0});
  };
  p.dequeue_many(0);
  check_empty(p.next().elem());
  p.dequeue_up_to(0);
  check_empty(p.next().elem());
  // Even while another dequeue_many blocks at the head (n == 0 is no attempt).
  probe blocked{sys, q};
  blocked.dequeue_many(2);
  blocked.sync();
  p.dequeue_many(0);
  check_empty(p.next().elem());
  // And on a closed, empty queue.
  p.close();
  CHECK(p.next().flag());
  blocked.next(); // OUT_OF_RANGE
  p.dequeue_many(0);
  check_empty(p.next().elem());
  p.dequeue_up_to(0);
  check_empty(p.next().elem());
}

TEST_CASE_METHOD(system_fixture,
                 "Q-32 testBigDequeueMany: dequeue_many(n > capacity) is incremental",
                 "[Q-32]") {
  auto q = int_fifo(sys, 2);
  probe cons{sys, q};
  probe prod{sys, q};
  cons.dequeue_many(4);
  CHECK(cons.pending());
  for (int64_t i = 1; i <= 3; ++i) {
    prod.enqueue(i64(i * 10));
    CHECK(prod.next().count() == 1);
  }
  // Three rows are held by the attempt and not counted by size().
  CHECK(prod.size() == 0);
  CHECK(cons.pending());
  prod.enqueue(i64(40));
  CHECK(prod.next().count() == 1);
  CHECK(values_of(cons.next().elem()) == ivec{10, 20, 30, 40});
  CHECK(prod.size() == 0);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-33 closed dequeue_many puts held rows back at the front in order",
                 "[Q-33]") {
  auto q = int_fifo(sys, 10);
  probe cons{sys, q};
  probe prod{sys, q};
  auto name = cons.name();
  cons.dequeue_many(4);
  cons.sync();
  prod.enqueue_many(i64s({1, 2, 3}));
  CHECK(prod.next().count() == 3);
  CHECK(cons.pending());
  CHECK(prod.size() == 0);
  prod.close();
  CHECK(prod.next().flag());
  // `requested` is what was still needed, `current size` the size before the
  // put-back.
  check_error(cons.next(), error_code::out_of_range,
              "FIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 1, current "
                  "size 0)");
  CHECK(prod.size() == 3);
  CHECK(dequeue_values(prod, 3) == ivec{1, 2, 3});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-33 dequeue_many on a closed queue with too few rows fails",
                 "[Q-33]") {
  auto q = int_fifo(sys, 10);
  probe p{sys, q};
  auto name = p.name();
  p.enqueue_many(i64s({1, 2}));
  CHECK(p.next().count() == 2);
  p.close();
  CHECK(p.next().flag());
  p.dequeue_many(3);
  check_error(p.next(), error_code::out_of_range,
              "FIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 3, current "
                  "size 2)");
  CHECK(p.size() == 2);
  p.dequeue_many(2);
  CHECK(values_of(p.next().elem()) == ivec{1, 2});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-33 dequeue_up_to on a closed queue returns what remains", "[Q-33]") {
  auto q = int_fifo(sys, 10);
  probe cons{sys, q};
  probe prod{sys, q};
  SECTION("issued after the close") {
    prod.enqueue_many(i64s({1, 2, 3}));
    CHECK(prod.next().count() == 3);
    prod.close();
    CHECK(prod.next().flag());
    cons.dequeue_up_to(5);
    CHECK(values_of(cons.next().elem()) == ivec{1, 2, 3});
  }
  SECTION("pending, holding rows, when the close takes effect") {
    cons.dequeue_up_to(5);
    cons.sync();
    prod.enqueue_many(i64s({1, 2}));
    CHECK(prod.next().count() == 2);
    CHECK(cons.pending());
    prod.close();
    CHECK(prod.next().flag());
    CHECK(values_of(cons.next().elem()) == ivec{1, 2});
  }
  CHECK(prod.size() == 0);
}

TEST_CASE_METHOD(system_fixture, "Q-33 dequeue_up_to on a closed, empty queue fails",
                 "[Q-33]") {
  auto q = int_fifo(sys, 10);
  probe cons{sys, q};
  probe prod{sys, q};
  auto name = cons.name();
  SECTION("pending when the close takes effect") {
    cons.dequeue_up_to(5);
    CHECK(cons.pending());
    prod.close();
    CHECK(prod.next().flag());
  }
  SECTION("issued after the close") {
    prod.close();
    CHECK(prod.next().flag());
    cons.dequeue_up_to(5);
  }
  check_error(cons.next(), error_code::out_of_range,
              "FIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 5, current "
                  "size 0)");
}

TEST_CASE_METHOD(system_fixture,
                 "Q-34 testEnqueueManyLargerThanCapacityWithConcurrentDequeueMany: "
                 "nothing is lost",
                 "[Q-34]") {
  auto q = int_fifo(sys, 2);
  probe prod{sys, q};
  probe cons{sys, q};
  auto name = cons.name();
  prod.enqueue_many(i64s({1, 2, 3, 4, 5}));
  prod.sync();
  prod.close(); // waits behind the enqueue_many
  CHECK(prod.pending());
  cons.dequeue_many(3);
  CHECK(values_of(cons.next().elem()) == ivec{1, 2, 3});
  CHECK(prod.next().count() == 5);
  CHECK(prod.next().flag());
  cons.dequeue_many(3);
  check_error(cons.next(), error_code::out_of_range,
              "FIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 3, current "
                  "size 2)");
  cons.dequeue();
  CHECK(value_of(cons.next().elem()) == 4);
  cons.dequeue_up_to(3);
  CHECK(values_of(cons.next().elem()) == ivec{5});
}

TEST_CASE_METHOD(system_fixture, "Q-35 row k of a batch is the k-th element handed out",
                 "[Q-35]") {
  auto q = spawn_fifo_queue(sys, -1, {dtype::int64, dtype::string},
                            {tensor_shape{}, tensor_shape{2}}, "q");
  probe p{sys, q};
  for (int64_t i = 0; i < 3; ++i) {
    p.enqueue(element{
        tensor::scalar(i),
        tensor::vector<std::string>({"a" + std::to_string(i), "b" + std::to_string(i)})});
    CHECK(p.next().count() == 1);
  }
  p.dequeue_many(3);
  auto b = p.next().elem();
  CHECK(b[0].shape() == tensor_shape{3});
  CHECK(b[1].shape() == tensor_shape{3, 2});
  CHECK(b[0].to_vector<int64_t>() == ivec{0, 1, 2});
  CHECK(b[1].to_vector<std::string>() ==
        std::vector<std::string>{"a0", "b0", "a1", "b1", "a2", "b2"});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-36 dequeue_up_to on an open queue waits for n like dequeue_many",
                 "[Q-36]") {
  auto q = int_fifo(sys, 10);
  probe cons{sys, q};
  probe prod{sys, q};
  prod.enqueue_many(i64s({1, 2}));
  CHECK(prod.next().count() == 2);
  cons.dequeue_up_to(3);
  CHECK(cons.pending());
  prod.enqueue(i64(3));
  CHECK(prod.next().count() == 1);
  CHECK(values_of(cons.next().elem()) == ivec{1, 2, 3});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-2 divergence: capacity 0 and below -1 are refused, -1 is unbounded",
                 "[Q-2]") {
  for (int32_t c : {0, -2, -100}) {
    INFO("capacity " << c);
    try {
      int_fifo(sys, c);
      FAIL("spawn succeeded");
    } catch (const invalid_argument_error& e) {
      CHECK(std::string(e.what()) ==
            "capacity must be positive, or -1 for unbounded, but is " +
                std::to_string(c));
    }
  }
  auto q = int_fifo(sys, -1);
  probe p{sys, q};
  CHECK(p.spec().capacity == std::numeric_limits<int32_t>::max());
  std::vector<int64_t> rows(1000);
  p.enqueue_many(i64s(rows));
  CHECK(p.next().count() == 1000);
}
