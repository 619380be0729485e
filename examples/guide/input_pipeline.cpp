// The user guide's input pipeline (docs/guide.md), TensorFlow's reading-data
// recipe written out in full: CSV files -> string_input_producer -> two
// readers (TextLineReader + decode_csv) -> shuffle_batch_join -> a loop that
// runs until the epochs are used up. CTest runs it and checks its output.
#include <filesystem>
#include <fstream>
#include <quern/quern.hpp>

int main(int argc, char** argv) {
  quern::config cfg;
  // seed-setup-begin
  if (auto status = quern::parse_command_line(cfg, argc, argv)) // --help, bad arguments
    return *status;
  // seed-setup-end
  // Two small CSV files with a header line: label,x (TensorFlow's recipe reads
  // files that exist; these lines are not part of it).
  // seed-setup-begin
  std::filesystem::create_directories("runs/guide_input");
  std::vector<std::string> files;
  for (int f = 0; f < 2; ++f) {
    files.push_back("runs/guide_input/part" + std::to_string(f) + ".csv");
    std::ofstream out{files.back()};
    out << "label,x\n";
    for (int i = 0; i < 50; ++i)
      out << f * 50 + i << "," << 0.5 * i << "\n";
  }
  // seed-setup-end

  quern::actor_system sys{cfg};
  quern::pipeline pipe{sys}; // TensorFlow's QUEUE_RUNNERS collection

  // filename_queue = tf.train.string_input_producer(files, num_epochs=2)
  quern::producer_options po;
  po.num_epochs = 2;
  auto filename_queue = quern::string_input_producer(pipe, files, po);

  // reader = tf.TextLineReader(skip_header_lines=1)
  // _, lines = reader.read_up_to(filename_queue, 16)
  // label, x = tf.decode_csv(lines, record_defaults=[[0], [0.0]])
  // ... one reader per thread, as the guide recommends for shuffle_batch_join.
  quern::csv_source_options ro;
  ro.skip_header_lines = 1;
  ro.read_batch = 16;
  std::vector<quern::example_source> readers;
  for (int r = 0; r < 2; ++r)
    readers.push_back(quern::csv_source(
        sys, filename_queue,
        {quern::tensor::vector<int64_t>({0}), quern::tensor::vector<float>({0.0f})}, ro));

  // batch = tf.train.shuffle_batch_join(readers, batch_size=10, capacity=60,
  //                                     min_after_dequeue=20, enqueue_many=True)
  // (dtypes and shapes come from the record defaults, as TF infers them)
  quern::batch_options bo;
  bo.batch_size = 10;
  bo.capacity = 60;
  bo.min_after_dequeue = 20;
  auto batches = quern::shuffle_batch_join(pipe, std::move(readers), bo);

  quern::coordinator coord{sys};
  auto threads = pipe.start_queue_runners(coord);
  auto in = pipe.make_consumer(batches.queue);
  int steps = 0;
  int64_t label_sum = 0;
  try {
    while (!coord.should_stop()) {
      quern::element batch = batches.next(in); // sess.run(batch)
      for (int64_t label : batch[0].values<int64_t>())
        label_sum += label;
      ++steps;
    }
  } catch (const quern::out_of_range_error&) {
    std::cout << "Done training -- epoch limit reached\n";
  } catch (const std::exception& e) {
    coord.request_stop(e); // join() rethrows it below
  }
  coord.request_stop();
  coord.join(threads);
  // 2 epochs of 100 rows: 20 batches of 10, every label twice.
  std::cout << steps << " batches, label sum " << label_sum << "\n"; // 20 batches, 9900
}
