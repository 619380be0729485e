// The pipeline object and the seed 003 cascade: runners started together
// under a coordinator, stopping together, failing loudly, never hanging.

#include "helpers.hpp"

#include <atomic>
#include <map>
#include <thread>

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

/// Seed 003: a filename queue with an epoch limit, three reader workers, an
/// example queue, a batching stage, and a training loop in main().
struct cascade {
  static constexpr int64_t files = 6;
  static constexpr int64_t records_per_file = 40;
  static constexpr int epochs = 3;
  static constexpr int32_t batch_size = 7;

  caf::actor_system& sys;
  queue_actor filename_queue;
  queue_actor example_queue;
  queue_actor batch_queue;
  pipeline pipe;

  /// `reader_hook(file)` runs in a reader before it reads `file`.
  explicit cascade(caf::actor_system& s, std::function<void(int64_t)> reader_hook = {},
                   pipeline_options opts = {})
      : sys(s), filename_queue(spawn_fifo_queue(s, 4, {dtype::int64}, {tensor_shape{}},
                                                "filename_queue")),
        example_queue(
            spawn_fifo_queue(s, 16, {dtype::int64}, {tensor_shape{}}, "example_queue")),
        batch_queue(spawn_fifo_queue(s, 3, {dtype::int64}, {}, "batch_queue")),
        pipe(s, opts) {
    // string_input_producer(num_epochs=3): one epoch per run, then OutOfRange.
    auto producer = async_op(
        [](async_run& run) {
          if (run.index() >= static_cast<uint64_t>(epochs)) {
            run.end();
            return;
          }
          for (int64_t f = 0; f < files; ++f)
            run.emit(int_element(f));
          run.done();
        },
        "input_producer");
    pipe.add_queue_runner(queue_runner{filename_queue, {producer}});
    // Three readers: each run takes a filename and "reads the file", a
    // blocking op in its own thread. The filename queue's out_of_range ends them.
    auto fq = filename_queue;
    auto& system = sys;
    std::vector<enqueue_op> readers;
    for (int i = 0; i < 3; ++i)
      readers.push_back(blocking_op(
          [&system, fq, reader_hook](blocking_run& run) {
            blocking_queue in{system, fq};
            auto file = int_of(in.dequeue());
            if (reader_hook)
              reader_hook(file);
            for (int64_t r = 0; r < records_per_file; ++r)
              run.emit(int_element(file * 1000 + r));
          },
          "reader" + std::to_string(i)));
    pipe.add_queue_runner(queue_runner{example_queue, readers});
    // batch(allow_smaller_final_batch=True): an asynchronous stage.
    auto eq = example_queue;
    auto batcher = async_op(
        [eq](async_run& run) {
          run.dequeue_up_to(eq, batch_size, [&run](element& batch) {
            run.emit(std::move(batch));
            run.done();
          });
        },
        "batch");
    pipe.add_queue_runner(queue_runner{batch_queue, {batcher}});
  }

  bool all_closed() {
    for (auto& q : {filename_queue, example_queue, batch_queue})
      if (!blocking_queue{sys, q}.is_closed())
        return false;
    return true;
  }
};

} // namespace

TEST_CASE("QR-10 seed 003 cascade: epochs run out and everything ends cleanly",
          "[QR-10][QR-6][CO-8][seed]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  cascade c{sys};
  coordinator coord{sys};
  auto threads = c.pipe.start_queue_runners(coord);
  REQUIRE(threads.size() == 2 + 4 + 2); // each runner followed by its workers
  auto in = c.pipe.make_consumer(c.batch_queue);
  std::map<int64_t, int> seen;
  int64_t consumed = 0;
  bool done_training = false;
  try {
    while (!coord.should_stop()) {
      auto batch = in.dequeue(); // sess.run(train_op)
      for (auto x : batch[0].to_vector<int64_t>()) {
        ++seen[x];
        ++consumed;
      }
    }
  } catch (const out_of_range_error& e) {
    done_training = true; // "Done training -- epoch limit reached"
    CHECK(std::string{e.what()}.find("batch_queue") != std::string::npos);
  }
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  CHECK(done_training);
  // Every example of every epoch was consumed exactly once per epoch before
  // out_of_range.
  CHECK(consumed == cascade::files * cascade::records_per_file * cascade::epochs);
  CHECK(seen.size() == static_cast<size_t>(cascade::files * cascade::records_per_file));
  for (auto& [x, n] : seen)
    CHECK(n == cascade::epochs);
  CHECK(c.all_closed());
  CHECK_FALSE(coord.status().error);
  CHECK(await_all_down(sys, threads) == threads.size());
}

TEST_CASE("QR-10 the pipeline ends by itself: join needs no stop request",
          "[QR-10][QR-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  cascade c{sys};
  coordinator coord{sys};
  auto threads = c.pipe.start_queue_runners(coord);
  auto in = c.pipe.make_consumer(c.batch_queue);
  int64_t consumed = 0;
  try {
    for (;;)
      consumed += in.dequeue()[0].shape().dim(0);
  } catch (const out_of_range_error&) {
  }
  // Unlike TensorFlow (whose close-on-stop threads wait for a stop request),
  // join returns although nobody requested stop.
  CHECK_NOTHROW(coord.join(threads));
  CHECK_FALSE(coord.should_stop());
  CHECK(consumed == cascade::files * cascade::records_per_file * cascade::epochs);
}

TEST_CASE("QR-7 seed 003 cascade: a reader throws in the middle", "[QR-7][CO-4]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  std::atomic<bool> thrown{false};
  cascade c{sys, [&thrown](int64_t file) {
              if (file == 4 && !thrown.exchange(true))
                throw std::runtime_error("DataLossError: corrupted record at 4:17");
            }};
  coordinator coord{sys};
  auto threads = c.pipe.start_queue_runners(coord);
  auto in = c.pipe.make_consumer(c.batch_queue);
  try {
    while (!coord.should_stop())
      in.dequeue();
  } catch (const out_of_range_error&) {
  }
  coord.request_stop();
  CHECK_THROWS_MATCHES(
      coord.join(threads), std::runtime_error,
      Catch::Matchers::Message("DataLossError: corrupted record at 4:17"));
  CHECK(await_all_down(sys, threads) == threads.size());
  CHECK(c.all_closed());
  auto readers = c.pipe.queue_runners()[1];
  REQUIRE(readers.exceptions_raised().size() == 1);
}

TEST_CASE("CO-6 seed 003 cascade: the training loop throws", "[CO-6][CO-4][QR-8]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  cascade c{sys};
  coordinator coord{sys};
  auto threads = c.pipe.start_queue_runners(coord);
  auto in = c.pipe.make_consumer(c.batch_queue);
  int step = 0;
  try {
    while (!coord.should_stop()) {
      in.dequeue();
      if (++step == 5)
        throw std::runtime_error("NaN loss during training");
    }
  } catch (const out_of_range_error&) {
  } catch (const std::exception& e) {
    coord.request_stop(e); // report exceptions to the coordinator
  }
  coord.request_stop(); // safe to call twice
  // Producers were blocked on full queues: the stop cancelled them.
  CHECK_THROWS_MATCHES(coord.join(threads), std::runtime_error,
                       Catch::Matchers::Message("NaN loss during training"));
  CHECK(await_all_down(sys, threads) == threads.size());
  CHECK(c.all_closed());
}

TEST_CASE("CO-4 seed 003 cascade: two errors at once, only the first is kept",
          "[CO-4][QR-7]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  std::atomic<int> arrived{0};
  std::atomic<bool> thrown[3] = {false, false, false};
  cascade c{sys, [&arrived, &thrown](int64_t file) {
              if ((file != 1 && file != 2) || thrown[file].exchange(true))
                return;
              // Both readers fail at the same moment.
              ++arrived;
              eventually([&] { return arrived.load() >= 2; }, std::chrono::seconds(10));
              throw std::runtime_error("reader failed on file " + std::to_string(file));
            }};
  coordinator coord{sys};
  auto threads = c.pipe.start_queue_runners(coord);
  std::string kept;
  try {
    coord.join(threads);
  } catch (const std::runtime_error& e) {
    kept = e.what();
  }
  CHECK((kept == "reader failed on file 1" || kept == "reader failed on file 2"));
  CHECK_THROWS_WITH(coord.raise_requested_exception(), kept);
  auto raised = c.pipe.queue_runners()[1].exceptions_raised();
  CHECK(raised.size() == 2); // both were raised, one was kept
  CHECK(await_all_down(sys, threads) == threads.size());
}

TEST_CASE("QR-10 start_queue_runners starts every runner in collection order",
          "[QR-10]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  coordinator coord{sys};
  CHECK(pipe.start_queue_runners(coord).empty()); // warns: nothing to start
  auto q1 = spawn_fifo_queue(sys, 2, {dtype::int64}, {tensor_shape{}}, "q1");
  auto q2 = spawn_fifo_queue(sys, 2, {dtype::int64}, {tensor_shape{}}, "q2");
  auto forever = async_op([](async_run& run) {
    run.emit(int_element(1));
    run.done();
  });
  pipe.add_queue_runner(queue_runner{q1, {forever, forever}});
  pipe.add_queue_runner(queue_runner{q2, {forever}});
  auto actors = pipe.start_queue_runners(coord);
  REQUIRE(actors.size() == 5); // per runner: one worker per op, then its closer
  auto runners = pipe.queue_runners();
  for (auto& a : actors) // the supervising runner actors are not among them
    CHECK((a != runners[0].runner() && a != runners[1].runner()));
  CHECK(runners[0].name() == "q1");
  CHECK(pipe.start_queue_runners(coord).empty()); // QR-4: still running
  coord.request_stop();
  CHECK_NOTHROW(coord.join(actors));
  CHECK(await_all_down(sys, actors) == actors.size());
}

TEST_CASE("CC-2 a consumer of a queue whose runners never started fails clearly",
          "[CC-2][starvation]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline_options opts;
  opts.starvation_timeout = 50ms;
  cascade c{sys, {}, opts};
  coordinator coord{sys};
  // start_queue_runners forgotten: TensorFlow hangs here forever.
  auto in = c.pipe.make_consumer(c.batch_queue);
  try {
    in.dequeue();
    FAIL("the dequeue did not fail");
  } catch (const failed_precondition_error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::Contains("batch_queue' has waited") &&
                             Catch::Matchers::Contains(
                                 "were never started: call start_queue_runners"));
  }
  // After starting, the same consumer is served.
  auto threads = c.pipe.start_queue_runners(coord);
  CHECK(in.dequeue()[0].shape().dim(0) >= 1);
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
}

TEST_CASE("CC-2 a consumer of a queue that nobody feeds warns or fails",
          "[CC-2][starvation]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto q = spawn_fifo_queue(sys, 2, {dtype::int64}, {tensor_shape{}}, "orphan");
  SECTION("fail") {
    pipeline_options opts;
    opts.starvation_timeout = 20ms;
    opts.when_unfed = starvation_action::fail;
    pipeline pipe{sys, opts};
    auto in = pipe.make_consumer(q);
    try {
      in.dequeue_many(2);
      FAIL("the dequeue did not fail");
    } catch (const failed_precondition_error& e) {
      CHECK_THAT(e.what(), Catch::Matchers::Contains("orphan' has waited") &&
                               Catch::Matchers::Contains(
                                   "no queue runner of this pipeline feeds this queue"));
    }
    blocking_queue{sys, q}.enqueue(int_element(5));
    CHECK(blocking_queue{sys, q}.size() == 1); // nothing was lost to the timeouts
  }
  SECTION("warn, then served by plain code") {
    pipeline_options opts;
    opts.starvation_timeout = 20ms;
    pipeline pipe{sys, opts};
    auto in = pipe.make_consumer(q);
    bool never_started = true;
    CHECK_FALSE(pipe.starvation_diagnosis(q, never_started).empty());
    CHECK_FALSE(never_started);
    std::thread feeder{[&] {
      std::this_thread::sleep_for(100ms);
      blocking_queue{sys, q}.enqueue(int_element(42));
    }};
    CHECK(int_of(in.dequeue()) == 42); // warned on stderr, kept waiting
    feeder.join();
  }
}

TEST_CASE("CO-8 a program that forgets request_stop and join still ends",
          "[CO-8][QR-8][exit]") {
  SECTION("with a coordinator") {
    quern::config cfg;
    caf::actor_system sys{cfg};
    cascade c{sys};
    coordinator coord{sys};
    auto threads = c.pipe.start_queue_runners(coord);
    auto in = c.pipe.make_consumer(c.batch_queue);
    in.dequeue();
    // leaves the scope with every producer blocked on a full queue
  }
  SECTION("without a coordinator") {
    quern::config cfg;
    caf::actor_system sys{cfg};
    cascade c{sys};
    c.pipe.start_queue_runners();
    c.pipe.make_consumer(c.batch_queue).dequeue();
  }
  SECTION("a runner started on its own") {
    quern::config cfg;
    caf::actor_system sys{cfg};
    auto q = spawn_fifo_queue(sys, 1, {dtype::int64}, {tensor_shape{}});
    queue_runner qr{q, {async_op([](async_run& run) {
                      run.emit(int_element(1));
                      run.done();
                    })}};
    qr.start(sys);
  }
  SUCCEED("every actor system above was destroyed");
}
