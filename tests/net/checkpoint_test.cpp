// Checkpoints across processes (docs/resume.md): a queue of another process
// snapshotted and restored through its node, and a pipeline that refuses to
// checkpoint one.
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include <quern/blocking_queue.hpp>
#include <quern/pipeline.hpp>
#include <quern/queue.hpp>
#include <quern/remote.hpp>

#include "harness.hpp"

using namespace std::chrono_literals;
using namespace quern::test;

namespace {

std::vector<int64_t> values_of(const std::vector<quern::element>& batches) {
  std::vector<int64_t> out;
  for (auto& b : batches)
    for (auto v : b[0].values<int64_t>())
      out.push_back(v);
  return out;
}

} // namespace

TEST_CASE("distributed RS-10 a queue of another process is snapshotted and restored "
          "through its node") {
  scratch_dir dir;
  auto host = start_host(dir, {"--node.capacity=4"});
  {
    quern::remote_config cfg;
    quern::actor_system sys{cfg};
    auto node = quern::connect(sys, host.address);
    quern::blocking_queue rows{sys, node.queue("rows")};
    for (int64_t i = 0; i < 4; ++i)
      rows.enqueue(quern::element{quern::tensor::scalar(i)});
    // A fifth enqueue waits for room at the full queue.
    std::thread waiting{
        [&] { rows.enqueue(quern::element{quern::tensor::scalar(int64_t{4})}); }};
    quern::queue_state s;
    bool seen = eventually(run_limit, [&] {
      s = rows.snapshot();
      return s.waiting_rows() == 1;
    });
    REQUIRE(seen);
    CHECK(values_of(s.stored) == std::vector<int64_t>{0, 1, 2, 3});
    CHECK(values_of(s.waiting) == std::vector<int64_t>{4});
    CHECK_FALSE(s.closed);
    CHECK(rows.size() == 4); // a snapshot takes nothing away

    // Into the host's other queue, never used: the rows come back in order,
    // the waiting one after the stored ones, then the close that waited.
    quern::blocking_queue moved{sys, node.queue("moved")};
    s.close_waiting = true;
    moved.restore(s);
    auto back = moved.dequeue_many(5);
    CHECK(values_of({back}) == std::vector<int64_t>{0, 1, 2, 3, 4});
    CHECK_THROWS_AS(moved.dequeue(), quern::out_of_range_error);

    // A used queue refuses, and the refusal crosses with its name.
    try {
      moved.restore(s);
      FAIL("a used queue took a restore");
    } catch (const quern::failed_precondition_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("cannot restore queue '"));
      CHECK_THAT(e.what(), Catch::Contains("moved' from a checkpoint"));
      CHECK_THAT(e.what(), Catch::Contains("used already"));
    }
    for (int i = 0; i < 5; ++i)
      rows.dequeue();
    waiting.join();
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE(
    "distributed RS-11 a pipeline refuses to checkpoint a queue of another process") {
  scratch_dir dir;
  auto host = start_host(dir);
  {
    quern::remote_config cfg;
    quern::actor_system sys{cfg};
    auto node = quern::connect(sys, host.address);
    quern::blocking_queue rows{sys, node.queue("rows")};
    rows.enqueue(quern::element{quern::tensor::scalar(int64_t{7})});
    quern::pipeline pipe{sys};
    auto in = pipe.make_consumer(node.queue("rows"));
    auto refused = [](auto&& call) {
      try {
        call();
      } catch (const quern::failed_precondition_error& e) {
        return std::string(e.what());
      }
      return std::string("not refused");
    };
    auto why = refused([&] { pipe.snapshot(3); });
    CHECK_THAT(why, Catch::Contains("queue 'rows' of this pipeline is a queue of another "
                                    "process"));
    quern::pipeline_snapshot s;
    s.step = 3;
    s.queues["rows"] = quern::queue_state{};
    why = refused([&] { pipe.restore(s); });
    CHECK_THAT(why, Catch::Contains("queue 'rows' of this pipeline is a queue of another "
                                    "process"));
    // Nothing was taken or put back: the row is still there.
    CHECK(rows.size() == 1);
    CHECK(rows.dequeue()[0].values<int64_t>()[0] == 7);
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}
