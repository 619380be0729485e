// bench_queue_throughput: int64 scalars through a FIFO queue actor, beside a
// mutex + condition-variable bounded queue doing the same work in the same
// process. Prints elements/s and the ratio actor / mutex queue (ratios hold
// on a noisy 2-core machine where absolute times drift).
//
// Scenarios, each for P = C = 1 and P = C = 4:
//   single  : the actor queue is fed and drained one element at a time
//             through the streaming clients (queue_writer / queue_reader,
//             docs/queues.md); the mutex queue pushes and pops elements.
//   batch   : the actor queue moves batches of --batch rows (enqueue_many /
//             dequeue_up_to); the baseline is the same mutex queue moving the
//             same elements one at a time -- the work is "move N elements",
//             and batching is how the actor queue is meant to be used for it.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

#include "command_line.hpp"

#include "mutex_queue.hpp"
#include "quern/blocking_queue.hpp"
#include "quern/messages.hpp"
#include "quern/queue.hpp"

namespace po = boost::program_options;
using namespace quern;
using clk = std::chrono::steady_clock;

namespace {

struct params {
  int64_t elements;
  int32_t capacity;
  int32_t batch;
  size_t window;
};

double seconds_since(clk::time_point t0) {
  return std::chrono::duration<double>(clk::now() - t0).count();
}

// Sum of the consumed values: a check that every element arrived once.
int64_t expected_sum(int64_t n) {
  return n * (n - 1) / 2;
}

double run_mutex(const params& p, int producers, int consumers) {
  bench::mutex_queue<element> q{static_cast<size_t>(p.capacity)};
  std::atomic<int64_t> sum{0};
  auto t0 = clk::now();
  std::vector<std::thread> ps, cs;
  for (int c = 0; c < consumers; ++c)
    cs.emplace_back([&] {
      int64_t local = 0;
      while (auto e = q.pop())
        local += (*e)[0].scalar_value<int64_t>();
      sum += local;
    });
  for (int i = 0; i < producers; ++i)
    ps.emplace_back([&, i] {
      for (int64_t v = i; v < p.elements; v += producers)
        q.push(element{tensor::scalar(v)});
    });
  for (auto& t : ps)
    t.join();
  q.close();
  for (auto& t : cs)
    t.join();
  auto secs = seconds_since(t0);
  if (sum != expected_sum(p.elements))
    throw std::runtime_error("mutex queue lost or duplicated elements");
  return static_cast<double>(p.elements) / secs;
}

double run_actor_single(caf::actor_system& sys, const params& p, int producers,
                        int consumers) {
  auto q = spawn_fifo_queue(sys, p.capacity, {dtype::int64}, {tensor_shape{}});
  std::atomic<int64_t> sum{0};
  auto t0 = clk::now();
  std::vector<std::thread> ps, cs;
  for (int c = 0; c < consumers; ++c)
    cs.emplace_back([&] {
      queue_reader r{sys, q, p.window};
      int64_t local = 0;
      while (auto e = r.try_pull())
        local += (*e)[0].scalar_value<int64_t>();
      sum += local;
    });
  for (int i = 0; i < producers; ++i)
    ps.emplace_back([&, i] {
      queue_writer w{sys, q, p.window};
      for (int64_t v = i; v < p.elements; v += producers)
        w.push(element{tensor::scalar(v)});
      w.flush();
    });
  for (auto& t : ps)
    t.join();
  blocking_queue{sys, q}.close();
  for (auto& t : cs)
    t.join();
  auto secs = seconds_since(t0);
  if (sum != expected_sum(p.elements))
    throw std::runtime_error("actor queue (single) lost or duplicated elements");
  return static_cast<double>(p.elements) / secs;
}

double run_actor_batch(caf::actor_system& sys, const params& p, int producers,
                       int consumers) {
  auto q = spawn_fifo_queue(sys, p.capacity, {dtype::int64}, {tensor_shape{}});
  std::atomic<int64_t> sum{0};
  auto t0 = clk::now();
  std::vector<std::thread> ps, cs;
  for (int c = 0; c < consumers; ++c)
    cs.emplace_back([&] {
      batch_reader r{sys, q, p.batch};
      int64_t local = 0;
      while (auto batch = r.try_pull())
        for (auto v : (*batch)[0].values<int64_t>())
          local += v;
      sum += local;
    });
  for (int i = 0; i < producers; ++i)
    ps.emplace_back([&, i] {
      queue_writer w{sys, q, static_cast<size_t>(p.capacity)};
      std::vector<int64_t> rows;
      for (int64_t v = i; v < p.elements; v += producers) {
        rows.push_back(v);
        if (static_cast<int32_t>(rows.size()) == p.batch) {
          w.push_batch(element{tensor::vector<int64_t>(std::move(rows))});
          rows.clear();
        }
      }
      if (!rows.empty())
        w.push_batch(element{tensor::vector<int64_t>(std::move(rows))});
      w.flush();
    });
  for (auto& t : ps)
    t.join();
  blocking_queue{sys, q}.close();
  for (auto& t : cs)
    t.join();
  auto secs = seconds_since(t0);
  if (sum != expected_sum(p.elements))
    throw std::runtime_error("actor queue (batch) lost or duplicated elements");
  return static_cast<double>(p.elements) / secs;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  params p;
  int repeat = 3;
  std::string only;
  std::string scheduler;
  po::options_description desc{"bench_queue_throughput: a FIFO queue actor against a "
                               "mutex + condition-variable queue, same process\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "elements,n", po::value<int64_t>(&p.elements)->default_value(1000000),
      "elements moved per run")("capacity,c",
                                po::value<int32_t>(&p.capacity)->default_value(1000),
                                "capacity of both queues")(
      "batch,b", po::value<int32_t>(&p.batch)->default_value(100),
      "rows per enqueue_many / dequeue_up_to in the batch scenario")(
      "window,w", po::value<size_t>(&p.window)->default_value(1024),
      "credit window of the streaming clients")(
      "repeat,r", po::value<int>(&repeat)->default_value(3),
      "runs per figure (the median is printed)")(
      "only", po::value<std::string>(&only)->default_value(""),
      "run only scenarios whose name contains this text, e.g. \"P=C=1 single\"")(
      "scheduler", po::value<std::string>(&scheduler)->default_value(""),
      "CAF scheduler policy: stealing or sharing (default: quern::config's)");
  po::variables_map vm;
  if (auto status =
          quern::cli::parse_options("bench_queue_throughput", argc, argv, desc, vm))
    return *status;
  if (p.elements <= 0 || p.capacity <= 0 || p.batch <= 0 || p.window == 0 ||
      repeat <= 0) {
    std::cerr << "bench_queue_throughput: --elements, --capacity, --batch, --window and "
                 "--repeat must be positive\n";
    return 2;
  }
  quern::config cfg;
  if (!scheduler.empty())
    cfg.set("scheduler.policy", caf::atom_from_string(scheduler));
  caf::actor_system sys{cfg};
  std::printf("%-28s %14s %14s %8s\n", "scenario", "actor elem/s", "mutex elem/s",
              "ratio");
  for (int pc : {1, 4}) {
    for (bool batch : {false, true}) {
      char name[64];
      std::snprintf(name, sizeof(name), "P=C=%d %s", pc,
                    batch ? ("batch of " + std::to_string(p.batch)).c_str() : "single");
      if (!only.empty() && std::string(name).find(only) == std::string::npos)
        continue;
      std::vector<double> actor, mutex, ratio;
      for (int r = 0; r < repeat; ++r) {
        // Alternate the order so that neither side always runs warm.
        double a, m;
        if (r % 2 == 0) {
          m = run_mutex(p, pc, pc);
          a = batch ? run_actor_batch(sys, p, pc, pc) : run_actor_single(sys, p, pc, pc);
        } else {
          a = batch ? run_actor_batch(sys, p, pc, pc) : run_actor_single(sys, p, pc, pc);
          m = run_mutex(p, pc, pc);
        }
        actor.push_back(a);
        mutex.push_back(m);
        ratio.push_back(a / m);
      }
      std::printf("%-28s %14.0f %14.0f %7.2fx\n", name, median(actor), median(mutex),
                  median(ratio));
      std::fflush(stdout);
    }
  }
  return 0;
}
