// The user guide's QueueRunner and Coordinator (docs/guide.md): four threads
// fill a queue, the main loop trains on it, a coordinator stops them together
// and passes on an error. CTest runs it and checks its output.
#include <iostream>
#include <quern/command_line.hpp>
#include <quern/coordinator.hpp>
#include <quern/messages.hpp>
#include <quern/pipeline.hpp>
#include <quern/queue.hpp>
#include <quern/queue_runner.hpp>
#include <random>

int main(int argc, char** argv) {
  quern::config cfg;
  if (auto status = quern::parse_command_line(cfg, argc, argv)) // --help, bad arguments
    return *status;
  quern::actor_system sys{cfg};
  // queue = tf.RandomShuffleQueue(capacity=100, min_after_dequeue=10,
  // dtypes=[tf.float32])
  auto q = quern::spawn_random_shuffle_queue(sys, 100, 10, {quern::dtype::float32},
                                             {quern::tensor_shape{}});

  // enqueue_op = queue.enqueue(tf.random_normal([])); a blocking op runs in
  // its own thread, as a QueueRunner thread runs sess.run(enqueue_op).
  auto enqueue_op = quern::blocking_op([](quern::blocking_run& run) {
    thread_local std::mt19937 gen{std::random_device{}()};
    std::normal_distribution<float> normal;
    run.emit(quern::element{quern::tensor::scalar(normal(gen))});
  });
  // qr = tf.train.QueueRunner(queue, [enqueue_op] * 4); tf.train.add_queue_runner(qr)
  quern::pipeline pipe{sys};
  pipe.add_queue_runner(
      quern::queue_runner{q, {enqueue_op, enqueue_op, enqueue_op, enqueue_op}});

  quern::coordinator coord{sys};
  auto threads = pipe.start_queue_runners(coord); // tf.train.start_queue_runners
  auto in = pipe.make_consumer(q);
  int step = 0;
  try {
    for (; step < 1000 && !coord.should_stop(); ++step) {
      float x = in.dequeue()[0].scalar_value<float>(); // sess.run(queue.dequeue())
      if (!(x == x))
        throw std::runtime_error("not a number at step " + std::to_string(step));
    }
  } catch (const std::exception& e) {
    coord.request_stop(e); // report the exception to the coordinator
  }
  coord.request_stop(); // finally: stop the threads...
  coord.join(threads);  // ...and wait for them (rethrows the first error)
  std::cout << "trained " << step << " steps; the runner's threads stopped\n";
}
