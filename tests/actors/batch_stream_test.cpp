// Batches as runs (design.md rule 6) and the batch side of the streaming
// protocol: queue_writer::push_batch and batch_reader.

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

queue_actor int_queue(caf::actor_system& sys, int32_t capacity) {
  return spawn_fifo_queue(sys, capacity, {dtype::int64}, {tensor_shape{}});
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (auto i = from; i < to; ++i)
    v.push_back(i);
  return v;
}

} // namespace

TEST_CASE_METHOD(system_fixture, "a batch passes through a FIFO queue without a copy",
                 "[batch][Q-13]") {
  blocking_queue b{sys, int_queue(sys, 100)};
  auto batch = i64s(range(0, 6));
  b.enqueue_many(batch);
  auto whole = b.dequeue_many(6);
  CHECK(values_of(whole) == range(0, 6));
  CHECK(whole[0].shares_buffer_with(batch[0]));
  b.enqueue_many(batch);
  auto first = b.dequeue_many(2);
  auto rest = b.dequeue_many(4);
  CHECK(values_of(first) == range(0, 2));
  CHECK(values_of(rest) == range(2, 6));
  CHECK(first[0].shares_buffer_with(batch[0]));
  CHECK(rest[0].shares_buffer_with(batch[0]));
}

TEST_CASE_METHOD(system_fixture,
                 "rows of several batches and single rows keep their order",
                 "[batch][Q-13]") {
  blocking_queue b{sys, int_queue(sys, 100)};
  b.enqueue_many(i64s({1, 2, 3}));
  b.enqueue(i64(4));
  b.enqueue_many(i64s({5, 6}));
  CHECK(values_of(b.dequeue_many(2)) == std::vector<int64_t>{1, 2});
  CHECK(value_of(b.dequeue()) == 3);
  CHECK(values_of(b.dequeue_many(3)) == std::vector<int64_t>{4, 5, 6});
}

TEST_CASE_METHOD(system_fixture,
                 "a batch larger than the room left is stored in two runs",
                 "[batch][Q-22]") {
  auto q = int_queue(sys, 4);
  probe p{sys, q};
  p.enqueue_many(i64s(range(0, 6)));
  CHECK(p.pending());
  CHECK(p.sync() == 4);
  blocking_queue b{sys, q};
  CHECK(values_of(b.dequeue_many(3)) == range(0, 3));
  CHECK(p.next().count() == 6); // the last two rows found room
  CHECK(values_of(b.dequeue_many(3)) == range(3, 6));
}

TEST_CASE_METHOD(system_fixture, "push_batch and batch_reader move batches in order",
                 "[batch][stream]") {
  auto q = int_queue(sys, 50);
  std::thread producer{[&] {
    queue_writer w{sys, q, 50};
    for (int64_t i = 0; i < 100; ++i)
      w.push_batch(i64s(range(i * 10, i * 10 + 10)));
    w.push(i64(1000)); // a single row after the batches
    w.flush();
    CHECK(w.stored() == 1001);
    blocking_queue{sys, q}.close();
  }};
  batch_reader r{sys, q, 10};
  std::vector<int64_t> seen;
  while (auto batch = r.try_pull()) {
    CHECK(batch->batch_size() >= 1);
    CHECK(batch->batch_size() <= 10);
    auto v = values_of(*batch);
    seen.insert(seen.end(), v.begin(), v.end());
  }
  producer.join();
  CHECK(seen == range(0, 1001));
  CHECK_THROWS_AS(r.pull(), out_of_range_error);
}

TEST_CASE_METHOD(system_fixture,
                 "a batch_reader gives back what it received but did not take",
                 "[batch][stream]") {
  auto q = int_queue(sys, 100);
  blocking_queue b{sys, q};
  b.enqueue_many(i64s(range(0, 30)));
  {
    batch_reader r{sys, q, 5};
    CHECK(values_of(r.pull()) == range(0, 5));
    // A second pull was granted and answered (rows 5..9); it goes back.
  }
  CHECK(b.size() == 25);
  CHECK(values_of(b.dequeue_many(25)) == range(5, 30));
}

TEST_CASE_METHOD(system_fixture, "bad batches are refused with the queue's error",
                 "[batch][stream][Q-20]") {
  auto q = int_queue(sys, 10);
  queue_writer w{sys, q, 10};
  w.push_batch(element{tensor::vector<float>({1, 2})});
  try {
    w.flush();
    FAIL("a float batch was accepted by an int64 queue");
  } catch (const invalid_argument_error& e) {
    CHECK(std::string(e.what()) ==
          "Type mismatch in tuple component 0. Expected int64, got float");
  }
  CHECK(w.stored() == 0);
  CHECK(w.refused() == 2);
  CHECK_THROWS_AS(w.push_batch(i64s({1})), invalid_argument_error);
  CHECK(w.refused() == 3);
  CHECK_THROWS_WITH(batch_reader(sys, q, 0),
                    "batch_reader needs a positive batch size, got 0");
  auto unshaped = spawn_fifo_queue(sys, 10, {dtype::int64});
  blocking_queue{sys, unshaped}.enqueue(i64(1));
  batch_reader r{sys, unshaped, 4};
  CHECK_THROWS_WITH(r.pull(), "FIFOQueue's batch pulls require the components to have "
                              "specified shapes.");
}
