// A pipeline's settings logged as hparams in one call (docs/semantics.md SW-47).

#include <catch2/catch.hpp>

#include "quern/input/batching.hpp"
#include "quern/input/producers.hpp"
#include "quern/input/summaries.hpp"
#include "quern/messages.hpp"
#include "quern/summary/reader.hpp"
#include "quern/summary/values.hpp"
#include "temp_dir.hpp"

#include <filesystem>

using namespace quern;

TEST_CASE("SW-47 log_pipeline_settings writes the helpers' settings and the user's as "
          "hparams",
          "[SW-47]") {
  quern::test::temp_dir dir;
  quern::config cfg;
  caf::actor_system sys{cfg};
  {
    pipeline pipe{sys};
    producer_options po;
    po.num_epochs = 3;
    po.seed = 7;
    auto names = string_input_producer(pipe, {"a", "b"}, po);
    batch_options bo;
    bo.batch_size = 16;
    bo.capacity = 100;
    bo.min_after_dequeue = 20;
    bo.seed = 5;
    bo.num_threads = 2;
    bo.dtypes = {dtype::string};
    bo.shapes = {tensor_shape{}};
    shuffle_batch(pipe, example_source::dequeue_from(names), bo);
    summary_writer writer{sys, dir.path()};
    log_pipeline_settings(writer, pipe, {"loss"}, {{"learning_rate", 0.25}});
    writer.close();
  }
  hparam_list got;
  std::vector<std::string> metrics;
  for (auto& entry : std::filesystem::directory_iterator(dir.path()))
    for (auto& ev : read_event_file(entry.path().string()).events)
      if (auto s = caf::get_if<summary_event::summary>(&ev.what))
        for (auto& v : s->values) {
          if (v.plugin_name != hparams_plugin_name)
            continue;
          auto data = decode_hparams(v.plugin_content);
          REQUIRE(data);
          if (data->what == hparams_data::kind::session_start)
            got = data->hparams;
          if (data->what == hparams_data::kind::experiment)
            metrics = data->metrics;
        }
  auto value = [&](const std::string& name) -> hparam_value {
    for (auto& [n, v] : got)
      if (n == name)
        return v;
    FAIL("no hparam " << name);
    return hparam_value{false};
  };
  CHECK(value("input_producer/num_epochs") == hparam_value{3});
  CHECK(value("input_producer/capacity") == hparam_value{32});
  CHECK(value("input_producer/shuffle") == hparam_value{true});
  CHECK(value("input_producer/seed") == hparam_value{7});
  CHECK(value("shuffle_batch/batch_size") == hparam_value{16});
  CHECK(value("shuffle_batch/capacity") == hparam_value{100});
  CHECK(value("shuffle_batch/min_after_dequeue") == hparam_value{20});
  CHECK(value("shuffle_batch/seed") == hparam_value{5});
  CHECK(value("shuffle_batch/num_threads") == hparam_value{2});
  CHECK(value("learning_rate") == hparam_value{0.25});
  CHECK(metrics == std::vector<std::string>{"loss"});
}
