// bench_reading_pipeline: the flagship's input pipeline without the model --
// CSV files (>= 100 MB by default, written to /tmp and removed after) ->
// string_input_producer -> reader workers (text_line_reader + decode_csv,
// read_up_to batches pushed with enqueue_many) -> shuffle_batch_join(128) ->
// a consumer of exact batches of 128 -- in examples/s, beside a plain
// single-threaded loop in the same process that reads and parses the same
// files with the same reader and decode_csv. Rounds alternate the two; the
// medians and their ratio are printed, with two kinds of context: what two
// plain loops in two threads reach (the machine's own parallel ceiling for
// this work, no queues at all) and where the pipeline's CPU time goes, by
// thread (Linux /proc). Each round also runs the pipeline with telemetry off
// (pipeline_options::telemetry) and prints the ratio on / off.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <boost/program_options.hpp>

#include "command_line.hpp"
#include "peak_rss.hpp"

#include "../examples/reading/csv_data.hpp"
#include "quern/blocking_queue.hpp"
#include "quern/coordinator.hpp"
#include "quern/detail/checkpoint_writer.hpp"
#include "quern/input/batching.hpp"
#include "quern/input/decode_csv.hpp"
#include "quern/input/producers.hpp"
#include "quern/input/readers.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"

namespace po = boost::program_options;
using namespace quern;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// CPU seconds this thread has used.
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// CPU seconds of each live thread of this process, by thread id, with the
/// thread's name. Empty where /proc is not there.
struct thread_cpu {
  std::string name;
  double seconds = 0;
};

std::map<long, thread_cpu> threads_cpu() {
  std::map<long, thread_cpu> out;
  std::error_code ec;
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  for (auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream f{e.path() / "stat"};
    std::string line;
    if (!std::getline(f, line))
      continue;
    // pid (name) state ppid ... utime stime: fields 14 and 15 of stat(5).
    auto open = line.find('(');
    auto close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos)
      continue;
    std::istringstream rest{line.substr(close + 2)};
    std::vector<std::string> fields{std::istream_iterator<std::string>{rest}, {}};
    if (fields.size() < 13)
      continue;
    thread_cpu t;
    t.name = line.substr(open + 1, close - open - 1);
    t.seconds = (std::stod(fields[11]) + std::stod(fields[12])) / ticks;
    // schedstat counts nanoseconds on the CPU, where stat counts ticks of
    // 10 ms: a checkpoint file takes less than one.
    std::ifstream sched{e.path() / "schedstat"};
    double ns = 0;
    if (sched >> ns)
      t.seconds = ns / 1e9;
    out[std::stol(e.path().filename().string())] = t;
  }
  return out;
}

/// Where one pipeline run spent its CPU time.
struct cpu_split {
  double consumer = 0;  // the main thread: the batch consumer
  double detached = 0;  // detached actors: the reader workers, runners
  double scheduler = 0; // CAF's scheduler threads: the queues' work
  double writer = 0;    // the pipeline's checkpoint writer (quern.ckpt)
  double total() const { return consumer + detached + scheduler + writer; }
};

cpu_split cpu_between(const std::map<long, thread_cpu>& before,
                      const std::map<long, thread_cpu>& after) {
  cpu_split s;
  auto self = static_cast<long>(::getpid());
  for (auto& [tid, t] : after) {
    auto i = before.find(tid);
    auto used = t.seconds - (i == before.end() ? 0.0 : i->second.seconds);
    if (tid == self)
      s.consumer += used;
    else if (t.name == "caf.actor" || t.name == "quern.decode")
      s.detached += used;
    else if (t.name == "quern.ckpt")
      s.writer += used;
    else
      s.scheduler += used;
  }
  return s;
}

/// The CPU time per example (ns) of each pipeline run, by thread kind,
/// for the medians the benchmark prints.
struct cpu_per_example {
  std::vector<double> consumer, detached, scheduler, total;
  void add(const cpu_split& cpu, int64_t examples) {
    auto ns = [&](double s) { return s * 1e9 / static_cast<double>(examples); };
    consumer.push_back(ns(cpu.consumer));
    detached.push_back(ns(cpu.detached));
    scheduler.push_back(ns(cpu.scheduler));
    total.push_back(ns(cpu.total()));
  }
};

/// The cores of this machine (at least 1).
unsigned cores() {
  return std::max(1u, std::thread::hardware_concurrency());
}

/// The baseline: one thread, the same reader and parser, no queues.
int64_t plain_loop(const std::vector<std::string>& files, int64_t read_batch,
                   double& checksum) {
  text_line_reader reader{1};
  auto work = files;
  size_t next = 0;
  reader::work_source source = [&]() -> std::string {
    if (next >= work.size())
      throw out_of_range_error("no more files");
    return work[next++];
  };
  auto defaults = examples::csv_defaults();
  int64_t n = 0;
  try {
    for (;;) {
      auto lines = reader.read_values_up_to(source, read_batch);
      auto cols = decode_csv(lines, defaults);
      auto y = cols[2].values<float>();
      for (auto v : y)
        checksum += v;
      n += static_cast<int64_t>(y.size());
    }
  } catch (const out_of_range_error&) {
  }
  return n;
}

struct pipeline_args {
  int readers = 0; // main() sets the default: one more than the cores
  int32_t batch_size = 128;
  int64_t read_batch = 1024;
  int32_t min_after_dequeue = 1000;
  int32_t capacity = 0;
  bool fifo = false;
  std::string consume = "stream";
  int64_t synthetic = 0; // rows per file name; 0: read and parse the files
  /// --checkpoint-every: a pipeline checkpoint every N batches into
  /// checkpoint_dir (0: none).
  int64_t checkpoint_every = 0;
  std::string checkpoint_dir;
  /// pipeline_options::sync_checkpoints_every.
  int sync_every = 1;
  /// With checkpoint_every: snapshots only (pipeline::snapshot, no file).
  bool snapshots_only = false;
  /// With checkpoint_every: files only (one snapshot's file written again
  /// every N batches, no further snapshot; files_alone).
  bool files_only = false;
  /// pipeline_options::telemetry (docs/input.md, "Where the pipeline waits").
  bool telemetry = true;
};

/// What the checkpoints of one pipeline run cost the consumer.
struct checkpoint_costs {
  int count = 0;
  double longest = 0;  // s: the longest consumer stall, one checkpoint() call
  double total = 0;    // s
  uintmax_t bytes = 0; // of the last file
  std::string last;    // its path
  /// The batches' seconds by where they fall in each period of `period`
  /// batches (checkpoint_every, whether or not the run checkpoints): the
  /// first twentieth after the period's start (right after a checkpoint:
  /// its stall and the pipeline starting again), and the rest. The first two
  /// periods, the pipeline filling, are left out.
  int64_t period = 0;
  double after_seconds = 0, rest_seconds = 0;
  int64_t after_batches = 0, rest_batches = 0;

  /// The batches counted as right after a period's start.
  static int64_t after_span(int64_t period) { return std::max<int64_t>(1, period / 20); }

  void add_batch(int64_t batch, double seconds) {
    if (period <= 0 || batch <= 2 * period)
      return;
    if ((batch - 1) % period < after_span(period)) {
      after_seconds += seconds;
      ++after_batches;
    } else {
      rest_seconds += seconds;
      ++rest_batches;
    }
  }
  /// µs per batch right after a period's start, and in the rest of it.
  double after_us() const {
    return after_batches ? 1e6 * after_seconds / after_batches : 0;
  }
  double rest_us() const { return rest_batches ? 1e6 * rest_seconds / rest_batches : 0; }
};

/// "0.850x (quartiles 0.70x..1.00x)": the median of one kind's per-round
/// ratios, and how far they spread.
std::string describe_ratios(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << v[v.size() / 2] << "x (quartiles "
     << v[v.size() / 4] << "x.." << v[v.size() * 3 / 4] << "x)";
  return os.str();
}

/// --synthetic: a reader worker that parses nothing: for each file name it
/// takes, it emits `synthetic` rows of y = 1 in batches of read_batch, so
/// that the queue and the consumer are measured alone.
example_source synthetic_source(queue_actor filenames, caf::actor_system& sys,
                                const pipeline_args& a) {
  struct state {
    std::unique_ptr<blocking_queue> files;
    int64_t left = 0;
  };
  auto st = std::make_shared<state>();
  auto rows_per_file = a.synthetic;
  auto read_batch = a.read_batch;
  return example_fn{[st, &sys, filenames, rows_per_file, read_batch]() -> element {
    if (!st->files)
      st->files = std::make_unique<blocking_queue>(sys, filenames);
    if (st->left == 0) {
      st->files->dequeue(); // throws out_of_range_error once all are taken
      st->left = rows_per_file;
    }
    auto k = std::min(read_batch, st->left);
    st->left -= k;
    std::vector<float> zeros(static_cast<size_t>(k), 0.0f);
    std::vector<float> ones(static_cast<size_t>(k), 1.0f);
    return element{tensor::vector<float>(zeros), tensor::vector<float>(std::move(zeros)),
                   tensor::vector<float>(std::move(ones))};
  }};
}

/// --alone files: what a checkpoint's file costs without its snapshot. The
/// first call takes one snapshot; each call writes its file again as the
/// call's step, through the writer pipeline::checkpoint writes with (in the
/// background, synced as sync_every says, the file before waited for first),
/// but takes no snapshot.
class files_alone {
public:
  files_alone(std::string dir, int sync_every)
      : settings_{std::move(dir), pipeline_options{}.keep_checkpoints, sync_every, true} {
  }

  std::string write(pipeline& pipe, int64_t step) {
    files_.wait();
    if (!held_)
      held_ = std::make_shared<const pipeline_snapshot>(pipe.snapshot(step));
    return files_.write(settings_, step,
                        [held = held_] { return pipeline::to_checkpoint(*held); });
  }
  void wait() { files_.wait(); }

private:
  detail::checkpoint_writer::settings settings_;
  std::shared_ptr<const pipeline_snapshot> held_;
  detail::checkpoint_writer files_;
};

int64_t quern_pipeline(caf::actor_system& sys, const std::vector<std::string>& files,
                       const pipeline_args& a, double& checksum, cpu_split& cpu,
                       checkpoint_costs* costs = nullptr) {
  auto cpu_before = threads_cpu();
  pipeline_options popts;
  popts.checkpoint_dir = a.checkpoint_dir;
  popts.sync_checkpoints_every = a.sync_every;
  popts.telemetry = a.telemetry;
  pipeline pipe{sys, popts};
  producer_options po;
  po.num_epochs = 1;
  po.shuffle = false;
  auto filenames = string_input_producer(pipe, files, po);
  std::vector<example_source> sources;
  for (int r = 0; r < a.readers; ++r) {
    if (a.synthetic > 0)
      sources.push_back(synthetic_source(filenames, sys, a));
    else
      sources.push_back(examples::csv_reader_source(sys, filenames, a.read_batch));
  }
  batch_options bo;
  examples::set_csv_signature(bo);
  bo.batch_size = a.batch_size;
  bo.min_after_dequeue = a.min_after_dequeue;
  bo.capacity = a.capacity > 0 ? a.capacity
                               : a.min_after_dequeue +
                                     static_cast<int32_t>(a.read_batch) * (a.readers + 1);
  bo.allow_smaller_final_batch = true;
  auto b = a.fifo ? batch_join(pipe, std::move(sources), bo)
                  : shuffle_batch_join(pipe, std::move(sources), bo);
  coordinator coord{sys};
  auto threads = pipe.start_queue_runners(coord);
  std::optional<files_alone> files_written;
  if (a.files_only)
    files_written.emplace(a.checkpoint_dir, a.sync_every);
  bool per_call = a.consume == "per-call";
  bool any_size = a.consume == "any-size";
  auto in = pipe.make_consumer(b.queue);
  std::unique_ptr<batch_reader> streamed;
  if (!per_call)
    streamed = std::make_unique<batch_reader>(pipe.make_batch_reader(
        b.queue, a.batch_size, any_size ? batch_cut::any_size : b.cut()));
  int64_t n = 0;
  int64_t batches = 0;
  bool smaller_seen = false;
  auto last_batch = clock_type::now();
  try {
    for (;;) {
      auto batch = per_call ? b.next(in) : streamed->pull();
      ++batches;
      if (costs) {
        auto now = clock_type::now();
        costs->add_batch(batches,
                         std::chrono::duration<double>(now - last_batch).count());
        last_batch = now;
      }
      if (costs && a.checkpoint_every > 0 && batches % a.checkpoint_every == 0) {
        auto c0 = clock_type::now();
        if (a.snapshots_only)
          pipe.snapshot(batches);
        else if (files_written)
          costs->last = files_written->write(pipe, batches);
        else
          costs->last = pipe.checkpoint(batches); // written in the background
        auto took = seconds_since(c0);
        ++costs->count;
        costs->total += took;
        costs->longest = std::max(costs->longest, took);
      }
      // shuffle_batch's contract: full batches, then one smaller final batch.
      if (smaller_seen && !any_size)
        throw std::logic_error("a batch came after the smaller final batch");
      smaller_seen = batch[2].dim0() < a.batch_size;
      auto y = batch[2].values<float>();
      for (auto v : y)
        checksum += v;
      n += static_cast<int64_t>(y.size());
    }
  } catch (const out_of_range_error&) {
  }
  if (costs && costs->count > 0 && !a.snapshots_only) {
    pipe.wait_checkpoint();
    if (files_written)
      files_written->wait();
    costs->bytes = std::filesystem::file_size(costs->last);
  }
  cpu = cpu_between(cpu_before, threads_cpu()); // while the readers still live
  coord.request_stop();
  coord.join(threads);
  return n;
}

/// --synthetic and --pipeline-only: rounds of the pipeline alone, its rate
/// and where its CPU time went (medians). Returns the exit code: 1 when a
/// round did not deliver every row, or their y values do not add up to
/// `sum` (what a plain loop read from the same files).
int pipeline_rounds(const std::vector<std::string>& names, const pipeline_args& a,
                    int rounds, int64_t rows, double sum_want, bool synthetic) {
  quern::config cfg;
  caf::actor_system sys{cfg};
  int rc = 0;
  std::vector<double> rates;
  cpu_per_example cpu_ns;
  for (int round = 0; round < rounds; ++round) {
    double sum = 0;
    cpu_split cpu;
    auto t0 = clock_type::now();
    auto n = quern_pipeline(sys, names, a, sum, cpu);
    rates.push_back(n / seconds_since(t0));
    if (n != rows || std::abs(sum - sum_want) > 1e-6 * std::abs(sum_want) + 1) {
      std::cerr << "bench_reading_pipeline: " << n << " of " << rows
                << " rows came out, their y values add up to " << sum << ", not "
                << sum_want << "\n";
      rc = 1;
    }
    cpu_ns.add(cpu, n);
  }
  std::cout << std::fixed << std::setprecision(0)
            << (synthetic ? "synthetic batches (" : "quern pipeline alone (") << a.readers
            << (synthetic ? " workers, " : " readers, ")
            << (a.fifo ? "batch_join " : "shuffle_batch_join ") << a.batch_size
            << ", consume " << a.consume << "): " << median(rates)
            << " examples/s, CPU per example " << median(cpu_ns.total)
            << " ns = queue actors (CAF scheduler) " << median(cpu_ns.scheduler)
            << " + consumer " << median(cpu_ns.consumer) << " + workers "
            << median(cpu_ns.detached) << " (medians of " << rounds << ")\n";
  quern::bench::print_peak_rss();
  return rc;
}

/// --checkpoint-every: rounds of four runs of the pipeline (consumed per
/// call, as a trainer that checkpoints does), side by side: without
/// checkpoints (0), with one every N batches (1), with a snapshot and no
/// file every N batches (2), and without checkpoints again (3), whose ratio
/// to the first shows how far two runs differ when nothing does. Then the
/// checkpoint of a full shuffle buffer of 10,000 rows.
/// Returns the exit code (1: a run lost or added a row).
///
/// Whole runs, not stretches of one run: a checkpoint slows the pipeline
/// well after its call returns (the time per batch stays higher through the
/// 1,000 batches that follow it), so stretches without checkpoints beside
/// ones with them pay part of their cost and hide it.
int checkpoint_rounds(caf::actor_system& sys, const std::vector<std::string>& files,
                      pipeline_args a, int rounds, int64_t rows, double sum_want) {
  int rc = 0;
  constexpr int kinds = 4;
  const bool files_alone_kind = a.files_only;
  a.files_only = false;
  const char* const names[kinds] = {
      "without", "with", files_alone_kind ? "files" : "snapshots", "without again"};
  std::vector<double> rate[kinds], ratio[kinds], after_us[kinds], rest_us[kinds];
  std::vector<double> longest, mean, writer_cpu;
  cpu_per_example cpu_ns[2]; // without, with
  uintmax_t bytes = 0;
  auto every = a.checkpoint_every;
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < kinds; ++k) {
      // Each kind runs first once in four rounds and follows each other kind
      // once (a Williams square): a run that leaves the machine slower for the
      // next one weighs on every kind alike.
      static constexpr int order[kinds][kinds] = {
          {0, 1, 3, 2}, {1, 2, 0, 3}, {2, 3, 1, 0}, {3, 0, 2, 1}};
      int kind = order[round % kinds][k];
      bool with = kind == 1 || kind == 2;
      a.checkpoint_every = with ? every : 0;
      a.snapshots_only = kind == 2 && !files_alone_kind;
      a.files_only = kind == 2 && files_alone_kind;
      double sum = 0;
      cpu_split cpu;
      checkpoint_costs costs;
      costs.period = every; // the same batches timed in every kind
      auto t0 = clock_type::now();
      auto n = quern_pipeline(sys, files, a, sum, cpu, &costs);
      auto secs = seconds_since(t0);
      if (n != rows || std::abs(sum - sum_want) > 1e-6 * std::abs(sum_want) + 1) {
        std::cerr << "bench_reading_pipeline: " << n << " of " << rows << " rows\n";
        rc = 1;
      }
      rate[kind].push_back(n / secs);
      after_us[kind].push_back(costs.after_us());
      rest_us[kind].push_back(costs.rest_us());
      if (kind == 0 || kind == 1)
        cpu_ns[kind].add(cpu, n);
      if (kind == 1) {
        longest.push_back(costs.longest);
        mean.push_back(costs.count ? costs.total / costs.count : 0);
        writer_cpu.push_back(costs.count ? cpu.writer / costs.count : 0);
        bytes = costs.bytes;
        std::cout << std::setprecision(0) << "round " << round + 1 << ": " << costs.count
                  << " checkpoints, longest stall " << std::setprecision(1)
                  << 1e3 * costs.longest << " ms\n";
      }
    }
    for (int kind = 1; kind < kinds; ++kind)
      ratio[kind].push_back(rate[kind].back() / rate[0].back());
  }
  std::cout
      << std::fixed << std::setprecision(0) << "pipeline (" << a.readers
      << " readers, shuffle_batch_join " << a.batch_size << ", consumed " << a.consume
      << "): " << median(rate[0]) << " examples/s without checkpoints, "
      << median(rate[1]) << " with one every " << every << " batches"
      << (a.sync_every > 1 ? ", every " + std::to_string(a.sync_every) + " synced"
                           : std::string{})
      << "\n"
      << std::setprecision(1) << "  checkpoint: " << 1e3 * median(mean)
      << " ms on average, longest consumer stall " << 1e3 * median(longest) << " ms, "
      << bytes / 1e3 << " kB, its file written in " << 1e3 * median(writer_cpu)
      << " ms of the writer thread's CPU (medians)\n"
      << std::setprecision(0) << "  CPU per example: " << median(cpu_ns[0].total)
      << " ns without checkpoints, " << median(cpu_ns[1].total)
      << " ns with them (medians; readers " << median(cpu_ns[0].detached) << " / "
      << median(cpu_ns[1].detached) << ", queue actors " << median(cpu_ns[0].scheduler)
      << " / " << median(cpu_ns[1].scheduler) << ", consumer "
      << median(cpu_ns[0].consumer) << " / " << median(cpu_ns[1].consumer) << ")\n"
      << "throughput against the run without checkpoints of the same round (median of "
      << rounds << " rounds):\n";
  for (int kind = 1; kind < kinds; ++kind)
    std::cout << "  " << names[kind]
              << (kind == 1 ? ", a checkpoint every " + std::to_string(every) + " batches"
                  : kind == 2 && files_alone_kind
                      ? ", the file of one snapshot written again every " +
                            std::to_string(every) + " batches, no other snapshot"
                  : kind == 2 ? ", a snapshot and no file every " +
                                    std::to_string(every) + " batches"
                              : " (how far two runs differ when nothing does)")
              << ": " << describe_ratios(ratio[kind]) << "\n";
  // The same from the batches' times: per kind, the median over its runs of
  // each part of a period; a slow moment of the machine moves one run's
  // figure, and a median of runs far less than a ratio of two.
  auto after = checkpoint_costs::after_span(every);
  auto per_batch = [&](int kind) {
    return (median(after_us[kind]) * static_cast<double>(after) +
            median(rest_us[kind]) * static_cast<double>(every - after)) /
           static_cast<double>(every);
  };
  std::cout << std::setprecision(1) << "time per batch (µs, medians of the runs), in the "
            << after << " batches after each " << every << "th / in the rest:";
  for (int kind = 0; kind < kinds; ++kind)
    std::cout << (kind ? "," : "") << " " << names[kind] << " " << median(after_us[kind])
              << " / " << median(rest_us[kind]);
  std::cout << std::setprecision(3)
            << "\n  throughput from these times, against without: ";
  for (int kind = 1; kind < kinds; ++kind)
    std::cout << (kind > 1 ? ", " : "") << names[kind] << " "
              << per_batch(0) / per_batch(kind) << "x";
  std::cout << "\n";

  // A full shuffle buffer of 10,000 rows of the flagship's three floats.
  pipeline_options popts;
  popts.checkpoint_dir = a.checkpoint_dir;
  pipeline pipe{sys, popts};
  std::vector<float> col(20000, 0.5f);
  producer_options po;
  po.shuffle = false;
  po.capacity = 1024;
  auto rows_q =
      slice_input_producer(pipe,
                           {tensor::vector<float>(col), tensor::vector<float>(col),
                            tensor::vector<float>(col)},
                           po);
  batch_options bo;
  examples::set_csv_signature(bo);
  bo.batch_size = a.batch_size;
  bo.min_after_dequeue = 10000;
  bo.capacity = 10000 + 2 * a.batch_size;
  auto b = shuffle_batch(pipe, example_source::dequeue_from(rows_q), bo);
  pipe.start_queue_runners();
  blocking_queue q{sys, b.queue};
  while (q.size() < bo.min_after_dequeue)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto t0 = clock_type::now();
  auto snap = pipe.snapshot(1);
  auto stall = seconds_since(t0);
  t0 = clock_type::now();
  auto path = pipe.checkpoint(1);
  pipe.wait_checkpoint();
  auto whole = seconds_since(t0);
  std::cout << std::setprecision(1) << "shuffle buffer of "
            << snap.queues.at("shuffle_batch").stored_rows()
            << " rows: snapshot (the consumer's stall) " << 1e3 * stall
            << " ms, checkpoint with its file on disk " << 1e3 * whole << " ms, "
            << std::filesystem::file_size(path) / 1e3 << " kB\n";
  return rc;
}

} // namespace

int main(int argc, char** argv) {
  double megabytes = 100;
  int files_n = 32;
  int rounds = 3;
  bool synthetic = false;
  bool pipeline_only = false;
  std::string data_dir;
  std::string alone = "snapshots";
  pipeline_args a;
  // One reader more than there are cores: the queue actor and the consumer
  // sleep between their short turns, and each turn takes a core from a
  // reader; with a spare reader runnable, no core idles then (a readers =
  // cores run keeps its cores busy about 91% of the time, cores + 1 about
  // 94%), and the queue and the consumer find more work per wake-up.
  a.readers = static_cast<int>(cores()) + 1;
  po::options_description desc{
      "bench_reading_pipeline: CSV files -> readers -> decode_csv -> shuffle_batch "
      "through quern's queues, beside a plain single-threaded read-and-parse loop\n"
      "Options"};
  desc.add_options()("help,h", "show this help")(
      "mb",
      po::value<double>(&megabytes)
          ->default_value(megabytes, quern::cli::shown(megabytes)),
      "total size of the CSV files (MB)")(
      "files", po::value<int>(&files_n)->default_value(files_n),
      "number of CSV files (the readers take whole files: with few files the last "
      "one leaves a reader idle)")(
      "rounds", po::value<int>(&rounds)->default_value(rounds),
      "rounds of plain and quern runs (medians are reported)")(
      "readers", po::value<int>(&a.readers)->default_value(a.readers),
      "reader workers (default: one more than the cores)")(
      "batch-size", po::value<int32_t>(&a.batch_size)->default_value(a.batch_size),
      "shuffle_batch batch size")(
      "read-batch", po::value<int64_t>(&a.read_batch)->default_value(a.read_batch),
      "records per read_up_to / enqueue_many")(
      "capacity", po::value<int32_t>(&a.capacity)->default_value(a.capacity),
      "capacity of the batching queue (0: min-after-dequeue + read-batch * (readers + "
      "1))")("min-after-dequeue",
             po::value<int32_t>(&a.min_after_dequeue)->default_value(a.min_after_dequeue),
             "shuffle buffer")("fifo", po::bool_switch(&a.fifo),
                               "batch_join (a FIFO queue) instead of shuffle_batch_join")(
      "data", po::value<std::string>(&data_dir),
      "read the *.csv files of this directory (header x1,x2,y; bench/peers.py writes "
      "them) instead of writing new ones; with --pipeline-only, the quern pipeline on "
      "the "
      "same files a peer read")(
      "pipeline-only", po::bool_switch(&pipeline_only),
      "diagnostic: only the quern pipeline on the CSV files, no plain loops (for a "
      "profiler); prints its rate and CPU split")(
      "synthetic", po::bool_switch(&synthetic),
      "diagnostic: the readers parse nothing and emit pre-built batches (as many rows "
      "as the files hold), so the queue and the consumer are measured alone; no "
      "plain loop")(
      "checkpoint-dir", po::value<std::string>(&a.checkpoint_dir),
      "with --checkpoint-every: where the checkpoint files go (default: beside the CSV "
      "files; a tmpfs directory shows the cost without the disk's syncs)")(
      "checkpoint-every", po::value<int64_t>(&a.checkpoint_every)->default_value(0),
      "measure pipeline checkpoints: the pipeline (consumed as --consume says) without "
      "checkpoints and with one every N batches, and the checkpoint of a 10,000-row "
      "shuffle buffer")(
      "alone", po::value<std::string>(&alone)->default_value(alone),
      "with --checkpoint-every: what the third run does every N batches: snapshots (a "
      "snapshot, no file) or files (the file of one snapshot written again, no other "
      "snapshot), to tell the checkpoint's two costs apart")(
      "checkpoint-sync-every", po::value<int>(&a.sync_every)->default_value(1),
      "with --checkpoint-every: pipeline_options::sync_checkpoints_every (1: every "
      "checkpoint file synced to disk)")(
      "consume", po::value<std::string>(&a.consume)->default_value(a.consume),
      "how the consumer takes batches: stream (the pipeline's batch_reader with "
      "b.cut(): exact batches, demand for several kept granted), per-call (one "
      "dequeue_up_to request per batch, TF's call), any-size (a batch_reader handing "
      "out 1..batch-size rows)");
  po::variables_map vm;
  if (auto status =
          quern::cli::parse_options("bench_reading_pipeline", argc, argv, desc, vm))
    return *status;
  if (!(megabytes > 0) || files_n <= 0 || rounds <= 0 || a.readers <= 0 ||
      a.batch_size <= 0 || a.read_batch <= 0 || a.min_after_dequeue < 0 ||
      a.capacity < 0 || a.checkpoint_every < 0 || a.sync_every < 1 ||
      (a.consume != "stream" && a.consume != "per-call" && a.consume != "any-size")) {
    std::cerr << "bench_reading_pipeline: --mb, --files, --rounds, --readers, "
                 "--batch-size, --read-batch and --checkpoint-sync-every must be "
                 "positive, --min-after-dequeue "
                 "--capacity and --checkpoint-every non-negative, --consume one of "
                 "stream, per-call, "
                 "any-size\n";
    return 2;
  }
  if (alone != "snapshots" && alone != "files") {
    std::cerr << "bench_reading_pipeline: --alone must be snapshots or files, not '"
              << alone << "'\n";
    return 2;
  }
  a.files_only = alone == "files";
  std::string dir = "/tmp/quern_bench_reading_XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    std::cerr << "bench_reading_pipeline: cannot create a directory in /tmp\n";
    return 1;
  }
  struct remove_on_exit {
    std::string dir;
    ~remove_on_exit() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir};
  int rc = 0;
  try {
    // About 28 bytes per row.
    auto rows = static_cast<int64_t>(megabytes * 1e6 / 28.0 / files_n) + 1;
    if (synthetic) {
      std::vector<std::string> names;
      for (int f = 0; f < files_n; ++f)
        names.push_back("synthetic_" + std::to_string(f));
      a.synthetic = rows;
      // Synthetic rows are y = 1 each.
      return pipeline_rounds(names, a, rounds, rows * files_n,
                             static_cast<double>(rows * files_n), true);
    }
    uint64_t bytes = 0;
    auto t0 = clock_type::now();
    std::vector<std::string> files;
    if (!data_dir.empty()) {
      for (auto& entry : std::filesystem::directory_iterator(data_dir))
        if (entry.path().extension() == ".csv")
          files.push_back(entry.path().string());
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        std::cerr << "bench_reading_pipeline: no .csv files in --data " << data_dir
                  << "\n";
        return 2;
      }
      std::cout << "reading " << files.size() << " files of " << data_dir << "\n";
    } else {
      files = examples::write_csv_files(dir, files_n, rows, 1, &bytes);
      std::cout << "wrote " << files_n << " files, " << std::fixed << std::setprecision(1)
                << bytes / 1e6 << " MB, " << rows * files_n << " rows to " << dir
                << " in " << seconds_since(t0) << " s\n";
    }
    // Warm the page cache for every run alike; the plain loop also counts the
    // rows and adds up y, which the pipeline's output must match.
    double warm = 0;
    auto total_rows = plain_loop(files, a.read_batch, warm);
    if (pipeline_only)
      return pipeline_rounds(files, a, rounds, total_rows, warm, false);
    if (a.checkpoint_every > 0) {
      if (a.checkpoint_dir.empty())
        a.checkpoint_dir = dir + "/ckpt";
      std::cout << "checkpoints go to " << a.checkpoint_dir << "\n";
      quern::config cfg;
      caf::actor_system sys{cfg};
      rc = checkpoint_rounds(sys, files, a, rounds, total_rows, warm);
      quern::bench::print_peak_rss();
      return rc;
    }

    quern::config cfg;
    caf::actor_system sys{cfg};
    // Rounds alternate the runs, so that drift on a shared machine hits
    // both alike; each figure is the median over the rounds.
    std::vector<double> plain_rates, quern_rates, two_rates, ratios, telemetry_ratios;
    cpu_per_example cpu_ns;
    std::vector<double> plain_cpu, cpu_ratios, busy;
    const double ncores = cores();
    for (int round = 0; round < rounds; ++round) {
      double sum_plain = 0;
      t0 = clock_type::now();
      auto plain_cpu0 = thread_cpu_seconds();
      auto n_plain = plain_loop(files, a.read_batch, sum_plain);
      auto rate_plain = n_plain / seconds_since(t0);
      auto plain_ns =
          (thread_cpu_seconds() - plain_cpu0) * 1e9 / static_cast<double>(n_plain);

      // Context, not the baseline: the files split between two plain loops
      // in two threads, what two cores give this work without any queue.
      std::vector<std::string> even, odd;
      for (size_t i = 0; i < files.size(); ++i)
        (i % 2 ? odd : even).push_back(files[i]);
      double sum_a = 0, sum_b = 0;
      int64_t n_a = 0, n_b = 0;
      t0 = clock_type::now();
      std::thread other{[&] { n_b = plain_loop(odd, a.read_batch, sum_b); }};
      n_a = plain_loop(even, a.read_batch, sum_a);
      other.join();
      two_rates.push_back(static_cast<double>(n_a + n_b) / seconds_since(t0));

      // The same pipeline with telemetry off (TL-7), run before the one with
      // it on in odd rounds and after it in even ones, so that drift hits both
      // alike.
      auto run_without_telemetry = [&] {
        auto off = a;
        off.telemetry = false;
        double sum = 0;
        cpu_split ignored;
        auto t = clock_type::now();
        auto n = quern_pipeline(sys, files, off, sum, ignored);
        if (n != n_plain) {
          std::cerr << "bench_reading_pipeline: the run without telemetry read " << n
                    << " of " << n_plain << " examples\n";
          rc = 1;
        }
        return n / seconds_since(t);
      };
      double rate_off = 0;
      if (round % 2 == 1)
        rate_off = run_without_telemetry();
      double sum_quern = 0;
      cpu_split cpu;
      t0 = clock_type::now();
      auto n_quern = quern_pipeline(sys, files, a, sum_quern, cpu);
      auto rate_quern = n_quern / seconds_since(t0);
      if (n_plain != n_quern ||
          std::abs(sum_plain - sum_quern) > 1e-6 * std::abs(sum_plain) + 1) {
        std::cerr << "bench_reading_pipeline: the runs disagree (" << n_plain << " vs "
                  << n_quern << " examples)\n";
        rc = 1;
      }
      if (round % 2 == 0) // even rounds: telemetry off runs second
        rate_off = run_without_telemetry();
      telemetry_ratios.push_back(rate_quern / rate_off);
      plain_rates.push_back(rate_plain);
      quern_rates.push_back(rate_quern);
      ratios.push_back(rate_quern / rate_plain);
      cpu_ns.add(cpu, n_quern);
      // What the wall clock loses: with every core busy on this work the
      // pipeline would reach cores * plain CPU / pipeline CPU per example.
      plain_cpu.push_back(plain_ns);
      cpu_ratios.push_back(ncores * plain_ns / cpu_ns.total.back());
      busy.push_back(rate_quern * cpu.total() / static_cast<double>(n_quern) / ncores);
      std::cout << std::setprecision(0) << "round " << round + 1 << ": plain "
                << rate_plain << "/s, quern " << rate_quern << "/s, ratio "
                << std::setprecision(2) << rate_quern / rate_plain << "x; telemetry off "
                << std::setprecision(0) << rate_off << "/s, on/off "
                << std::setprecision(3) << rate_quern / rate_off << "x\n";
    }
    auto plain = median(plain_rates);
    std::cout << std::setprecision(0) << "plain single-threaded loop: " << plain
              << " examples/s = " << 1e9 / plain << " ns per example (median of "
              << rounds << ")\n"
              << "two plain loops in two threads (context: no queues): "
              << median(two_rates) << " examples/s = " << std::setprecision(2)
              << median(two_rates) / plain << "x\n"
              << std::setprecision(0) << "quern pipeline (" << a.readers << " readers, "
              << (a.fifo ? "batch_join " : "shuffle_batch_join ") << a.batch_size
              << ", consume " << a.consume << "): " << median(quern_rates)
              << " examples/s\n"
              << "  CPU per example: " << median(cpu_ns.total) << " ns = readers "
              << median(cpu_ns.detached) << " + queue actors (CAF scheduler) "
              << median(cpu_ns.scheduler) << " + consumer " << median(cpu_ns.consumer)
              << " (medians)\n"
              << "  by CPU (context): the plain loop uses " << median(plain_cpu)
              << " ns per example; with every core busy the pipeline would reach "
              << std::setprecision(2) << median(cpu_ratios) << "x; its cores were busy "
              << std::setprecision(0) << 100 * median(busy)
              << "% of its run (the rest: idle, or taken by other guests)\n"
              << "ratio quern/plain: " << std::setprecision(2) << median(ratios)
              << "x (median of " << rounds << " rounds, " << cores() << " cores)\n"
              << "ratio telemetry on/off: " << std::setprecision(3)
              << median(telemetry_ratios) << "x (median of " << rounds
              << " rounds, alternating which runs first)\n";
  } catch (const std::exception& e) {
    std::cerr << "bench_reading_pipeline: " << e.what() << "\n";
    rc = 1;
  }
  quern::bench::print_peak_rss();
  return rc;
}
