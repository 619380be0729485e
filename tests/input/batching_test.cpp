// tf.train's batching helpers (docs/semantics.md IN-10..IN-15) on the threaded
// scheduler: the end-of-epochs cascade from a producer through batching,
// allow_smaller_final_batch, enqueue_many, joins, shuffling, dynamic_pad,
// keep_input, validation texts and summary tags.

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "input_test_util.hpp"
#include "quern/coordinator.hpp"
#include "quern/input/batching.hpp"
#include "quern/input/producers.hpp"
#include "quern/input/summaries.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"

using namespace quern;
using quern::test::thrown;

namespace {

batch_options int_batch(int32_t batch_size) {
  batch_options o;
  o.batch_size = batch_size;
  o.dtypes = {dtype::int32};
  o.shapes = {tensor_shape{}};
  return o;
}

struct drained {
  std::map<int32_t, int> count;
  std::vector<int64_t> batch_sizes;
  int64_t total = 0;
  bool ended = false;
};

drained drain(pipeline& pipe, const batched& b) {
  auto in = pipe.make_consumer(b.queue);
  drained d;
  try {
    for (;;) {
      auto e = b.next(in);
      d.batch_sizes.push_back(e.batch_size());
      for (auto x : e[0].to_vector<int32_t>()) {
        ++d.count[x];
        ++d.total;
      }
    }
  } catch (const out_of_range_error&) {
    d.ended = true;
  }
  return d;
}

/// A blocking example function: 0..n-1 shared by every thread that runs it,
/// then out_of_range.
example_fn counter(int32_t n) {
  auto next = std::make_shared<std::atomic<int32_t>>(0);
  return [next, n]() -> element {
    auto i = next->fetch_add(1);
    if (i >= n)
      throw out_of_range_error("counter exhausted");
    return element{tensor::scalar(i)};
  };
}

void check_each(const drained& d, int32_t limit, int times) {
  CHECK(d.ended);
  CHECK(d.total == static_cast<int64_t>(limit) * times);
  REQUIRE(d.count.size() == static_cast<size_t>(limit));
  for (auto& [x, n] : d.count) {
    CHECK(x >= 0);
    CHECK(x < limit);
    CHECK(n == times);
  }
}

} // namespace

TEST_CASE("IN-10 batch: the end of epochs cascades through batching, final smaller batch",
          "[IN-10][IN-2]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  producer_options po;
  po.num_epochs = 3;
  po.seed = 5;
  auto indices = range_input_producer(pipe, 50, po);
  auto opts = int_batch(7);
  opts.num_threads = 3;
  opts.allow_smaller_final_batch = true;
  auto b = batch(pipe, example_source::dequeue_from(indices), opts);
  auto threads = pipe.start_queue_runners(coord);
  auto d = drain(pipe, b);
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  check_each(d, 50, 3); // every example of every epoch exactly once
  REQUIRE(d.batch_sizes.size() == 22);
  for (size_t i = 0; i + 1 < d.batch_sizes.size(); ++i)
    CHECK(d.batch_sizes[i] == 7);
  CHECK(d.batch_sizes.back() == 150 % 7);
}

TEST_CASE("IN-10 batch: without allow_smaller_final_batch the partial batch stays queued",
          "[IN-10]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  auto opts = int_batch(7);
  opts.num_threads = 2;
  auto b = batch(pipe, counter(100), opts);
  CHECK(b.scope == "batch");
  auto threads = pipe.start_queue_runners(coord);
  auto d = drain(pipe, b);
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  CHECK(d.ended);
  CHECK(d.batch_sizes == std::vector<int64_t>(14, 7));
  CHECK(d.total == 98);
  blocking_queue q{sys, b.queue};
  CHECK(q.size() == 2); // the rows of the final partial batch stay in the queue
}

TEST_CASE("IN-10 batch: enqueue_many sources produce batches", "[IN-10]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  auto next = std::make_shared<std::atomic<int32_t>>(0);
  example_fn five_at_a_time = [next]() -> element {
    auto start = next->fetch_add(5);
    if (start >= 200)
      throw out_of_range_error("done");
    return element{
        tensor::vector<int32_t>({start, start + 1, start + 2, start + 3, start + 4})};
  };
  auto opts = int_batch(16);
  opts.enqueue_many = true;
  opts.num_threads = 2;
  opts.capacity = 20;
  opts.allow_smaller_final_batch = true;
  auto b = batch(pipe, five_at_a_time, opts);
  auto threads = pipe.start_queue_runners(coord);
  auto d = drain(pipe, b);
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  check_each(d, 200, 1);
  CHECK(d.batch_sizes.back() == 200 % 16);
}

TEST_CASE("IN-11 batch_join: one worker per source, all examples once", "[IN-11]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  producer_options po;
  po.num_epochs = 2;
  po.shuffle = false;
  auto q1 = range_input_producer(pipe, 30, po);
  auto evens = std::make_shared<std::atomic<int32_t>>(0);
  example_fn high = [evens]() -> element {
    auto i = evens->fetch_add(1);
    if (i >= 40)
      throw out_of_range_error("done");
    return element{tensor::scalar(int32_t{100} + i)};
  };
  auto opts = int_batch(8);
  opts.allow_smaller_final_batch = true;
  auto b = batch_join(pipe, {example_source::dequeue_from(q1), high}, opts);
  CHECK(b.scope == "batch_join");
  auto threads = pipe.start_queue_runners(coord);
  REQUIRE(threads.size() == 2 + 3); // producer + 1 worker, batch_join + 2 workers
  auto d = drain(pipe, b);
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  CHECK(d.ended);
  CHECK(d.total == 60 + 40);
  for (int32_t x = 0; x < 30; ++x)
    CHECK(d.count[x] == 2);
  for (int32_t x = 100; x < 140; ++x)
    CHECK(d.count[x] == 1);
  CHECK(thrown<argument_error>([&] { batch_join(pipe, {}, int_batch(2)); }) ==
        "Expected at least one set of tensors");
}

TEST_CASE("IN-12 shuffle_batch: capacity must exceed min_after_dequeue", "[IN-12]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  auto opts = int_batch(4);
  opts.capacity = 10;
  opts.min_after_dequeue = 10;
  CHECK(thrown<argument_error>([&] { shuffle_batch(pipe, counter(1), opts); }) ==
        "capacity 10 must be bigger than min_after_dequeue 10.");
  opts.min_after_dequeue = 12;
  CHECK(thrown<argument_error>([&] { shuffle_batch(pipe, counter(1), opts); }) ==
        "capacity 10 must be bigger than min_after_dequeue 12.");
  CHECK(pipe.queue_runners().empty());
}

TEST_CASE("IN-12 shuffle_batch: all examples once, shuffled, then out_of_range",
          "[IN-12][IN-15]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  producer_options po;
  po.num_epochs = 2;
  po.shuffle = false;
  auto indices = range_input_producer(pipe, 100, po);
  auto opts = int_batch(10);
  opts.min_after_dequeue = 20;
  opts.num_threads = 2;
  opts.capacity = opts.min_after_dequeue + (opts.num_threads + 1) * opts.batch_size;
  opts.seed = 9;
  opts.allow_smaller_final_batch = true;
  auto b = shuffle_batch(pipe, example_source::dequeue_from(indices), opts);
  auto threads = pipe.start_queue_runners(coord);
  auto in = pipe.make_consumer(b.queue);
  std::vector<int32_t> order;
  try {
    for (;;)
      for (auto x : b.next(in)[0].to_vector<int32_t>())
        order.push_back(x);
  } catch (const out_of_range_error&) {
  }
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  REQUIRE(order.size() == 200);
  std::map<int32_t, int> count;
  for (auto x : order)
    ++count[x];
  CHECK(count.size() == 100);
  for (auto& [x, n] : count)
    CHECK(n == 2);
  std::vector<int32_t> sequential;
  for (int e = 0; e < 2; ++e)
    for (int32_t x = 0; x < 100; ++x)
      sequential.push_back(x);
  CHECK(order != sequential);
}

TEST_CASE("IN-13 shuffle_batch_join: one worker per source", "[IN-13]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  auto opts = int_batch(5);
  opts.capacity = 30;
  opts.min_after_dequeue = 10;
  opts.allow_smaller_final_batch = true;
  auto shared = counter(77);
  auto b = shuffle_batch_join(pipe, {shared, shared, shared}, opts);
  CHECK(b.scope == "shuffle_batch_join");
  auto threads = pipe.start_queue_runners(coord);
  REQUIRE(threads.size() == 4);
  auto d = drain(pipe, b);
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  check_each(d, 77, 1);
}

TEST_CASE("IN-14 maybe_batch: keep_input filters examples and rows", "[IN-14]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  keep_fn even = [](const element& e) { return e[0].scalar_value<int32_t>() % 2 == 0; };
  auto opts = int_batch(4);
  opts.allow_smaller_final_batch = true;
  opts.num_threads = 2;
  auto b1 = maybe_batch(pipe, counter(40), even, opts);
  // enqueue_many: a vector keep_input filters the rows of each batch.
  auto next = std::make_shared<std::atomic<int32_t>>(0);
  example_fn threes = [next]() -> element {
    auto s = next->fetch_add(3);
    if (s >= 30)
      throw out_of_range_error("done");
    return element{tensor::vector<int32_t>({s, s + 1, s + 2})};
  };
  opts.enqueue_many = true;
  auto b2 = maybe_shuffle_batch(pipe, threes, even, [&] {
    auto o = opts;
    o.capacity = 20;
    o.min_after_dequeue = 2;
    return o;
  }());
  CHECK(b1.scope == "batch");
  auto threads = pipe.start_queue_runners(coord);
  auto d1 = drain(pipe, b1);
  auto d2 = drain(pipe, b2);
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  CHECK(d1.total == 20);
  CHECK(d2.total == 15);
  for (auto* d : {&d1, &d2})
    for (auto& [x, n] : d->count) {
      CHECK(x % 2 == 0);
      CHECK(n == 1);
    }
  // keep_input needs a source whose examples the helper sees.
  CHECK_THROWS_AS(maybe_batch(pipe, async_op([](async_run& r) { r.end(); }), even, opts),
                  argument_error);
}

TEST_CASE("IN-10 batch: dynamic_pad pads to the longest example of each batch",
          "[IN-10]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  auto next = std::make_shared<std::atomic<int32_t>>(0);
  example_fn ragged = [next]() -> element {
    auto i = next->fetch_add(1);
    if (i >= 6)
      throw out_of_range_error("done");
    return element{
        tensor::vector<int32_t>(std::vector<int32_t>(static_cast<size_t>(i + 1), i + 1))};
  };
  batch_options opts;
  opts.batch_size = 3;
  opts.dtypes = {dtype::int32};
  opts.shapes = {tensor_shape{tensor_shape::unknown_dim}};
  opts.dynamic_pad = true;
  auto b = batch(pipe, ragged, opts);
  auto threads = pipe.start_queue_runners(coord);
  auto in = pipe.make_consumer(b.queue);
  auto first = b.next(in);
  auto second = b.next(in);
  CHECK_THROWS_AS(b.next(in), out_of_range_error);
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  CHECK(first[0].shape() == tensor_shape{3, 3});
  CHECK(second[0].shape() == tensor_shape{3, 6});
  auto v = first[0].to_vector<int32_t>();
  CHECK(v == std::vector<int32_t>{1, 0, 0, 2, 2, 0, 3, 3, 3});
}

TEST_CASE("IN-10 validation: components and shapes", "[IN-10]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  batch_options none;
  none.batch_size = 2;
  CHECK(thrown<argument_error>([&] { batch(pipe, counter(1), none); }) ==
        "Expected at least one tensor in batch().");
  auto partial = int_batch(2);
  partial.shapes = {tensor_shape{tensor_shape::unknown_dim}};
  CHECK_THROWS_AS(batch(pipe, counter(1), partial), argument_error);
  partial.dynamic_pad = true;
  partial.shapes = {tensor_shape::unknown_rank()};
  CHECK(thrown<argument_error>([&] {
          batch(pipe, counter(1), partial);
        }).rfind("Cannot infer Tensor's rank", 0) == 0);
  CHECK(pipe.queue_runners().empty());
}

TEST_CASE("IN-10 IN-12 IN-16 summary tags and values", "[IN-10][IN-12][IN-16]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  input_summaries summaries{sys};
  auto opts = int_batch(4);
  opts.summaries = &summaries;
  auto b1 = batch(pipe, counter(10), opts);
  auto b2 = batch(pipe, counter(10), opts);
  opts.capacity = 32;
  opts.min_after_dequeue = 10;
  auto b3 = shuffle_batch(pipe, counter(15), opts);
  CHECK(b1.summary_tag == "batch/fraction_of_32_full");
  CHECK(b2.summary_tag == "batch_1/fraction_of_32_full");
  CHECK(b3.summary_tag == "shuffle_batch/fraction_over_10_of_22_full");
  coordinator coord{sys};
  auto threads = pipe.start_queue_runners(coord);
  coord.join(threads); // the counters run out and the runners end by themselves
  auto values = summaries.values();
  REQUIRE(values.size() == 3);
  CHECK(values[0].second == static_cast<float>(10) * static_cast<float>(1.0 / 32));
  CHECK(values[2].first == "shuffle_batch/fraction_over_10_of_22_full");
  CHECK(values[2].second == static_cast<float>(5) * static_cast<float>(1.0 / 22));
}

TEST_CASE("IN-10 batch: enqueue_many from an upstream queue (dequeue_up_to per run)",
          "[IN-10]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  producer_options po;
  po.num_epochs = 2;
  po.seed = 17;
  auto indices = range_input_producer(pipe, 45, po);
  auto opts = int_batch(10);
  opts.enqueue_many = true;
  opts.num_threads = 2;
  opts.allow_smaller_final_batch = true;
  auto b = batch(pipe, example_source::dequeue_from(indices, 6), opts);
  auto threads = pipe.start_queue_runners(coord);
  auto d = drain(pipe, b);
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  check_each(d, 45, 2);
  CHECK(d.batch_sizes.back() == 90 % 10 + (90 % 10 == 0 ? 10 : 0));
}

TEST_CASE("IN-12 shuffle_batch: a stop ends endless blocking sources cleanly",
          "[IN-12][QR-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  example_fn endless = [] { return element{tensor::vector<int32_t>({1, 2, 3, 4})}; };
  auto opts = int_batch(8);
  opts.enqueue_many = true;
  opts.num_threads = 3;
  opts.capacity = 40;
  opts.min_after_dequeue = 16;
  auto b = shuffle_batch(pipe, endless, opts);
  auto threads = pipe.start_queue_runners(coord);
  auto in = pipe.make_consumer(b.queue);
  for (int i = 0; i < 50; ++i)
    CHECK(b.next(in).batch_size() == 8);
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  CHECK_FALSE(coord.status().error);
}
