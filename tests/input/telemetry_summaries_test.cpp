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

TEST_CASE("TL-11 each queue's waits at the queue are written as scalars",
          "[TL-11][TL-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  quern::test::temp_dir dir;
  train(sys, dir.path(), caf::timespan{0}, 3);
  auto w = read_back(dir.path());
  std::set<int64_t> every_step{0, 1, 2};
  for (auto tag : {"queue/batch/enqueue_wait_seconds", "queue/batch/dequeue_wait_seconds",
                   "queue/input_producer/enqueue_wait_seconds",
                   "queue/input_producer/dequeue_wait_seconds"}) {
    INFO(tag);
    CHECK(w.scalars[tag] == every_step);
  }
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

TEST_CASE("TL-8 the pipeline's structure is written as JSON, names escaped", "[TL-8]") {
  pipeline_telemetry t;
  runner_telemetry read;
  read.name = "read \"csv\"";
  read.queue = "raw";
  read.input_queue = "files";
  worker_telemetry w0;
  w0.name = "read \"csv\"/op0";
  worker_telemetry w1;
  w1.name = "read \"csv\"/op1";
  read.workers = {w0, w1};
  runner_telemetry batch;
  batch.name = "batch";
  batch.queue = "batch q";
  t.runners = {read, batch};
  queue_telemetry raw;
  raw.name = "raw";
  raw.capacity = 16;
  queue_telemetry bq;
  bq.name = "batch q";
  bq.capacity = 4;
  t.queues = {raw, bq};
  consumer_telemetry c;
  c.queue = "batch q";
  t.consumers = {c};
  // The tags are the scalars' prefixes (IN-16 cleaning), the names as they are.
  CHECK(
      input_summaries::telemetry_graph(t) ==
      R"({"stages":[{"name":"read \"csv\"","tag":"runner/read__csv_","input":"files",)"
      R"("queue":"raw","workers":["read \"csv\"/op0","read \"csv\"/op1"]},)"
      R"({"name":"batch","tag":"runner/batch","input":"","queue":"batch q","workers":[]}],)"
      R"("queues":[{"name":"raw","tag":"queue/raw","capacity":16},)"
      R"({"name":"batch q","tag":"queue/batch_q","capacity":4}],)"
      R"("consumers":[{"queue":"batch q","tag":"consumer/batch_q"}]})");
  pipeline_telemetry odd;
  runner_telemetry r;
  r.name = std::string("a\\b\n\x01", 5);
  odd.runners = {r};
  CHECK(input_summaries::telemetry_graph(odd).find(R"("name":"a\\b\u000a\u0001")") !=
        std::string::npos);
}

TEST_CASE("TL-9 the limiting stage is a scalar per stage, 1 for the stage named",
          "[TL-9][TL-6]") {
  pipeline_telemetry t;
  runner_telemetry a;
  a.name = "decode";
  runner_telemetry b;
  b.name = "batch";
  t.runners = {a, b};
  t.limiting_stage = "decode";
  std::map<std::string, float> v;
  for (auto& [tag, value] : input_summaries::telemetry_values(t))
    v[tag] = value;
  CHECK(v.at("runner/decode/limiting") == 1.0f);
  CHECK(v.at("runner/batch/limiting") == 0.0f);
  t.limiting_stage.clear();
  for (auto& [tag, value] : input_summaries::telemetry_values(t))
    v[tag] = value;
  CHECK(v.at("runner/decode/limiting") == 0.0f);
}

TEST_CASE("TL-8 the structure is written with the telemetry, again only when it changed",
          "[TL-8][TL-6]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  quern::test::temp_dir dir;
  train(sys, dir.path(), caf::timespan{0}, 30);
  auto w = read_back(dir.path());
  auto& graphs = w.texts["pipeline/graph"];
  // At least once, at most once per telemetry written, never twice the same
  // in a row.
  REQUIRE(!graphs.empty());
  CHECK(graphs.size() <= 30);
  for (size_t i = 1; i < graphs.size(); ++i)
    CHECK(graphs[i] != graphs[i - 1]);
  // The producer's and the batching stage's runners, the queues they feed,
  // the consumer of the batches; every tag of it has its scalars.
  auto& last = graphs.back();
  INFO(last);
  CHECK(last.rfind(R"({"stages":[)", 0) == 0);
  CHECK(last.find(R"("name":"batch","tag":"runner/batch")") != std::string::npos);
  CHECK(last.find(R"("queue":"batch","workers":["batch/enqueue0"]})") !=
        std::string::npos);
  CHECK(last.find(R"({"name":"batch","tag":"queue/batch","capacity":)") !=
        std::string::npos);
  CHECK(last.find(R"("consumers":[{"queue":"batch","tag":"consumer/batch"}])") !=
        std::string::npos);
  CHECK(w.scalars.count("runner/batch/limiting") == 1);
  CHECK(w.scalars.count("queue/batch/fill") == 1);
  CHECK(w.scalars.count("consumer/batch/wait_fraction") == 1);
}
