// Seed 000 ("asynchronous with TensorFlow's queues"): five groups, each with
// a loss that starts at 1000; each run of a group's enqueue op subtracts a
// uniform random number in [0, 10) from its loss and enqueues the new value.
// One queue runner runs the five ops (one asynchronous worker each) into a
// FIFO queue; the main loop dequeues --steps times under a coordinator,
// prints `loss: .., mean loss: ..` and logs `thread_<i>/loss`, `loss` and
// `mean_loss` per step to runs/five_groups/. train() is the seed program;
// main() reads the command line.

#include <quern/quern.hpp>

#include <atomic>
#include <cstdio>
#include <random>

// seed-setup-begin
#include "command_line.hpp"

struct options { // the command line's (main, below)
  int groups = 5, steps = 100;
  uint64_t seed = 0; // 0: random
  std::string logdir = "runs/five_groups";
};
// seed-setup-end

// class Group: a loss variable of its own (tf.Variable(1000.)).
struct group {
  std::atomic<float> loss{1000.0f};
  std::mt19937_64 gen;
};

int train(const options& opt) {
  quern::config cfg;
  quern::actor_system sys{cfg};
  quern::summary_writer writer{sys, opt.logdir};
  // queue = tf.FIFOQueue(capacity=thread_size * 10, dtypes=[tf.float32])
  auto queue =
      quern::spawn_fifo_queue(sys, opt.groups * 10, {quern::dtype::float32}, {{}});
  std::vector<std::shared_ptr<group>> groups;
  std::vector<quern::enqueue_op> ops;
  for (int i = 0; i < opt.groups; ++i) {
    auto g = groups.emplace_back(std::make_shared<group>());
    g->gen.seed(opt.seed + i);
    // loss = tf.assign_sub(self.loss, tf.random_uniform([], maxval=10.))
    ops.push_back(quern::async_op(
        [g](quern::async_run& run) {
          g->loss = g->loss - std::uniform_real_distribution<float>{0, 10}(g->gen);
          run.emit(quern::element{quern::tensor::scalar(g->loss.load())});
          run.done();
        },
        "thread_" + std::to_string(i)));
  }
  quern::pipeline pipe{sys};
  pipe.add_queue_runner(quern::queue_runner{queue, std::move(ops)});
  quern::coordinator coord{sys};
  auto threads = pipe.start_queue_runners(coord);
  auto in = pipe.make_consumer(queue);
  for (int step = 0; step < opt.steps && !coord.should_stop(); ++step) {
    auto loss = in.dequeue()[0].scalar_value<float>();
    double mean = 0;
    for (int i = 0; i < opt.groups; ++i) {
      mean += groups[i]->loss / opt.groups;
      writer.scalar("thread_" + std::to_string(i) + "/loss", groups[i]->loss, step);
    }
    std::printf("loss: %.2f, mean loss: %.2f\n", loss, mean);
    writer.scalar("loss", loss, step);
    writer.scalar("mean_loss", mean, step);
  }
  coord.request_stop();
  coord.join(threads);
  std::cout << quern::cli::charts_hint(opt.logdir);
  return 0;
}

// -- the command line ---------------------------------------------------------------
// seed-setup-begin

int main(int argc, char** argv) {
  options opt;
  namespace po = boost::program_options;
  po::options_description desc{
      "five_groups: five asynchronous groups subtract random numbers from their loss and "
      "enqueue it; the main loop dequeues and logs\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "groups", po::value(&opt.groups)->default_value(opt.groups),
      "groups (enqueue ops, one worker each)")(
      "steps", po::value(&opt.steps)->default_value(opt.steps),
      "dequeues of the main loop")("seed", po::value(&opt.seed)->default_value(opt.seed),
                                   "seed of the groups' random numbers (0: random)")(
      "logdir", po::value(&opt.logdir)->default_value(opt.logdir),
      "where the scalars are logged");
  po::variables_map vm;
  if (auto status = quern::cli::parse_options("five_groups", argc, argv, desc, vm))
    return *status;
  if (opt.seed == 0)
    opt.seed = std::random_device{}();
  if (opt.groups <= 0 || opt.steps < 0) {
    std::cerr << "five_groups: --groups must be positive and --steps non-negative\n";
    return 2;
  }
  return quern::cli::run_reporting("five_groups", [&] { return train(opt); });
}
// seed-setup-end
