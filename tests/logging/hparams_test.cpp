// hparams as TensorBoard's hparams plugin reads them (docs/semantics.md
// SW-45): what the writer puts in the file is decoded here with the
// project's own generated protos (logging/proto/hparams.proto, TensorBoard's
// field numbers), not with quern's decode_hparams, and the bytes of a
// session start are compared with a golden record encoded by hand
// (golden/make_golden.py).

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "event.pb.h"
#include "hparams.pb.h"
#include "quern/error.hpp"
#include "quern/format/record.hpp"
#include "quern/messages.hpp"
#include "quern/summary/event.hpp"
#include "quern/summary/reader.hpp"
#include "quern/summary/summary_writer.hpp"
#include "quern/summary/values.hpp"
#include "test_util.hpp"

using namespace quern;
using quern::test::golden;
using quern::test::temp_dir;
using quern::test::to_hex;

namespace hp = quern::pb::hparams;

namespace {

/// The records of the only event file in `dir`, parsed by libprotobuf into
/// the generated Event (file_version record included).
std::vector<pb::Event> parsed_events(const std::string& dir) {
  auto files = test::event_files(dir);
  REQUIRE(files.size() == 1);
  auto bytes = test::read_file(files[0]);
  std::vector<pb::Event> out;
  size_t at = 0;
  while (at < bytes.size()) {
    REQUIRE(at + record_header_size <= bytes.size());
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i)
      len = (len << 8) | static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]);
    pb::Event ev;
    REQUIRE(ev.ParseFromString(bytes.substr(at + record_header_size, len)));
    out.push_back(std::move(ev));
    at += record_header_size + len + record_footer_size;
  }
  return out;
}

/// The value's metadata as TensorBoard's plugin checks it: plugin "hparams",
/// content a HParamsPluginData of version 0.
hp::HParamsPluginData plugin_data_of(const pb::Summary::Value& v) {
  REQUIRE(v.has_metadata());
  CHECK(v.metadata().plugin_data().plugin_name() == "hparams");
  hp::HParamsPluginData d;
  REQUIRE(d.ParseFromString(v.metadata().plugin_data().content()));
  CHECK(d.version() == 0);
  // TensorBoard's null tensor: an empty DT_FLOAT tensor of shape [0].
  REQUIRE(v.has_tensor());
  CHECK(v.tensor().dtype() == pb::DT_FLOAT);
  REQUIRE(v.tensor().tensor_shape().dim_size() == 1);
  CHECK(v.tensor().tensor_shape().dim(0).size() == 0);
  CHECK(v.tensor().string_val_size() == 0);
  return d;
}

summary_writer_options at_clock(const std::string& logdir, double& t) {
  summary_writer_options opts;
  opts.logdir = logdir;
  opts.sync = false;
  opts.clock = [&t] { return t; };
  return opts;
}

} // namespace

TEST_CASE("SW-45 writer.hparams writes the experiment and the session start",
          "[SW-45][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  double t = 1700000000.5;
  {
    summary_writer w{sys, at_clock(dir.path(), t)};
    w.hparams({{"batch_size", 32},
               {"optimizer", "adam"},
               {"learning_rate", 0.01},
               {"shuffle", true},
               {"seed", int64_t{7}}},
              {"loss", "accuracy"});
    w.scalar("loss", 0.5, 1);
    t = 1700000100.25;
    w.hparams_end(hparams_status::failure);
  }
  auto events = parsed_events(dir.path());
  REQUIRE(events.size() == 4); // file_version, hparams, loss, end
  auto& start = events[1];
  CHECK(start.step() == 0);
  CHECK(start.wall_time() == 1700000000.5);
  REQUIRE(start.summary().value_size() == 2);

  auto& exp_value = start.summary().value(0);
  CHECK(exp_value.tag() == "_hparams_/experiment");
  auto exp = plugin_data_of(exp_value);
  REQUIRE(exp.data_case() == hp::HParamsPluginData::kExperiment);
  CHECK(exp.experiment().time_created_secs() == 1700000000.5);
  REQUIRE(exp.experiment().hparam_infos_size() == 5);
  std::vector<std::pair<std::string, hp::DataType>> infos;
  for (auto& h : exp.experiment().hparam_infos())
    infos.emplace_back(h.name(), h.type());
  CHECK(infos == std::vector<std::pair<std::string, hp::DataType>>{
                     {"batch_size", hp::DATA_TYPE_FLOAT64},
                     {"optimizer", hp::DATA_TYPE_STRING},
                     {"learning_rate", hp::DATA_TYPE_FLOAT64},
                     {"shuffle", hp::DATA_TYPE_BOOL},
                     {"seed", hp::DATA_TYPE_FLOAT64}});
  REQUIRE(exp.experiment().metric_infos_size() == 2);
  CHECK(exp.experiment().metric_infos(0).name().tag() == "loss");
  CHECK(exp.experiment().metric_infos(0).name().group().empty());
  CHECK(exp.experiment().metric_infos(1).name().tag() == "accuracy");

  auto& start_value = start.summary().value(1);
  CHECK(start_value.tag() == "_hparams_/session_start_info");
  auto info = plugin_data_of(start_value);
  REQUIRE(info.data_case() == hp::HParamsPluginData::kSessionStartInfo);
  auto& s = info.session_start_info();
  CHECK(s.start_time_secs() == 1700000000.5);
  CHECK(s.group_name().empty());
  CHECK(s.model_uri().empty());
  REQUIRE(s.hparams().size() == 5);
  CHECK(s.hparams().at("batch_size").kind_case() == hp::Value::kNumberValue);
  CHECK(s.hparams().at("batch_size").number_value() == 32.0);
  CHECK(s.hparams().at("optimizer").string_value() == "adam");
  CHECK(s.hparams().at("learning_rate").number_value() == 0.01);
  CHECK(s.hparams().at("shuffle").kind_case() == hp::Value::kBoolValue);
  CHECK(s.hparams().at("shuffle").bool_value());
  CHECK(s.hparams().at("seed").number_value() == 7.0);

  auto& end = events[3];
  REQUIRE(end.summary().value_size() == 1);
  CHECK(end.summary().value(0).tag() == "_hparams_/session_end_info");
  auto fin = plugin_data_of(end.summary().value(0));
  REQUIRE(fin.data_case() == hp::HParamsPluginData::kSessionEndInfo);
  CHECK(fin.session_end_info().status() == hp::STATUS_FAILURE);
  CHECK(fin.session_end_info().end_time_secs() == 1700000100.25);

  // quern's own reading (the board's) agrees.
  auto c = read_event_file(test::event_files(dir.path())[0]);
  REQUIRE(!c.error);
  auto& values = test::values_of(c.events[1]);
  auto back = decode_hparams(values[1].plugin_content);
  REQUIRE(back);
  CHECK(back->what == hparams_data::kind::session_start);
  CHECK(back->time == 1700000000.5);
  CHECK(back->hparams == hparam_list{{"batch_size", 32},
                                     {"learning_rate", 0.01},
                                     {"optimizer", "adam"},
                                     {"seed", 7},
                                     {"shuffle", true}});
  auto back_exp = decode_hparams(values[0].plugin_content);
  REQUIRE(back_exp);
  CHECK(back_exp->what == hparams_data::kind::experiment);
  CHECK(back_exp->metrics == std::vector<std::string>{"loss", "accuracy"});
  auto back_end = decode_hparams(test::values_of(c.events[3])[0].plugin_content);
  REQUIRE(back_end);
  CHECK(back_end->what == hparams_data::kind::session_end);
  CHECK(back_end->status == hparams_status::failure);
}

TEST_CASE("SW-45 hparams without metrics write only the session start",
          "[SW-45][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  double t = 1700000000.0;
  {
    summary_writer w{sys, at_clock(dir.path(), t)};
    w.hparams({{"readers", 2}});
  }
  auto events = parsed_events(dir.path());
  REQUIRE(events.size() == 2);
  REQUIRE(events[1].summary().value_size() == 1);
  CHECK(events[1].summary().value(0).tag() == "_hparams_/session_start_info");
}

TEST_CASE("SW-45 a session start equals the record encoded by hand", "[SW-45]") {
  summary_event ev;
  ev.wall_time = 1700000000.0;
  ev.what = summary_event::summary{hparams_values(
      {{"shuffle", true}, {"optimizer", "adam"}, {"batch_size", 32}}, {}, 1700000000.0)};
  auto payload = encode_event(ev);
  auto record = golden("hparams.bin");
  CHECK(to_hex(payload) ==
        to_hex(record.substr(record_header_size,
                             record.size() - record_header_size - record_footer_size)));
}

TEST_CASE("SW-45 bad hparams are refused with an error naming the problem",
          "[SW-45][writer]") {
  auto refused = [](const hparam_list& h, const std::vector<std::string>& m = {}) {
    try {
      hparams_values(h, m, 0);
    } catch (const invalid_argument_error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(refused({{"", 1}}), Contains("empty name"));
  CHECK_THAT(refused({{"lr", 0.1}, {"lr", 0.2}}), Contains("hparam 'lr' is given twice"));
  CHECK_THAT(refused({{"bad\xff", 1}}),
             Contains("hparam name 'bad\\xff' is not valid UTF-8 (byte 3)"));
  CHECK_THAT(refused({{"opt", "ad\xc3"}}),
             Contains("hparam value 'ad\\xc3' is not valid UTF-8"));
  CHECK_THAT(refused({{"lr", std::nan("")}}), Contains("hparam 'lr' is NaN"));
  CHECK_THAT(refused({{"lr", std::numeric_limits<double>::infinity()}}),
             Contains("hparam 'lr' is infinite"));
  CHECK_THAT(refused({{"lr", 1}}, {""}), Contains("a metric has an empty tag"));
  CHECK_THAT(refused({{"lr", 1}}, {"loss", "loss"}),
             Contains("metric 'loss' is given twice"));
  CHECK_THAT(refused({{"lr", 1}}, {"lo\xffss"}), Contains("metric tag"));
  CHECK(refused({{"lr", 1}}, {"loss"}) == "(accepted)");

  // Through the handle: thrown at the call, nothing written.
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  summary_writer_options opts;
  opts.logdir = dir.path();
  opts.sync = false;
  summary_writer w{sys, opts};
  CHECK_THROWS_AS(w.hparams({{"a", 1}, {"a", 2}}), invalid_argument_error);
  w.close();
  CHECK(test::event_files(dir.path()).empty());

  // Content that is not the plugin's is an error, not a crash.
  CHECK(!decode_hparams("\xff\xff\xff"));
  CHECK(!decode_hparams(""));         // no data
  CHECK(!decode_hparams("\x08\x01")); // version 1
}
