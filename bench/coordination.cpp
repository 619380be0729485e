// bench_coordination: the coordinator and queue runners under load.
//
// 1. Stop latency: --workers asynchronous workers blocked on a full queue;
//    the time from request_stop() to join() returning (every worker ended),
//    median of --runs runs. Target: under 20 ms for 1,000 workers.
// 2. Throughput of a 3-stage pipeline, source -> transform -> batch of
//    --batch, in elements/s: quern queue runners (one asynchronous worker
//    per stage; rows move in chunks of up to --chunk per message on the
//    queues' streaming protocol: push, pull; the training loop takes batches
//    with a queue_reader) beside the same stages hand-wired with mutex +
//    condition-variable queues and std::threads (one per stage), moving one
//    element at a time, in the same process. Same element type, same
//    capacities, same stacking of batches. Target: ratio at least 1x.
//    A third line runs the same stages the quern-native way: every chunk one
//    batch tensor (emit_many / pull_batch / dequeue_many views).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

#include "command_line.hpp"
#include "peak_rss.hpp"

#include "mutex_queue.hpp"
#include "quern/blocking_queue.hpp"
#include "quern/coordinator.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue.hpp"
#include "quern/queue_runner.hpp"

namespace po = boost::program_options;
using namespace quern;
using clk = std::chrono::steady_clock;

namespace {

double ms_since(clk::time_point t0) {
  return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}

element int_element(int64_t x) {
  return element{tensor::scalar(x)};
}

int64_t transform(int64_t x) {
  return x * 3 + 1;
}

// -- 1. stop latency --------------------------------------------------------------------

double stop_latency_once(caf::actor_system& sys, int workers) {
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "full");
  std::vector<enqueue_op> ops(static_cast<size_t>(workers), async_op([](async_run& run) {
                                run.emit(int_element(1));
                                run.done();
                              }));
  queue_runner qr{q, ops};
  coordinator coord{sys};
  auto actors = qr.start(sys, coord.actor());
  blocking_queue bq{sys, q};
  while (bq.size() < 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Let every worker reach its blocked enqueue.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto t0 = clk::now();
  coord.request_stop();
  coord.join(actors);
  return ms_since(t0);
}

// -- 2. pipeline throughput -------------------------------------------------------------

struct result {
  double seconds;
  int64_t rows;
  int64_t sum;
};

result quern_pipeline(caf::actor_system& sys, int64_t n, int32_t batch, int32_t chunk,
                      int32_t capacity) {
  auto q1 = spawn_fifo_queue(sys, capacity, {dtype::int64}, {tensor_shape{}}, "source");
  auto q2 =
      spawn_fifo_queue(sys, capacity, {dtype::int64}, {tensor_shape{}}, "transformed");
  auto q3 = spawn_fifo_queue(sys, 16, {dtype::int64}, {tensor_shape{batch}}, "batches");
  pipeline pipe{sys};
  auto source = async_op([n, chunk](async_run& run) {
    auto first = static_cast<int64_t>(run.index()) * chunk;
    if (first >= n) {
      run.end();
      return;
    }
    auto last = std::min(n, first + chunk);
    std::vector<element> rows;
    rows.reserve(static_cast<size_t>(last - first));
    for (auto x = first; x < last; ++x)
      rows.push_back(int_element(x));
    run.emit(std::move(rows));
    run.done();
  });
  pipe.add_queue_runner(queue_runner{q1, {source}});
  auto mapper = async_op([q1, chunk](async_run& run) {
    run.pull(q1, chunk, [&run](std::vector<element>& in) {
      std::vector<element> rows;
      rows.reserve(in.size());
      for (auto& e : in)
        rows.push_back(int_element(transform(e[0].scalar_value<int64_t>())));
      run.emit(std::move(rows));
      run.done();
    });
  });
  pipe.add_queue_runner(queue_runner{q2, {mapper}});
  // Collects rows from the stream and stacks every `batch` of them (the
  // final incomplete batch is dropped, as dequeue_many would).
  auto pending = std::make_shared<std::vector<element>>();
  auto batcher = async_op([q2, batch, chunk, pending](async_run& run) {
    run.pull(q2, chunk, [&run, batch, pending](std::vector<element>& rows) {
      for (auto& row : rows) {
        pending->push_back(std::move(row));
        if (pending->size() == static_cast<size_t>(batch)) {
          run.emit(stack_elements(*pending));
          pending->clear();
        }
      }
      run.done();
    });
  });
  pipe.add_queue_runner(queue_runner{q3, {batcher}});
  coordinator coord{sys};
  auto t0 = clk::now();
  auto actors = pipe.start_queue_runners(coord);
  result r{0, 0, 0};
  {
    // The training loop takes batches through the streaming reader
    // (docs/queues.md): demand for a few batches stays granted.
    queue_reader out{sys, q3, 8};
    while (auto b = out.try_pull()) {
      for (auto x : (*b)[0].to_vector<int64_t>())
        r.sum += x;
      r.rows += (*b)[0].shape().dim(0);
    }
  }
  r.seconds = ms_since(t0) / 1000.0;
  coord.request_stop();
  coord.join(actors);
  return r;
}

/// The same stages the quern-native way (docs/queues.md, Storage): the source emits
/// each chunk as one batch tensor, the transform pulls batches and maps whole
/// vectors, the batching stage takes dequeue_many views; no per-row element.
result quern_batched_pipeline(caf::actor_system& sys, int64_t n, int32_t batch,
                              int32_t chunk, int32_t capacity) {
  auto q1 = spawn_fifo_queue(sys, capacity, {dtype::int64}, {tensor_shape{}}, "source");
  auto q2 =
      spawn_fifo_queue(sys, capacity, {dtype::int64}, {tensor_shape{}}, "transformed");
  auto q3 = spawn_fifo_queue(sys, 16, {dtype::int64}, {tensor_shape{batch}}, "batches");
  pipeline pipe{sys};
  auto source = async_op([n, chunk](async_run& run) {
    auto first = static_cast<int64_t>(run.index()) * chunk;
    if (first >= n) {
      run.end();
      return;
    }
    auto last = std::min(n, first + chunk);
    std::vector<int64_t> xs;
    xs.reserve(static_cast<size_t>(last - first));
    for (auto x = first; x < last; ++x)
      xs.push_back(x);
    run.emit_many(element{tensor::vector<int64_t>(std::move(xs))});
    run.done();
  });
  pipe.add_queue_runner(queue_runner{q1, {source}});
  auto mapper = async_op([q1, chunk](async_run& run) {
    run.pull_batch(q1, chunk, [&run](element& b) {
      auto xs = b[0].to_vector<int64_t>();
      for (auto& x : xs)
        x = transform(x);
      run.emit_many(element{tensor::vector<int64_t>(std::move(xs))});
      run.done();
    });
  });
  pipe.add_queue_runner(queue_runner{q2, {mapper}});
  auto batcher = async_op([q2, batch](async_run& run) {
    run.dequeue_many(q2, batch, [&run](element& b) {
      run.emit(std::move(b));
      run.done();
    });
  });
  pipe.add_queue_runner(queue_runner{q3, {batcher}});
  coordinator coord{sys};
  auto t0 = clk::now();
  auto actors = pipe.start_queue_runners(coord);
  result r{0, 0, 0};
  {
    queue_reader out{sys, q3, 8};
    while (auto b = out.try_pull()) {
      for (auto x : (*b)[0].to_vector<int64_t>())
        r.sum += x;
      r.rows += (*b)[0].shape().dim(0);
    }
  }
  r.seconds = ms_since(t0) / 1000.0;
  coord.request_stop();
  coord.join(actors);
  return r;
}

result mutex_pipeline(int64_t n, int32_t batch, int32_t capacity) {
  bench::mutex_queue<element> q1{static_cast<size_t>(capacity)};
  bench::mutex_queue<element> q2{static_cast<size_t>(capacity)};
  bench::mutex_queue<element> q3{16};
  auto t0 = clk::now();
  std::thread source{[&] {
    for (int64_t x = 0; x < n; ++x)
      q1.push(int_element(x));
    q1.close();
  }};
  std::thread mapper{[&] {
    while (auto e = q1.pop())
      q2.push(int_element(transform((*e)[0].scalar_value<int64_t>())));
    q2.close();
  }};
  std::thread batcher{[&] {
    std::vector<element> rows;
    rows.reserve(static_cast<size_t>(batch));
    while (auto e = q2.pop()) {
      rows.push_back(std::move(*e));
      if (rows.size() == static_cast<size_t>(batch)) {
        q3.push(stack_elements(rows));
        rows.clear();
      }
    }
    q3.close(); // like dequeue_many: an incomplete final batch is not emitted
  }};
  result r{0, 0, 0};
  while (auto b = q3.pop()) {
    for (auto x : (*b)[0].to_vector<int64_t>())
      r.sum += x;
    r.rows += (*b)[0].shape().dim(0);
  }
  r.seconds = ms_since(t0) / 1000.0;
  source.join();
  mapper.join();
  batcher.join();
  return r;
}

} // namespace

int main(int argc, char** argv) {
  int runs = 20;
  int workers = 1000;
  int64_t elements = 2000000;
  int32_t batch = 100;
  int32_t chunk = 512;
  int32_t capacity = 2048;
  int pipeline_runs = 6;
  po::options_description desc{"bench_coordination options"};
  desc.add_options()("help,h", "show this help")(
      "runs", po::value(&runs)->default_value(runs), "stop-latency runs (median)")(
      "workers", po::value(&workers)->default_value(workers),
      "blocked workers per stop-latency run")(
      "elements", po::value(&elements)->default_value(elements),
      "elements through the pipeline (a multiple of --batch)")(
      "batch", po::value(&batch)->default_value(batch),
      "batch size of the last stage")("chunk", po::value(&chunk)->default_value(chunk),
                                      "rows per message between quern's stages")(
      "capacity", po::value(&capacity)->default_value(capacity),
      "capacity of the element queues")(
      "pipeline-runs", po::value(&pipeline_runs)->default_value(pipeline_runs),
      "pipeline runs per implementation (best is reported)");
  po::variables_map vm;
  if (auto status = quern::cli::parse_options("bench_coordination", argc, argv, desc, vm))
    return *status;
  elements -= elements % batch;

  quern::config cfg;
  caf::actor_system sys{cfg};
  std::printf("bench_coordination (%u hardware threads)\n",
              std::thread::hardware_concurrency());

  std::vector<double> lat;
  for (int i = 0; i < runs; ++i)
    lat.push_back(stop_latency_once(sys, workers));
  std::sort(lat.begin(), lat.end());
  auto median = lat[lat.size() / 2];
  std::printf("stop latency, %d workers blocked on a full queue, request_stop -> join: "
              "median %.2f ms of %d runs (min %.2f, max %.2f; target < 20 ms: %s)\n",
              workers, median, runs, lat.front(), lat.back(),
              median < 20.0 ? "met" : "MISSED");

  int64_t expected = 0;
  for (int64_t x = 0; x < elements; ++x)
    expected += transform(x);
  double best_quern = 0, best_mutex = 0, best_batched = 0;
  for (int i = 0; i < pipeline_runs; ++i) {
    // Alternate which one runs first: the allocator's state left behind by
    // the previous run favours neither.
    result m, q;
    if (i % 2 == 0) {
      m = mutex_pipeline(elements, batch, capacity);
      q = quern_pipeline(sys, elements, batch, chunk, capacity);
    } else {
      q = quern_pipeline(sys, elements, batch, chunk, capacity);
      m = mutex_pipeline(elements, batch, capacity);
    }
    auto qb = quern_batched_pipeline(sys, elements, batch, chunk, capacity);
    if (m.rows != elements || m.sum != expected || q.rows != elements ||
        q.sum != expected || qb.rows != elements || qb.sum != expected) {
      std::fprintf(stderr, "wrong result: mutex %lld rows, quern %lld rows\n",
                   static_cast<long long>(m.rows), static_cast<long long>(q.rows));
      return 1;
    }
    best_mutex = std::max(best_mutex, static_cast<double>(elements) / m.seconds);
    best_quern = std::max(best_quern, static_cast<double>(elements) / q.seconds);
    best_batched = std::max(best_batched, static_cast<double>(elements) / qb.seconds);
  }
  std::printf(
      "pipeline source -> transform -> batch of %d, %lld elements (best of %d):\n", batch,
      static_cast<long long>(elements), pipeline_runs);
  std::printf("  quern queue runners (chunks of %d rows): %12.0f elements/s\n", chunk,
              best_quern);
  std::printf("  mutex queues + std::threads            : %12.0f elements/s\n",
              best_mutex);
  std::printf("  ratio quern / mutex: %.2fx (target >= 1x: %s)\n",
              best_quern / best_mutex, best_quern >= best_mutex ? "met" : "MISSED");
  std::printf("  quern, rows as batch tensors (emit_many/pull_batch): %12.0f elements/s "
              "(%.2fx the mutex stages)\n",
              best_batched, best_batched / best_mutex);
  quern::bench::print_peak_rss();
  return 0;
}
