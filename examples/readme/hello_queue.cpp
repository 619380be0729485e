// The README's program, built and run by the tests so that it never rots.

#include <iostream>
#include <quern/blocking_queue.hpp>
#include <quern/command_line.hpp>
#include <quern/messages.hpp>
#include <quern/queue.hpp>
#include <quern/summary/summary_writer.hpp>
#include <thread>

int main(int argc, char** argv) {
  quern::config cfg; // registers quern's message types and errors
  if (auto status = quern::parse_command_line(cfg, argc, argv)) // --help, bad arguments
    return *status;
  quern::actor_system sys{cfg}; // ends, and says why, if something is left blocked
  auto q =
      quern::spawn_fifo_queue(sys, 10, {quern::dtype::float32}, {quern::tensor_shape{}});
  quern::summary_writer writer{sys, "runs/hello"};

  std::thread producer{[&] { // what a queue-runner thread does
    quern::blocking_queue queue{sys, q};
    for (int i = 0; i < 100; ++i)
      queue.enqueue(quern::element{quern::tensor::scalar(1000.0f - i)});
    queue.close(); // consumers drain, then get OutOfRange
  }};

  quern::blocking_queue queue{sys, q};
  try {
    for (int step = 0;; ++step) {
      float loss = queue.dequeue()[0].scalar_value<float>();
      writer.scalar("loss", loss, step);
    }
  } catch (const quern::out_of_range_error& e) {
    std::cout << "done: " << e.what() << "\n";
  }
  producer.join();
} // the writer's handle closes its file
