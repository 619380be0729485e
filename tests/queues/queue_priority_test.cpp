// PriorityQueue (docs/semantics.md Q-70..Q-74).

#include <limits>

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;
constexpr int64_t lo = std::numeric_limits<int64_t>::min();
constexpr int64_t hi = std::numeric_limits<int64_t>::max();

element prow(int64_t priority, const std::string& payload) {
  return element{tensor::scalar(priority), tensor::scalar(payload)};
}

queue_actor string_pq(caf::actor_system& sys, int32_t capacity) {
  return spawn_priority_queue(sys, capacity, {dtype::string}, {tensor_shape{}}, "pq");
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "Q-70 the priority is an implicit int64 scalar component 0", "[Q-70]") {
  auto q = string_pq(sys, 10);
  probe p{sys, q};
  auto spec = p.spec();
  REQUIRE(spec.dtypes.size() == 2);
  CHECK(spec.dtypes[0] == dtype::int64);
  CHECK(spec.dtypes[1] == dtype::string);
  CHECK(spec.shapes[0] == tensor_shape{});
  p.enqueue(prow(3, "c"));
  CHECK(p.next().count() == 1);
  p.enqueue_many(
      element{tensor::vector<int64_t>({2, 1}), tensor::vector<std::string>({"b", "a"})});
  CHECK(p.next().count() == 2);
  p.dequeue();
  CHECK(p.next().elem() == prow(1, "a"));
  p.dequeue_many(2);
  auto b = p.next().elem();
  CHECK(b[0].to_vector<int64_t>() == ivec{2, 3});
  CHECK(b[1].to_vector<std::string>() == std::vector<std::string>{"b", "c"});
}

TEST_CASE_METHOD(system_fixture, "Q-71 priority checks at run time", "[Q-71]") {
  SECTION("shapes specified") {
    probe p{sys, string_pq(sys, 10)};
    p.enqueue(element{tensor::vector<int64_t>({1, 2}), tensor::scalar("a")});
    check_error(p.next(), error_code::invalid_argument,
                "Shape mismatch in tuple component 0. Expected [], got [2]");
    p.enqueue(element{tensor::scalar(int32_t{1}), tensor::scalar("a")});
    check_error(p.next(), error_code::invalid_argument,
                "Type mismatch in tuple component 0. Expected int64, got int32");
    p.enqueue(element{tensor::scalar("a")});
    check_error(p.next(), error_code::invalid_argument,
                "Wrong number of components in tuple. Expected 2, got 1");
  }
  SECTION("shapes unspecified") {
    probe p{sys, spawn_priority_queue(sys, 10, {dtype::string})};
    p.enqueue(element{tensor::vector<int64_t>({1, 2}), tensor::scalar("a")});
    check_error(p.next(), error_code::invalid_argument,
                "Expected the priority element to be a scalar, but received shape: [2]");
    p.enqueue(element{tensor::scalar(int64_t{1}), tensor::vector<std::string>({"a"})});
    CHECK(p.next().count() == 1);
  }
}

TEST_CASE_METHOD(system_fixture,
                 "Q-72 smallest priority first, INT64 min and max included", "[Q-72]") {
  auto q = string_pq(sys, -1);
  probe p{sys, q};
  ivec prios{5, hi, 0, lo, -3, 7, hi - 1, lo + 1};
  for (auto v : prios)
    p.enqueue(prow(v, std::to_string(v)));
  for (size_t i = 0; i < prios.size(); ++i)
    CHECK(p.next().count() == 1);
  ivec out;
  for (size_t i = 0; i < prios.size(); ++i)
    p.dequeue();
  for (size_t i = 0; i < prios.size(); ++i) {
    auto e = p.next().elem();
    auto v = e[0].scalar_value<int64_t>();
    CHECK(e[1].scalar_value<std::string>() == std::to_string(v)); // stays together
    out.push_back(v);
  }
  CHECK(out == ivec{lo, lo + 1, -3, 0, 5, 7, hi - 1, hi});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-73 dequeue_many is not incremental and blocks later dequeues",
                 "[Q-73]") {
  auto q = string_pq(sys, 10);
  probe many{sys, q};
  probe single{sys, q};
  probe prod{sys, q};
  prod.enqueue(prow(9, "i"));
  prod.enqueue(prow(4, "d"));
  CHECK(prod.next().count() == 1);
  CHECK(prod.next().count() == 1);
  many.dequeue_many(3);
  many.sync();
  single.dequeue();
  // Elements are there, but the waiting dequeue_many is at the head.
  CHECK(single.pending());
  CHECK(many.pending());
  CHECK(prod.size() == 2); // not incremental: nothing is held
  prod.enqueue(prow(6, "f"));
  CHECK(prod.next().count() == 1);
  auto b = many.next().elem();
  CHECK(b[0].to_vector<int64_t>() == ivec{4, 6, 9});
  CHECK(b[1].to_vector<std::string>() == std::vector<std::string>{"d", "f", "i"});
  CHECK(single.pending());
  prod.enqueue(prow(1, "a"));
  CHECK(prod.next().count() == 1);
  CHECK(single.next().elem() == prow(1, "a"));
}

TEST_CASE_METHOD(system_fixture,
                 "Q-73 dequeue_many(n > capacity) never completes while open", "[Q-73]") {
  auto q = string_pq(sys, 2);
  probe many{sys, q};
  probe prod{sys, q};
  auto name = many.name();
  many.dequeue_many(3);
  many.sync();
  prod.enqueue(prow(2, "b"));
  prod.enqueue(prow(1, "a"));
  CHECK(prod.next().count() == 1);
  CHECK(prod.next().count() == 1);
  prod.enqueue(prow(3, "c"));
  CHECK(prod.pending());
  CHECK(many.pending());
  CHECK(many.size() == 2);
  // Closing with cancel ends it (a plain close would wait behind the enqueue).
  prod.close(true);
  check_error(prod.next(), error_code::cancelled, "Enqueue operation was cancelled");
  CHECK(prod.next().flag());
  check_error(many.next(), error_code::out_of_range,
              "PriorityQueue '" + name +
                  "' is closed and has insufficient elements (requested 3, current "
                  "size 2)");
}

TEST_CASE_METHOD(system_fixture,
                 "Q-74 closed PriorityQueue: dequeue_many fails, dequeue_up_to returns "
                 "the rest sorted",
                 "[Q-74]") {
  auto q = string_pq(sys, 10);
  probe cons{sys, q};
  probe prod{sys, q};
  auto name = cons.name();
  SECTION("dequeue_many and up_to issued after the close") {
    for (auto v : {hi, int64_t{0}, lo})
      prod.enqueue(prow(v, std::to_string(v)));
    for (int i = 0; i < 3; ++i)
      CHECK(prod.next().count() == 1);
    prod.close();
    CHECK(prod.next().flag());
    cons.dequeue_many(4);
    check_error(cons.next(), error_code::out_of_range,
                "PriorityQueue '" + name +
                    "' is closed and has insufficient elements (requested 4, current "
                    "size 3)");
    CHECK(cons.size() == 3); // nothing lost
    // TensorFlow loses these three elements here; quern returns them sorted.
    cons.dequeue_up_to(5);
    auto b = cons.next().elem();
    CHECK(b[0].to_vector<int64_t>() == ivec{lo, 0, hi});
    CHECK(b[1].to_vector<std::string>() ==
          std::vector<std::string>{std::to_string(lo), "0", std::to_string(hi)});
  }
  SECTION("up_to pending when the close takes effect") {
    cons.dequeue_up_to(5);
    cons.sync();
    for (auto v : {int64_t{8}, int64_t{-8}})
      prod.enqueue(prow(v, std::to_string(v)));
    for (int i = 0; i < 2; ++i)
      CHECK(prod.next().count() == 1);
    CHECK(cons.pending());
    prod.close();
    CHECK(prod.next().flag());
    CHECK(cons.next().elem()[0].to_vector<int64_t>() == ivec{-8, 8});
  }
  CHECK(cons.size() == 0);
  cons.dequeue_up_to(5);
  check_error(cons.next(), error_code::out_of_range,
              "PriorityQueue '" + name +
                  "' is closed and has insufficient elements (requested 5, current "
                  "size 0)");
  cons.dequeue();
  check_error(cons.next(), error_code::out_of_range,
              "PriorityQueue '" + name +
                  "' is closed and has insufficient elements (requested 1, current "
                  "size 0)");
  prod.enqueue(prow(1, "a"));
  check_error(prod.next(), error_code::cancelled,
              "PriorityQueue '" + name + "' is closed.");
}
