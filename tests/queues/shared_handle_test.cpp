// One handle shared by many threads, as TensorFlow users run one dequeue op
// from many threads: no hang, every element to exactly one caller, none lost.

#include <algorithm>
#include <atomic>
#include <mutex>
#include <numeric>
#include <thread>

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

constexpr int threads = 4;

// Every value 0..n-1 exactly once.
void check_exact(std::vector<int64_t> got, int64_t n) {
  std::sort(got.begin(), got.end());
  std::vector<int64_t> want(static_cast<size_t>(n));
  std::iota(want.begin(), want.end(), int64_t{0});
  CHECK(got.size() == want.size());
  CHECK(got == want);
}

template <class F>
void run_threads(int n, F f) {
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i)
    ts.emplace_back([&f, i] { f(i); });
  for (auto& t : ts)
    t.join();
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "blocking_queue: one handle shared by producer and consumer threads",
                 "[blocking][shared]") {
  constexpr int64_t per_thread = 500;
  auto q = int_fifo(sys, 8); // small: producers block on a full queue too
  blocking_queue shared{sys, q};
  std::mutex mtx;
  std::vector<int64_t> got;
  std::vector<std::thread> producers;
  for (int p = 0; p < threads; ++p)
    producers.emplace_back([&, p] {
      for (int64_t i = 0; i < per_thread; ++i)
        shared.enqueue(i64(p * per_thread + i));
    });
  // The consumers block in dequeue() on the handle the producers use.
  run_threads(threads, [&](int) {
    try {
      for (;;) {
        auto v = value_of(shared.dequeue());
        std::lock_guard<std::mutex> guard{mtx};
        got.push_back(v);
        if (got.size() == static_cast<size_t>(threads * per_thread))
          shared.close(); // the last one: the others get OutOfRange
      }
    } catch (const out_of_range_error&) {
    }
  });
  for (auto& t : producers)
    t.join();
  check_exact(got, threads * per_thread);
  CHECK(shared.size() == 0);
}

TEST_CASE_METHOD(system_fixture,
                 "blocking_queue: a thread blocked in dequeue does not hold up another "
                 "thread's enqueue on the same handle",
                 "[blocking][shared]") {
  auto q = int_fifo(sys, 2);
  blocking_queue shared{sys, q};
  std::atomic<int64_t> got{-1};
  std::thread consumer{[&] { got = value_of(shared.dequeue()); }};
  std::this_thread::sleep_for(std::chrono::milliseconds(20)); // let it block
  shared.enqueue(i64(7));
  consumer.join();
  CHECK(got == 7);
}

TEST_CASE_METHOD(system_fixture, "blocking_queue: shared handle, batches and timeouts",
                 "[blocking][shared]") {
  constexpr int64_t total = 4000;
  auto q = int_fifo(sys, 64);
  blocking_queue shared{sys, q};
  std::thread producer{[&] {
    for (int64_t i = 0; i < total; i += 4)
      shared.enqueue_many(i64s({i, i + 1, i + 2, i + 3}));
    shared.close();
  }};
  std::mutex mtx;
  std::vector<int64_t> got;
  run_threads(threads, [&](int t) {
    for (;;) {
      try {
        // Short deadlines on some threads: a timed-out attempt loses nothing.
        auto timeout = t % 2 == 0
                           ? std::chrono::nanoseconds(std::chrono::microseconds(50))
                           : wait_forever;
        auto b =
            t < 2 ? shared.dequeue_up_to(3, timeout) : shared.dequeue_many(2, timeout);
        auto vs = values_of(b);
        std::lock_guard<std::mutex> guard{mtx};
        got.insert(got.end(), vs.begin(), vs.end());
      } catch (const deadline_exceeded_error&) {
      } catch (const out_of_range_error&) {
        // dequeue_many ends with fewer than 2 rows left, which the up_to
        // threads take; dequeue_up_to ends only on an empty closed queue.
        return;
      }
    }
  });
  producer.join();
  check_exact(got, total);
}

TEST_CASE_METHOD(system_fixture, "queue_reader and queue_writer: shared by threads",
                 "[stream][shared]") {
  constexpr int64_t per_thread = 3000;
  auto q = int_fifo(sys, 100);
  std::mutex mtx;
  std::vector<int64_t> got;
  // Catch2's assertions are not thread-safe: threads count, main checks.
  int64_t stored = -1, refused = -1;
  std::atomic<int> saw_end{0};
  {
    queue_writer writer{sys, q, 64};
    queue_reader reader{sys, q, 64};
    std::thread producers{[&] {
      run_threads(threads, [&](int p) {
        for (int64_t i = 0; i < per_thread; ++i)
          writer.push(i64(p * per_thread + i));
      });
      writer.flush();
      stored = writer.stored();
      refused = writer.refused();
      blocking_queue{sys, q}.close();
    }};
    run_threads(threads, [&](int) {
      while (auto e = reader.try_pull()) {
        std::lock_guard<std::mutex> guard{mtx};
        got.push_back(value_of(*e));
      }
      // Every thread sees the end of data the same way.
      try {
        reader.pull();
      } catch (const out_of_range_error&) {
        ++saw_end;
      }
    });
    producers.join();
  }
  CHECK(stored == threads * per_thread);
  CHECK(refused == 0);
  CHECK(saw_end == threads);
  check_exact(got, threads * per_thread);
}

TEST_CASE_METHOD(system_fixture, "batch_reader: shared by threads", "[stream][shared]") {
  constexpr int64_t total = 4096;
  std::mutex mtx;
  std::vector<int64_t> got;
  for (auto cut : {batch_cut::any_size, batch_cut::dequeue_up_to}) {
    got.clear();
    auto q = int_fifo(sys, 256);
    batch_reader reader{sys, q, 16, cut};
    std::thread producer{[&] {
      queue_writer w{sys, q};
      for (int64_t i = 0; i < total; i += 8)
        w.push_batch(i64s({i, i + 1, i + 2, i + 3, i + 4, i + 5, i + 6, i + 7}));
      w.flush();
      blocking_queue{sys, q}.close();
    }};
    run_threads(threads, [&](int) {
      while (auto b = reader.try_pull()) {
        auto vs = values_of(*b);
        std::lock_guard<std::mutex> guard{mtx};
        got.insert(got.end(), vs.begin(), vs.end());
      }
    });
    producer.join();
    check_exact(got, total);
  }
}

TEST_CASE_METHOD(system_fixture, "queue_reader: windows are checked at construction",
                 "[stream]") {
  auto q = int_fifo(sys, 4);
  for (size_t w : {size_t{0}, size_t{1}, size_t{3}, size_t{1} << 33})
    CHECK_THROWS_WITH(queue_reader(sys, q, w),
                      "queue_reader needs a window of 4 to 2147483647 rows, got " +
                          std::to_string(w));
  queue_reader smallest{sys, q, 4};
  blocking_queue b{sys, q};
  b.enqueue(i64(1));
  b.close();
  CHECK(value_of(smallest.pull()) == 1);
  CHECK_FALSE(smallest.try_pull());
}
