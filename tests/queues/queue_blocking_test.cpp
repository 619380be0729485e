// The blocking handle (blocking_queue): each operation, exceptions of the
// right class with TensorFlow's texts, deadlines that lose nothing.

#include <thread>

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;
constexpr auto short_timeout = std::chrono::milliseconds(2);

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

} // namespace

TEST_CASE_METHOD(system_fixture, "blocking_queue: every operation", "[blocking]") {
  auto q = int_fifo(sys, 3);
  blocking_queue b{sys, q};
  auto name = b.spec().resource_name;
  CHECK(b.actor() == q);
  CHECK(b.spec().capacity == 3);
  CHECK(b.spec().kind == queue_kind::fifo);
  b.enqueue(i64(1));
  b.enqueue_many(i64s({2, 3}));
  CHECK(b.size() == 3);
  CHECK_FALSE(b.is_closed());
  CHECK(value_of(b.dequeue()) == 1);
  CHECK(values_of(b.dequeue_many(1)) == ivec{2});
  b.enqueue_many(i64s({4, 5}));
  CHECK(values_of(b.dequeue_up_to(2)) == ivec{3, 4});
  b.close();
  CHECK(b.is_closed());
  CHECK(values_of(b.dequeue_up_to(5)) == ivec{5});
  CHECK(b.dequeue_many(0)[0].shape() == tensor_shape{0});
  CHECK(b.size() == 0);
}

TEST_CASE_METHOD(system_fixture, "blocking_queue: errors become TF's exception classes",
                 "[blocking]") {
  auto q = int_fifo(sys, 3);
  blocking_queue b{sys, q};
  auto name = b.spec().resource_name;
  CHECK(thrown<invalid_argument_error>([&] {
          b.enqueue(element{tensor::scalar(1.f)});
        }) == "Type mismatch in tuple component 0. Expected int64, got float");
  CHECK(thrown<invalid_argument_error>([&] { b.enqueue_many(i64(1)); }) != "");
  CHECK(thrown<invalid_argument_error>([&] { b.dequeue_many(-2); }) ==
        "DequeueManyOp requested -2 < 0 elements");
  CHECK(thrown<invalid_argument_error>([&] { b.dequeue_up_to(-2); }) ==
        "DequeueUpToOp requested -2 < 0 elements");
  b.enqueue(i64(1));
  b.close();
  CHECK(thrown<cancelled_error>([&] { b.enqueue(i64(2)); }) ==
        "FIFOQueue '" + name + "' is closed.");
  CHECK(thrown<cancelled_error>([&] { b.enqueue_many(i64s({2})); }) ==
        "FIFOQueue '" + name + "' is closed.");
  b.enqueue_many(i64s({}));
  CHECK(thrown<cancelled_error>([&] { b.close(); }) ==
        "Queue '" + name + "' is already closed.");
  b.close(true);
  CHECK(thrown<out_of_range_error>([&] { b.dequeue_many(2); }) ==
        "FIFOQueue '" + name +
            "' is closed and has insufficient elements (requested 2, current size 1)");
  CHECK(value_of(b.dequeue()) == 1);
  CHECK(thrown<out_of_range_error>([&] { b.dequeue(); }) ==
        "FIFOQueue '" + name +
            "' is closed and has insufficient elements (requested 1, current size 0)");
  CHECK(thrown<out_of_range_error>([&] { b.dequeue_up_to(3); }) ==
        "FIFOQueue '" + name +
            "' is closed and has insufficient elements (requested 3, current size 0)");
}

TEST_CASE_METHOD(system_fixture,
                 "blocking_queue: a timeout throws deadline_exceeded_error and loses "
                 "nothing",
                 "[blocking][Q-80][Q-37]") {
  auto q = int_fifo(sys, 2);
  blocking_queue b{sys, q};
  const std::string text = "Timed out waiting for notification";
  CHECK(thrown<deadline_exceeded_error>([&] { b.dequeue(short_timeout); }) == text);
  b.enqueue(i64(1));
  CHECK(thrown<deadline_exceeded_error>([&] { b.dequeue_many(3, short_timeout); }) ==
        text);
  CHECK(thrown<deadline_exceeded_error>([&] { b.dequeue_up_to(2, short_timeout); }) ==
        text);
  CHECK(b.size() == 1);
  b.enqueue(i64(2));
  CHECK(thrown<deadline_exceeded_error>([&] { b.enqueue(i64(3), short_timeout); }) ==
        text);
  // an enqueue_many that timed out keeps the rows it stored.
  CHECK(values_of(b.dequeue_many(1)) == ivec{1});
  CHECK(thrown<deadline_exceeded_error>([&] {
          b.enqueue_many(i64s({4, 5}), short_timeout);
        }) == text);
  CHECK(b.size() == 2);
  CHECK(values_of(b.dequeue_many(2, std::chrono::seconds(30))) == ivec{2, 4});
}

TEST_CASE_METHOD(system_fixture, "blocking_queue: a blocked call is served by another",
                 "[blocking]") {
  auto q = int_fifo(sys, 1);
  blocking_queue b{sys, q};
  element got;
  std::thread consumer{[&] {
    blocking_queue c{sys, q};
    got = c.dequeue_many(3);
  }};
  b.enqueue_many(i64s({1, 2, 3})); // capacity 1: completes as the consumer takes
  consumer.join();
  CHECK(values_of(got) == ivec{1, 2, 3});
}

TEST_CASE_METHOD(system_fixture, "blocking_queue: a terminated queue throws, never hangs",
                 "[blocking]") {
  auto q = int_fifo(sys, 1);
  blocking_queue b{sys, q};
  caf::anon_send_exit(q, caf::exit_reason::user_shutdown);
  CHECK_THROWS_AS(b.size(), unavailable_error);
  CHECK_THROWS_AS(b.dequeue(), unavailable_error);
}
