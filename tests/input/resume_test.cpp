// Exact resume of a running pipeline (docs/resume.md, docs/semantics.md RS-4..RS-6),
// in the style of TensorFlow's checkpoint_test_base.verify_run_with_breaks: a run
// that takes a snapshot at a random step, goes on a little (work that is lost),
// and is thrown away; a pipeline built the same way (with another number of
// threads, too) restored from the snapshot delivers the rest. Together they
// deliver what the unbroken run does: every example exactly num_epochs times,
// and, where the unbroken run's order is fixed, the same order.

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "quern/coordinator.hpp"
#include "quern/input/batching.hpp"
#include "quern/input/producers.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"

using namespace quern;

namespace {

using values = std::vector<int32_t>;

enum class shape { fifo_batch, shuffle_batch, batch_join };

struct setup {
  shape kind = shape::fifo_batch;
  int32_t examples = 60;
  int64_t epochs = 3;
  int32_t threads = 1;
};

/// A pipeline of range_input_producer -> a batching helper fed from the
/// producer's queue by `threads` async workers, with its consumer.
struct built {
  pipeline pipe;
  batched b;

  built(caf::actor_system& sys, const setup& s) : pipe{sys} {
    producer_options po;
    po.num_epochs = s.epochs;
    po.seed = 11;
    po.capacity = 16;
    auto indices = range_input_producer(pipe, s.examples, po);
    batch_options o;
    o.batch_size = 4;
    o.dtypes = {dtype::int32};
    o.shapes = {tensor_shape{}};
    o.allow_smaller_final_batch = true;
    o.num_threads = s.threads;
    switch (s.kind) {
    case shape::fifo_batch:
      o.capacity = 8;
      b = batch(pipe, example_source::dequeue_from(indices, 3), o);
      break;
    case shape::shuffle_batch:
      o.min_after_dequeue = 10;
      o.capacity = 30;
      o.seed = 5;
      b = shuffle_batch(pipe, example_source::dequeue_from(indices, 3), o);
      break;
    case shape::batch_join: {
      o.capacity = 10;
      std::vector<example_source> sources;
      for (int32_t i = 0; i < s.threads; ++i)
        sources.push_back(example_source::dequeue_from(indices, 2));
      b = batch_join(pipe, std::move(sources), o);
      break;
    }
    }
  }
};

/// Appends the values of up to `steps` batches (all of them when none);
/// returns false at the end of the data.
bool consume(consumer& in, const batched& b, std::optional<int> steps, values& out) {
  for (int i = 0; !steps || i < *steps; ++i) {
    try {
      for (auto x : b.next(in)[0].to_vector<int32_t>())
        out.push_back(x);
    } catch (const out_of_range_error&) {
      return false;
    }
  }
  return true;
}

values unbroken(const setup& s) {
  quern::config cfg;
  caf::actor_system sys{cfg};
  built p{sys, s};
  p.pipe.start_queue_runners();
  auto in = p.pipe.make_consumer(p.b.queue);
  values out;
  consume(in, p.b, std::nullopt, out);
  return out;
}

/// Delivers `at` steps, takes a snapshot, delivers `lost` more steps (lost
/// with the pipeline), then restores a pipeline with `restored_threads`
/// threads and delivers the rest.
values with_break(setup s, int at, int lost, int32_t restored_threads) {
  quern::config cfg;
  caf::actor_system sys{cfg};
  values out;
  pipeline_snapshot snap;
  {
    built p{sys, s};
    p.pipe.start_queue_runners();
    auto in = p.pipe.make_consumer(p.b.queue);
    consume(in, p.b, at, out);
    snap = p.pipe.snapshot(at);
    values wasted;
    consume(in, p.b, lost, wasted);
  } // the pipeline is gone, as in a crash after the checkpoint
  s.threads = restored_threads;
  built p{sys, s};
  p.pipe.restore(snap);
  CHECK(p.pipe.restored_step() == at);
  p.pipe.start_queue_runners();
  auto in = p.pipe.make_consumer(p.b.queue);
  consume(in, p.b, std::nullopt, out);
  return out;
}

std::map<int32_t, int> counts(const values& v) {
  std::map<int32_t, int> c;
  for (auto x : v)
    ++c[x];
  return c;
}

void check_each_epochs_times(const values& v, const setup& s) {
  auto c = counts(v);
  CHECK(c.size() == static_cast<size_t>(s.examples));
  for (auto& [x, n] : c) {
    INFO("example " << x);
    CHECK(n == s.epochs);
  }
}

} // namespace

TEST_CASE("RS-4 a run broken at random steps and restored delivers what the unbroken run "
          "delivers, in its order",
          "[RS-4]") {
  setup s;
  s.kind = shape::fifo_batch;
  auto expected = unbroken(s);
  REQUIRE(expected.size() == static_cast<size_t>(s.examples * s.epochs));
  std::mt19937 gen{20261128};
  const int steps = static_cast<int>(expected.size() + 3) / 4;
  for (int round = 0; round < 6; ++round) {
    int at = std::uniform_int_distribution<int>{0, steps}(gen);
    int lost = std::uniform_int_distribution<int>{0, 5}(gen);
    INFO("break at step " << at << ", " << lost << " steps lost");
    CHECK(with_break(s, at, lost, 1) == expected);
  }
}

TEST_CASE("RS-5 shuffle_batch and batch_join restored with another number of threads "
          "deliver every example num_epochs times",
          "[RS-5]") {
  std::mt19937 gen{7};
  for (auto kind : {shape::shuffle_batch, shape::batch_join}) {
    for (auto [before, after] : {std::pair{1, 3}, std::pair{3, 8}, std::pair{8, 1}}) {
      setup s;
      s.kind = kind;
      s.threads = before;
      int at = std::uniform_int_distribution<int>{1, 40}(gen);
      INFO("kind " << static_cast<int>(kind) << ", threads " << before << " -> " << after
                   << ", break at " << at);
      check_each_epochs_times(with_break(s, at, 3, after), s);
    }
  }
}

TEST_CASE("RS-5 a snapshot at the very start and one after the end of the data",
          "[RS-5]") {
  setup s;
  s.kind = shape::shuffle_batch;
  s.threads = 2;
  check_each_epochs_times(with_break(s, 0, 0, 2), s);
  // Past the end: the restored pipeline ends at once.
  check_each_epochs_times(with_break(s, 1000, 0, 2), s);
}

TEST_CASE("RS-6 restore refuses a pipeline built otherwise, and a started one",
          "[RS-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  setup s;
  pipeline_snapshot snap;
  {
    built p{sys, s};
    p.pipe.start_queue_runners();
    auto in = p.pipe.make_consumer(p.b.queue);
    values out;
    consume(in, p.b, 2, out);
    snap = p.pipe.snapshot(2);
  }
  SECTION("another pipeline") {
    s.kind = shape::shuffle_batch; // its queue is `shuffle_batch`, not `batch`
    built p{sys, s};
    CHECK_THROWS_WITH(p.pipe.restore(snap),
                      Catch::Contains("queue 'shuffle_batch' of this pipeline is not in "
                                      "the checkpoint"));
  }
  SECTION("a started pipeline") {
    built p{sys, s};
    p.pipe.start_queue_runners();
    CHECK_THROWS_AS(p.pipe.restore(snap), failed_precondition_error);
  }
  SECTION("a damaged part") {
    built p{sys, s};
    snap.parts.begin()->second = "garbage";
    CHECK_THROWS_AS(p.pipe.restore(snap), data_loss_error);
  }
}
