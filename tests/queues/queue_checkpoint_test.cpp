// A queue's checkpoint (docs/resume.md, docs/semantics.md RS-1..RS-3): what
// snapshot() takes out, restore() puts back into a fresh queue, and the restored
// queue goes on as the original would have.

#include <algorithm>
#include <thread>

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;

ivec take_all(blocking_queue& q, size_t n) {
  ivec out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(value_of(q.dequeue()));
  return out;
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "RS-1 a restored FIFOQueue hands out the same rows in the same order",
                 "[RS-1]") {
  blocking_queue a{sys, int_fifo(sys, 10, "a")};
  a.enqueue_many(i64s({1, 2, 3}));
  a.enqueue(i64(4));
  a.enqueue_many(i64s({5, 6}));
  CHECK(value_of(a.dequeue()) == 1); // a batch's run cut in the middle
  auto s = a.snapshot();
  CHECK(s.stored_rows() == 5);
  CHECK(s.waiting_rows() == 0);
  CHECK_FALSE(s.closed);
  blocking_queue b{sys, int_fifo(sys, 10, "b")};
  b.restore(s);
  CHECK(b.size() == 5);
  CHECK(take_all(b, 5) == ivec{2, 3, 4, 5, 6});
  // The snapshot took copies: the original is untouched.
  CHECK(take_all(a, 5) == ivec{2, 3, 4, 5, 6});
}

TEST_CASE_METHOD(system_fixture,
                 "RS-1 a restored RandomShuffleQueue picks what the original picks",
                 "[RS-1]") {
  auto make = [&](const std::string& name) {
    return blocking_queue{sys, spawn_random_shuffle_queue(sys, 100, 5, {dtype::int64},
                                                          {tensor_shape{}}, 7, 9, name)};
  };
  auto a = make("a");
  ivec rows(60);
  std::iota(rows.begin(), rows.end(), int64_t{0});
  a.enqueue_many(i64s(rows));
  take_all(a, 20); // the generator has moved on
  auto s = a.snapshot();
  CHECK(s.stored_rows() == 40);
  CHECK_FALSE(s.generator.empty());
  CHECK(s.generator.engine() != nullptr); // its text is left to the file's writer
  auto b = make("b");
  b.restore(s);
  // From a file, the generator is its text.
  auto from_file = decode_queue_state(encode_queue_state(s), "queue 'a'");
  CHECK(from_file.generator.engine() == nullptr);
  CHECK(from_file.generator.text() == s.generator.text());
  auto c = make("c");
  c.restore(from_file);
  a.close();
  b.close();
  c.close();
  auto picks = take_all(a, 40);
  CHECK(take_all(b, 40) == picks);
  CHECK(take_all(c, 40) == picks);
}

TEST_CASE_METHOD(system_fixture, "RS-1 a restored RandomShuffleQueue of string rows",
                 "[RS-1]") {
  auto make = [&](const std::string& name) {
    return blocking_queue{
        sys, spawn_random_shuffle_queue(sys, 50, 0, {dtype::string, dtype::float32},
                                        {tensor_shape{}, tensor_shape{2}}, 3, 0, name)};
  };
  auto a = make("a");
  for (int i = 0; i < 30; ++i)
    a.enqueue({tensor::scalar("row " + std::to_string(i)),
               tensor::vector<float>({float(i), float(-i)})});
  a.dequeue();
  auto b = make("b");
  b.restore(a.snapshot());
  for (int i = 0; i < 29; ++i) {
    auto x = a.dequeue();
    auto y = b.dequeue();
    CHECK(x[0].scalar_value<std::string>() == y[0].scalar_value<std::string>());
    CHECK(x[1].to_vector<float>() == y[1].to_vector<float>());
  }
}

TEST_CASE_METHOD(system_fixture, "RS-1 a restored PriorityQueue and PaddingFIFOQueue",
                 "[RS-1]") {
  SECTION("priority: the same heap, the same order") {
    auto make = [&](const std::string& name) {
      return blocking_queue{
          sys, spawn_priority_queue(sys, 20, {dtype::string}, {tensor_shape{}}, name)};
    };
    auto a = make("a");
    for (int64_t p : {5, 1, 9, 3, 3, 7})
      a.enqueue({tensor::scalar(p), tensor::scalar("p" + std::to_string(p))});
    auto b = make("b");
    b.restore(a.snapshot());
    for (int i = 0; i < 6; ++i)
      CHECK(a.dequeue()[1].scalar_value<std::string>() ==
            b.dequeue()[1].scalar_value<std::string>());
  }
  SECTION("padding: rows of different lengths") {
    auto make = [&](const std::string& name) {
      return blocking_queue{sys, spawn_padding_fifo_queue(sys, 10, {dtype::int64},
                                                          {tensor_shape{-1}}, name)};
    };
    auto a = make("a");
    a.enqueue(i64s({1}));
    a.enqueue(i64s({1, 2, 3}));
    a.enqueue(i64s({1, 2}));
    auto b = make("b");
    b.restore(a.snapshot());
    CHECK(values_of(b.dequeue_many(3)) == ivec{1, 0, 0, 1, 2, 3, 1, 2, 0});
  }
}

TEST_CASE_METHOD(
    system_fixture,
    "RS-2 enqueues that wait for room and a waiting close are restored behind "
    "the stored rows",
    "[RS-2]") {
  blocking_queue a{sys, int_fifo(sys, 2, "a")};
  a.enqueue_many(i64s({1, 2}));
  // Two enqueues and a close wait behind the full queue.
  std::thread waiting{[&] {
    blocking_queue w{sys, a.actor()};
    w.enqueue_many(i64s({3, 4, 5}));
  }};
  // Until the other thread's enqueue waits (bounded: 20 s).
  for (int i = 0; i < 4000 && a.snapshot().waiting_rows() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  probe closer{sys, a.actor()};
  closer.close(false);
  auto s = a.snapshot();
  CHECK(s.stored_rows() == 2);
  CHECK(s.waiting_rows() == 3);
  CHECK(s.close_waiting);
  CHECK_FALSE(s.closed);
  blocking_queue b{sys, int_fifo(sys, 2, "b")};
  b.restore(s);
  CHECK(b.size() == 2);
  CHECK_FALSE(b.is_closed());
  CHECK(take_all(b, 5) == ivec{1, 2, 3, 4, 5});
  CHECK(b.is_closed()); // the close took effect after the waiting rows
  CHECK_THROWS_AS(b.dequeue(), out_of_range_error);
  take_all(a, 5);
  waiting.join();
}

TEST_CASE_METHOD(system_fixture,
                 "RS-3 restore refuses a used queue and rows that do not fit", "[RS-3]") {
  blocking_queue a{sys, int_fifo(sys, 10, "a")};
  a.enqueue_many(i64s({1, 2}));
  auto s = a.snapshot();
  SECTION("a queue that holds rows") {
    blocking_queue b{sys, int_fifo(sys, 10, "b")};
    b.enqueue(i64(9));
    CHECK_THROWS_WITH(b.restore(s), Catch::Contains("it was used already"));
    CHECK(b.size() == 1);
  }
  SECTION("a closed queue") {
    blocking_queue b{sys, int_fifo(sys, 10, "b")};
    b.close();
    CHECK_THROWS_AS(b.restore(s), failed_precondition_error);
  }
  SECTION("rows of another signature") {
    blocking_queue b{sys,
                     spawn_fifo_queue(sys, 10, {dtype::float32}, {tensor_shape{}}, "b")};
    CHECK_THROWS_WITH(b.restore(s),
                      Catch::Contains("do not fit queue") && Catch::Contains("b"));
    CHECK(b.size() == 0);
  }
  SECTION("a generator for a queue without one") {
    s.generator = quern::generator_state{"1 2 3"};
    blocking_queue b{sys, int_fifo(sys, 10, "b")};
    CHECK_THROWS_WITH(b.restore(s), Catch::Contains("random generator"));
    CHECK(b.size() == 0);
  }
  SECTION("a damaged generator") {
    blocking_queue b{sys, spawn_random_shuffle_queue(sys, 10, 0, {dtype::int64},
                                                     {tensor_shape{}}, 1, 1, "b")};
    auto t = b.snapshot();
    t.stored = s.stored;
    t.generator = quern::generator_state{"not a generator"};
    CHECK_THROWS_AS(b.restore(t), data_loss_error);
    CHECK(b.size() == 0);
  }
}

TEST_CASE_METHOD(system_fixture,
                 "RS-12 a barrier is answered to its sender once its pushes before it "
                 "reached the queue, stored or waiting for room",
                 "[RS-12]") {
  auto q = int_fifo(sys, 2, "barrier");
  caf::scoped_actor self{sys};
  // Three pushes into a queue of 2: two stored, one waits for room.
  for (int64_t i = 0; i < 3; ++i)
    self->send(q, push_atom::value, std::vector<element>{i64(i)});
  self->send(q, barrier_atom::value, uint64_t{7});
  std::vector<std::string> seen;
  for (int i = 0; i < 3; ++i)
    self->receive([&](pushed_atom, int32_t n,
                      caf::error&) { seen.push_back("pushed " + std::to_string(n)); },
                  [&](barrier_passed_atom, uint64_t token) {
                    seen.push_back("barrier " + std::to_string(token));
                  },
                  caf::after(std::chrono::seconds(20)) >>
                      [&] { seen.push_back("nothing"); });
  CHECK(seen == std::vector<std::string>{"pushed 1", "pushed 1", "barrier 7"});
  auto s = blocking_queue{sys, q}.snapshot();
  CHECK(s.stored_rows() == 2);
  CHECK(s.waiting_rows() == 1);
}

TEST_CASE_METHOD(system_fixture,
                 "RS-1 single rows of matrices, strings and bools, stacked in the "
                 "snapshot, restore as they were",
                 "[RS-1]") {
  auto make = [&](const std::string& name) {
    return blocking_queue{
        sys,
        spawn_fifo_queue(sys, 10, {dtype::float32, dtype::string, dtype::boolean},
                         {tensor_shape{2, 3}, tensor_shape{}, tensor_shape{2}}, name)};
  };
  auto row = [](int i) {
    std::vector<float> m(6);
    for (int j = 0; j < 6; ++j)
      m[static_cast<size_t>(j)] = static_cast<float>(10 * i + j);
    return element{tensor::from_values<float>({2, 3}, m),
                   tensor::scalar("row " + std::to_string(i)),
                   tensor::vector<bool>({i % 2 == 0, i % 3 == 0})};
  };
  auto a = make("a");
  for (int i = 0; i < 5; ++i)
    a.enqueue(row(i));
  auto s = a.snapshot();
  CHECK(s.stored_rows() == 5);
  REQUIRE(s.stored.size() == 1); // one batch of the five single rows
  auto b = make("b");
  b.restore(s);
  for (int i = 0; i < 5; ++i) {
    auto want = row(i);
    auto got = b.dequeue();
    CHECK(got[0].to_vector<float>() == want[0].to_vector<float>());
    CHECK(got[0].shape() == tensor_shape{2, 3});
    CHECK(got[1].scalar_value<std::string>() == want[1].scalar_value<std::string>());
    CHECK(got[2].to_vector<bool>() == want[2].to_vector<bool>());
  }
}
