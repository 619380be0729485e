// Exact resume of a pipeline whose batches are taken with a batch reader
// (pipeline::make_batch_reader, docs/resume.md, docs/semantics.md RS-17): the
// batches it had received and not handed out are in the snapshot, and the
// restored pipeline's reader hands them out first.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "quern/coordinator.hpp"
#include "quern/queue_runner.hpp"

#include "resume_checks.hpp"
#include "resume_pipeline.hpp"

using namespace quern;
using namespace quern::test;

namespace {

/// The batch reader of a built pipeline, as its run takes batches.
batch_reader reader_of(built& p, size_t window = 8) {
  return p.pipe.make_batch_reader(p.b.queue, p.b.batch_size, p.b.cut(), window);
}

/// The batches held at a snapshot of the resume pipeline.
size_t held_of(const pipeline_snapshot& snap) {
  size_t n = 0;
  for (auto& [queue, batches] : snap.held)
    n += batches.size();
  return n;
}

} // namespace

TEST_CASE("RS-17 a run taking batches with a batch reader, broken at random steps and "
          "restored, delivers what the unbroken run delivers, in its order",
          "[RS-17]") {
  auto kind = GENERATE(shape::fifo_batch, shape::padded_batch);
  setup s;
  s.kind = kind;
  auto expected = unbroken(s, by_batch_reader);
  REQUIRE(expected.size() == static_cast<size_t>(s.examples * s.epochs));
  std::mt19937 gen{20261129};
  const int steps = static_cast<int>(expected.size() + 3) / 4;
  size_t held = 0;
  for (int round = 0; round < 8; ++round) {
    int at = std::uniform_int_distribution<int>{0, steps}(gen);
    int lost = std::uniform_int_distribution<int>{0, 5}(gen);
    INFO("break at step " << at << ", " << lost << " steps lost");
    pipeline_snapshot snap;
    CHECK(with_break(s, at, lost, 1, by_batch_reader, &snap) == expected);
    held += held_of(snap);
  }
  // The snapshots held batches on their way to the consumer: the case the
  // test is about happened.
  CHECK(held > 0);
}

TEST_CASE("RS-17 held batches are refused by a consumer and by a reader they do not "
          "fit, and handed out by one they fit",
          "[RS-17]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  setup s;
  values first;
  pipeline_snapshot snap;
  {
    built p{sys, s};
    p.pipe.start_queue_runners();
    auto in = reader_of(p);
    // A pull grants again what a snapshot withdrew; the reader then holds
    // what the queue has ready: pull until a snapshot finds some held.
    for (int i = 0; i < 200 && snap.held.empty(); ++i) {
      consume(in, 1, first);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      snap = p.pipe.snapshot(i + 1);
    }
  }
  REQUIRE(snap.held.count("batch") == 1);
  auto held = snap.held.at("batch").size();
  REQUIRE(held > 0);
  built p{sys, s};
  p.pipe.restore(snap);
  p.pipe.start_queue_runners();
  CHECK_THROWS_WITH(
      p.pipe.make_consumer(p.b.queue),
      Catch::Contains("holds " + std::to_string(held) +
                      " batches that the batch reader of queue 'batch'") &&
          Catch::Contains("a consumer (make_consumer) cannot hand them out"));
  CHECK_THROWS_WITH(
      p.pipe.make_batch_reader(p.b.queue, 3, batch_cut::dequeue_many),
      Catch::Contains("batch size 3 that cuts dequeue_many cannot hand them "
                      "out"));
  // Refused, they are still there for the reader they fit.
  auto in = reader_of(p);
  consume(in, std::nullopt, first);
  CHECK(first == unbroken(s, by_batch_reader));
}

TEST_CASE("RS-17 a checkpoint file keeps the held batches, and one damaged is refused",
          "[RS-17]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  setup s;
  built p{sys, s};
  p.pipe.start_queue_runners();
  auto in = reader_of(p);
  values out;
  pipeline_snapshot snap;
  for (int i = 0; i < 200 && snap.held.empty(); ++i) {
    consume(in, 1, out);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    snap = p.pipe.snapshot(i + 1);
  }
  REQUIRE(!snap.held.empty());
  auto c = pipeline::to_checkpoint(snap);
  REQUIRE(c.sections.count("held/batch") == 1);
  auto back = pipeline::from_checkpoint(c);
  CHECK(back.held.at("batch") == snap.held.at("batch"));
  SECTION("a newer version") {
    c.sections.at("held/batch")[0] = '\x02';
    CHECK_THROWS_WITH(
        pipeline::from_checkpoint(c),
        Catch::Contains("batches held by the batch reader of queue 'batch'") &&
            Catch::Contains("version 2"));
  }
  SECTION("cut short") {
    auto& bytes = c.sections.at("held/batch");
    bytes.resize(bytes.size() - 1);
    CHECK_THROWS_AS(pipeline::from_checkpoint(c), data_loss_error);
  }
  SECTION("a queue this pipeline does not have") {
    snap.held["elsewhere"] = snap.held.at("batch");
    built other{sys, s};
    CHECK_THROWS_WITH(
        other.pipe.restore(snap),
        Catch::Contains("queue 'elsewhere' whose batch reader held batches"));
  }
}

TEST_CASE("RS-17 a snapshot waits for another thread's pull a bounded time, and the "
          "reader goes on after it",
          "[RS-17]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline_options po;
  po.checkpoint_pause_limit = std::chrono::milliseconds(200);
  pipeline pipe{sys, po};
  auto q = spawn_fifo_queue(sys, 10, {dtype::int32}, {tensor_shape{}});
  auto in = pipe.make_batch_reader(q, 2, batch_cut::dequeue_many, 4);
  std::thread puller{[&] { (void)in.try_pull(); }}; // waits: the queue is empty
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_THROWS_WITH(pipe.snapshot(1),
                    Catch::Contains("batch reader of queue") &&
                        Catch::Contains("in a pull() of another thread"));
  blocking_queue{sys, q}.enqueue_many({tensor::vector<int32_t>({1, 2, 3, 4})});
  puller.join();
  // Between pulls the snapshot takes what the reader holds, and the reader
  // still hands it out.
  auto snap = pipe.snapshot(1);
  auto batch = in.pull();
  CHECK(batch[0].to_vector<int32_t>().size() == 2);
  if (auto i = snap.held.begin(); i != snap.held.end()) {
    REQUIRE(i->second.size() == 1);
    CHECK(i->second[0] == batch);
  }
  blocking_queue{sys, q}.close();
}

TEST_CASE("RS-17 threads that share a pipeline's batch reader while snapshots are taken "
          "get every example num_epochs times",
          "[RS-17]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  setup s;
  built p{sys, s};
  p.pipe.start_queue_runners();
  auto reader = reader_of(p);
  std::mutex mtx;
  values out;
  auto pull_all = [&] {
    while (auto b = reader.try_pull()) {
      std::lock_guard<std::mutex> guard{mtx};
      for (auto x : (*b)[0].to_vector<int32_t>())
        out.push_back(x);
    }
  };
  std::thread first{pull_all}, second{pull_all};
  // Each snapshot withdraws the shared reader's demand between two pulls;
  // the next pull of either thread grants again.
  for (int i = 0; i < 20; ++i) {
    CHECK_NOTHROW(p.pipe.snapshot(i));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  first.join();
  second.join();
  check_each_epochs_times(out, s);
}

TEST_CASE("RS-17 a snapshot refused after its batch readers were settled leaves them "
          "whole, the next snapshot is taken and no row is lost or twice",
          "[RS-17]") {
  using namespace std::chrono_literals;
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto rows = spawn_fifo_queue(sys, -1, {dtype::int64}, {{}}, "rows");
  auto next = std::make_shared<std::atomic<int64_t>>(0);
  // Refuses to pause while `late`: the snapshot fails after the reader's
  // withdrawal was sent, and awaits its answers all the same.
  auto late = std::make_shared<std::atomic<bool>>(true);
  auto op = blocking_op([next, late](blocking_run& run) {
    if (run.index() == 0)
      run.before_pause([late] { return !late->load(); });
    std::this_thread::sleep_for(1ms); // a pace, no more rows than needed
    run.emit(element{tensor::scalar(next->load())});
    ++*next;
  });
  pipeline_options po;
  po.checkpoint_pause_limit = 300ms;
  pipeline pipe{sys, po};
  queue_runner_options qo;
  qo.name = "paced";
  qo.close_op = std::nullopt;
  pipe.add_queue_runner(queue_runner{rows, {op}, qo});
  coordinator coord{sys};
  auto threads = pipe.start_queue_runners(coord);
  auto reader = pipe.make_batch_reader(rows, 4, batch_cut::any_size, 8);
  std::vector<int64_t> out;
  auto take = [&](const element& b) {
    for (auto v : b[0].values<int64_t>())
      out.push_back(v);
  };
  for (int i = 0; i < 3; ++i)
    take(reader.pull());
  CHECK_THROWS_AS(pipe.snapshot(1), deadline_exceeded_error);
  take(reader.pull());
  late->store(false);
  auto snap = pipe.snapshot(2);
  // What the snapshot holds follows what was taken, with no gap.
  std::vector<int64_t> kept;
  for (auto& [queue, batches] : snap.held)
    for (auto& b : batches)
      for (auto v : b[0].values<int64_t>())
        kept.push_back(v);
  for (auto& b : snap.queues.at("rows").stored)
    for (auto v : b[0].values<int64_t>())
      kept.push_back(v);
  for (size_t i = 0; i < kept.size(); ++i)
    CHECK(kept[i] == static_cast<int64_t>(out.size() + i));
  for (int i = 0; i < 3; ++i)
    take(reader.pull());
  coord.request_stop(); // the runner's cancel closes the queue
  coord.join(threads);
  while (auto b = reader.try_pull())
    take(*b);
  // Every row the runner stored, in order, once.
  REQUIRE(out.size() >= 6);
  for (size_t i = 0; i < out.size(); ++i)
    CHECK(out[i] == static_cast<int64_t>(i));
}
