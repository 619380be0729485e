// A queue never dies from a message: rows given back are validated like an
// enqueue; the ones that fit go back, the others are refused. (Only a client
// that was handed rows may give back as many, Q-82: each section's client
// took some first.)

#include <memory>

#include <caf/send.hpp>

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

element f32(float v) {
  return element{tensor::scalar(v)};
}

element prio(int64_t p, int64_t v) {
  return element{tensor::scalar(p), tensor::scalar(v)};
}

/// A client of `q` that was handed `n` rows (`row` each, enqueued and
/// dequeued by it), so that it may give back as many.
std::unique_ptr<probe> handed(caf::actor_system& sys, const queue_actor& q, size_t n,
                              const element& row) {
  auto p = std::make_unique<probe>(sys, q);
  for (size_t i = 0; i < n; ++i) {
    p->enqueue(row);
    CHECK(p->next().count() == 1);
    p->dequeue();
    CHECK(p->next().ok());
  }
  return p;
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "give_back of rows that do not fit is refused, and the queue "
                 "keeps serving",
                 "[Q-20][give_back]") {
  SECTION("fifo") {
    auto q = int_fifo(sys, 10);
    auto client = handed(sys, q, 2, i64(0));
    blocking_queue b{sys, q};
    b.enqueue(i64(3));
    client->send(give_back_atom::value, std::vector<element>{i64(1), f32(2.5f), i64(2)});
    CHECK(b.size() == 3); // 1 and 2 went back to the front, in order
    CHECK(value_of(b.dequeue()) == 1);
    CHECK(value_of(b.dequeue()) == 2);
    CHECK(value_of(b.dequeue()) == 3);
  }
  SECTION("random shuffle") {
    auto q = spawn_random_shuffle_queue(sys, 10, 0, {dtype::int64}, {tensor_shape{}});
    auto client = handed(sys, q, 1, i64(0));
    blocking_queue b{sys, q};
    b.enqueue(i64(7));
    client->send(give_back_atom::value,
                 std::vector<element>{f32(1), element{}, i64s({1, 2}), i64(8)});
    CHECK(b.size() == 2);
    auto a = value_of(b.dequeue());
    auto c = value_of(b.dequeue());
    CHECK(a + c == 15);
  }
  SECTION("priority") {
    auto q = spawn_priority_queue(sys, 10, {dtype::int64}, {tensor_shape{}});
    auto client = handed(sys, q, 1, prio(0, 0));
    blocking_queue b{sys, q};
    b.enqueue(prio(5, 50));
    client->send(give_back_atom::value, std::vector<element>{i64(1), prio(1, 10)});
    CHECK(b.size() == 2);
    CHECK(b.dequeue()[1].scalar_value<int64_t>() == 10);
    CHECK(b.dequeue()[1].scalar_value<int64_t>() == 50);
  }
}
