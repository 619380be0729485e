// Batches as runs (docs/queues.md, Storage) and the batch side of the streaming
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
  int64_t stored = -1; // checked in the main thread: Catch2 is not thread-safe
  std::thread producer{[&] {
    queue_writer w{sys, q, 50};
    for (int64_t i = 0; i < 100; ++i)
      w.push_batch(i64s(range(i * 10, i * 10 + 10)));
    w.push(i64(1000)); // a single row after the batches
    w.flush();
    stored = w.stored();
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
  CHECK(stored == 1001);
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
  CHECK_THROWS_WITH(batch_reader(sys, q, 4, batch_cut::dequeue_many, 1),
                    "batch_reader needs a window of at least 2 batches, got 1");
  auto unshaped = spawn_fifo_queue(sys, 10, {dtype::int64});
  blocking_queue{sys, unshaped}.enqueue(i64(1));
  batch_reader r{sys, unshaped, 4};
  CHECK_THROWS_WITH(r.pull(), "FIFOQueue's batch pulls require the components to have "
                              "specified shapes.");
}

TEST_CASE_METHOD(system_fixture,
                 "Q-32 a dequeue_many batch_reader hands out exact batches and leaves a "
                 "final partial batch in the queue",
                 "[batch][stream][Q-32][Q-33]") {
  auto q = int_queue(sys, 100);
  blocking_queue b{sys, q};
  auto name = b.spec().resource_name;
  b.enqueue_many(i64s(range(0, 3)));
  b.enqueue_many(i64s(range(3, 10)));
  {
    batch_reader r{sys, q, 4, batch_cut::dequeue_many};
    CHECK(values_of(r.pull()) == range(0, 4));
    CHECK(values_of(r.pull()) == range(4, 8));
    b.close();
    try {
      r.pull();
      FAIL("a partial batch came out of a dequeue_many reader");
    } catch (const out_of_range_error& e) {
      // As a pending dequeue_many: it held rows 8 and 9 and still needed two
      // the rows it held go back.
      CHECK(std::string(e.what()) == "FIFOQueue '" + name +
                                         "' is closed and has insufficient elements "
                                         "(requested 2, current size 0)");
    }
    CHECK_FALSE(r.try_pull());
  }
  CHECK(b.size() == 2); // the final partial batch stays in the queue
  CHECK(values_of(b.dequeue_up_to(4)) == range(8, 10));
}

TEST_CASE_METHOD(system_fixture,
                 "Q-33 a dequeue_up_to batch_reader ends with a smaller final batch",
                 "[batch][stream][Q-33]") {
  auto q = int_queue(sys, 100);
  std::thread producer{[&] {
    queue_writer w{sys, q, 20};
    for (int64_t i = 0; i < 23; ++i)
      w.push(i64(i));
    w.flush();
    blocking_queue{sys, q}.close();
  }};
  batch_reader r{sys, q, 5, batch_cut::dequeue_up_to};
  std::vector<int64_t> seen;
  std::vector<int64_t> sizes;
  while (auto batch = r.try_pull()) {
    sizes.push_back(batch->batch_size());
    auto v = values_of(*batch);
    seen.insert(seen.end(), v.begin(), v.end());
  }
  producer.join();
  CHECK(seen == range(0, 23));
  CHECK(sizes == std::vector<int64_t>{5, 5, 5, 5, 3});
  CHECK_THROWS_AS(r.pull(), out_of_range_error);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-51 an exact batch_reader respects min_after_dequeue until the close",
                 "[batch][stream][Q-51]") {
  auto q = spawn_random_shuffle_queue(sys, 50, 5, {dtype::int64}, {tensor_shape{}}, 1, 2);
  blocking_queue b{sys, q};
  b.enqueue_many(i64s(range(0, 8)));
  batch_reader r{sys, q, 4, batch_cut::dequeue_many};
  std::vector<int64_t> seen;
  std::thread feeder{[&] {
    // Only 3 rows may go while open (8 - 5); the fourth comes with row 8.
    blocking_queue f{sys, q};
    f.enqueue(i64(8));
  }};
  auto first = values_of(r.pull());
  feeder.join();
  CHECK(first.size() == 4);
  seen.insert(seen.end(), first.begin(), first.end());
  b.close(); // lifts min_after_dequeue: one more full batch, one row stays
  auto second = values_of(r.pull());
  CHECK(second.size() == 4);
  seen.insert(seen.end(), second.begin(), second.end());
  CHECK_THROWS_AS(r.pull(), out_of_range_error);
  CHECK(b.size() == 1);
  seen.push_back(value_of(b.dequeue()));
  std::sort(seen.begin(), seen.end());
  CHECK(seen == range(0, 9));
}

TEST_CASE_METHOD(system_fixture,
                 "an exact batch_reader gives back held rows and batches it did not hand "
                 "out",
                 "[batch][stream]") {
  auto q = int_queue(sys, 100);
  blocking_queue b{sys, q};
  b.enqueue_many(i64s(range(0, 14)));
  {
    batch_reader r{sys, q, 4, batch_cut::dequeue_many};
    CHECK(values_of(r.pull()) == range(0, 4));
    // Rows 4..11 came as two more batches; 12 and 13 are held by the pending
    // demand. All of them go back, in order.
  }
  CHECK(b.size() == 10);
  CHECK(values_of(b.dequeue_many(10)) == range(4, 14));
}

TEST_CASE_METHOD(system_fixture, "Q-73 an exact batch_reader on a PriorityQueue",
                 "[batch][stream][Q-73]") {
  auto q = spawn_priority_queue(sys, 20, {dtype::string}, {tensor_shape{}});
  blocking_queue b{sys, q};
  for (int64_t p : {5, 1, 4, 2, 3})
    b.enqueue(element{tensor::scalar(p), tensor::scalar("p" + std::to_string(p))});
  batch_reader r{sys, q, 2, batch_cut::dequeue_up_to};
  auto first = r.pull();
  CHECK(first[0].to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(first[1].to_vector<std::string>() == std::vector<std::string>{"p1", "p2"});
  CHECK(r.pull()[0].to_vector<int64_t>() == std::vector<int64_t>{3, 4});
  b.close();
  CHECK(r.pull()[0].to_vector<int64_t>() == std::vector<int64_t>{5});
  CHECK_THROWS_AS(r.pull(), out_of_range_error);
}

TEST_CASE_METHOD(system_fixture, "exact batch_readers refuse unshaped queues",
                 "[batch][stream][Q-6]") {
  auto unshaped = spawn_fifo_queue(sys, 10, {dtype::int64});
  blocking_queue{sys, unshaped}.enqueue(i64(1));
  batch_reader r{sys, unshaped, 4, batch_cut::dequeue_many};
  CHECK_THROWS_WITH(r.pull(), "FIFOQueue's DequeueMany and DequeueUpTo require the "
                              "components to have specified shapes.");
}

TEST_CASE_METHOD(system_fixture,
                 "batches pushed while two pushes wait travel together, in order",
                 "[batch][stream]") {
  auto q = int_queue(sys, 2);
  probe watch{sys, q};
  queue_writer w{sys, q, 100};
  for (int64_t i = 0; i < 5; ++i)
    w.push_batch(i64s(range(2 * i, 2 * i + 2)));
  // The first is stored; the others wait for room at the queue or, past two
  // pushes in flight, in the writer: within its window push_batch returned.
  CHECK(watch.sync() == 2);
  w.push(i64(10)); // a row after them: they go first
  std::vector<int64_t> seen;
  std::thread consumer{[&] {
    blocking_queue b{sys, q};
    for (int i = 0; i < 11; ++i)
      seen.push_back(value_of(b.dequeue()));
  }};
  w.flush();
  consumer.join();
  CHECK(w.stored() == 11);
  CHECK(seen == range(0, 11));
}

TEST_CASE_METHOD(system_fixture,
                 "a push of batches with one that does not fit stores none of them",
                 "[batch][stream][Q-20]") {
  probe p{sys, int_queue(sys, 10)};
  p.send(push_batch_atom::value,
         std::vector<element>{i64s({1, 2}), element{tensor::vector<float>({3})}});
  int32_t stored = -1;
  caf::error err;
  p.self()->receive([&](pushed_atom, int32_t n, caf::error& e) {
    stored = n;
    err = std::move(e);
  });
  CHECK(stored == 0);
  CHECK(code_of(err) == error_code::invalid_argument);
  CHECK(p.size() == 0);
}
