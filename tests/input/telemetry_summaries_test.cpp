// The pipeline's telemetry written with the input summaries (docs/input.md,
// "Where the pipeline waits"; docs/semantics.md TL-6): ordinary scalars and a
// text summary in the event files, read back with quern's event reader, at
// most once per interval.

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "input_test_util.hpp"
#include "quern/input/batching.hpp"
#include "quern/input/producers.hpp"
#include "quern/input/summaries.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"
#include "quern/summary/reader.hpp"
#include "quern/summary/summary_writer.hpp"

using namespace quern;
using namespace std::chrono_literals;

namespace {

/// tag -> steps of every scalar, and the texts by tag, in the event files of
/// `dir`.
struct written {
  std::map<std::string, std::set<int64_t>> scalars;
  std::map<std::string, std::vector<std::string>> texts;
};

written read_back(const std::string& dir) {
  written out;
  for (auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!is_event_file_name(entry.path().filename().string()))
      continue;
    auto contents = read_event_file(entry.path().string());
    CHECK_FALSE(contents.error);
    for (auto& ev : contents.events)
      if (auto s = caf::get_if<summary_event::summary>(&ev.what))
        for (auto& v : s->values) {
          if (caf::get_if<float>(&v.value))
            out.scalars[v.tag].insert(ev.step);
          else if (auto t = caf::get_if<text_tensor>(&v.value))
            for (auto& str : t->strings)
              out.texts[v.tag].push_back(str);
        }
  }
  return out;
}

/// A producer of indices batched by 4; the consumer dequeues `steps` batches
/// and writes the summaries after each.
std::string train(caf::actor_system& sys, const std::string& logdir, caf::timespan every,
                  int steps) {
  pipeline pipe{sys};
  input_summaries summaries{sys};
  producer_options po;
  auto indices = range_input_producer(pipe, 1000, po);
  batch_options bo;
  bo.batch_size = 4;
  bo.dtypes = {dtype::int32};
  bo.shapes = {tensor_shape{}};
  bo.enqueue_many = true;
  bo.summaries = &summaries;
  auto b = batch(pipe, example_source::dequeue_from(indices, 4), bo);
  summaries.add_telemetry(pipe, every);
  pipe.start_queue_runners();
  auto in = pipe.make_consumer(b.queue);
  summary_writer writer{sys, logdir};
  for (int step = 0; step < steps; ++step) {
    b.next(in);
    summaries.write(writer, step);
  }
  writer.close();
  return b.summary_tag;
}

} // namespace

TEST_CASE("TL-6 the telemetry is written as scalars and a verdict text", "[TL-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  quern::test::temp_dir dir;
  train(sys, dir.path(), caf::timespan{0}, 3);
  auto w = read_back(dir.path());
  std::set<int64_t> every_step{0, 1, 2};
  for (auto tag : {"consumer/batch/wait_fraction", "consumer/batch/wait_seconds",
                   "consumer/batch/steps_per_second", "runner/batch/busy",
                   "runner/batch/waiting_for_input", "runner/batch/waiting_for_room",
                   "runner/batch/rows_per_second", "worker/batch/enqueue0/busy",
                   "queue/batch/fill", "queue/batch/enqueue_rate",
                   "queue/batch/dequeue_rate", "queue/input_producer/fill"}) {
    INFO(tag);
    CHECK(w.scalars[tag] == every_step);
  }
  REQUIRE(w.texts["pipeline/verdict"].size() == 3);
  CHECK(w.texts["pipeline/verdict"][0].rfind("the pipeline fed the trainer", 0) == 0);
}

TEST_CASE("TL-6 the telemetry is written at most once per interval, whatever the steps",
          "[TL-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  quern::test::temp_dir dir;
  auto fill_tag = train(sys, dir.path(), std::chrono::hours(1), 50);
  auto w = read_back(dir.path());
  // The fill fraction of the batch queue is written every step (IN-10), the
  // telemetry not once within the hour.
  CHECK(w.scalars[fill_tag].size() == 50);
  CHECK(w.scalars.count("consumer/batch/wait_fraction") == 0);
  CHECK(w.texts.count("pipeline/verdict") == 0);
}

TEST_CASE("TL-6 a negative telemetry interval is refused", "[TL-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  input_summaries summaries{sys};
  CHECK_THROWS_AS(summaries.add_telemetry(pipe, -std::chrono::seconds(1)),
                  invalid_argument_error);
}
