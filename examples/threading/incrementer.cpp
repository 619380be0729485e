// The incrementer of the "Threading and Queues" guide : a
// FIFO queue filled with zeros; each step dequeues a number, adds one and
// enqueues it again, so the numbers in the queue slowly grow. Each step logs
// the value it saw and the queue's size under runs/incrementer/.

#include <iostream>

#include <boost/program_options.hpp>

#include "command_line.hpp"

#include "quern/blocking_queue.hpp"
#include "quern/messages.hpp"
#include "quern/queue.hpp"
#include "quern/summary/summary_writer.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  int32_t capacity = 3;
  int steps = 20;
  std::string logdir;
  po::options_description desc{
      "incrementer: dequeue, add one, enqueue -- the queue example of TensorFlow's "
      "threading guide\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "capacity", po::value<int32_t>(&capacity)->default_value(3),
      "queue capacity; the queue starts with this many zeros")(
      "steps", po::value<int>(&steps)->default_value(20),
      "dequeue/increment/enqueue steps")(
      "logdir", po::value<std::string>(&logdir)->default_value("runs/incrementer"),
      "where the scalars are logged");
  po::variables_map vm;
  if (auto status = quern::cli::parse_options("incrementer", argc, argv, desc, vm))
    return *status;
  if (capacity <= 0 || steps < 0) {
    std::cerr << "incrementer: --capacity must be positive and --steps non-negative\n";
    return 2;
  }
  // The queue starts full of zeros, so the capacity is also an allocation
  // here (unlike a queue's capacity, which is only a bound).
  constexpr int32_t max_capacity = 10'000'000;
  if (capacity > max_capacity) {
    std::cerr
        << "incrementer: the queue starts with --capacity zeros, so --capacity must be "
           "at most "
        << max_capacity << ", got " << capacity << "\n";
    return 2;
  }
  try {
    quern::config cfg;
    quern::actor_system sys{cfg};
    auto q = quern::spawn_fifo_queue(sys, capacity, {quern::dtype::float32},
                                     {quern::tensor_shape{}}, "incrementer");
    quern::blocking_queue queue{sys, q};
    quern::summary_writer writer{sys, logdir};
    // q.enqueue_many(([0.] * capacity,))
    queue.enqueue_many(
        quern::element{quern::tensor::vector<float>(std::vector<float>(capacity, 0.0f))});
    for (int step = 0; step < steps; ++step) {
      // x = q.dequeue(); y = x + 1; q.enqueue([y])
      auto x = queue.dequeue()[0].scalar_value<float>();
      queue.enqueue(quern::element{quern::tensor::scalar(x + 1.0f)});
      writer.scalar("incrementer/value", x, step);
      writer.scalar("incrementer/queue_size", queue.size(), step);
    }
    queue.close();
    std::cout << "queue after " << steps << " steps:";
    try {
      for (;;)
        std::cout << ' ' << queue.dequeue()[0].scalar_value<float>();
    } catch (const quern::out_of_range_error&) {
    }
    std::cout << "\n";
    writer.close();
    std::cout << quern::cli::charts_hint(logdir);
  } catch (const quern::op_error& e) {
    std::cerr << "incrementer: " << quern::error_code_name(e.code()) << ": " << e.what()
              << "\n";
    return 1;
  }
  return 0;
}
