// csv_source: the input guide's reader stage (text_line_reader + read_up_to +
// decode_csv) as one batching source whose dtypes and shapes come from the
// record defaults.

#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "input_test_util.hpp"
#include "quern/coordinator.hpp"
#include "quern/input/batching.hpp"
#include "quern/input/csv_source.hpp"
#include "quern/input/producers.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"

using namespace quern;

namespace {

std::vector<tensor> int_float_string_defaults() {
  return {tensor::vector<int64_t>({0}), tensor::vector<float>({}),
          tensor::vector<std::string>({"?"})};
}

template <class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const std::exception& e) { // argument_error or invalid_argument_error
    return e.what();
  }
  return "(nothing thrown)";
}

} // namespace

TEST_CASE("csv_source: every line of every file once, typed by the record defaults",
          "[csv_source][IN-13][RD-2]") {
  test::temp_dir dir;
  std::vector<std::string> files;
  std::map<int64_t, std::pair<float, std::string>> want;
  for (int f = 0; f < 3; ++f) {
    std::string text = "id,value,name\n"; // skipped: skip_header_lines = 1
    for (int i = 0; i < 50; ++i) {
      int64_t id = f * 1000 + i;
      text += std::to_string(id) + "," + std::to_string(i) + ".5," +
              (i % 7 == 0 ? "" : "n" + std::to_string(id)) + "\n";
      want[id] = {float(i) + 0.5f, i % 7 == 0 ? "?" : "n" + std::to_string(id)};
    }
    files.push_back(dir.write("part" + std::to_string(f) + ".csv", text));
  }
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  producer_options po;
  po.num_epochs = 1;
  auto filenames = string_input_producer(pipe, files, po);
  csv_source_options ro;
  ro.skip_header_lines = 1;
  ro.read_batch = 16;
  std::vector<example_source> readers;
  for (int r = 0; r < 2; ++r)
    readers.push_back(csv_source(sys, filenames, int_float_string_defaults(), ro));
  REQUIRE(readers[0].signature());
  CHECK(readers[0].signature()->dtypes ==
        std::vector<dtype>{dtype::int64, dtype::float32, dtype::string});
  CHECK(readers[0].signature()->enqueue_many);
  batch_options bo; // no dtypes, shapes or enqueue_many: the sources give them
  bo.batch_size = 8;
  bo.capacity = 64;
  bo.allow_smaller_final_batch = true;
  auto b = batch_join(pipe, std::move(readers), bo);
  coordinator coord{sys};
  auto threads = pipe.start_queue_runners(coord);
  auto in = pipe.make_consumer(b.queue);
  std::map<int64_t, std::pair<float, std::string>> got;
  try {
    for (;;) {
      auto batch = b.next(in);
      REQUIRE(batch.size() == 3);
      CHECK(batch[0].type() == dtype::int64);
      CHECK(batch[1].type() == dtype::float32);
      CHECK(batch[2].type() == dtype::string);
      auto ids = batch[0].values<int64_t>();
      auto values = batch[1].values<float>();
      auto names = batch[2].values<std::string>();
      for (size_t i = 0; i < ids.size(); ++i) {
        CHECK(got.count(ids[i]) == 0);
        got[ids[i]] = {values[i], names[i]};
      }
    }
  } catch (const out_of_range_error&) {
  }
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  CHECK(got == want);
}

TEST_CASE("csv_source: one source run by several threads (batch's num_threads) shares "
          "its reader: every line once",
          "[csv_source][IN-10]") {
  test::temp_dir dir;
  std::vector<std::string> files;
  int64_t want = 0;
  for (int f = 0; f < 4; ++f) {
    std::string text;
    for (int i = 0; i < 300; ++i) {
      int64_t id = f * 1000 + i;
      text += std::to_string(id) + ",1.5,x\n";
      want += id;
    }
    files.push_back(dir.write("part" + std::to_string(f) + ".csv", text));
  }
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  producer_options po;
  po.num_epochs = 1;
  auto filenames = string_input_producer(pipe, files, po);
  csv_source_options ro;
  ro.read_batch = 7;
  batch_options bo;
  bo.batch_size = 10;
  bo.capacity = 100;
  bo.num_threads = 3; // three workers run copies of the same source
  bo.allow_smaller_final_batch = true;
  auto b = batch(pipe, csv_source(sys, filenames, int_float_string_defaults(), ro), bo);
  coordinator coord{sys};
  auto threads = pipe.start_queue_runners(coord);
  auto in = pipe.make_consumer(b.queue);
  int64_t sum = 0;
  int64_t rows = 0;
  try {
    for (;;) {
      auto batch = b.next(in);
      for (auto id : batch[0].values<int64_t>()) {
        sum += id;
        ++rows;
      }
    }
  } catch (const out_of_range_error&) {
  }
  coord.request_stop();
  CHECK_NOTHROW(coord.join(threads));
  CHECK(rows == 1200);
  CHECK(sum == want);
}

TEST_CASE("csv_source: bad arguments are refused before anything runs, by name",
          "[csv_source]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  producer_options po;
  po.num_epochs = 1;
  auto filenames = string_input_producer(pipe, {"a.csv"}, po);
  auto defaults = int_float_string_defaults();
  csv_source_options ro;
  ro.read_batch = 0;
  CHECK(error_text([&] { csv_source(sys, filenames, defaults, ro); }) ==
        "csv_source: read_batch must be > 0, got 0");
  ro = {};
  ro.skip_header_lines = -1;
  CHECK(error_text([&] { csv_source(sys, filenames, defaults, ro); }) ==
        "skip_header_lines must be >= 0 not -1");
  ro = {};
  ro.field_delim = ";;";
  CHECK(error_text([&] {
          csv_source(sys, filenames, defaults, ro);
        }).find("field_delim") != std::string::npos);
  CHECK(error_text([&] {
          csv_source(sys, filenames, {tensor::vector<float>({1.0f, 2.0f})}, {});
        }).find("There should only be 1 default per field") != std::string::npos);
  CHECK(error_text([&] { csv_source(sys, queue_actor{}, defaults, {}); }) ==
        "csv_source: invalid filename queue");
}

TEST_CASE(
    "csv_source: given dtypes must agree with the sources', and sources with each other",
    "[csv_source]") {
  quern::config cfg;
  caf::actor_system sys{cfg};
  pipeline pipe{sys};
  producer_options po;
  po.num_epochs = 1;
  auto filenames = string_input_producer(pipe, {"a.csv"}, po);
  batch_options bo;
  bo.batch_size = 4;
  bo.dtypes = {dtype::float32};
  bo.shapes = {tensor_shape{}};
  CHECK(error_text([&] {
          batch(pipe, csv_source(sys, filenames, int_float_string_defaults()), bo);
        }) == "batch: batch_options::dtypes (float) do not match the sources' (int64, "
              "float, string)");
  bo.dtypes.clear();
  bo.shapes.clear();
  std::vector<example_source> two{
      csv_source(sys, filenames, int_float_string_defaults()),
      csv_source(sys, filenames, {tensor::vector<float>({})})};
  CHECK(error_text([&] { batch_join(pipe, std::move(two), bo); }) ==
        "batch_join: source 1 gives (float) where source 0 gives (int64, float, string): "
        "every source must give the same tensors");
}
