// The QueueRunner training program of TensorFlow's threading guide:
// a RandomShuffleQueue fed by four workers running the same
// enqueue op ("...ops to create one example..."), and a training loop of
// dequeue_many(batch_size) under a coordinator, with the guide's exception
// handling:
//
//   try { for (step...) { if (coord.should_stop()) break; train } }
//   catch (e) { coord.request_stop(e); }
//   finally { coord.request_stop(); coord.join(threads); }
//
// The model is a logistic regression on 2-d points labelled by
// x0 + 2 x1 > 0. Logs `loss`, `accuracy` and `queue/size` per step to
// runs/queue_runner_training/. --fail-at N makes a worker fail its N-th run,
// to show an error travelling to the coordinator and out of join.

#include <cmath>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>

#include <boost/program_options.hpp>

#include "command_line.hpp"

#include "quern/coordinator.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue.hpp"
#include "quern/queue_runner.hpp"
#include "quern/summary/summary_writer.hpp"

namespace po = boost::program_options;
using namespace quern;

int main(int argc, char** argv) {
  int steps = 300;
  int32_t batch_size = 32;
  int32_t capacity = 1000;
  int32_t min_after_dequeue = 200;
  int workers = 4;
  double learning_rate = 0.5;
  int64_t seed = 1;
  int64_t fail_at = -1;
  std::string logdir;
  po::options_description desc{
      "queue_runner_training: a RandomShuffleQueue fed by a QueueRunner with four "
      "threads, "
      "and a training loop under a coordinator (TensorFlow's threading guide)\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "steps", po::value<int>(&steps)->default_value(steps), "training steps")(
      "batch-size", po::value<int32_t>(&batch_size)->default_value(batch_size),
      "dequeue_many size")("capacity",
                           po::value<int32_t>(&capacity)->default_value(capacity),
                           "queue capacity")(
      "min-after-dequeue",
      po::value<int32_t>(&min_after_dequeue)->default_value(min_after_dequeue),
      "RandomShuffleQueue min_after_dequeue")(
      "workers", po::value<int>(&workers)->default_value(workers),
      "copies of the enqueue op ([enqueue_op] * 4)")(
      "learning-rate",
      po::value<double>(&learning_rate)
          ->default_value(learning_rate, quern::cli::shown(learning_rate)),
      "SGD step size")("seed", po::value<int64_t>(&seed)->default_value(seed),
                       "seed of the examples and of the queue (0: random)")(
      "fail-at", po::value<int64_t>(&fail_at)->default_value(fail_at),
      "make worker 0 fail its run of this index (-1: never)")(
      "logdir",
      po::value<std::string>(&logdir)->default_value("runs/queue_runner_training"),
      "where the scalars are logged");
  po::variables_map vm;
  if (auto status =
          quern::cli::parse_options("queue_runner_training", argc, argv, desc, vm))
    return *status;
  if (steps < 0 || batch_size <= 0 || workers <= 0 || !(learning_rate > 0) ||
      min_after_dequeue < 0 || capacity <= min_after_dequeue) {
    std::cerr << "queue_runner_training: --steps must be non-negative, --batch-size, "
                 "--workers and --learning-rate positive, and --capacity bigger than "
                 "--min-after-dequeue\n";
    return 2;
  }
  try {
    quern::config cfg;
    quern::actor_system sys{cfg};
    summary_writer writer{sys, logdir};
    // queue = tf.RandomShuffleQueue(...)
    auto queue = spawn_random_shuffle_queue(
        sys, capacity, min_after_dequeue, {dtype::float32, dtype::float32},
        {tensor_shape{2}, tensor_shape{}}, seed, 0, "random_shuffle_queue");
    // enqueue_op = queue.enqueue(example); qr = QueueRunner(queue, [enqueue_op] * 4)
    struct example_gen {
      std::mutex mtx;
      std::mt19937_64 gen;
      std::normal_distribution<float> normal{0.0f, 1.0f};
    };
    auto g = std::make_shared<example_gen>();
    g->gen.seed(seed != 0 ? static_cast<uint64_t>(seed) : std::random_device{}());
    std::vector<enqueue_op> ops;
    for (int w = 0; w < workers; ++w)
      ops.push_back(async_op(
          [g, w, fail_at](async_run& run) {
            if (w == 0 && fail_at >= 0 && static_cast<int64_t>(run.index()) == fail_at)
              throw std::runtime_error("worker 0 failed on purpose (--fail-at)");
            float x0, x1;
            {
              std::lock_guard<std::mutex> guard{g->mtx};
              x0 = g->normal(g->gen);
              x1 = g->normal(g->gen);
            }
            float label = x0 + 2 * x1 > 0 ? 1.0f : 0.0f;
            run.emit(element{tensor::vector<float>({x0, x1}), tensor::scalar(label)});
            run.done();
          },
          "enqueue" + std::to_string(w)));
    queue_runner qr{queue, std::move(ops)};
    pipeline pipe{sys};
    coordinator coord{sys};
    // enqueue_threads = qr.create_threads(sess, coord=coord, start=True)
    auto threads = qr.start(sys, coord.actor());
    pipe.add_queue_runner(qr); // for the consumer's starvation diagnosis
    auto inputs = pipe.make_consumer(queue);
    blocking_queue sizes{sys, queue};
    double w0 = 0, w1 = 0, b = 0;
    int step = 0;
    int rc = 0;
    try {
      for (step = 0; step < steps; ++step) {
        if (coord.should_stop())
          break;
        // sess.run(train_op): inputs = queue.dequeue_many(batch_size)
        auto batch = inputs.dequeue_many(batch_size);
        auto x = batch[0].values<float>();
        auto y = batch[1].values<float>();
        double g0 = 0, g1 = 0, gb = 0, loss = 0;
        int correct = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          double z = w0 * x[2 * i] + w1 * x[2 * i + 1] + b;
          double p = 1 / (1 + std::exp(-z));
          loss -= y[i] > 0.5f ? std::log(p + 1e-12) : std::log(1 - p + 1e-12);
          correct += (p > 0.5) == (y[i] > 0.5f);
          g0 += (p - y[i]) * x[2 * i];
          g1 += (p - y[i]) * x[2 * i + 1];
          gb += p - y[i];
        }
        auto n = static_cast<double>(y.size());
        w0 -= learning_rate * g0 / n;
        w1 -= learning_rate * g1 / n;
        b -= learning_rate * gb / n;
        writer.scalar("loss", loss / n, step);
        writer.scalar("accuracy", correct / n, step);
        writer.scalar("queue/size", sizes.size(), step);
        if (step % 50 == 0)
          std::cout << std::fixed << std::setprecision(4) << "step " << step << "  loss "
                    << loss / n << "  accuracy " << correct / n << "\n";
      }
    } catch (const std::exception& e) {
      // Report exceptions to the coordinator.
      coord.request_stop(e);
    }
    // finally: terminate as usual; request_stop twice is safe.
    coord.request_stop();
    try {
      coord.join(threads);
    } catch (const std::exception& e) {
      std::cerr << "queue_runner_training: a worker failed: " << e.what() << "\n";
      rc = 1;
    }
    writer.close();
    std::cout << std::fixed << std::setprecision(3) << "trained " << step
              << " steps; w = (" << w0 << ", " << w1 << "), b = " << b
              << "  (the boundary x0 + 2 x1 = 0 has w1/w0 = 2: here "
              << (w0 != 0 ? w1 / w0 : 0) << ")\n"
              << quern::cli::charts_hint(logdir);
    return rc;
  } catch (const op_error& e) {
    std::cerr << "queue_runner_training: " << error_code_name(e.code()) << ": "
              << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "queue_runner_training: " << e.what() << "\n";
    return 1;
  }
}
