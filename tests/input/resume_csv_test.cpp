// Exact resume of the reading guide's pipeline (docs/resume.md, RS-8):
// string_input_producer -> csv_source readers -> shuffle_batch_join, broken in
// the middle of its files and restored with another number of readers.

#include <map>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "quern/input/batching.hpp"
#include "quern/input/csv_source.hpp"
#include "quern/input/producers.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue.hpp"
#include "quern/state_bytes.hpp"
#include "temp_dir.hpp"

using namespace quern;
using quern::test::temp_dir;

namespace {

constexpr int file_count = 5;
constexpr int rows_per_file = 37;
constexpr int64_t epochs = 2;

/// CSV files of `id,twice` rows, ids unique over all files, a header each.
std::vector<std::string> write_files(const temp_dir& dir) {
  std::vector<std::string> paths;
  int id = 0;
  for (int f = 0; f < file_count; ++f) {
    std::string text = "id,twice\n";
    for (int r = 0; r < rows_per_file; ++r, ++id)
      text += std::to_string(id) + "," + std::to_string(2 * id) + "\n";
    paths.push_back(dir.write("part" + std::to_string(f) + ".csv", text));
  }
  return paths;
}

struct csv_pipeline {
  pipeline pipe;
  batched b;

  csv_pipeline(caf::actor_system& sys, const std::vector<std::string>& paths, int readers)
      : pipe{sys} {
    producer_options po;
    po.num_epochs = epochs;
    po.seed = 3;
    auto names = string_input_producer(pipe, paths, po);
    csv_source_options ro;
    ro.skip_header_lines = 1;
    ro.read_batch = 5; // several reads per file: breaks fall inside files
    std::vector<example_source> sources;
    for (int r = 0; r < readers; ++r)
      sources.push_back(csv_source(
          sys, names, {tensor::vector<int32_t>({0}), tensor::vector<int32_t>({0})}, ro));
    batch_options bo;
    bo.batch_size = 6;
    bo.capacity = 60;
    bo.min_after_dequeue = 20;
    bo.seed = 8;
    bo.allow_smaller_final_batch = true;
    b = shuffle_batch_join(pipe, std::move(sources), bo);
  }
};

/// Up to `steps` batches' ids (all with -1); checks each row's second column.
bool take(consumer& in, const batched& b, int steps, std::vector<int32_t>& ids) {
  for (int i = 0; steps < 0 || i < steps; ++i) {
    element batch;
    try {
      batch = b.next(in);
    } catch (const out_of_range_error&) {
      return false;
    }
    auto id = batch[0].to_vector<int32_t>();
    auto twice = batch[1].to_vector<int32_t>();
    for (size_t k = 0; k < id.size(); ++k) {
      CHECK(twice[k] == 2 * id[k]);
      ids.push_back(id[k]);
    }
  }
  return true;
}

} // namespace

TEST_CASE("RS-8 csv_source readers broken inside their files are restored exactly, with "
          "1, 3 or 8 readers before and after",
          "[RS-8][RS-5]") {
  temp_dir dir;
  auto paths = write_files(dir);
  std::mt19937 gen{2026};
  for (auto [before, after] :
       {std::pair{1, 3}, std::pair{3, 8}, std::pair{8, 1}, std::pair{3, 3}}) {
    int at = std::uniform_int_distribution<int>{1, 50}(gen);
    INFO("readers " << before << " -> " << after << ", break at step " << at);
    quern::config cfg;
    caf::actor_system sys{cfg};
    std::vector<int32_t> ids;
    pipeline_snapshot snap;
    {
      csv_pipeline p{sys, paths, before};
      p.pipe.start_queue_runners();
      auto in = p.pipe.make_consumer(p.b.queue);
      take(in, p.b, at, ids);
      snap = p.pipe.snapshot(at);
      std::vector<int32_t> lost;
      take(in, p.b, 4, lost);
    }
    // The checkpoint file's way there and back, too.
    snap = pipeline::from_checkpoint(pipeline::to_checkpoint(snap));
    csv_pipeline p{sys, paths, after};
    p.pipe.restore(snap);
    p.pipe.start_queue_runners();
    auto in = p.pipe.make_consumer(p.b.queue);
    take(in, p.b, -1, ids);
    std::map<int32_t, int> count;
    for (auto id : ids)
      ++count[id];
    CHECK(count.size() == static_cast<size_t>(file_count * rows_per_file));
    for (auto& [id, n] : count) {
      INFO("id " << id);
      CHECK(n == epochs);
    }
  }
}

TEST_CASE("RS-8 damaged bytes of the readers' part are refused, naming it", "[RS-8]") {
  temp_dir dir;
  auto paths = write_files(dir);
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline_snapshot snap;
  {
    csv_pipeline p{sys, paths, 1};
    p.pipe.start_queue_runners();
    auto in = p.pipe.make_consumer(p.b.queue);
    std::vector<int32_t> ids;
    take(in, p.b, 3, ids);
    snap = p.pipe.snapshot(3);
  }
  // The part holds a version and a count, then the work units in progress
  // (none when the reader was between two files): cut short, it does not read.
  auto& readers = snap.parts.at("readers of input_producer");
  REQUIRE(readers.size() >= 9);
  {
    readers.resize(readers.size() - 3);
    csv_pipeline p{sys, paths, 2};
    CHECK_THROWS_WITH(p.pipe.restore(snap), Catch::Contains("readers of input_producer"));
  }
}

TEST_CASE("RS-13 the readers' part combines the files in progress of several "
          "pipelines' readers",
          "[RS-13]") {
  temp_dir dir;
  auto paths = write_files(dir);
  quern::config cfg;
  caf::actor_system sys{cfg};
  // Two pipelines (two processes' readers), each broken inside its files.
  std::vector<std::string> states;
  for (int at : {3, 11}) {
    csv_pipeline p{sys, paths, 2};
    p.pipe.start_queue_runners();
    auto in = p.pipe.make_consumer(p.b.queue);
    std::vector<int32_t> ids;
    take(in, p.b, at, ids);
    states.push_back(p.pipe.snapshot(at).parts.at("readers of input_producer"));
  }
  auto units = [](const std::string& bytes) {
    state_reader r{bytes, "readers"};
    CHECK(r.read_u8() == 1);
    return r.read_u64();
  };
  example_source one =
      csv_source(sys, spawn_fifo_queue(sys, 1, {dtype::string}, {{}}, "names"),
                 {tensor::vector<int32_t>({0}), tensor::vector<int32_t>({0})});
  auto& combine = one.state()->combine;
  REQUIRE(combine);
  auto both = combine(states);
  CHECK(units(both) == units(states[0]) + units(states[1]));
  // Damaged bytes are refused, naming the part.
  states[1].resize(states[1].size() - 1);
  CHECK_THROWS_WITH(combine(states), Catch::Contains("readers of names"));
}

namespace {

/// The deterministic mode: string_input_producer -> ordered_csv_source with
/// `threads` decode threads -> shuffle_batch (deterministic).
struct ordered_pipeline {
  pipeline pipe;
  batched b;

  ordered_pipeline(caf::actor_system& sys, const std::vector<std::string>& paths,
                   int threads)
      : pipe{sys} {
    producer_options po;
    po.num_epochs = epochs;
    po.seed = 3;
    auto names = string_input_producer(pipe, paths, po);
    csv_source_options ro;
    ro.skip_header_lines = 1;
    ro.read_batch = 5;
    batch_options bo;
    bo.batch_size = 6;
    bo.capacity = 60;
    bo.min_after_dequeue = 20;
    bo.seed = 8;
    bo.allow_smaller_final_batch = true;
    bo.deterministic = true;
    b = shuffle_batch(
        pipe,
        ordered_csv_source(sys, names,
                           {tensor::vector<int32_t>({0}), tensor::vector<int32_t>({0})},
                           ro, threads),
        bo);
  }
};

std::vector<int32_t> ordered_run(const std::vector<std::string>& paths, int threads) {
  quern::config cfg;
  caf::actor_system sys{cfg};
  ordered_pipeline p{sys, paths, threads};
  p.pipe.start_queue_runners();
  auto in = p.pipe.make_consumer(p.b.queue);
  std::vector<int32_t> ids;
  take(in, p.b, -1, ids);
  return ids;
}

} // namespace

TEST_CASE("RS-9 the deterministic mode gives the same batches whatever the number of "
          "decode threads, and after a restore on another number",
          "[RS-9]") {
  temp_dir dir;
  auto paths = write_files(dir);
  auto expected = ordered_run(paths, 1);
  REQUIRE(expected.size() == static_cast<size_t>(file_count * rows_per_file * epochs));
  for (int threads : {3, 8})
    CHECK(ordered_run(paths, threads) == expected);
  std::mt19937 gen{99};
  for (auto [before, after] : {std::pair{1, 3}, std::pair{3, 8}, std::pair{8, 1}}) {
    int at = std::uniform_int_distribution<int>{1, 60}(gen);
    INFO("threads " << before << " -> " << after << ", break at step " << at);
    quern::config cfg;
    caf::actor_system sys{cfg};
    std::vector<int32_t> ids;
    pipeline_snapshot snap;
    {
      ordered_pipeline p{sys, paths, before};
      p.pipe.start_queue_runners();
      auto in = p.pipe.make_consumer(p.b.queue);
      take(in, p.b, at, ids);
      snap = pipeline::from_checkpoint(pipeline::to_checkpoint(p.pipe.snapshot(at)));
      std::vector<int32_t> lost;
      take(in, p.b, 3, lost);
    }
    ordered_pipeline p{sys, paths, after};
    p.pipe.restore(snap);
    p.pipe.start_queue_runners();
    auto in = p.pipe.make_consumer(p.b.queue);
    take(in, p.b, -1, ids);
    CHECK(ids == expected);
  }
}

TEST_CASE("RS-9 deterministic batching refuses several source workers", "[RS-9]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  auto q = range_input_producer(pipe, 10);
  batch_options bo;
  bo.batch_size = 2;
  bo.dtypes = {dtype::int32};
  bo.shapes = {tensor_shape{}};
  bo.deterministic = true;
  bo.num_threads = 2;
  CHECK_THROWS_WITH(batch(pipe, example_source::dequeue_from(q), bo),
                    Catch::Contains("deterministic batching needs one source worker"));
}
