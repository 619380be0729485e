// direct_batch_op in a checkpointed pipeline (docs/resume.md; docs/semantics.md
// RS-14): the rows its own queue_writer streamed are in the snapshot, none
// left in the writer, though its queue is full and nobody dequeues while the
// pipeline is paused. A before_pause function that says its rows did not
// reach their queue in time fails the snapshot instead (RS-15).

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "quern/blocking_queue.hpp"
#include "quern/input/batching.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue.hpp"
#include "quern/queue_runner.hpp"
#include "quern/state_bytes.hpp"

#include "eventually.hpp"

using namespace quern;
using namespace std::chrono_literals;

namespace {

std::vector<int64_t> values_of(const std::vector<element>& batches) {
  std::vector<int64_t> out;
  for (auto& b : batches)
    for (auto v : b[0].values<int64_t>())
      out.push_back(v);
  return out;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (auto i = from; i < to; ++i)
    out.push_back(i);
  return out;
}

} // namespace

TEST_CASE("RS-14 direct_batch_op: what its writer streamed is in the snapshot, its queue "
          "full",
          "[RS-14]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  // A queue of 8 rows, a writer of up to 32 in flight: the op is mostly
  // waiting for room, with rows in the writer and waiting at the queue.
  auto rows = spawn_fifo_queue(sys, 8, {dtype::int64}, {{}}, "rows");
  auto next = std::make_shared<std::atomic<int64_t>>(0);
  auto op = direct_batch_op(
      sys, rows,
      [next] {
        std::vector<int64_t> v(4);
        for (auto& x : v)
          x = (*next)++;
        return element{tensor::vector<int64_t>(std::move(v))};
      },
      {}, 32, "feed");
  pipeline_options po;
  po.checkpoint_pause_limit = 5s; // a worker that does not pause fails the snapshot
  pipeline pipe{sys, po};
  pipe.add_checkpoint_part(
      "next",
      [next] {
        state_writer w;
        w.write_i64(*next);
        return w.take();
      },
      [next](const std::string& bytes) {
        state_reader r{bytes, "next"};
        *next = r.read_i64();
      });
  queue_runner_options qo;
  qo.name = "feed";
  qo.close_op = std::nullopt;
  pipe.add_queue_runner(queue_runner{rows, {op}, qo});
  pipe.start_queue_runners();
  blocking_queue in{sys, rows};
  int64_t taken = 0;
  for (int i = 0; i < 20; ++i) {
    auto s = pipe.snapshot(i);
    state_reader r{s.parts.at("next"), "next"};
    auto made = r.read_i64();
    auto& q = s.queues.at("rows");
    auto held = values_of(q.stored);
    for (auto v : values_of(q.waiting))
      held.push_back(v);
    // Every value made and not taken, in order, at the queue.
    CHECK(held == range(taken, made));
    taken += static_cast<int64_t>(values_of({in.dequeue_many(4)}).size());
  }
  pipe.stop();
  in.close(true);
}

TEST_CASE("RS-14 RS-15 a before_pause function that returns false fails the snapshot "
          "naming its worker, and the pipeline runs on",
          "[RS-14][RS-15]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto rows = spawn_fifo_queue(sys, -1, {dtype::int64}, {{}}, "rows");
  auto next = std::make_shared<std::atomic<int64_t>>(0);
  // What a queue_writer::settle says when its queue did not answer in
  // time (queue_stream_test.cpp shows it): false while `late`.
  auto late = std::make_shared<std::atomic<bool>>(true);
  auto asked = std::make_shared<std::atomic<int>>(0);
  // The bound it is given: the checkpoint's pause limit, so that a settle
  // bounded by it gives up when the checkpoint does.
  auto bound = std::make_shared<std::atomic<int64_t>>(0);
  auto op = blocking_op([next, late, asked, bound](blocking_run& run) {
    if (run.index() == 0)
      run.before_pause([late, asked, bound, r = &run] {
        ++*asked;
        *bound = std::chrono::duration_cast<std::chrono::milliseconds>(r->pause_limit())
                     .count();
        return !late->load();
      });
    std::this_thread::sleep_for(1ms); // a pace, no more rows than needed
    run.emit(element{tensor::scalar(next->load())});
    ++*next;
  });
  pipeline_options po;
  po.checkpoint_pause_limit = 1500ms;
  pipeline pipe{sys, po};
  queue_runner_options qo;
  qo.name = "unsettled";
  qo.close_op = std::nullopt;
  pipe.add_queue_runner(queue_runner{rows, {op}, qo});
  pipe.start_queue_runners();
  blocking_queue in{sys, rows};
  CHECK(in.dequeue()[0].scalar_value<int64_t>() == 0);
  std::string why = "not refused";
  try {
    pipe.snapshot(1);
  } catch (const deadline_exceeded_error& e) {
    why = e.what();
  }
  CHECK(*asked == 1);
  CHECK(*bound == 1500);
  CHECK_THAT(why, Catch::Contains("checkpoint at step 1 not taken"));
  CHECK_THAT(why, Catch::Contains("'unsettled"));
  // The worker's own reason, after its name.
  CHECK_THAT(why, Catch::Contains("' (the rows its op wrote did not reach their queue "
                                  "within the pause limit) did not pause within 1.5 s"));
  CHECK_THAT(why, Catch::Contains("nothing was saved and the pipeline runs on"));
  // It runs on: the next rows come, in order, and once its rows are
  // settled the next snapshot is taken with every row made and not taken.
  CHECK(in.dequeue()[0].scalar_value<int64_t>() == 1);
  *late = false;
  // A row made since (the op makes one a millisecond), so that the
  // snapshot has rows to hold whatever the machine's load.
  REQUIRE(test::eventually([&] { return in.size() > 0; }));
  auto s = pipe.snapshot(2);
  CHECK(*asked == 2);
  auto held = values_of(s.queues.at("rows").stored);
  REQUIRE_FALSE(held.empty());
  CHECK(held == range(2, held.back() + 1));
  pipe.stop();
  in.close(true);
}
