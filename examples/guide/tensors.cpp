// The user guide's tour of tensors, elements and batches (docs/guide.md).
// CTest runs it and checks its last line.
#include <iostream>
#include <quern/blocking_queue.hpp>
#include <quern/command_line.hpp>
#include <quern/messages.hpp>
#include <quern/queue.hpp>
#include <quern/tensor.hpp>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  quern::config cfg;
  if (auto status = quern::parse_command_line(cfg, argc, argv)) // --help, bad arguments
    return *status;
  using quern::tensor;
  // A tensor is a dtype, a shape and immutable values; copies share them.
  tensor loss = tensor::scalar(0.25f);             // float32, shape []
  tensor ids = tensor::vector<int64_t>({7, 8, 9}); // int64,   shape [3]
  tensor pixels = tensor::from_values(quern::tensor_shape{2, 3},
                                      std::vector<uint8_t>{0, 1, 2, 3, 4, 5}); // [2,3]
  tensor words = tensor::vector<std::string>({"queue", "runner"}); // string, [2]
  // build writes the values in place, with no vector in between: how a
  // producer makes its batches on a hot path.
  tensor squares =
      tensor::build<int64_t>(quern::tensor_shape{4}, [](int64_t* v, size_t n) {
        for (size_t i = 0; i < n; ++i)
          v[i] = static_cast<int64_t>(i * i);
      });

  std::cout << "loss " << loss.scalar_value<float>() << ", dtype "
            << quern::dtype_name(loss.type()) << ", shape " << loss.shape().to_string()
            << "\n";
  std::cout << "pixels shape " << pixels.shape().to_string() << ", "
            << pixels.num_elements() << " values, row 1 starts with "
            << int(pixels.row(1).values<uint8_t>()[0]) << "\n";
  int64_t sum = 0;
  for (int64_t id : ids.values<int64_t>()) // a view of the values, no copy
    sum += id;
  std::cout << "sum of ids " << sum << ", second word " << words.values<std::string>()[1]
            << "\n";
  std::cout << "squares " << squares.to_string() << "\n";

  // An element is one entry of a queue: a tuple of tensors, one per component.
  quern::actor_system sys{cfg};
  auto q = quern::spawn_fifo_queue(sys, 100, {quern::dtype::int64, quern::dtype::float32},
                                   {quern::tensor_shape{}, quern::tensor_shape{2}});
  quern::blocking_queue queue{sys, q};
  for (int64_t i = 0; i < 5; ++i)
    queue.enqueue({tensor::scalar(i), tensor::vector<float>({i * 1.0f, i * 2.0f})});

  // dequeue_many(n) returns a batch: each component gains a leading dimension n.
  quern::element batch = queue.dequeue_many(3);
  std::cout << "batch of " << batch.batch_size() << ": labels shape "
            << batch[0].shape().to_string() << ", features shape "
            << batch[1].shape().to_string() << "\n";
  auto features = batch[1].values<float>(); // row-major: 3 rows of 2
  std::cout << "features of row 2: " << features[2 * 2] << ", " << features[2 * 2 + 1]
            << "\n";
  quern::element row = batch.row(2); // one example of the batch, a view
  std::cout << "row 2 label " << row[0].scalar_value<int64_t>() << "\n";

  // enqueue_many(batch) splits a batch into rows: the queue holds 2 + 3.
  queue.enqueue_many(batch);
  std::cout << "queue size " << queue.size() << "\n";
}
