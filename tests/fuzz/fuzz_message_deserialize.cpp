// Fuzz target: CAF's binary deserialisation of every quern message type, the
// types messages.cpp, summary_messages.cpp and coordination_messages.cpp
// register (quern::add_message_types), and of whole caf::messages, whose
// elements CAF creates by their registered names -- what a remote node could
// send.
//
// The first byte picks the type (its value modulo the number of types); the
// rest is the bytes to deserialise.
//
// Promises checked (a broken one traps, so libFuzzer reports it):
// - Deserialising arbitrary bytes fails with an error, or gives a value.
// - A value serialises back, and those bytes deserialise to a value that
//   serialises to the same bytes again (a fixed point after one round), using
//   every byte.
// - Every tensor that deserialised is whole: a known dtype, a fully defined
//   shape whose element count fits int64, as many values as the shape needs
//   (its values, rows and rendering readable; ASan checks the reads).
// - A quern error from deserialisation is invalid_argument (`corrupt tensor:
//   ...`).
//
// Not checked: serialising a bare float or double that is infinite. CAF
// 0.17's pack754 (caf/detail/ieee_754.hpp) halves the value until it is
// below 2, which never happens for infinity: the serializer never returns
// (docs/fuzzing.md). quern's types carry their floats as bits
// (quern/detail/float_bits.hpp), so only a double that is itself an element
// of a whole message (add_summary's wall time) can be one; such messages are
// still deserialised and checked, but not serialised back.
//
// QUERN_FUZZ_SEEDS_OUT=<dir>: writes the seed corpus (values of every type,
// serialised) to <dir> and exits; tests/fuzz/make_seeds.sh runs it.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/serializer.hpp>

#include "quern/coordination.hpp"
#include "quern/element.hpp"
#include "quern/error.hpp"
#include "quern/interfaces.hpp"
#include "quern/messages.hpp"
#include "quern/queue.hpp"
#include "quern/queue_spec.hpp"
#include "quern/summary.hpp"
#include "quern/tensor.hpp"

#define QUERN_FUZZ_TARGET "fuzz_message_deserialize"
#include "fuzz_support.hpp"

namespace {

using buffer = std::vector<char>;

// -- tensors are whole ---------------------------------------------------------------

template <class T>
void check(const T&) {
  // no tensors inside
}

template <class T>
void check(const std::vector<T>& xs);

void check(const quern::tensor& t) {
  PROMISE(quern::is_valid_dtype(static_cast<uint8_t>(t.type())));
  const auto& shape = t.shape();
  PROMISE(shape.fully_defined());
  int64_t n = 1;
  for (auto d : shape.dims())
    PROMISE(!__builtin_mul_overflow(n, d, &n));
  PROMISE(t.num_elements() == n);
  auto w = t.to_wire();
  if (t.type() == quern::dtype::string)
    PROMISE(w.strings.size() == static_cast<size_t>(n));
  else
    PROMISE(w.bytes.size() == static_cast<size_t>(n) * quern::dtype_size(t.type()));
  (void)t.to_string(); // reads up to 8 values
  if (shape.rank() > 0 && shape.dim(0) > 0) {
    auto last = t.row(shape.dim(0) - 1);
    PROMISE(last.num_elements() * shape.dim(0) == n);
  }
  PROMISE(t == t);
}

void check(const quern::element& e) {
  for (auto& c : e.components)
    check(c);
}

template <class T>
void check(const std::vector<T>& xs) {
  for (auto& x : xs)
    check(x);
}

void check(const quern::queue_state& s) {
  check(s.stored);
  check(s.waiting);
}

void check(const caf::message& m) {
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.match_element<quern::tensor>(i))
      check(m.get_as<quern::tensor>(i));
    else if (m.match_element<quern::element>(i))
      check(m.get_as<quern::element>(i));
    else if (m.match_element<std::vector<quern::element>>(i))
      check(m.get_as<std::vector<quern::element>>(i));
  }
}

// -- round trips ---------------------------------------------------------------------

/// Visits a value as a serializer would and notes whether it holds an
/// infinite float or double (which CAF 0.17 cannot serialise, see above).
class infinity_finder final : public caf::serializer {
public:
  explicit infinity_finder(caf::actor_system& sys) : caf::serializer(sys) {}
  bool found = false;

  caf::error begin_object(uint16_t&, std::string&) override { return caf::none; }
  caf::error end_object() override { return caf::none; }
  caf::error begin_sequence(size_t&) override { return caf::none; }
  caf::error end_sequence() override { return caf::none; }
  caf::error apply_raw(size_t, void*) override { return caf::none; }

protected:
  caf::error apply_impl(int8_t&) override { return caf::none; }
  caf::error apply_impl(uint8_t&) override { return caf::none; }
  caf::error apply_impl(int16_t&) override { return caf::none; }
  caf::error apply_impl(uint16_t&) override { return caf::none; }
  caf::error apply_impl(int32_t&) override { return caf::none; }
  caf::error apply_impl(uint32_t&) override { return caf::none; }
  caf::error apply_impl(int64_t&) override { return caf::none; }
  caf::error apply_impl(uint64_t&) override { return caf::none; }
  caf::error apply_impl(float& x) override { return note(std::isinf(x)); }
  caf::error apply_impl(double& x) override { return note(std::isinf(x)); }
  caf::error apply_impl(long double& x) override { return note(std::isinf(x)); }
  caf::error apply_impl(std::string&) override { return caf::none; }
  caf::error apply_impl(std::u16string&) override { return caf::none; }
  caf::error apply_impl(std::u32string&) override { return caf::none; }

private:
  caf::error note(bool inf) {
    found = found || inf;
    return caf::none;
  }
};

template <class T>
bool holds_infinity(T& x) {
  infinity_finder f{quern::fuzz::system()};
  PROMISE(!f(x));
  return f.found;
}

template <class T>
buffer serialise(T& x) {
  buffer buf;
  caf::binary_serializer sink{quern::fuzz::system(), buf};
  auto err = sink(x);
  if (err)
    std::fprintf(stderr, "serialising failed: %s\n",
                 quern::fuzz::system().render(err).c_str());
  PROMISE(!err);
  return buf;
}

template <class T>
void round_trip(const char* data, size_t size) {
  T x;
  {
    caf::binary_deserializer source{quern::fuzz::system(), data, size};
    if (auto err = source(x)) {
      if (err.category() == quern::error_category)
        PROMISE(quern::is(err, quern::error_code::invalid_argument));
      return;
    }
  }
  check(x);
  if (holds_infinity(x))
    return; // CAF 0.17 would never return (see the top of this file)
  auto first = serialise(x);
  T y;
  caf::binary_deserializer source{quern::fuzz::system(), first};
  auto err = source(y);
  if (err)
    std::fprintf(stderr, "reading back failed: %s\n",
                 quern::fuzz::system().render(err).c_str());
  PROMISE(!err);
  PROMISE(source.remaining() == 0);
  check(y);
  PROMISE(serialise(y) == first);
}

using round_trip_fn = void (*)(const char*, size_t);

// Every type quern registers (add_message_types), then whole messages.
const round_trip_fn types[] = {
    round_trip<quern::tensor_shape>,
    round_trip<quern::tensor>,
    round_trip<quern::element>,
    round_trip<std::vector<quern::element>>,
    round_trip<quern::queue_options>,
    round_trip<quern::queue_spec>,
    round_trip<quern::queue_actor>,
    round_trip<quern::error_detail>,
    round_trip<quern::histogram_data>,
    round_trip<quern::image_data>,
    round_trip<quern::summary_value>,
    round_trip<std::vector<quern::summary_value>>,
    round_trip<quern::summary_event>,
    round_trip<std::vector<quern::summary_event>>,
    round_trip<quern::scalar_event>,
    round_trip<std::vector<quern::scalar_event>>,
    round_trip<quern::writer_status>,
    round_trip<quern::summary_writer_actor>,
    round_trip<quern::registration>,
    round_trip<std::vector<quern::registration>>,
    round_trip<quern::join_report>,
    round_trip<quern::coordinator_status>,
    round_trip<quern::coordinator_actor>,
    round_trip<quern::queue_runner_actor>,
    round_trip<caf::message>,
    round_trip<quern::queue_state>,
};
constexpr size_t num_types = sizeof(types) / sizeof(types[0]);

// -- seeds ------------------------------------------------------------------------

template <class T>
void write_seed(const std::string& dir, size_t type_index, const std::string& name, T x) {
  auto bytes = serialise(x);
  quern::fuzz::write_file(dir + "/" + name,
                          std::string(1, static_cast<char>(type_index)) +
                              std::string(bytes.begin(), bytes.end()));
}

void write_seeds(const std::string& dir) {
  using namespace quern;
  auto batch = element{tensor::from_values<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}),
                       tensor::vector<std::string>({"a", "bc"})};
  write_seed(dir, 0, "tensor_shape", tensor_shape({2, -1, 3}));
  write_seed(dir, 0, "tensor_shape_unknown", tensor_shape::unknown_rank());
  write_seed(dir, 1, "tensor_scalar", tensor::scalar(int64_t{-5}));
  write_seed(dir, 1, "tensor_strings",
             tensor::from_values<std::string>({2, 1}, {"x", "yz"}));
  write_seed(dir, 1, "tensor_floats", tensor::vector<float>({1.5f, -2, 0}));
  write_seed(dir, 2, "element", batch);
  write_seed(dir, 3, "elements", std::vector<element>{batch, element{}});
  queue_options o;
  o.capacity = 8;
  o.dtypes = {dtype::float32, dtype::string};
  o.shapes = {tensor_shape{2}, tensor_shape{}};
  o.names = {"x", "y"};
  o.name = "q";
  write_seed(dir, 4, "queue_options", o);
  write_seed(dir, 5, "queue_spec", make_queue_spec(queue_kind::padding_fifo, o));
  write_seed(dir, 6, "queue_actor", queue_actor{});
  write_seed(dir, 7, "error_detail", error_detail{"reader/op1", {}});
  histogram_data h{0, 10, 3, 12, 50, {1, 5, 10}, {1, 1, 1}};
  write_seed(dir, 8, "histogram", h);
  write_seed(dir, 9, "image", image_data{2, 3, 1, "\x89PNG"});
  summary_value v;
  v.tag = "loss";
  v.value = h;
  v.plugin_name = "histograms";
  write_seed(dir, 10, "summary_value", v);
  write_seed(dir, 11, "summary_values", std::vector<summary_value>{v, v});
  summary_event ev;
  ev.wall_time = 1.5e9;
  ev.step = 7;
  ev.what = summary_event::summary{{v}};
  write_seed(dir, 12, "summary_event", ev);
  write_seed(dir, 13, "summary_events", std::vector<summary_event>{ev});
  write_seed(dir, 14, "scalar_event", scalar_event{1.5e9, 3, "acc", 0.5f});
  write_seed(dir, 15, "scalar_events",
             std::vector<scalar_event>{{1, 2, "a", 3}, {4, 5, "b", 6}});
  write_seed(dir, 16, "writer_status",
             writer_status{"runs/x", "runs/x/events.out.tfevents.1", 3, 120, 1, false});
  write_seed(dir, 17, "summary_writer_actor", summary_writer_actor{});
  write_seed(dir, 18, "registration", registration{caf::actor{}, "worker", true, false});
  write_seed(dir, 19, "registrations", std::vector<registration>{{}, {}});
  write_seed(dir, 20, "join_report",
             join_report{make_error(error_code::out_of_range, "done"), {"a", "b"}});
  write_seed(
      dir, 21, "coordinator_status",
      coordinator_status{true, false, make_error(error_code::cancelled, "stopped"), 2});
  write_seed(dir, 22, "coordinator_actor", coordinator_actor{});
  write_seed(dir, 23, "queue_runner_actor", queue_runner_actor{});
  // Whole messages as a queue receives them.
  auto t = caf::timespan{1000};
  write_seed(dir, 24, "msg_enqueue_many",
             caf::make_message(enqueue_many_atom::value, batch, t));
  write_seed(dir, 24, "msg_push",
             caf::make_message(push_atom::value, std::vector<element>{batch}));
  write_seed(dir, 24, "msg_dequeue_many",
             caf::make_message(dequeue_many_atom::value, int32_t{4}, t));
  write_seed(dir, 24, "msg_add_events",
             caf::make_message(add_events_atom::value, std::vector<summary_event>{ev}));
  write_seed(
      dir, 24, "msg_register",
      caf::make_message(register_atom::value,
                        std::vector<registration>{{caf::actor{}, "w", true, true}}));
  write_seed(dir, 24, "msg_error",
             caf::make_message(make_error(error_code::invalid_argument, "bad")));
  queue_state qs;
  qs.stored = {batch};
  qs.waiting = {batch};
  qs.close_waiting = true;
  qs.generator = quern::generator_state{"1 2 3"};
  write_seed(dir, 25, "queue_state", qs);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  quern::fuzz::system();
  if (const char* dir = std::getenv("QUERN_FUZZ_SEEDS_OUT")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  types[data[0] % num_types](reinterpret_cast<const char*>(data + 1), size - 1);
  return 0;
}
