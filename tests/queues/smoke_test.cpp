#include "probe.hpp"

using namespace quern;
using namespace quern::test;

TEST_CASE_METHOD(system_fixture, "smoke: probe sees blocking and answers in order",
                 "[queue]") {
  auto q = spawn_fifo_queue(sys, 2, {dtype::int64}, {tensor_shape{}}, "q");
  probe p{sys, q};
  p.dequeue();
  CHECK(p.pending());
  p.enqueue(i64(5));
  auto first = p.next();
  auto second = p.next();
  // One flush serves the enqueue first, then the waiting dequeue: the
  // enqueue's reply comes before the dequeued element.
  CHECK(value_of(second.elem()) == 5);
  CHECK(first.count() == 1);
  p.close();
  CHECK(p.next().flag());
  p.dequeue();
  auto a = p.next();
  CHECK(a.code() == error_code::out_of_range);
  CHECK_THAT(
      a.text(),
      Catch::Matchers::EndsWith(
          "' is closed and has insufficient elements (requested 1, current size 0)"));
  blocking_queue b{sys, q};
  CHECK_THROWS_AS(b.enqueue(i64(1)), cancelled_error);
}
