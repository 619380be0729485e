// Where the pipeline waits (docs/input.md; docs/semantics.md TL-1..TL-7,
// TL-11): a three-stage pipeline made slow on purpose at each stage in turn,
// and at its consumer. The assertions are orderings with large margins (one stage
// sleeps or spins 20 ms per run, the others do next to nothing), never
// timings.

#include "helpers.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

struct slowness {
  std::chrono::milliseconds produce{0};
  std::chrono::milliseconds decode{0};
  std::chrono::milliseconds batch{0};
  std::chrono::milliseconds consumer{0};
  /// A second decode worker, `decode/slow`, that sleeps 20 ms per run (a
  /// straggler).
  bool straggler = false;
};

/// Busy for `d` without yielding the thread (an async op must not block:
/// this is what a slow computation looks like to it).
void spin(std::chrono::milliseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

/// produce (blocking: 8 rows per run) -> `raw` -> decode (blocking: a
/// dequeue_up_to(8) through a blocking handle) -> `decoded` -> batch (async:
/// dequeue_many(8)) -> `batches` -> the consumer.
struct slow_pipeline {
  caf::actor_system& sys;
  queue_actor raw;
  queue_actor decoded;
  queue_actor batches;
  pipeline pipe;

  slow_pipeline(caf::actor_system& s, slowness slow, pipeline_options opts = {})
      : sys(s), raw(spawn_fifo_queue(s, 16, {dtype::int64}, {tensor_shape{}}, "raw")),
        decoded(spawn_fifo_queue(s, 32, {dtype::int64}, {tensor_shape{}}, "decoded")),
        batches(spawn_fifo_queue(s, 4, {dtype::int64}, {}, "batches")), pipe(s, opts) {
    auto produce = blocking_op(
        [slow](blocking_run& run) {
          std::this_thread::sleep_for(slow.produce);
          for (int64_t i = 0; i < 8; ++i)
            run.emit(int_element(i));
        },
        "produce");
    pipe.add_queue_runner(queue_runner{raw, {produce}, named("produce")});
    auto decode_op = [this](std::chrono::milliseconds d, std::string name) {
      auto q = raw;
      auto* system = &sys;
      return blocking_op(
          [q, system, d](blocking_run& run) {
            blocking_queue in{*system, q};
            auto rows = in.dequeue_up_to(8);
            std::this_thread::sleep_for(d);
            run.emit_many(std::move(rows));
          },
          std::move(name));
    };
    std::vector<enqueue_op> decoders{decode_op(slow.decode, "fast")};
    if (slow.straggler)
      decoders.push_back(decode_op(20ms, "slow"));
    pipe.add_queue_runner(queue_runner{decoded, decoders, named("decode")});
    auto from = decoded;
    auto batch = async_op(
        [from, slow](async_run& run) {
          run.dequeue_many(from, 8, [&run, slow](element& b) {
            spin(slow.batch);
            run.emit(std::move(b));
            run.done();
          });
        },
        "batch");
    pipe.add_queue_runner(queue_runner{batches, {batch}, named("batch")});
  }

  static queue_runner_options named(std::string name) {
    queue_runner_options o;
    o.name = std::move(name);
    return o;
  }

  /// Starts the runners, trains `warm` steps, reads the telemetry once (its
  /// span then starts after the start-up), trains `steps` more and returns
  /// what the pipeline says of them.
  pipeline_telemetry run(std::chrono::milliseconds consumer_work, int steps = 40,
                         int warm = 5) {
    pipe.start_queue_runners();
    auto in = pipe.make_consumer(batches);
    for (int i = 0; i < warm; ++i) {
      in.dequeue();
      std::this_thread::sleep_for(consumer_work);
    }
    pipe.telemetry();
    for (int i = 0; i < steps; ++i) {
      in.dequeue();
      std::this_thread::sleep_for(consumer_work);
    }
    return pipe.telemetry();
  }
};

const runner_telemetry& runner_named(const pipeline_telemetry& t, const std::string& n) {
  for (auto& r : t.runners)
    if (r.name == n)
      return r;
  FAIL("no runner " << n);
  throw std::logic_error("unreachable");
}

const queue_telemetry& queue_named(const pipeline_telemetry& t, const std::string& n) {
  for (auto& q : t.queues)
    if (q.name == n)
      return q;
  FAIL("no queue " << n);
  throw std::logic_error("unreachable");
}

/// The stage whose busy share is the largest.
std::string busiest(const pipeline_telemetry& t) {
  const runner_telemetry* best = nullptr;
  for (auto& r : t.runners)
    if (!best || r.busy > best->busy)
      best = &r;
  return best ? best->name : std::string{};
}

void check_limited_by(const pipeline_telemetry& t, const std::string& stage) {
  INFO(t.verdict);
  REQUIRE(t.consumers.size() == 1);
  CHECK(t.consumers[0].queue == "batches");
  CHECK(t.consumers[0].dequeues == 40);
  // The consumer does nothing but dequeue: it waits most of each step.
  CHECK(t.consumers[0].wait_fraction > 0.5);
  CHECK(busiest(t) == stage);
  CHECK(t.limiting_stage == stage);
  CHECK(t.verdict.find("stage `" + stage + "`") != std::string::npos);
  CHECK(t.verdict.find("the pipeline fed the trainer") == 0);
}

} // namespace

TEST_CASE("TL-5 a slow producer op is the limiting stage, found upstream of waiting "
          "stages",
          "[TL-5][TL-2][TL-1]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  slowness slow;
  slow.produce = 20ms;
  slow_pipeline p{sys, slow};
  auto t = p.run(0ms);
  check_limited_by(t, "produce");
  // decode's dequeues through its blocking handle are its waits for input
  // (TL-2), longer than it is busy; it names the queue it waits for.
  auto& decode = runner_named(t, "decode");
  CHECK(decode.waiting_for_input > decode.busy);
  CHECK(decode.input_queue == "raw");
  CHECK(runner_named(t, "batch").input_queue == "decoded");
}

TEST_CASE("TL-5 a slow decode op is the limiting stage", "[TL-5][TL-2]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  slowness slow;
  slow.decode = 20ms;
  slow_pipeline p{sys, slow};
  auto t = p.run(0ms);
  check_limited_by(t, "decode");
  // Its input queue is full, its producer waits for room.
  auto& produce = runner_named(t, "produce");
  CHECK(produce.waiting_for_room > produce.busy);
  CHECK(t.verdict.find("input queue `raw`") != std::string::npos);
}

TEST_CASE("TL-5 a slow async batching stage is the limiting stage", "[TL-5][TL-2]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  slowness slow;
  slow.batch = 20ms;
  slow_pipeline p{sys, slow};
  auto t = p.run(0ms);
  check_limited_by(t, "batch");
  auto& batch = runner_named(t, "batch");
  CHECK(batch.busy > batch.waiting_for_input);
}

TEST_CASE("TL-5 a stage which keeps its downstream queue full is not blamed",
          "[TL-5][TL-2]") {
  // produce and decode are fast and fill the queues they feed; batch, the
  // last stage, is slow. The two upstream stages wait for room more than
  // they work: they are not the limit, the stage below them is.
  two_core_config cfg;
  caf::actor_system sys{cfg};
  slowness slow;
  slow.batch = 20ms;
  slow_pipeline p{sys, slow};
  auto t = p.run(0ms);
  check_limited_by(t, "batch");
  for (auto name : {"produce", "decode"}) {
    INFO(name);
    auto& r = runner_named(t, name);
    CHECK(r.waiting_for_room > r.busy);
    CHECK(r.waiting_for_room > r.waiting_for_input);
    CHECK(t.verdict.find("stage `" + std::string(name) + "`") == std::string::npos);
  }
}

TEST_CASE("TL-5 a slow consumer: the pipeline keeps up, its exposed wait is near 0",
          "[TL-5][TL-1][TL-2][TL-4]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  slow_pipeline p{sys, slowness{}};
  auto t = p.run(20ms);
  INFO(t.verdict);
  REQUIRE(t.consumers.size() == 1);
  CHECK(t.consumers[0].wait_fraction < 0.1);
  CHECK(t.limiting_stage.empty());
  CHECK(t.verdict.find("keeps up") != std::string::npos);
  // Every stage waits for room: the trainer is the limit.
  for (auto& r : t.runners) {
    INFO(r.name);
    CHECK(r.waiting_for_room > r.busy);
  }
  CHECK(t.verdict.find("the trainer is the limit") != std::string::npos);
  // The queues are reported with their fill and rates (TL-4).
  REQUIRE(t.queues.size() == 3);
  for (auto& q : t.queues) {
    INFO(q.name);
    CHECK(q.capacity > 0);
    CHECK(q.enqueue_rate > 0);
    CHECK(q.dequeue_rate > 0);
  }
}

TEST_CASE("TL-3 the straggler of a stage is the worker that stores the fewest rows",
          "[TL-3]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  slowness slow;
  slow.straggler = true;
  slow_pipeline p{sys, slow};
  auto t = p.run(0ms);
  auto& decode = runner_named(t, "decode");
  REQUIRE(decode.workers.size() == 2);
  CHECK(decode.straggler == "decode/slow");
  CHECK(runner_named(t, "produce").straggler.empty());
}

TEST_CASE("TL-7 with telemetry off nothing is measured", "[TL-7]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  pipeline_options opts;
  opts.telemetry = false;
  slow_pipeline p{sys, slowness{}, opts};
  auto t = p.run(0ms, 10, 1);
  CHECK(t.consumers.empty());
  for (auto& r : t.runners)
    CHECK(r.workers.empty());
  CHECK(t.limiting_stage.empty());
  CHECK(t.verdict.find("telemetry is off") != std::string::npos);
  for (auto& q : t.queues) {
    INFO(q.name);
    CHECK(q.enqueue_rate == 0);
    CHECK(q.dequeue_rate == 0);
    CHECK(q.enqueue_wait_seconds == 0);
    CHECK(q.dequeue_wait_seconds == 0);
  }
}

TEST_CASE("TL-11 a slow producer keeps the readers of its queue waiting at the queue",
          "[TL-11][TL-4]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  slowness slow;
  slow.produce = 20ms;
  slow_pipeline p{sys, slow};
  auto t = p.run(0ms);
  // decode's dequeues wait at `raw` for the producer's rows; nothing waits
  // for room in it. The consumer's dequeues wait at `batches`.
  auto& raw = queue_named(t, "raw");
  CHECK(raw.dequeue_wait_seconds > 0);
  CHECK(raw.dequeue_wait_seconds > raw.enqueue_wait_seconds);
  auto& batches = queue_named(t, "batches");
  CHECK(batches.dequeue_wait_seconds > batches.enqueue_wait_seconds);
  for (auto& q : t.queues) {
    INFO(q.name);
    CHECK(q.enqueue_rate > 0);
    CHECK(q.dequeue_rate > 0);
  }
}

TEST_CASE("TL-11 a slow consumer keeps the writers of its queue waiting at the queue",
          "[TL-11][TL-4]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  slow_pipeline p{sys, slowness{}};
  auto t = p.run(20ms);
  // `batches` stays full: the batching stage's pushes wait for room, the
  // consumer's dequeues are served at once.
  auto& batches = queue_named(t, "batches");
  CHECK(batches.enqueue_wait_seconds > 0);
  CHECK(batches.enqueue_wait_seconds > batches.dequeue_wait_seconds);
}

TEST_CASE("TL-4 TL-11 a queue's rates count every producer and consumer, in a runner "
          "or not",
          "[TL-4][TL-11]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 16, {dtype::int64}, {tensor_shape{}}, "fed_by_hand");
  pipeline pipe{sys};
  auto in = pipe.make_consumer(q);
  blocking_queue by_hand{sys, q};
  for (int64_t i = 0; i < 10; ++i)
    by_hand.enqueue(int_element(i));
  for (int i = 0; i < 6; ++i)
    in.dequeue();
  auto t = pipe.telemetry();
  REQUIRE(t.queues.size() == 1);
  auto& fed = t.queues[0];
  CHECK(fed.name == "fed_by_hand");
  CHECK(fed.size == 4);
  // No runner feeds it: the queue's own counters still see the rows.
  CHECK(fed.enqueue_rate > 0);
  CHECK(fed.dequeue_rate > 0);
  CHECK(fed.enqueue_rate > fed.dequeue_rate);
  // Served at once on both sides.
  CHECK(fed.enqueue_wait_seconds == 0);
  CHECK(fed.dequeue_wait_seconds == 0);
}

namespace {

/// A checkpoint member that never answers: it keeps every request's promise
/// and delivers none.
caf::actor silent_member(caf::actor_system& sys) {
  return sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
    auto kept = std::make_shared<std::vector<caf::response_promise>>();
    return {[self, kept](member_telemetry_atom) {
      kept->push_back(self->make_response_promise());
      return kept->back();
    }};
  });
}

} // namespace

TEST_CASE("TL-10 a checkpoint member's stages are in the chief's telemetry, named by "
          "member, and the verdict walks into them",
          "[TL-10][TL-5]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  // The member "reader" feeds `raw` slowly; the chief's training loop reads it.
  auto raw = spawn_fifo_queue(sys, 16, {dtype::int64}, {tensor_shape{}}, "raw");
  pipeline member{sys};
  auto produce = blocking_op(
      [](blocking_run& run) {
        std::this_thread::sleep_for(20ms);
        for (int64_t i = 0; i < 8; ++i)
          run.emit(int_element(i));
      },
      "produce");
  member.add_queue_runner(queue_runner{raw, {produce}, slow_pipeline::named("produce")});
  member.checkpoint_as_member(coord.actor(), "reader");
  member.start_queue_runners();
  pipeline chief{sys};
  chief.checkpoint_members_of(coord.actor());
  chief.await_checkpoint_members({"reader"}, std::chrono::seconds(30));
  auto in = chief.make_consumer(raw);
  for (int i = 0; i < 5; ++i)
    in.dequeue();
  auto first = chief.telemetry();
  for (int i = 0; i < 40; ++i)
    in.dequeue();
  auto t = chief.telemetry();
  INFO(t.verdict);
  auto& r = runner_named(t, "reader/produce");
  REQUIRE(r.workers.size() == 1);
  CHECK(r.workers[0].name == "reader/produce/produce");
  // `raw` is of the chief's process: it keeps its name, and is one queue
  // although both pipelines read it.
  CHECK(r.queue == "raw");
  CHECK(std::count_if(t.queues.begin(), t.queues.end(),
                      [](const queue_telemetry& q) { return q.name == "raw"; }) == 1);
  REQUIRE(t.consumers.size() == 1);
  CHECK(t.consumers[0].queue == "raw");
  CHECK(t.limiting_stage == "reader/produce");
  CHECK(t.verdict.find("stage `reader/produce`") != std::string::npos);
  CHECK(t.verdict.find("no figures from") == std::string::npos);
  // The member's own readings keep their span: the chief's asked with
  // marks of their own.
  auto local = member.telemetry();
  REQUIRE(local.runners.size() == 1);
  CHECK(local.runners[0].name == "produce");
  auto& first_r = runner_named(first, "reader/produce");
  CHECK(local.runners[0].workers[0].runs >= first_r.workers[0].runs + r.workers[0].runs);
}

TEST_CASE("TL-10 a checkpoint member that does not answer, or is gone, is named in the "
          "verdict, and telemetry() does not wait for it",
          "[TL-10]") {
  two_core_config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  auto q = spawn_fifo_queue(sys, 16, {dtype::int64}, {tensor_shape{}}, "q");
  blocking_queue by_hand{sys, q};
  for (int64_t i = 0; i < 10; ++i)
    by_hand.enqueue(int_element(i));
  pipeline chief{sys};
  chief.checkpoint_members_of(coord.actor());
  auto silent = silent_member(sys);
  // Ended however the test ends: the actor system waits for it.
  struct ender {
    caf::actor a;
    ~ender() { caf::anon_send_exit(a, caf::exit_reason::user_shutdown); }
  } end_silent{silent};
  caf::scoped_actor self{sys};
  self->request(coord.actor(), caf::infinite, add_member_atom::value, silent,
                std::string{"silent"})
      .receive([](bool) {}, [](caf::error& e) { FAIL(caf::to_string(e)); });
  auto in = chief.make_consumer(q);
  for (int i = 0; i < 5; ++i)
    in.dequeue();
  auto t = chief.telemetry();
  INFO(t.verdict);
  CHECK(
      t.verdict.find("no figures from member `silent` (it did not answer within 1 s)") !=
      std::string::npos);
  // Once it is gone, the coordinator no longer lists it: the verdict says so.
  caf::anon_send_exit(silent, caf::exit_reason::user_shutdown);
  std::string verdict;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    verdict = chief.telemetry().verdict;
    if (verdict.find("(it is gone)") != std::string::npos)
      break;
  }
  INFO(verdict);
  CHECK(verdict.find("no figures from member `silent` (it is gone)") !=
        std::string::npos);
}
