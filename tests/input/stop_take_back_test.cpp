// What a stop keeps, for readers (docs/queues.md): csv_source readers stopped
// at a random moment take back every read whose rows the example queue
// refused, so nothing is dropped. Their state (the group's checkpoint part),
// continued by new readers with the filenames left in the filename queue,
// yields exactly the lines that were neither consumed nor left in the
// example queue: over the two, every line once.

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "quern/coordinator.hpp"
#include "quern/input/batching.hpp"
#include "quern/input/csv_source.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue.hpp"
#include "temp_dir.hpp"

using namespace quern;
using quern::test::temp_dir;

namespace stop_take_back {

constexpr int files = 4;
constexpr int rows_per_file = 23;

std::vector<std::string> write_files(const temp_dir& dir) {
  std::vector<std::string> paths;
  int id = 0;
  for (int f = 0; f < files; ++f) {
    std::string text = "id\n";
    for (int r = 0; r < rows_per_file; ++r, ++id)
      text += std::to_string(id) + "\n";
    paths.push_back(dir.write("part" + std::to_string(f) + ".csv", text));
  }
  return paths;
}

queue_actor filename_queue(caf::actor_system& sys,
                           const std::vector<std::string>& names) {
  auto q = spawn_fifo_queue(sys, 32, {dtype::string}, {tensor_shape{}});
  blocking_queue b{sys, q};
  for (auto& n : names)
    b.enqueue(element{tensor::scalar(n)});
  b.close();
  return q;
}

/// Two csv_source readers of `names` batched (FIFO) into a queue of 8 rows;
/// reads of 3 lines, so that each read's rows fit the queue whole.
struct reading {
  pipeline pipe;
  std::vector<example_source> sources;
  batched b;

  reading(caf::actor_system& sys, const queue_actor& names) : pipe{sys} {
    csv_source_options ro;
    ro.skip_header_lines = 1;
    ro.read_batch = 3;
    for (int r = 0; r < 2; ++r)
      sources.push_back(csv_source(sys, names, {tensor::vector<int32_t>({0})}, ro));
    batch_options bo;
    bo.batch_size = 4;
    bo.capacity = 8;
    bo.allow_smaller_final_batch = true;
    b = batch_join(pipe, sources, bo);
  }
};

void drain(caf::actor_system& sys, const queue_actor& q, std::vector<int32_t>& ids) {
  blocking_queue in{sys, q};
  if (!in.is_closed())
    in.close();
  try {
    for (;;)
      for (auto id : in.dequeue_up_to(16)[0].to_vector<int32_t>())
        ids.push_back(id);
  } catch (const out_of_range_error&) {
  }
}

std::vector<std::string> drain_names(caf::actor_system& sys, const queue_actor& q) {
  std::vector<std::string> names;
  blocking_queue in{sys, q};
  if (!in.is_closed())
    in.close();
  try {
    for (;;)
      names.push_back(in.dequeue()[0].to_vector<std::string>().front());
  } catch (const out_of_range_error&) {
  }
  return names;
}

} // namespace stop_take_back

using namespace stop_take_back;

TEST_CASE("QR-8 csv_source readers stopped at any moment drop nothing, and their state "
          "goes on with every line once",
          "[stop][QR-8][RD-11]") {
  temp_dir dir;
  auto paths = stop_take_back::write_files(dir);
  std::mt19937 gen{1129};
  for (int trial = 0; trial < 12; ++trial) {
    int steps = std::uniform_int_distribution<int>{0, 12}(gen);
    INFO("trial " << trial << ": stopped after " << steps << " batches");
    quern::config cfg;
    caf::actor_system sys{cfg};
    std::vector<int32_t> ids;
    std::string part;
    std::vector<std::string> names_left;
    {
      auto names = filename_queue(sys, paths);
      reading r{sys, names};
      coordinator coord{sys};
      auto threads = r.pipe.start_queue_runners(coord);
      auto in = r.pipe.make_consumer(r.b.queue);
      try {
        for (int i = 0; i < steps; ++i)
          for (auto id : r.b.next(in)[0].to_vector<int32_t>())
            ids.push_back(id);
      } catch (const out_of_range_error&) {
      }
      coord.request_stop();
      coord.join(threads);
      int64_t dropped = 0;
      for (auto& qr : r.pipe.queue_runners())
        dropped += qr.rows_dropped();
      CHECK(dropped == 0);
      drain(sys, r.b.queue, ids);
      part = r.sources.front().state()->save();
      names_left = drain_names(sys, names);
    }
    // New readers go on from the saved positions, then the names left.
    auto names = filename_queue(sys, names_left);
    reading r{sys, names};
    r.sources.front().state()->restore(part);
    r.pipe.start_queue_runners();
    auto in = r.pipe.make_consumer(r.b.queue);
    try {
      for (;;)
        for (auto id : r.b.next(in)[0].to_vector<int32_t>())
          ids.push_back(id);
    } catch (const out_of_range_error&) {
    }
    std::map<int32_t, int> count;
    for (auto id : ids)
      ++count[id];
    CHECK(count.size() ==
          static_cast<size_t>(stop_take_back::files * stop_take_back::rows_per_file));
    int twice = 0;
    for (auto& [id, n] : count)
      twice += n > 1 ? 1 : 0;
    CHECK(twice == 0);
  }
}
