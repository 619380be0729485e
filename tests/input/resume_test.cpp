// Exact resume of a running pipeline (docs/resume.md, docs/semantics.md RS-4..RS-6),
// in the style of TensorFlow's checkpoint_test_base.verify_run_with_breaks: a run
// that takes a snapshot at a random step, goes on a little (work that is lost),
// and is thrown away; a pipeline built the same way (with another number of
// threads, too) restored from the snapshot delivers the rest. Together they
// deliver what the unbroken run does: every example exactly num_epochs times,
// and, where the unbroken run's order is fixed, the same order.

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include "quern/coordinator.hpp"

#include "resume_checks.hpp"
#include "resume_pipeline.hpp"
#include "temp_dir.hpp"

using namespace quern;
using namespace quern::test;

namespace {

/// A byte of a checkpoint file changed, as a crash may leave it: its
/// checksums refuse it.
void damage(const std::string& path) {
  std::fstream f{path, std::ios::in | std::ios::out | std::ios::binary};
  f.seekp(40);
  f.put('\x7f');
}

} // namespace

TEST_CASE("RS-4 a run broken at random steps and restored delivers what the unbroken run "
          "delivers, in its order",
          "[RS-4]") {
  auto kind = GENERATE(shape::fifo_batch, shape::padded_batch);
  setup s;
  s.kind = kind;
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
          "deliver every example num_epochs times, taken one call a batch or by a batch "
          "reader",
          "[RS-5][RS-17]") {
  std::mt19937 gen{7};
  for (auto& [how, take] : {std::pair{"one call a batch", taker{by_consumer}},
                            std::pair{"a batch reader", taker{by_batch_reader}}}) {
    for (auto kind : {shape::shuffle_batch, shape::batch_join}) {
      for (auto [before, after] : {std::pair{1, 3}, std::pair{3, 8}, std::pair{8, 1}}) {
        setup s;
        s.kind = kind;
        s.threads = before;
        int at = std::uniform_int_distribution<int>{1, 40}(gen);
        INFO(how << ", kind " << static_cast<int>(kind) << ", threads " << before
                 << " -> " << after << ", break at " << at);
        check_each_epochs_times(with_break(s, at, 3, after, take), s);
      }
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

TEST_CASE("RS-7 checkpoint files: restore=true goes on from the newest one that reads",
          "[RS-7][CK-5]") {
  temp_dir dir;
  setup s;
  s.kind = shape::fifo_batch;
  auto expected = unbroken(s);
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline_options po;
  po.checkpoint_dir = dir.path();
  po.restore = true;
  values out;
  {
    built p{sys, s, po};
    p.pipe.start_queue_runners(); // nothing to restore yet
    CHECK(p.pipe.restored_step() == 0);
    auto in = p.pipe.make_consumer(p.b.queue);
    consume(in, p.b, 5, out);
    CHECK(p.pipe.checkpoint(5) == checkpoint_path(dir.path(), 5));
    values later;
    consume(in, p.b, 4, later);
    p.pipe.checkpoint(9);
  }
  SECTION("the newest") {
    built p{sys, s, po};
    p.pipe.start_queue_runners();
    CHECK(p.pipe.restored_step() == 9);
    values rest;
    auto in = p.pipe.make_consumer(p.b.queue);
    consume(in, p.b, std::nullopt, rest);
    values first_nine(expected.begin(), expected.begin() + 36);
    first_nine.insert(first_nine.end(), rest.begin(), rest.end());
    CHECK(first_nine == expected);
  }
  SECTION("a damaged newest falls back to the one before") {
    auto newest = checkpoint_path(dir.path(), 9);
    damage(newest);
    built p{sys, s, po};
    p.pipe.start_queue_runners();
    CHECK(p.pipe.restored_step() == 5);
    auto in = p.pipe.make_consumer(p.b.queue);
    consume(in, p.b, std::nullopt, out);
    CHECK(out == expected);
  }
}

TEST_CASE("CK-6 a pipeline that syncs every third checkpoint keeps its newest synced "
          "file, and a damaged newer one falls back to it",
          "[CK-6][RS-7]") {
  temp_dir dir;
  setup s;
  s.kind = shape::fifo_batch;
  auto expected = unbroken(s);
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline_options po;
  po.checkpoint_dir = dir.path();
  po.restore = true;
  po.keep_checkpoints = 1;
  po.sync_checkpoints_every = 3;
  values out;
  {
    built p{sys, s, po};
    p.pipe.start_queue_runners();
    auto in = p.pipe.make_consumer(p.b.queue);
    // Steps 1 and 4 are synced; the files after each checkpoint:
    std::vector<std::vector<int64_t>> kept{{1}, {1, 2}, {1, 3}, {4}, {4, 5}};
    for (int64_t step = 1; step <= 5; ++step) {
      consume(in, p.b, 1, out);
      p.pipe.checkpoint(step);
      p.pipe.wait_checkpoint();
      std::vector<std::string> want;
      for (auto k : kept[static_cast<size_t>(step - 1)])
        want.push_back(checkpoint_path(dir.path(), k));
      INFO("after the checkpoint at step " << step);
      CHECK(list_checkpoints(dir.path()) == want);
    }
    po.sync_checkpoints_every = 0;
    built refused{sys, s, po};
    CHECK_THROWS_AS(refused.pipe.checkpoint(1), invalid_argument_error);
    po.sync_checkpoints_every = 1;
    po.checkpoint_pause_limit = caf::timespan::zero();
    built no_wait{sys, s, po};
    CHECK_THROWS_WITH(
        no_wait.pipe.checkpoint(1),
        Catch::Contains("checkpoint_pause_limit must be more than 0, not 0 s"));
    CHECK(list_checkpoints(dir.path()).size() == 2); // nothing written
  }
  // The machine crashed before step 5's file reached the disk: it is
  // damaged, and the restore goes on from step 4, the synced one.
  damage(checkpoint_path(dir.path(), 5));
  built p{sys, s, po};
  p.pipe.start_queue_runners();
  CHECK(p.pipe.restored_step() == 4);
  auto in = p.pipe.make_consumer(p.b.queue);
  values rest;
  consume(in, p.b, std::nullopt, rest);
  values first_four(expected.begin(), expected.begin() + 16);
  first_four.insert(first_four.end(), rest.begin(), rest.end());
  CHECK(first_four == expected);
}

TEST_CASE("RS-7 threads that share a pipeline checkpoint it in turns, every file whole",
          "[RS-7][CK-6]") {
  temp_dir dir;
  setup s;
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline_options po;
  po.checkpoint_dir = dir.path();
  po.keep_checkpoints = 100;
  po.sync_checkpoints_every = 3;
  built p{sys, s, po};
  p.pipe.start_queue_runners();
  std::vector<std::thread> threads;
  for (int64_t t = 0; t < 2; ++t)
    threads.emplace_back([&p, t] {
      for (int64_t i = 0; i < 10; ++i)
        p.pipe.checkpoint(100 * t + i);
    });
  for (auto& t : threads)
    t.join();
  p.pipe.wait_checkpoint();
  auto files = list_checkpoints(dir.path());
  REQUIRE(files.size() == 20);
  for (auto& f : files)
    CHECK_NOTHROW(read_checkpoint(f));
}

TEST_CASE("CK-2 a checkpoint written in the background that fails throws at the wait, "
          "and the next one is written",
          "[CK-2][RS-7]") {
  temp_dir dir;
  setup s;
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline_options po;
  po.checkpoint_dir = dir.path() + "/ckpt";
  built p{sys, s, po};
  p.pipe.start_queue_runners();
  auto in = p.pipe.make_consumer(p.b.queue);
  values out;
  consume(in, p.b, 1, out);
  auto first = p.pipe.checkpoint(1);
  p.pipe.wait_checkpoint();
  // The directory taken away and a file put in its place: the next write
  // cannot make it.
  std::filesystem::remove_all(po.checkpoint_dir);
  std::ofstream{po.checkpoint_dir} << "not a directory";
  consume(in, p.b, 1, out);
  auto second = p.pipe.checkpoint(2); // returns: the file is written later
  CHECK(second == checkpoint_path(po.checkpoint_dir, 2));
  CHECK_THROWS_WITH(
      p.pipe.wait_checkpoint(),
      Catch::Contains("cannot create checkpoint directory '" + po.checkpoint_dir + "'"));
  p.pipe.wait_checkpoint(); // the error is thrown once
  std::filesystem::remove(po.checkpoint_dir);
  consume(in, p.b, 1, out);
  auto third = p.pipe.checkpoint(3);
  p.pipe.wait_checkpoint();
  CHECK(read_checkpoint(third).step == 3);
  CHECK(list_checkpoints(po.checkpoint_dir) == std::vector<std::string>{third});
  CHECK(first == checkpoint_path(po.checkpoint_dir, 1));
}

TEST_CASE("RS-7 a process killed with SIGKILL after its checkpoint is resumed exactly",
          "[RS-7]") {
  for (auto [kind, before, after] :
       {std::tuple{shape::fifo_batch, 1, 1}, std::tuple{shape::shuffle_batch, 3, 1},
        std::tuple{shape::batch_join, 1, 8}}) {
    temp_dir dir;
    setup s;
    s.kind = kind;
    s.threads = before;
    int at = 17;
    auto cmd = "exec " + std::string{QUERN_RESUME_CHILD_PATH} + " " + dir.path() + " " +
               std::to_string(static_cast<int>(kind)) + " " + std::to_string(before) +
               " " + std::to_string(at) + " 6";
    INFO(cmd);
    auto status = std::system(cmd.c_str());
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    values out;
    {
      std::ifstream f{dir / "delivered"};
      for (int32_t x; f >> x;)
        out.push_back(x);
    }
    REQUIRE(out.size() == static_cast<size_t>(at * 4));
    quern::config cfg;
    caf::actor_system sys{cfg};
    pipeline_options po;
    po.checkpoint_dir = dir.path();
    po.restore = true;
    s.threads = after;
    built p{sys, s, po};
    p.pipe.start_queue_runners();
    CHECK(p.pipe.restored_step() == at);
    auto in = p.pipe.make_consumer(p.b.queue);
    consume(in, p.b, std::nullopt, out);
    if (kind == shape::fifo_batch)
      CHECK(out == unbroken(s));
    check_each_epochs_times(out, s);
  }
}

TEST_CASE("RS-6 a function source without state refuses the checkpoint, naming it",
          "[RS-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  int32_t next = 0;
  batch_options o;
  o.batch_size = 2;
  o.dtypes = {dtype::int32};
  o.shapes = {tensor_shape{}};
  auto b =
      batch(pipe, example_source{[&next] { return element{tensor::scalar(next++)}; }}, o);
  pipe.start_queue_runners();
  auto in = pipe.make_consumer(b.queue);
  b.next(in);
  CHECK_THROWS_WITH(pipe.snapshot(1),
                    Catch::Contains("cannot checkpoint source 0 of 'batch'") &&
                        Catch::Contains("stateless()"));
  // Nothing changed: the pipeline runs on.
  CHECK(b.next(in)[0].to_vector<int32_t>().size() == 2);
  SECTION("declared stateless, it is checkpointed") {
    pipeline other{sys};
    auto c = batch(other, example_source{[] {
                            return element{tensor::scalar(int32_t{7})};
                          }}.stateless(),
                   o);
    other.start_queue_runners();
    auto in2 = other.make_consumer(c.queue);
    c.next(in2);
    auto snap = other.snapshot(1);
    CHECK(snap.queues.count("batch") == 1);
  }
}
