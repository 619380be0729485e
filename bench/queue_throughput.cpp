// bench_queue_throughput: rows through a FIFO queue actor, beside two
// baselines doing the same work in the same process, interleaved: a mutex +
// condition-variable bounded queue (quern's own baseline) and moodycamel's
// BlockingConcurrentQueue (Debian's libconcurrentqueue-dev, the lock-free
// queue a C++ user would pick instead). Prints rows/s of each and the ratios
// quern / mutex and quern / moodycamel (ratios hold on a noisy 2-core machine
// where absolute times drift), and the process's peak RSS.
//
// Scenarios, for P producers and C consumers (P = C = 1, P = C = 4, P = 16
// with C = 4):
//   single  : one int64 row at a time. quern: the streaming clients
//             (queue_writer / queue_reader, docs/queues.md); mutex queue: push
//             and pop of quern elements; moodycamel: enqueue / wait_dequeue of
//             int64 values (how its users move scalars).
//   batch   : --batch int64 rows per message. quern: push_batch (a window of
//             --batch-window rows, the capacity by default) / batch_reader;
//             mutex queue: the same rows one at a time (the work is "move N
//             rows"); moodycamel: enqueue_bulk / wait_dequeue_bulk of
//             --batch values.
//   flagship: batches of --flagship-rows rows of three float32 columns (the
//             flagship's shape): quern moves each batch as three shared
//             buffers; moodycamel moves the same bytes as structs of three
//             floats in bulk; the mutex queue moves the batches as elements.
//   ... wide: batch and flagship again, the quern writers' window
//             --wide-window rows (16,384) instead of the capacity or four
//             batches: moodycamel's producers never wait (its queue is
//             unbounded), quern's wait when their window is full, and each
//             wait is a wake-up; with room for many batches, several travel
//             in each message (docs/performance.md). No mutex queue run.
// --scale instead: the ns per row of batches as runs grow (1M to 16M rows)
// and producers are added (1 to 16), quern beside moodycamel's bulk API,
// with each side's peak RSS during its runs.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>
#include <concurrentqueue/blockingconcurrentqueue.h>

#include "command_line.hpp"

#include "mutex_queue.hpp"
#include "peak_rss.hpp"
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
  size_t batch_window; // 0: the capacity (batch), 4 batches (flagship)
  size_t wide_window;  // the writers' window of the "wide" scenarios
  int32_t flagship_rows;
};

/// One row of the flagship's batches.
struct xyz {
  float x1, x2, y;
};

double seconds_since(clk::time_point t0) {
  return std::chrono::duration<double>(clk::now() - t0).count();
}

// Sum of the consumed values: a check that every element arrived once.
int64_t expected_sum(int64_t n) {
  return n * (n - 1) / 2;
}

/// The scaffolding every run shares: `consumers` threads of consume() (each
/// returns the sum of the rows it took), then `producers` threads of
/// produce(i); once the producers are done, end() tells the consumers that no
/// more rows come (a close; nothing for a queue whose consumers count).
/// Returns `rows` per second; throws when the sum taken is not
/// expected_sum(rows): `what` lost or duplicated rows.
template <class Produce, class End, class Consume>
double timed_run(const char* what, int64_t rows, int producers, int consumers,
                 Produce produce, End end, Consume consume) {
  std::atomic<int64_t> sum{0};
  auto t0 = clk::now();
  std::vector<std::thread> ps, cs;
  for (int c = 0; c < consumers; ++c)
    cs.emplace_back([&] { sum += consume(); });
  for (int i = 0; i < producers; ++i)
    ps.emplace_back([&, i] { produce(i); });
  for (auto& t : ps)
    t.join();
  end();
  for (auto& t : cs)
    t.join();
  auto secs = seconds_since(t0);
  if (sum != expected_sum(rows))
    throw std::runtime_error(std::string(what) + " lost or duplicated rows");
  return static_cast<double>(rows) / secs;
}

double run_mutex(const params& p, int producers, int consumers) {
  bench::mutex_queue<element> q{static_cast<size_t>(p.capacity)};
  return timed_run(
      "mutex queue", p.elements, producers, consumers,
      [&](int i) {
        for (int64_t v = i; v < p.elements; v += producers)
          q.push(element{tensor::scalar(v)});
      },
      [&] { q.close(); },
      [&] {
        int64_t local = 0;
        while (auto e = q.pop())
          local += (*e)[0].scalar_value<int64_t>();
        return local;
      });
}

double run_actor_single(caf::actor_system& sys, const params& p, int producers,
                        int consumers) {
  auto q = spawn_fifo_queue(sys, p.capacity, {dtype::int64}, {tensor_shape{}});
  return timed_run(
      "actor queue (single)", p.elements, producers, consumers,
      [&](int i) {
        queue_writer w{sys, q, p.window};
        for (int64_t v = i; v < p.elements; v += producers)
          w.push(element{tensor::scalar(v)});
        w.flush();
      },
      [&] {
        blocking_queue{sys, q}.close();
      },
      [&] {
        queue_reader r{sys, q, p.window};
        int64_t local = 0;
        while (auto e = r.try_pull())
          local += (*e)[0].scalar_value<int64_t>();
        return local;
      });
}

double run_actor_batch(caf::actor_system& sys, const params& p, int producers,
                       int consumers) {
  auto q = spawn_fifo_queue(sys, p.capacity, {dtype::int64}, {tensor_shape{}});
  return timed_run(
      "actor queue (batch)", p.elements, producers, consumers,
      [&](int i) {
        queue_writer w{sys, q,
                       p.batch_window ? p.batch_window : static_cast<size_t>(p.capacity)};
        // Producer i's rows are i, i + P, i + 2P, ...; each batch is
        // written straight into its tensor's buffer (tensor::build).
        auto step = static_cast<int64_t>(producers);
        for (int64_t first = i; first < p.elements; first += step * p.batch) {
          auto n = std::min<int64_t>(p.batch, (p.elements - first + step - 1) / step);
          w.push_batch(element{
              tensor::build<int64_t>(tensor_shape{n}, [&](int64_t* v, size_t count) {
                for (size_t k = 0; k < count; ++k)
                  v[k] = first + step * static_cast<int64_t>(k);
              })});
        }
        w.flush();
      },
      [&] {
        blocking_queue{sys, q}.close();
      },
      [&] {
        batch_reader r{sys, q, p.batch};
        int64_t local = 0;
        while (auto batch = r.try_pull())
          for (auto v : (*batch)[0].values<int64_t>())
            local += v;
        return local;
      });
}

// -- moodycamel::BlockingConcurrentQueue -------------------------------------
// GCC 12 at -O2 reports -Wstringop-overflow on an atomic load it inlines from
// moodycamel's enqueue_bulk (a block pointer it cannot prove non-null): the
// library's code, not ours, so that one warning is off for these runners.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
// Unbounded (pre-sized to the capacity), so producers never block. Its order
// holds per producer only, so consumers do not stop at sentinels: they count
// what all of them took and stop when it is everything (waits of 1 ms at most).

/// A consumer of a moodycamel queue: bulk dequeues of up to `buf.size()` rows,
/// each added up by value(row), until all consumers together took `rows`.
template <class Queue, class Row, class Value>
int64_t moody_consume(Queue& q, std::vector<Row> buf, int64_t rows,
                      std::atomic<int64_t>& taken, Value value) {
  int64_t local = 0;
  while (taken.load(std::memory_order_relaxed) < rows) {
    auto n =
        q.wait_dequeue_bulk_timed(buf.data(), buf.size(), std::chrono::milliseconds(1));
    for (size_t k = 0; k < n; ++k)
      local += value(buf[k]);
    taken.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  }
  return local;
}

double run_moody_single(const params& p, int producers, int consumers) {
  moodycamel::BlockingConcurrentQueue<int64_t> q{static_cast<size_t>(p.capacity)};
  std::atomic<int64_t> taken{0};
  return timed_run(
      "moodycamel (single)", p.elements, producers, consumers,
      [&](int i) {
        moodycamel::ProducerToken token{q};
        for (int64_t v = i; v < p.elements; v += producers)
          q.enqueue(token, v);
      },
      [] {},
      [&] {
        int64_t local = 0;
        for (int64_t v; taken.load(std::memory_order_relaxed) < p.elements;) {
          if (!q.wait_dequeue_timed(v, std::chrono::milliseconds(1)))
            continue;
          local += v;
          taken.fetch_add(1, std::memory_order_relaxed);
        }
        return local;
      });
}

double run_moody_bulk(const params& p, int producers, int consumers) {
  moodycamel::BlockingConcurrentQueue<int64_t> q{static_cast<size_t>(p.capacity)};
  std::atomic<int64_t> taken{0};
  return timed_run(
      "moodycamel (bulk)", p.elements, producers, consumers,
      [&](int i) {
        moodycamel::ProducerToken token{q};
        std::vector<int64_t> rows;
        rows.reserve(static_cast<size_t>(p.batch));
        for (int64_t v = i; v < p.elements; v += producers) {
          rows.push_back(v);
          if (static_cast<int32_t>(rows.size()) == p.batch) {
            q.enqueue_bulk(token, rows.begin(), rows.size());
            rows.clear();
          }
        }
        if (!rows.empty())
          q.enqueue_bulk(token, rows.begin(), rows.size());
      },
      [] {},
      [&] {
        return moody_consume(q, std::vector<int64_t>(static_cast<size_t>(p.batch)),
                             p.elements, taken, [](int64_t v) { return v; });
      });
}

// -- the flagship's batches: --flagship-rows rows of three float32 columns ----
// Every row carries its index in x1 (exact in a float below 2^24), so the
// consumers' sum checks that each row arrived once.

int64_t flagship_batches(const params& p) {
  return (p.elements + p.flagship_rows - 1) / p.flagship_rows;
}

/// Batch `b` of the flagship scenario as quern's element of three columns.
element flagship_batch(const params& p, int64_t b) {
  tensor_shape shape{p.flagship_rows};
  auto constant = [](float value) {
    return [value](float* v, size_t n) { std::fill(v, v + n, value); };
  };
  return element{tensor::build<float>(shape,
                                      [&](float* v, size_t n) {
                                        for (size_t k = 0; k < n; ++k)
                                          v[k] =
                                              static_cast<float>(b * p.flagship_rows +
                                                                 static_cast<int64_t>(k));
                                      }),
                 tensor::build<float>(shape, constant(0.5f)),
                 tensor::build<float>(shape, constant(1.5f))};
}

/// The sum of the row indices (column x1) of a flagship batch.
int64_t flagship_sum(const element& batch) {
  int64_t local = 0;
  for (auto v : batch[0].values<float>())
    local += static_cast<int64_t>(v);
  return local;
}

double run_actor_flagship(caf::actor_system& sys, const params& p, int producers,
                          int consumers) {
  auto q = spawn_fifo_queue(sys, std::max(p.capacity, 4 * p.flagship_rows),
                            {dtype::float32, dtype::float32, dtype::float32},
                            {tensor_shape{}, tensor_shape{}, tensor_shape{}});
  auto batches = flagship_batches(p);
  return timed_run(
      "actor queue (flagship)", batches * p.flagship_rows, producers, consumers,
      [&](int i) {
        queue_writer w{sys, q,
                       p.batch_window ? p.batch_window
                                      : static_cast<size_t>(4 * p.flagship_rows)};
        for (int64_t b = i; b < batches; b += producers)
          w.push_batch(flagship_batch(p, b));
        w.flush();
      },
      [&] {
        blocking_queue{sys, q}.close();
      },
      [&] {
        batch_reader r{sys, q, p.flagship_rows};
        int64_t local = 0;
        while (auto batch = r.try_pull())
          local += flagship_sum(*batch);
        return local;
      });
}

double run_moody_flagship(const params& p, int producers, int consumers) {
  moodycamel::BlockingConcurrentQueue<xyz> q{static_cast<size_t>(4 * p.flagship_rows)};
  auto batches = flagship_batches(p);
  auto rows = batches * p.flagship_rows;
  std::atomic<int64_t> taken{0};
  return timed_run(
      "moodycamel (flagship)", rows, producers, consumers,
      [&](int i) {
        moodycamel::ProducerToken token{q};
        std::vector<xyz> batch(static_cast<size_t>(p.flagship_rows));
        for (int64_t b = i; b < batches; b += producers) {
          for (size_t k = 0; k < batch.size(); ++k)
            batch[k] = {static_cast<float>(b * p.flagship_rows + static_cast<int64_t>(k)),
                        0.5f, 1.5f};
          q.enqueue_bulk(token, batch.begin(), batch.size());
        }
      },
      [] {},
      [&] {
        return moody_consume(q, std::vector<xyz>(static_cast<size_t>(p.flagship_rows)),
                             rows, taken,
                             [](const xyz& r) { return static_cast<int64_t>(r.x1); });
      });
}

#pragma GCC diagnostic pop

double run_mutex_flagship(const params& p, int producers, int consumers) {
  bench::mutex_queue<element> q{4};
  auto batches = flagship_batches(p);
  return timed_run(
      "mutex queue (flagship)", batches * p.flagship_rows, producers, consumers,
      [&](int i) {
        for (int64_t b = i; b < batches; b += producers)
          q.push(flagship_batch(p, b));
      },
      [&] { q.close(); },
      [&] {
        int64_t local = 0;
        while (auto e = q.pop())
          local += flagship_sum(*e);
        return local;
      });
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

/// --scale: the cost of a row as a run grows (1M to 16M rows, P = C = 1) and
/// as producers are added (1 to 16, one consumer), batches of --batch rows:
/// quern and moodycamel's bulk API in turns, medians of `repeat` runs.
/// "vs first" is quern's ns per row over the sweep's first point's (1.00:
/// flat); the peaks are the process's peak RSS while each side ran.
/// Returns the largest of the peaks.
double run_scale(caf::actor_system& sys, const params& p, int repeat) {
  double largest = 0;
  std::printf("%-30s %12s %12s %8s %8s %11s %11s\n", "scale, batches of --batch rows",
              "quern ns/row", "moody ns/row", "q/moody", "vs first", "quern peak",
              "moody peak");
  struct point {
    int64_t rows;
    int producers;
  };
  auto sweep = [&](std::vector<point> points) {
    double first = 0;
    for (auto& pt : points) {
      auto at = p;
      at.elements = pt.rows;
      std::vector<double> quern_ns, moody_ns, ratio;
      double quern_peak = -1, moody_peak = -1;
      for (int r = 0; r < repeat; ++r) {
        double q = 0, m = 0;
        for (int k = 0; k < 2; ++k) {
          bench::reset_peak_rss();
          if ((k + r) % 2 == 0) { // alternate which side runs first
            q = run_actor_batch(sys, at, pt.producers, 1);
            quern_peak = std::max(quern_peak, bench::peak_rss_since_reset_mib());
          } else {
            m = run_moody_bulk(at, pt.producers, 1);
            moody_peak = std::max(moody_peak, bench::peak_rss_since_reset_mib());
          }
        }
        quern_ns.push_back(1e9 / q);
        moody_ns.push_back(1e9 / m);
        ratio.push_back(q / m);
      }
      auto ns = median(quern_ns);
      if (first == 0)
        first = ns;
      char name[64];
      std::snprintf(name, sizeof name, "%lldM rows, P=%d C=1",
                    static_cast<long long>(pt.rows / 1000000), pt.producers);
      std::printf("%-30s %12.1f %12.1f %7.2fx %7.2fx %7.1f MiB %7.1f MiB\n", name, ns,
                  median(moody_ns), median(ratio), ns / first, quern_peak, moody_peak);
      largest = std::max({largest, quern_peak, moody_peak});
      std::fflush(stdout);
    }
  };
  sweep({{1000000, 1}, {4000000, 1}, {16000000, 1}});
  sweep({{4000000, 1}, {4000000, 2}, {4000000, 4}, {4000000, 8}, {4000000, 16}});
  return largest;
}

} // namespace

int main(int argc, char** argv) {
  params p;
  int repeat = 3;
  std::string only;
  std::string scheduler;
  bool scale = false;
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
      "credit window of the streaming clients (single rows)")(
      "batch-window", po::value<size_t>(&p.batch_window)->default_value(0),
      "rows a queue_writer of batches may have in flight; 0: --capacity for "
      "batches of --batch rows, 4 batches for the flagship's")(
      "wide-window", po::value<size_t>(&p.wide_window)->default_value(16384),
      "the writers' window in the \"wide\" scenarios: batches and the flagship's "
      "again, with producers that seldom wait, as moodycamel's never do")(
      "flagship-rows", po::value<int32_t>(&p.flagship_rows)->default_value(1024),
      "rows per batch of three float32 columns in the flagship scenario")(
      "repeat,r", po::value<int>(&repeat)->default_value(3),
      "runs per figure (the median is printed)")(
      "only", po::value<std::string>(&only)->default_value(""),
      "run only scenarios whose name contains this text, e.g. \"P=C=1 single\"")(
      "scheduler", po::value<std::string>(&scheduler)->default_value(""),
      "CAF scheduler policy: stealing or sharing (default: quern::config's)")(
      "scale", po::bool_switch(&scale),
      "instead of the scenarios: ns per row of batches as runs grow from 1M to 16M "
      "rows and producers from 1 to 16, beside moodycamel, with each side's peak RSS");
  po::variables_map vm;
  if (auto status =
          quern::cli::parse_options("bench_queue_throughput", argc, argv, desc, vm))
    return *status;
  if (p.elements <= 0 || p.capacity <= 0 || p.batch <= 0 || p.window == 0 ||
      p.wide_window == 0 || p.flagship_rows <= 0 || repeat <= 0) {
    std::cerr << "bench_queue_throughput: --elements, --capacity, --batch, --window, "
                 "--wide-window, --flagship-rows and --repeat must be positive\n";
    return 2;
  }
  if (p.elements >= (int64_t{1} << 24)) {
    // The flagship scenario checks rows by their index in a float32.
    std::cerr << "bench_queue_throughput: --elements must be below 16777216\n";
    return 2;
  }
  quern::config cfg;
  if (!scheduler.empty())
    cfg.set("scheduler.policy", caf::atom_from_string(scheduler));
  caf::actor_system sys{cfg};
  if (scale) {
    // The peaks were reset for each run: the largest of them is the peak.
    std::printf("peak RSS %.1f MiB\n", run_scale(sys, p, repeat));
    return 0;
  }
  std::printf("%-30s %13s %13s %13s %8s %8s\n", "scenario", "quern rows/s",
              "mutex rows/s", "moody rows/s", "q/mutex", "q/moody");
  enum class kind { single, batch, flagship };
  struct scenario {
    int producers;
    int consumers;
    kind what;
    bool wide; // the writers' window is --wide-window; no mutex queue run
  };
  std::vector<scenario> scenarios;
  for (auto pc : {std::pair{1, 1}, std::pair{4, 4}, std::pair{16, 4}})
    for (auto what : {kind::single, kind::batch, kind::flagship})
      scenarios.push_back({pc.first, pc.second, what, false});
  for (auto pc : {std::pair{1, 1}, std::pair{4, 4}, std::pair{16, 4}})
    for (auto what : {kind::batch, kind::flagship})
      scenarios.push_back({pc.first, pc.second, what, true});
  for (auto& sc : scenarios) {
    char name[96];
    auto what = sc.what == kind::single ? std::string("single")
                : sc.what == kind::batch
                    ? "batch of " + std::to_string(p.batch)
                    : "flagship " + std::to_string(p.flagship_rows) + "x3";
    if (sc.wide)
      what += " wide";
    if (sc.producers == sc.consumers)
      std::snprintf(name, sizeof(name), "P=C=%d %s", sc.producers, what.c_str());
    else
      std::snprintf(name, sizeof(name), "P=%d C=%d %s", sc.producers, sc.consumers,
                    what.c_str());
    if (!only.empty() && std::string(name).find(only) == std::string::npos)
      continue;
    auto run_quern = [&] {
      auto at = p;
      if (sc.wide)
        at.batch_window = p.wide_window;
      switch (sc.what) {
      case kind::single:
        return run_actor_single(sys, at, sc.producers, sc.consumers);
      case kind::batch:
        return run_actor_batch(sys, at, sc.producers, sc.consumers);
      default:
        return run_actor_flagship(sys, at, sc.producers, sc.consumers);
      }
    };
    auto run_base = [&] {
      if (sc.wide) // the narrow scenario's figure stands for it
        return 0.0;
      return sc.what == kind::flagship ? run_mutex_flagship(p, sc.producers, sc.consumers)
                                       : run_mutex(p, sc.producers, sc.consumers);
    };
    auto run_peer = [&] {
      switch (sc.what) {
      case kind::single:
        return run_moody_single(p, sc.producers, sc.consumers);
      case kind::batch:
        return run_moody_bulk(p, sc.producers, sc.consumers);
      default:
        return run_moody_flagship(p, sc.producers, sc.consumers);
      }
    };
    std::vector<double> quern_rate, mutex_rate, moody_rate, vs_mutex, vs_moody;
    for (int r = 0; r < repeat; ++r) {
      // Rotate the order so that no side always runs first (warm or cold).
      double q = 0, m = 0, c = 0;
      for (int k = 0; k < 3; ++k) {
        switch ((r + k) % 3) {
        case 0:
          q = run_quern();
          break;
        case 1:
          m = run_base();
          break;
        default:
          c = run_peer();
        }
      }
      quern_rate.push_back(q);
      mutex_rate.push_back(m);
      moody_rate.push_back(c);
      vs_mutex.push_back(sc.wide ? 0.0 : q / m); // no mutex run: no ratio
      vs_moody.push_back(q / c);
    }
    if (sc.wide)
      std::printf("%-30s %13.0f %13s %13.0f %8s %7.2fx\n", name, median(quern_rate), "-",
                  median(moody_rate), "-", median(vs_moody));
    else
      std::printf("%-30s %13.0f %13.0f %13.0f %7.2fx %7.2fx\n", name, median(quern_rate),
                  median(mutex_rate), median(moody_rate), median(vs_mutex),
                  median(vs_moody));
    std::fflush(stdout);
  }
  quern::bench::print_peak_rss();
  return 0;
}
