// The user guide's queue calls (docs/guide.md): TensorFlow's four queues and
// their ops through blocking_queue handles, timeouts and closing. CTest runs it
// and checks its output.
#include <chrono>
#include <iostream>
#include <quern/blocking_queue.hpp>
#include <quern/command_line.hpp>
#include <quern/error.hpp>
#include <quern/messages.hpp>
#include <quern/queue.hpp>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using quern::dtype;
using quern::element;
using quern::tensor;
using quern::tensor_shape;

int main(int argc, char** argv) {
  quern::config cfg;
  if (auto status = quern::parse_command_line(cfg, argc, argv)) // --help, bad arguments
    return *status;
  quern::actor_system sys{cfg};

  // q = tf.FIFOQueue(3, [tf.int64], shapes=[[]], name="numbers")
  quern::blocking_queue fifo{
      sys, quern::spawn_fifo_queue(sys, 3, {dtype::int64}, {tensor_shape{}}, "numbers")};
  // sess.run(q.enqueue_many([[1, 2, 3]])): a batch of 3 rows, stored as 3 elements.
  fifo.enqueue_many(element{tensor::vector<int64_t>({1, 2, 3})});
  // The queue is full: an enqueue with a timeout (TF: RunOptions(timeout_in_ms=50))
  // fails with DeadlineExceeded, and the element is not stored.
  try {
    fifo.enqueue(element{tensor::scalar(int64_t{4})}, 50ms);
  } catch (const quern::deadline_exceeded_error& e) {
    std::cout << "full: " << e.what() << "\n";
  }
  element two = fifo.dequeue_many(2); // shape [2]: 1, 2
  std::cout << "dequeue_many(2): " << two[0].values<int64_t>()[0] << ", "
            << two[0].values<int64_t>()[1] << "\n";
  // close(): no more enqueues; dequeues drain what is left, then OutOfRange.
  fifo.close();
  element rest = fifo.dequeue_up_to(10); // what is left: 3
  std::cout << "dequeue_up_to(10) after close: " << rest.batch_size() << " row(s)\n";
  try {
    fifo.dequeue();
  } catch (const quern::out_of_range_error& e) {
    std::cout << "drained: " << e.what() << "\n";
  }

  // tf.PaddingFIFOQueue(10, [tf.float32], shapes=[[None]]): dequeue_many pads
  // each batch to its longest row with zeros.
  quern::blocking_queue padding{sys, quern::spawn_padding_fifo_queue(
                                         sys, 10, {dtype::float32}, {tensor_shape{-1}})};
  padding.enqueue(element{tensor::vector<float>({1.0f})});
  padding.enqueue(element{tensor::vector<float>({2.0f, 3.0f, 4.0f})});
  std::cout << "padded batch shape " << padding.dequeue_many(2)[0].shape().to_string()
            << "\n";

  // tf.PriorityQueue(10, [tf.string], shapes=[[]]): component 0 is the int64
  // priority; dequeues take the smallest first.
  quern::blocking_queue priority{
      sys, quern::spawn_priority_queue(sys, 10, {dtype::string}, {tensor_shape{}})};
  priority.enqueue(element{tensor::scalar(int64_t{5}), tensor::scalar("later")});
  priority.enqueue(element{tensor::scalar(int64_t{1}), tensor::scalar("first")});
  std::cout << "priority queue gives "
            << priority.dequeue()[1].scalar_value<std::string>() << "\n";

  // tf.RandomShuffleQueue(10, min_after_dequeue=2, dtypes=[tf.int64], seed=7):
  // dequeues take a random element while more than 2 stay (or it is closed).
  quern::blocking_queue shuffle{
      sys,
      quern::spawn_random_shuffle_queue(sys, 10, 2, {dtype::int64}, {tensor_shape{}}, 7)};
  for (int64_t i = 0; i < 6; ++i)
    shuffle.enqueue(element{tensor::scalar(i)});
  std::cout << "shuffled: " << shuffle.dequeue_many(4)[0].num_elements()
            << " random rows, " << shuffle.size() << " left\n";
}
