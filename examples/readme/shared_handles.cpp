// The README's "one handle, many threads" program, built and run by the tests.

#include <atomic>
#include <iostream>
#include <quern/blocking_queue.hpp>
#include <quern/command_line.hpp>
#include <quern/coordinator.hpp>
#include <quern/messages.hpp>
#include <quern/queue.hpp>
#include <quern/summary/summary_writer.hpp>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  quern::config cfg;
  if (auto status = quern::parse_command_line(cfg, argc, argv))
    return *status;
  quern::actor_system sys{cfg};
  auto q =
      quern::spawn_fifo_queue(sys, 100, {quern::dtype::int64}, {quern::tensor_shape{}});
  quern::blocking_queue queue{sys, q};              // one handle for every thread,
  quern::summary_writer writer{sys, "runs/shared"}; // as TensorFlow shares one op
  quern::coordinator coord{sys};

  std::atomic<int64_t> sum{0};
  std::vector<std::thread> consumers;
  for (int t = 0; t < 4; ++t)
    consumers.emplace_back([&, t] {
      try {
        for (int64_t step = 0; !coord.should_stop(); ++step) {
          auto x = queue.dequeue()[0].scalar_value<int64_t>();
          sum += x;
          writer.scalar("consumer" + std::to_string(t) + "/x", double(x), step);
        }
      } catch (const quern::out_of_range_error&) {
        coord.request_stop(); // the queue is closed and drained
      }
    });
  for (int64_t i = 1; i <= 1000; ++i)
    queue.enqueue(quern::element{quern::tensor::scalar(i)});
  queue.close();
  for (auto& c : consumers)
    c.join();
  coord.join();
  std::cout << "4 consumers took every element once: sum " << sum << "\n"; // 500500
}
