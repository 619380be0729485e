// Seed 000 ("asynchronous with TensorFlow's queues"): five groups, each with
// a loss that starts at 1000; each run of a group's enqueue op subtracts a
// uniform random number in [0, 10) from its loss and enqueues the new value.
// One queue runner runs the five ops (one asynchronous worker each) into a
// FIFO queue; the main loop dequeues --steps times under a coordinator,
// prints `loss: .., mean loss: ..` and logs `thread_<i>/loss`, `loss` and
// `mean_loss` per step to runs/five_groups/.

#include <atomic>
#include <iomanip>
#include <iostream>
#include <memory>
#include <random>
#include <vector>

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

namespace {

/// class Group: a loss variable of its own (tf.Variable(1000.)).
struct group {
  std::atomic<float> loss{1000.0f};
  std::mt19937_64 gen;
  std::uniform_real_distribution<float> uniform{0.0f, 10.0f};
  explicit group(uint64_t seed) : gen(seed) {}
};

} // namespace

int main(int argc, char** argv) {
  int groups_n = 5;
  int steps = 100;
  int64_t seed = 0;
  std::string logdir;
  po::options_description desc{
      "five_groups: five asynchronous groups subtract random numbers from their loss and "
      "enqueue it; the main loop dequeues and logs\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "groups", po::value<int>(&groups_n)->default_value(groups_n),
      "groups (enqueue ops, one worker each)")(
      "steps", po::value<int>(&steps)->default_value(steps),
      "dequeues of the main loop")("seed", po::value<int64_t>(&seed)->default_value(seed),
                                   "seed of the groups' random numbers (0: random)")(
      "logdir", po::value<std::string>(&logdir)->default_value("runs/five_groups"),
      "where the scalars are logged");
  po::variables_map vm;
  if (auto status = quern::cli::parse_options("five_groups", argc, argv, desc, vm))
    return *status;
  if (groups_n <= 0 || steps < 0) {
    std::cerr << "five_groups: --groups must be positive and --steps non-negative\n";
    return 2;
  }
  try {
    quern::config cfg;
    quern::actor_system sys{cfg};
    summary_writer writer{sys, logdir};
    std::random_device rd;
    std::vector<std::shared_ptr<group>> groups;
    for (int i = 0; i < groups_n; ++i)
      groups.push_back(std::make_shared<group>(
          seed != 0 ? static_cast<uint64_t>(seed) + i : (uint64_t{rd()} << 32) ^ rd()));
    // queue = tf.FIFOQueue(capacity=thread_size * 10, dtypes=[tf.float32])
    auto queue = spawn_fifo_queue(sys, groups_n * 10, {dtype::float32}, {tensor_shape{}},
                                  "fifo_queue");
    // qr = tf.train.QueueRunner(queue, [g.loss_op(queue) for g in groups])
    std::vector<enqueue_op> ops;
    for (int i = 0; i < groups_n; ++i) {
      auto g = groups[static_cast<size_t>(i)];
      ops.push_back(async_op(
          [g](async_run& run) {
            // loss = tf.assign_sub(self.loss, tf.random_uniform([], maxval=10.))
            auto next = g->loss.load() - g->uniform(g->gen);
            g->loss.store(next);
            run.emit(element{tensor::scalar(next)});
            run.done();
          },
          "thread_" + std::to_string(i)));
    }
    pipeline pipe{sys};
    pipe.add_queue_runner(queue_runner{queue, std::move(ops)});
    coordinator coord{sys};
    auto threads = pipe.start_queue_runners(coord);
    auto in = pipe.make_consumer(queue);
    int step = 0;
    try {
      while (!coord.should_stop() && step < steps) {
        auto loss = in.dequeue()[0].scalar_value<float>();
        double mean = 0;
        for (auto& g : groups)
          mean += g->loss.load();
        mean /= groups_n;
        std::cout << std::fixed << std::setprecision(2) << "loss: " << loss
                  << ", mean loss: " << mean << "\n";
        for (int i = 0; i < groups_n; ++i)
          writer.scalar("thread_" + std::to_string(i) + "/loss",
                        groups[static_cast<size_t>(i)]->loss.load(), step);
        writer.scalar("loss", loss, step);
        writer.scalar("mean_loss", mean, step);
        ++step;
      }
    } catch (const std::exception& e) {
      coord.request_stop(e);
    }
    coord.request_stop();
    coord.join(threads);
    writer.close();
    std::cout << quern::cli::charts_hint(logdir);
  } catch (const op_error& e) {
    std::cerr << "five_groups: " << error_code_name(e.code()) << ": " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "five_groups: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
