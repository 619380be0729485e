// bench_reading_pipeline: the flagship's input pipeline without the model --
// CSV files (>= 100 MB by default, written to /tmp and removed after) ->
// string_input_producer -> reader workers (text_line_reader + decode_csv,
// read_up_to batches pushed with enqueue_many) -> shuffle_batch_join(128) ->
// a consumer of dequeue_many(128) -- in examples/s, beside a plain
// single-threaded loop in the same process that reads and parses the same
// files with the same reader and decode_csv. Prints both and the ratio.

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <thread>

#include <boost/program_options.hpp>

#include "../examples/reading/csv_data.hpp"
#include "quern/coordinator.hpp"
#include "quern/input/batching.hpp"
#include "quern/input/producers.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"

namespace po = boost::program_options;
using namespace quern;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
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
      auto records = reader.read_up_to(source, read_batch);
      std::vector<std::string> lines;
      lines.reserve(records.size());
      for (auto& r : records)
        lines.push_back(std::move(r.value));
      auto cols = decode_csv(tensor::vector<std::string>(std::move(lines)), defaults);
      auto y = cols[2].values<float>();
      for (auto v : y)
        checksum += v;
      n += static_cast<int64_t>(y.size());
    }
  } catch (const out_of_range_error&) {
  }
  return n;
}

int64_t quern_pipeline(caf::actor_system& sys, const std::vector<std::string>& files,
                       int readers, int32_t batch_size, int64_t read_batch,
                       int32_t min_after_dequeue, bool fifo, bool stream,
                       double& checksum) {
  pipeline pipe{sys};
  producer_options po;
  po.num_epochs = 1;
  po.shuffle = false;
  auto filenames = string_input_producer(pipe, files, po);
  std::vector<example_source> sources;
  for (int r = 0; r < readers; ++r)
    sources.push_back(examples::csv_reader_source(sys, filenames, read_batch));
  batch_options bo;
  examples::set_csv_signature(bo);
  bo.batch_size = batch_size;
  bo.min_after_dequeue = min_after_dequeue;
  bo.capacity = min_after_dequeue + static_cast<int32_t>(read_batch) * (readers + 1);
  bo.allow_smaller_final_batch = true;
  auto b = fifo ? batch_join(pipe, std::move(sources), bo)
                : shuffle_batch_join(pipe, std::move(sources), bo);
  coordinator coord{sys};
  auto threads = pipe.start_queue_runners(coord);
  auto in = pipe.make_consumer(b.queue);
  std::unique_ptr<batch_reader> streamed;
  if (stream)
    streamed = std::make_unique<batch_reader>(sys, b.queue, batch_size);
  int64_t n = 0;
  try {
    for (;;) {
      auto batch = stream ? streamed->pull() : b.next(in);
      auto y = batch[2].values<float>();
      for (auto v : y)
        checksum += v;
      n += static_cast<int64_t>(y.size());
    }
  } catch (const out_of_range_error&) {
  }
  coord.request_stop();
  coord.join(threads);
  return n;
}

} // namespace

int main(int argc, char** argv) {
  double megabytes = 100;
  int files_n = 8;
  int readers = 2;
  int32_t batch_size = 128;
  int64_t read_batch = 1024;
  int32_t min_after_dequeue = 1000;
  bool fifo = false;
  bool stream = false;
  po::options_description desc{
      "bench_reading_pipeline: CSV files -> readers -> decode_csv -> shuffle_batch "
      "through "
      "quern's queues, beside a plain single-threaded read-and-parse loop\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "mb", po::value<double>(&megabytes)->default_value(megabytes),
      "total size of the CSV files (MB)")(
      "files", po::value<int>(&files_n)->default_value(files_n), "number of CSV files")(
      "readers", po::value<int>(&readers)->default_value(readers), "reader workers")(
      "batch-size", po::value<int32_t>(&batch_size)->default_value(batch_size),
      "shuffle_batch batch size")(
      "read-batch", po::value<int64_t>(&read_batch)->default_value(read_batch),
      "records per read_up_to / enqueue_many")(
      "min-after-dequeue",
      po::value<int32_t>(&min_after_dequeue)->default_value(min_after_dequeue),
      "shuffle buffer")("fifo", po::bool_switch(&fifo),
                        "batch_join (a FIFO queue) instead of shuffle_batch_join")(
      "stream", po::bool_switch(&stream),
      "consume with a streaming batch_reader (batches of 1..batch-size rows) instead of "
      "dequeue_many");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "bench_reading_pipeline: " << e.what() << "\n\n" << desc << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (!(megabytes > 0) || files_n <= 0 || readers <= 0 || batch_size <= 0 ||
      read_batch <= 0 || min_after_dequeue < 0) {
    std::cerr << "bench_reading_pipeline: --mb, --files, --readers, --batch-size and "
                 "--read-batch must be positive, --min-after-dequeue non-negative\n";
    return 2;
  }
  std::string dir = "/tmp/quern_bench_reading_XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    std::cerr << "bench_reading_pipeline: cannot create a directory in /tmp\n";
    return 1;
  }
  int rc = 0;
  try {
    // About 28 bytes per row.
    auto rows = static_cast<int64_t>(megabytes * 1e6 / 28.0 / files_n) + 1;
    uint64_t bytes = 0;
    auto t0 = clock_type::now();
    auto files = examples::write_csv_files(dir, files_n, rows, 1, &bytes);
    std::cout << "wrote " << files_n << " files, " << std::fixed << std::setprecision(1)
              << bytes / 1e6 << " MB, " << rows * files_n << " rows to " << dir << " in "
              << seconds_since(t0) << " s\n";
    // Warm the page cache for both runs alike.
    double warm = 0;
    plain_loop(files, read_batch, warm);

    double sum_plain = 0;
    t0 = clock_type::now();
    auto n_plain = plain_loop(files, read_batch, sum_plain);
    auto s_plain = seconds_since(t0);

    quern::config cfg;
    caf::actor_system sys{cfg};
    double sum_quern = 0;
    t0 = clock_type::now();
    auto n_quern = quern_pipeline(sys, files, readers, batch_size, read_batch,
                                  min_after_dequeue, fifo, stream, sum_quern);
    auto s_quern = seconds_since(t0);

    auto rate_plain = n_plain / s_plain;
    auto rate_quern = n_quern / s_quern;
    std::cout << std::setprecision(0) << "plain single-threaded loop: " << n_plain
              << " examples in " << std::setprecision(2) << s_plain
              << " s = " << std::setprecision(0) << rate_plain << " examples/s\n"
              << "quern pipeline (" << readers << " readers, "
              << (fifo ? "batch_join " : "shuffle_batch_join ") << batch_size
              << "): " << n_quern << " examples in " << std::setprecision(2) << s_quern
              << " s = " << std::setprecision(0) << rate_quern << " examples/s\n"
              << "ratio quern/plain: " << std::setprecision(2) << rate_quern / rate_plain
              << "x (" << std::thread::hardware_concurrency() << " cores)\n";
    if (n_plain != n_quern ||
        std::abs(sum_plain - sum_quern) > 1e-6 * std::abs(sum_plain) + 1) {
      std::cerr << "bench_reading_pipeline: the runs disagree (" << n_plain << " vs "
                << n_quern << " examples)\n";
      rc = 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_reading_pipeline: " << e.what() << "\n";
    rc = 1;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return rc;
}
