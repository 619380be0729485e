// direct_batch_op in a checkpointed pipeline (docs/resume.md; docs/semantics.md
// RS-14): the rows its own queue_writer streamed are in the snapshot, none
// left in the writer, though its queue is full and nobody dequeues while the
// pipeline is paused.

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "quern/blocking_queue.hpp"
#include "quern/input/batching.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue.hpp"
#include "quern/queue_runner.hpp"
#include "quern/state_bytes.hpp"

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
