#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>

#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "quern/demand.hpp"
#include "quern/error.hpp"
#include "quern/messages.hpp"
#include "quern/queue_spec.hpp"
#include "quern/queue_state.hpp"
#include "quern/queue_stats.hpp"
#include "quern/summary.hpp"
#include "quern/telemetry.hpp"

using namespace quern;

namespace {

template <class T>
T round_trip(const T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  auto copy = x;
  if (auto err = sink(copy))
    FAIL("serialization failed: " << caf::to_string(err));
  T result;
  caf::binary_deserializer source{nullptr, buf};
  if (auto err = source(result))
    FAIL("deserialization failed: " << caf::to_string(err));
  return result;
}

} // namespace

TEST_CASE("every message type round-trips through CAF's binary serializer",
          "[serialization]") {
  CHECK(round_trip(tensor_shape({2, -1})) == tensor_shape({2, -1}));
  CHECK(round_trip(tensor_shape::unknown_rank()) == tensor_shape::unknown_rank());
  for (auto& t : {tensor::scalar(int64_t{-3}), tensor::scalar(1.5), tensor::scalar(true),
                  tensor::scalar("text"), tensor::vector<uint8_t>({1, 2, 255}),
                  tensor::from_values<float>({2, 2}, {1, 2, 3, 4}),
                  tensor::from_values<int32_t>({3, 2}, {1, 2, 3, 4, 5, 6}).row(1)})
    CHECK(round_trip(t) == t);
  element e{tensor::scalar(7), tensor::vector<std::string>({"a", "b"})};
  CHECK(round_trip(e) == e);
  std::vector<element> rows{e, e};
  CHECK(round_trip(rows) == rows);
  queue_options o;
  o.capacity = 4;
  o.dtypes = {dtype::int32};
  o.shapes = {tensor_shape{2}};
  o.shared_name = "shared";
  // A spec as a queue reports it (queues/ makes them from options).
  queue_spec spec;
  spec.kind = queue_kind::random_shuffle;
  spec.resource_name = "shared";
  spec.capacity = 4;
  spec.dtypes = o.dtypes;
  spec.shapes = o.shapes;
  spec.min_after_dequeue = 1;
  spec.seed = 5;
  auto spec2 = round_trip(spec);
  CHECK(spec2.kind == queue_kind::random_shuffle);
  CHECK(spec2.resource_name == "shared");
  CHECK(spec2.shapes == spec.shapes);
  CHECK(spec2.capacity == 4);
  CHECK(spec2.min_after_dequeue == 1);
  CHECK(spec2.seed == 5);
  auto o2 = round_trip(o);
  CHECK(o2.shared_name == "shared");
  CHECK(o2.dtypes == o.dtypes);
  demand d;
  d.n = 128;
  d.count = 7;
  d.cut = batch_cut::dequeue_up_to;
  d.as_rows = false;
  auto d2 = round_trip(d);
  CHECK(d2.n == 128);
  CHECK(d2.count == 7);
  CHECK(d2.cut == batch_cut::dequeue_up_to);
  CHECK_FALSE(d2.as_rows);
}

TEST_CASE("TL-11 a queue's counters round-trip, for a queue of another process",
          "[serialization][TL-11]") {
  queue_stats st{3, 8, 40, 37, 5, 1234567890123, 9, 42, "node-x", 17};
  auto st2 = round_trip(st);
  CHECK(st2.size == 3);
  CHECK(st2.capacity == 8);
  CHECK(st2.enqueued_rows == 40);
  CHECK(st2.dequeued_rows == 37);
  CHECK(st2.enqueue_attempts == 5);
  CHECK(st2.enqueue_wait_ns == 1234567890123);
  CHECK(st2.dequeue_attempts == 9);
  CHECK(st2.dequeue_wait_ns == 42);
  CHECK(st2.node == "node-x");
  CHECK(st2.actor == 17);
}

TEST_CASE("a corrupt tensor on the wire is refused with a named error",
          "[serialization]") {
  detail::tensor_wire w;
  w.type = 9; // int64
  w.shape = tensor_shape{2};
  const unsigned char three_bytes[] = {1, 2, 3};
  w.bytes.assign(three_bytes, three_bytes + 3);
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE_FALSE(sink(w));
  tensor t;
  caf::binary_deserializer source{nullptr, buf};
  auto err = source(t);
  REQUIRE(err);
  CHECK(is(err, error_code::invalid_argument));
  CHECK(message_of(err) == "corrupt tensor: 3 bytes for 2 values of dtype int64");
}

TEST_CASE("tensor bytes that claim more than the message holds are refused before "
          "anything is allocated",
          "[serialization]") {
  detail::tensor_wire w;
  w.type = 9; // int64
  w.shape = tensor_shape{2};
  std::vector<unsigned char> bytes(16, 0xab);
  w.bytes.assign(bytes.data(), bytes.data() + bytes.size());
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE_FALSE(sink(w));
  // The block's length (16, one byte) comes right before its bytes.
  auto at = std::search(
      buf.begin(), buf.end(), bytes.begin(), bytes.end(),
      [](char c, unsigned char b) { return static_cast<unsigned char>(c) == b; });
  REQUIRE(at != buf.begin());
  REQUIRE(*(at - 1) == 16);
  SECTION("cut short") {
    buf.resize(buf.size() - 9);
  }
  SECTION("a length of 4 GiB") {
    // 2^32 - 1 as CAF's variable-length integer.
    auto len = at - 1 - buf.begin();
    buf.erase(buf.begin() + len);
    const char huge[] = {'\xff', '\xff', '\xff', '\xff', '\x0f'};
    buf.insert(buf.begin() + len, huge, huge + 5);
  }
  tensor t;
  caf::binary_deserializer source{nullptr, buf};
  auto err = source(t);
  REQUIRE(err);
  CHECK(err == caf::sec::end_of_stream);
}

TEST_CASE("summary values of every kind round-trip, and a corrupt kind is an error",
          "[serialization]") {
  summary_value scalar;
  scalar.tag = "loss";
  scalar.value = 0.25f;
  summary_value histo;
  histo.tag = "w";
  histo.value = histogram_data{-1, 1, 3, 0.5, 2, {0, 1}, {1, 2}};
  summary_value image;
  image.tag = "img";
  image.value = image_data{2, 3, 4, "PNG"};
  summary_value text;
  text.tag = "notes";
  text.value = text_tensor{{"a", "b"}, {2}};
  text.plugin_name = "text";
  auto back = round_trip(std::vector<summary_value>{scalar, histo, image, text});
  REQUIRE(back.size() == 4);
  CHECK(caf::get<float>(back[0].value) == 0.25f);
  CHECK(caf::get<histogram_data>(back[1].value).bucket == std::vector<double>{1, 2});
  CHECK(caf::get<image_data>(back[2].value).encoded == "PNG");
  CHECK(caf::get<text_tensor>(back[3].value).strings ==
        std::vector<std::string>{"a", "b"});
  CHECK(back[3].plugin_name == "text");
  // The kind byte follows the tag: 1 byte of length, 4 of "loss".
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE_FALSE(sink(scalar));
  REQUIRE(buf.at(5) == 0);
  buf[5] = 9;
  summary_value v;
  caf::binary_deserializer source{nullptr, buf};
  auto err = source(v);
  REQUIRE(err);
  CHECK(is(err, error_code::invalid_argument));
  CHECK(message_of(err) == "corrupt summary value: unknown kind 9");
}

TEST_CASE("infinities, NaN and -0 in summaries cross the wire bit for bit",
          "[serialization]") {
  // CAF 0.17's own float packing never returns for an infinity.
  auto inf = std::numeric_limits<double>::infinity();
  auto nan = std::numeric_limits<float>::quiet_NaN();
  auto bits_of = [](auto x) {
    std::conditional_t<sizeof(x) == 4, uint32_t, uint64_t> b;
    std::memcpy(&b, &x, sizeof b);
    return b;
  };
  std::vector<scalar_event> scalars{{inf, 1, "loss", static_cast<float>(-inf)},
                                    {-0.0, -7, "acc", nan},
                                    {1.5, 2, "lr", -0.0f}};
  auto back = round_trip(scalars);
  REQUIRE(back.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(bits_of(back[i].wall_time) == bits_of(scalars[i].wall_time));
    CHECK(bits_of(back[i].value) == bits_of(scalars[i].value));
    CHECK(back[i].step == scalars[i].step);
    CHECK(back[i].tag == scalars[i].tag);
  }

  summary_value histo;
  histo.tag = "w";
  histo.value = histogram_data{-inf, inf, 3, nan, inf, {-1, 0, inf}, {1, 0, 2}};
  summary_value scalar;
  scalar.tag = "loss";
  scalar.value = static_cast<float>(inf);
  summary_event ev;
  ev.wall_time = -inf;
  ev.step = 3;
  ev.what = summary_event::summary{{histo, scalar}};
  auto ev2 = round_trip(ev);
  CHECK(bits_of(ev2.wall_time) == bits_of(-inf));
  auto& values = caf::get<summary_event::summary>(ev2.what).values;
  REQUIRE(values.size() == 2);
  auto& h = caf::get<histogram_data>(values[0].value);
  CHECK(h.min == -inf);
  CHECK(h.max == inf);
  CHECK(std::isnan(h.sum));
  CHECK(h.bucket_limit == std::vector<double>{-1, 0, inf});
  CHECK(h.bucket == std::vector<double>{1, 0, 2});
  CHECK(caf::get<float>(values[1].value) == static_cast<float>(inf));
  // to_string still shows values, not bits.
  CHECK(caf::deep_to_string(scalars[2]).find("1.5") != std::string::npos);
}

TEST_CASE("errors keep their readable message", "[error]") {
  auto err = make_error(error_code::out_of_range, "FIFOQueue 'q' is closed");
  CHECK(is(err, error_code::out_of_range));
  CHECK(message_of(err) == "FIFOQueue 'q' is closed");
  CHECK(render(err) == "OutOfRange: FIFOQueue 'q' is closed");
  CHECK_THROWS_AS(throw_error(err), out_of_range_error);
  CHECK_THROWS_WITH(throw_error(err), "FIFOQueue 'q' is closed");
  try {
    throw_error(make_error(error_code::cancelled, "x"));
  } catch (const op_error& e) {
    CHECK(e.code() == error_code::cancelled);
    CHECK(is(e.to_error(), error_code::cancelled));
  }
  auto from_std =
      error_from_exception(std::make_exception_ptr(std::runtime_error("boom")));
  CHECK(is(from_std, error_code::unknown));
  CHECK(message_of(from_std) == "boom");
  // Through a configured actor system the renderer keeps the message.
  quern::config cfg;
  caf::actor_system sys{cfg};
  CHECK(sys.render(err) == "OutOfRange: FIFOQueue 'q' is closed");
}

TEST_CASE("an error of another process names where it came from", "[error]") {
  auto err = with_origin(make_error(error_code::unknown, "boom"), "reader-3");
  auto placed = with_origin_at(err, "127.0.0.1:41237");
  CHECK(origin_of(placed) == "reader-3@127.0.0.1:41237");
  CHECK(message_of(placed) == "boom");
  CHECK(is(placed, error_code::unknown));
  // Placed once: a second place does not stack.
  CHECK(origin_of(with_origin_at(placed, "10.0.0.1:7000")) == "reader-3@127.0.0.1:41237");
  // Without an origin, the place is the origin; without a place, nothing changes.
  CHECK(origin_of(with_origin_at(make_error(error_code::unknown, "x"), "h:1")) == "h:1");
  CHECK(origin_of(with_origin_at(err, "")) == "reader-3");
  CHECK_FALSE(with_origin_at(caf::error{}, "h:1"));
  CHECK(placed_at("remote-feeder/op0", "127.0.0.1:1") == "remote-feeder/op0@127.0.0.1:1");
  CHECK(placed_at("a@b", "127.0.0.1:1") == "a@b");
  CHECK(placed_at("a", "") == "a");
}

TEST_CASE("TL-10 a checkpoint member's telemetry round-trips to the chief",
          "[serialization][TL-10]") {
  detail::member_telemetry m;
  m.node = "node-a";
  m.figures.span_seconds = 2.5;
  consumer_telemetry c;
  c.queue = "examples";
  c.dequeues = 7;
  c.wait_fraction = 0.25;
  m.figures.consumers.push_back(c);
  runner_telemetry r;
  r.name = "reader-1";
  r.queue = "examples";
  r.busy = 0.9;
  r.straggler = "reader-1/op1";
  worker_telemetry w;
  w.name = "reader-1/op0";
  w.runs = 11;
  w.input_queue = "filenames";
  r.workers.push_back(w);
  m.figures.runners.push_back(r);
  queue_telemetry q;
  q.name = "examples";
  q.capacity = 64;
  q.dequeue_wait_seconds = 0.5;
  m.figures.queues.push_back(q);
  m.figures.limiting_stage = "reader-1";
  m.figures.verdict = "v";
  m.queues.push_back(detail::queue_ref{"examples", "node-b", 42});
  auto m2 = round_trip(m);
  CHECK(m2.node == "node-a");
  CHECK(m2.figures.span_seconds == 2.5);
  REQUIRE(m2.figures.consumers.size() == 1);
  CHECK(m2.figures.consumers[0].queue == "examples");
  CHECK(m2.figures.consumers[0].dequeues == 7);
  CHECK(m2.figures.consumers[0].wait_fraction == 0.25);
  REQUIRE(m2.figures.runners.size() == 1);
  CHECK(m2.figures.runners[0].busy == 0.9);
  CHECK(m2.figures.runners[0].straggler == "reader-1/op1");
  REQUIRE(m2.figures.runners[0].workers.size() == 1);
  CHECK(m2.figures.runners[0].workers[0].runs == 11);
  CHECK(m2.figures.runners[0].workers[0].input_queue == "filenames");
  REQUIRE(m2.figures.queues.size() == 1);
  CHECK(m2.figures.queues[0].capacity == 64);
  CHECK(m2.figures.queues[0].dequeue_wait_seconds == 0.5);
  CHECK(m2.figures.limiting_stage == "reader-1");
  CHECK(m2.figures.verdict == "v");
  REQUIRE(m2.queues.size() == 1);
  CHECK(m2.queues[0].node == "node-b");
  CHECK(m2.queues[0].actor == 42);
}

TEST_CASE("a queue_state's generator crosses processes as its text", "[RS-1]") {
  std::mt19937_64 engine{42};
  engine.discard(5);
  std::ostringstream text;
  text << engine;
  queue_state s;
  s.generator = generator_state{engine};
  CHECK(s.generator.text() == text.str());
  auto back = round_trip(s);
  CHECK(back.generator.engine() == nullptr);
  CHECK(back.generator.text() == text.str());
  CHECK(round_trip(queue_state{}).generator.empty());
}
