// quern's flagship example: the reading-data guide's recommended input
// pipeline feeding a real training loop.
//
//   CSV files (y = 3 x1 - 2 x2 + 1 + noise, a header line each)
//     -> string_input_producer(files, num_epochs)        a FIFO queue of names
//     -> --readers reader workers: text_line_reader(skip_header_lines=1)
//        + decode_csv, each emitting decoded batches (enqueue_many)
//     -> shuffle_batch_join(batch_size)                  a RandomShuffleQueue
//     -> linear regression by SGD on each batch, until the epochs run out:
//        "Done training -- epoch limit reached".
//
// Logs `loss` per step and the queues' fill fractions
// (input_producer/fraction_of_32_full,
// shuffle_batch_join/fraction_over_<m>_of_<c-m>_full) to runs/csv_pipeline/,
// and where the pipeline waits (consumer/shuffle_batch_join/wait_fraction,
// runner/<stage>/busy, ..., the pipeline/verdict text; docs/input.md) at most
// every --telemetry-every seconds.

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>

#include <boost/program_options.hpp>

#include "command_line.hpp"

#include "csv_data.hpp"
#include "quern/coordinator.hpp"
#include "quern/input/batching.hpp"
#include "quern/input/csv_source.hpp"
#include "quern/input/producers.hpp"
#include "quern/input/summaries.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"
#include "quern/summary/summary_writer.hpp"

namespace po = boost::program_options;
using namespace quern;

int main(int argc, char** argv) {
  int files = 4;
  int64_t rows = 1000;
  int64_t epochs = 5;
  int32_t batch_size = 32;
  int readers = 2;
  double learning_rate = 0.1;
  std::string logdir;
  int64_t seed = 1;
  int32_t min_after_dequeue = 200;
  int64_t checkpoint_every = 0;
  std::string checkpoint_dir;
  bool restore = false;
  int64_t stop_after = 0;
  // The run lasts a fraction of a second: a reading every 10 ms draws its
  // pipeline on the page. A job of hours would take seconds (the library's
  // default is 10 s).
  double telemetry_every = 0.01;
  po::options_description desc{
      "csv_pipeline: the reading-data guide's input pipeline (CSV files -> "
      "string_input_producer -> readers + decode_csv -> shuffle_batch) training a "
      "linear regression\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "files", po::value<int>(&files)->default_value(files),
      "CSV files to write and read")(
      "rows", po::value<int64_t>(&rows)->default_value(rows),
      "rows per file")("epochs", po::value<int64_t>(&epochs)->default_value(epochs),
                       "num_epochs of string_input_producer")(
      "batch-size", po::value<int32_t>(&batch_size)->default_value(batch_size),
      "examples per training step")(
      "readers", po::value<int>(&readers)->default_value(readers),
      "reader workers (threads), one source of shuffle_batch_join each")(
      "min-after-dequeue",
      po::value<int32_t>(&min_after_dequeue)->default_value(min_after_dequeue),
      "shuffle buffer of the RandomShuffleQueue")(
      "learning-rate",
      po::value<double>(&learning_rate)
          ->default_value(learning_rate, quern::cli::shown(learning_rate)),
      "SGD step size")(
      "logdir", po::value<std::string>(&logdir)->default_value("runs/csv_pipeline"),
      "run directory: the CSV files go to <logdir>/data, the event file to <logdir>")(
      "seed", po::value<int64_t>(&seed)->default_value(seed),
      "seed of the data, the file order and the shuffle queue (0: random order)")(
      "checkpoint-every", po::value<int64_t>(&checkpoint_every)->default_value(0),
      "write a checkpoint of the pipeline and the model every N steps (0: none)")(
      "checkpoint-dir", po::value<std::string>(&checkpoint_dir),
      "where checkpoints go (default: <logdir>/ckpt)")(
      "restore", po::bool_switch(&restore),
      "go on from the newest checkpoint of --checkpoint-dir, if there is one")(
      "stop-after-steps", po::value<int64_t>(&stop_after)->default_value(0),
      "end the run after N steps, as a preempted job would (0: run to the end)")(
      "telemetry-every",
      po::value<double>(&telemetry_every)
          ->default_value(telemetry_every, quern::cli::shown(telemetry_every)),
      "log where the input pipeline waits (consumer/, runner/, queue/ scalars and the "
      "pipeline/verdict text) at most every S seconds (0: every step)");
  po::variables_map vm;
  if (auto status = quern::cli::parse_options("csv_pipeline", argc, argv, desc, vm))
    return *status;
  if (files <= 0 || rows <= 0 || epochs <= 0 || batch_size <= 0 || readers <= 0 ||
      min_after_dequeue < 0 || !(learning_rate > 0) || checkpoint_every < 0 ||
      stop_after < 0 || !(telemetry_every >= 0)) {
    std::cerr << "csv_pipeline: --files, --rows, --epochs, --batch-size, --readers and "
                 "--learning-rate must be positive, --min-after-dequeue, "
                 "--checkpoint-every, --stop-after-steps and --telemetry-every "
                 "non-negative\n";
    return 2;
  }
  // An empty run directory would put the CSV files in /data, at the root.
  if (logdir.empty()) {
    std::cerr << "csv_pipeline: --logdir must not be empty\n";
    return 2;
  }
  // The shuffle queue's capacity (IN-15), computed wide: user sizes must not
  // overflow into a negative capacity.
  auto capacity = int64_t{min_after_dequeue} + (int64_t{readers} + 2) * batch_size;
  if (capacity > std::numeric_limits<int32_t>::max()) {
    std::cerr
        << "csv_pipeline: --min-after-dequeue + (--readers + 2) * --batch-size is the "
           "shuffle queue's capacity and must be at most 2147483647, got "
        << capacity << "\n";
    return 2;
  }
  try {
    std::filesystem::create_directories(logdir + "/data");
    auto paths = examples::write_csv_files(logdir + "/data", files, rows,
                                           static_cast<uint64_t>(seed == 0 ? 1 : seed));
    std::cout << "wrote " << files << " CSV files of " << rows << " rows to " << logdir
              << "/data\n";

    quern::config cfg;
    quern::actor_system sys{cfg};
    summary_writer writer{sys, logdir};
    // Checkpoints (docs/resume.md): the pipeline's queues, producers and
    // readers, and the model as a part of the same file.
    pipeline_options popts;
    popts.checkpoint_dir = checkpoint_dir.empty() ? logdir + "/ckpt" : checkpoint_dir;
    popts.restore = restore;
    pipeline pipe{sys, popts};
    input_summaries summaries{sys};

    // filename_queue = tf.train.string_input_producer(files, num_epochs=...)
    producer_options po;
    po.num_epochs = epochs;
    po.seed = seed;
    po.summaries = &summaries;
    auto filename_queue = string_input_producer(pipe, paths, po);

    // reader = tf.TextLineReader(skip_header_lines=1)
    // _, lines = reader.read_up_to(filename_queue, batch_size)
    // x1, x2, y = tf.decode_csv(lines, record_defaults=[[0.], [0.], [0.]])
    // One reader per thread, batches joined and shuffled (shuffle_batch_join);
    // dtypes and shapes come from the record defaults.
    csv_source_options ro;
    ro.skip_header_lines = 1;
    ro.read_batch = batch_size;
    std::vector<example_source> sources;
    for (int r = 0; r < readers; ++r)
      sources.push_back(
          csv_source(sys, filename_queue,
                     {tensor::vector<float>({0.0f}), tensor::vector<float>({0.0f}),
                      tensor::vector<float>({0.0f})},
                     ro));
    batch_options bo;
    bo.batch_size = batch_size;
    bo.min_after_dequeue = min_after_dequeue;
    bo.capacity = static_cast<int32_t>(capacity); // IN-15
    bo.seed = seed;
    bo.summaries = &summaries;
    auto examples_batch = shuffle_batch_join(pipe, std::move(sources), bo);

    // hp.hparams(...): the pipeline's settings and the learning rate, compared
    // by `loss` in the boards' tables.
    log_pipeline_settings(writer, pipe, {"loss"}, {{"learning_rate", learning_rate}});

    // The model: y = w1 x1 + w2 x2 + b, trained by SGD on mean squared error.
    examples::linear_model model;
    pipe.add_checkpoint_part(
        "model", [&model] { return model.save(); },
        [&model](const std::string& bytes) { model.restore(bytes); });
    // Where the input pipeline waits (docs/input.md): scalars and a verdict
    // written with the summaries, at most every --telemetry-every seconds.
    summaries.add_telemetry(pipe, std::chrono::duration_cast<caf::timespan>(
                                      std::chrono::duration<double>(telemetry_every)));
    coordinator coord{sys};
    auto threads = pipe.start_queue_runners(coord); // restores first with --restore
    auto in = pipe.make_consumer(examples_batch.queue);
    int64_t step = pipe.restored_step();
    if (step > 0) {
      // SessionLog START: the boards drop the points written after this step
      // by the run that was broken, so that the charts do not zigzag.
      writer.restarted_at(step);
      std::cout << "restored from " << popts.checkpoint_dir << " at step " << step
                << "\n";
    }
    double loss = 0;
    try {
      while (!coord.should_stop()) {
        if (stop_after > 0 && step >= stop_after) {
          std::cout << "stopped after step " << step << " (--stop-after-steps)\n";
          break;
        }
        auto batch = examples_batch.next(in); // sess.run(train_op)
        loss = model.step(batch, learning_rate);
        writer.scalar("loss", loss, step);
        summaries.write(writer, step);
        if (step % 100 == 0)
          std::cout << "step " << std::setw(5) << step << "  loss " << loss << "\n";
        ++step;
        if (checkpoint_every > 0 && step % checkpoint_every == 0)
          pipe.checkpoint(step); // `step` batches trained
      }
    } catch (const out_of_range_error&) {
      std::cout << "Done training -- epoch limit reached\n";
    } catch (const std::exception& e) {
      coord.request_stop(e);
    }
    // Since the last telemetry written: which stage, if any, held training up.
    std::cout << "input pipeline: " << pipe.telemetry().verdict << "\n";
    // finally: When done, ask the threads to stop.
    coord.request_stop();
    // Wait for threads to finish (rethrows a worker's error).
    coord.join(threads);
    writer.scalar("weights/w1", model.w1, step);
    writer.scalar("weights/w2", model.w2, step);
    writer.scalar("weights/b", model.b, step);
    writer.close();
    std::cout << std::fixed << std::setprecision(3) << "trained " << step << " steps of "
              << batch_size << ", last loss " << loss << "\nlearned w1 = " << model.w1
              << ", w2 = " << model.w2 << ", b = " << model.b << "   (true: 3, -2, 1)\n"
              << quern::cli::charts_hint(logdir);
  } catch (const op_error& e) {
    std::cerr << "csv_pipeline: " << error_code_name(e.code()) << ": " << e.what()
              << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "csv_pipeline: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
