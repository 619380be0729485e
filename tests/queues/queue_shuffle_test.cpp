// RandomShuffleQueue (docs/semantics.md Q-51..Q-53) and its kind-specific texts.

#include <algorithm>

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;

ivec sorted(ivec v) {
  std::sort(v.begin(), v.end());
  return v;
}

ivec iota(int64_t n) {
  ivec v;
  for (int64_t i = 0; i < n; ++i)
    v.push_back(i);
  return v;
}

/// Enqueues 0..n-1 one by one, then dequeues n elements one by one.
ivec shuffle_order(caf::actor_system& sys, int64_t seed, int64_t seed2, int64_t n) {
  auto q = spawn_random_shuffle_queue(sys, -1, 0, {dtype::int64}, {tensor_shape{}}, seed,
                                      seed2);
  probe p{sys, q};
  for (int64_t i = 0; i < n; ++i)
    p.enqueue(i64(i));
  for (int64_t i = 0; i < n; ++i)
    CHECK(p.next().count() == 1);
  return dequeue_values(p, static_cast<size_t>(n));
}

} // namespace

TEST_CASE_METHOD(system_fixture, "Q-51 min_after_dequeue holds elements back while open",
                 "[Q-51]") {
  auto q = spawn_random_shuffle_queue(sys, 10, 2, {dtype::int64}, {tensor_shape{}}, 1, 2);
  probe cons{sys, q};
  probe many{sys, q};
  probe prod{sys, q};
  auto name = cons.name();
  prod.enqueue_many(i64s({1, 2}));
  CHECK(prod.next().count() == 2);
  cons.dequeue();
  CHECK(cons.pending()); // size 2 is not > min_after_dequeue 2
  prod.enqueue(i64(3));
  CHECK(prod.next().count() == 1);
  auto first = value_of(cons.next().elem());
  CHECK(cons.size() == 2);
  // dequeue_many takes rows only while size > 2.
  many.dequeue_many(3);
  CHECK(many.pending());
  prod.enqueue_many(i64s({4, 5}));
  CHECK(prod.next().count() == 2);
  CHECK(many.pending());
  CHECK(many.size() == 2);
  cons.dequeue();
  CHECK(cons.pending());
  // The close lifts the limit: the dequeue_many completes with the two rows
  // it held plus one more, the single dequeue gets the last one.
  prod.close();
  CHECK(prod.next().flag());
  auto batch = values_of(many.next().elem());
  CHECK(batch.size() == 3);
  auto last = value_of(cons.next().elem());
  ivec all = batch;
  all.push_back(first);
  all.push_back(last);
  CHECK(sorted(all) == ivec{1, 2, 3, 4, 5});
  cons.dequeue();
  check_error(cons.next(), error_code::out_of_range,
              "RandomShuffleQueue '" + name +
                  "' is closed and has insufficient elements (requested 1, current "
                  "size 0)");
}

TEST_CASE_METHOD(system_fixture,
                 "Q-51 a dequeue blocked by min_after_dequeue is served by the close",
                 "[Q-51]") {
  auto q = spawn_random_shuffle_queue(sys, 10, 5, {dtype::int64}, {tensor_shape{}});
  probe cons{sys, q};
  probe prod{sys, q};
  prod.enqueue_many(i64s({7, 8, 9}));
  CHECK(prod.next().count() == 3);
  cons.dequeue_up_to(10);
  CHECK(cons.pending());
  prod.close();
  CHECK(prod.next().flag());
  CHECK(sorted(values_of(cons.next().elem())) == ivec{7, 8, 9});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-52 every element comes out exactly once, batches included",
                 "[Q-52]") {
  auto q = spawn_random_shuffle_queue(sys, 50, 0, {dtype::int64, dtype::string},
                                      {tensor_shape{}, tensor_shape{}}, 3, 4);
  probe p{sys, q};
  for (int64_t i = 0; i < 40; ++i)
    p.enqueue(element{tensor::scalar(i), tensor::scalar(std::to_string(i))});
  for (int i = 0; i < 40; ++i)
    CHECK(p.next().count() == 1);
  ivec seen;
  p.dequeue_many(15);
  auto b = p.next().elem();
  CHECK(b[0].shape() == tensor_shape{15});
  auto keys = b[0].to_vector<int64_t>();
  auto texts = b[1].to_vector<std::string>();
  for (size_t i = 0; i < keys.size(); ++i) {
    CHECK(texts[i] == std::to_string(keys[i])); // components stay together
    seen.push_back(keys[i]);
  }
  for (auto v : dequeue_values(p, 25))
    seen.push_back(v);
  CHECK(sorted(seen) == iota(40));
  CHECK(seen != iota(40)); // 1 in 40! to fail by chance
}

TEST_CASE_METHOD(system_fixture,
                 "Q-53 equal non-zero seeds give equal orders across queues", "[Q-53]") {
  auto a = shuffle_order(sys, 42, 7, 100);
  auto b = shuffle_order(sys, 42, 7, 100);
  CHECK(a == b);
  CHECK(sorted(a) == iota(100));
  CHECK(a != iota(100));
  // Only seed2 set is a seed pair too.
  CHECK(shuffle_order(sys, 0, 9, 100) == shuffle_order(sys, 0, 9, 100));
  CHECK(shuffle_order(sys, 1, 0, 100) != shuffle_order(sys, 2, 0, 100));
}

TEST_CASE_METHOD(system_fixture, "Q-53 seeds (0, 0) draw fresh seeds per queue",
                 "[Q-53]") {
  auto a = shuffle_order(sys, 0, 0, 100);
  auto b = shuffle_order(sys, 0, 0, 100);
  CHECK(sorted(a) == iota(100));
  CHECK(a != b); // equal with probability 1/100!
}

TEST_CASE_METHOD(system_fixture,
                 "Q-33 RandomShuffleQueue: a closed dequeue_many puts its rows back",
                 "[Q-33]") {
  auto q = spawn_random_shuffle_queue(sys, 10, 0, {dtype::int64}, {tensor_shape{}});
  probe cons{sys, q};
  probe prod{sys, q};
  auto name = cons.name();
  cons.dequeue_many(4);
  cons.sync();
  prod.enqueue_many(i64s({1, 2, 3}));
  CHECK(prod.next().count() == 3);
  CHECK(prod.size() == 0);
  prod.close();
  CHECK(prod.next().flag());
  check_error(cons.next(), error_code::out_of_range,
              "RandomShuffleQueue '" + name +
                  "' is closed and has insufficient elements (requested 1, current "
                  "size 0)");
  CHECK(prod.size() == 3);
  cons.dequeue_up_to(4);
  CHECK(sorted(values_of(cons.next().elem())) == ivec{1, 2, 3});
}

TEST_CASE_METHOD(system_fixture, "Q-21 RandomShuffleQueue: enqueue on a closed queue",
                 "[Q-21]") {
  auto q = spawn_random_shuffle_queue(sys, 10, 0, {dtype::int64}, {tensor_shape{}});
  probe p{sys, q};
  auto name = p.name();
  p.close();
  CHECK(p.next().flag());
  p.enqueue(i64(1));
  check_error(p.next(), error_code::cancelled,
              "RandomShuffleQueue '" + name + "' is closed.");
}

TEST_CASE_METHOD(system_fixture, "Q-6 texts per kind: shapes unspecified", "[Q-6]") {
  auto check_kind = [&](queue_actor q, const std::string& text) {
    probe p{sys, q};
    p.dequeue_many(2);
    check_error(p.next(), error_code::invalid_argument, text);
    p.dequeue_up_to(2);
    check_error(p.next(), error_code::invalid_argument, text);
    // Before any other check: n == 0, n < 0, and a closed queue.
    p.dequeue_many(0);
    check_error(p.next(), error_code::invalid_argument, text);
    p.dequeue_up_to(-1);
    check_error(p.next(), error_code::invalid_argument, text);
    p.close();
    CHECK(p.next().flag());
    p.dequeue_many(0);
    check_error(p.next(), error_code::invalid_argument, text);
    p.dequeue_up_to(3);
    check_error(p.next(), error_code::invalid_argument, text);
  };
  check_kind(spawn_fifo_queue(sys, 10, {dtype::int64}),
             "FIFOQueue's DequeueMany and DequeueUpTo require the components to have "
             "specified shapes.");
  check_kind(spawn_random_shuffle_queue(sys, 10, 0, {dtype::int64}),
             "RandomShuffleQueue's DequeueMany and DequeueUpTo require the components "
             "to have specified shapes.");
  check_kind(spawn_priority_queue(sys, 10, {dtype::int64}),
             "PriorityQueue's DequeueMany requires the components to have specified "
             "shapes.");
}

TEST_CASE_METHOD(system_fixture,
                 "Q-52 rows of enqueued batches are gathered with their components "
                 "together",
                 "[Q-52]") {
  auto q = spawn_random_shuffle_queue(
      sys, 100, 0, {dtype::int64, dtype::string, dtype::float32},
      {tensor_shape{}, tensor_shape{}, tensor_shape{2}}, 5, 6);
  blocking_queue b{sys, q};
  // Three batches and a single row: the rows stay in their batches' buffers
  // until a dequeue gathers the picked ones.
  for (int64_t start : {0, 10, 20}) {
    std::vector<int64_t> keys;
    std::vector<std::string> texts;
    std::vector<float> pairs;
    for (int64_t i = start; i < start + 10; ++i) {
      keys.push_back(i);
      texts.push_back("row " + std::to_string(i));
      pairs.push_back(static_cast<float>(i));
      pairs.push_back(static_cast<float>(-i));
    }
    b.enqueue_many(element{tensor::vector<int64_t>(keys),
                           tensor::vector<std::string>(texts),
                           tensor::from_values<float>({10, 2}, pairs)});
  }
  b.enqueue(element{tensor::scalar(int64_t{30}), tensor::scalar("row 30"),
                    tensor::vector<float>({30.0f, -30.0f})});
  ivec seen;
  auto check_batch = [&](const element& batch, int64_t n) {
    REQUIRE(batch[0].shape() == tensor_shape{n});
    CHECK(batch[2].shape() == tensor_shape({n, 2}));
    auto keys = batch[0].to_vector<int64_t>();
    auto texts = batch[1].to_vector<std::string>();
    auto pairs = batch[2].to_vector<float>();
    for (size_t i = 0; i < keys.size(); ++i) {
      CHECK(texts[i] == "row " + std::to_string(keys[i]));
      CHECK(pairs[2 * i] == static_cast<float>(keys[i]));
      CHECK(pairs[2 * i + 1] == static_cast<float>(-keys[i]));
      seen.push_back(keys[i]);
    }
  };
  check_batch(b.dequeue_many(12), 12);
  auto one = b.dequeue();
  seen.push_back(one[0].scalar_value<int64_t>());
  CHECK(one[1].scalar_value<std::string>() == "row " + std::to_string(seen.back()));
  check_batch(b.dequeue_many(18), 18);
  CHECK(b.size() == 0);
  CHECK(sorted(seen) == iota(31));
  CHECK(seen != iota(31));
}
