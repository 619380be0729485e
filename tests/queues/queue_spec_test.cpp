#include <catch2/catch.hpp>

#include <limits>

#include "quern/queue.hpp"

using namespace quern;

namespace {

queue_options opts(int32_t capacity, std::vector<dtype> dtypes,
                   std::vector<tensor_shape> shapes = {}) {
  queue_options o;
  o.capacity = capacity;
  o.dtypes = std::move(dtypes);
  o.shapes = std::move(shapes);
  o.shared_name = "q";
  return o;
}

} // namespace

TEST_CASE("Q-2 capacity -1 is unbounded, 0 and other negatives are refused", "[Q-2]") {
  CHECK(make_queue_spec(queue_kind::fifo, opts(-1, {dtype::int32})).capacity ==
        std::numeric_limits<int32_t>::max());
  CHECK_THROWS_WITH(make_queue_spec(queue_kind::fifo, opts(0, {dtype::int32})),
                    "capacity must be positive, or -1 for unbounded, but is 0");
  CHECK_THROWS_WITH(make_queue_spec(queue_kind::fifo, opts(-5, {dtype::int32})),
                    "capacity must be positive, or -1 for unbounded, but is -5");
}

TEST_CASE("C-3 resource names: shared_name or _<k>_<node name>", "[C-3]") {
  auto o = opts(1, {dtype::int32});
  o.shared_name.clear();
  auto a = make_queue_spec(queue_kind::fifo, o);
  auto b = make_queue_spec(queue_kind::fifo, o);
  CHECK(a.resource_name.substr(0, 1) == "_");
  CHECK(a.resource_name.size() > std::string("_0_fifo_queue").size() - 1);
  CHECK(a.resource_name != b.resource_name);
  CHECK(a.resource_name.substr(a.resource_name.size() - 11) == "_fifo_queue");
  o.shared_name = "_bad";
  CHECK_THROWS_WITH(make_queue_spec(queue_kind::fifo, o),
                    "shared_name cannot start with '_':_bad");
}

TEST_CASE("Q-3 Q-4 component lists are validated", "[Q-3][Q-4]") {
  CHECK_THROWS_WITH(make_queue_spec(queue_kind::fifo, opts(1, {})),
                    "Empty component types for queue q");
  CHECK_THROWS_WITH(
      make_queue_spec(queue_kind::fifo, opts(1, {dtype::int32, dtype::float32}, {{2}})),
      "Different number of component types.  Types: int32, float, Shapes: [[2]]");
  CHECK_THROWS_WITH(make_queue_spec(queue_kind::fifo, opts(1, {dtype::int32}, {{-1, 2}})),
                    "All shapes must be fully defined: [[?,2]]");
  auto o = opts(1, {dtype::int32});
  o.names = {"a", "b"};
  CHECK_THROWS_WITH(make_queue_spec(queue_kind::fifo, o),
                    "List of names must have the same length as the list of dtypes");
}

TEST_CASE("Q-50 min_after_dequeue bounds", "[Q-50]") {
  auto o = opts(10, {dtype::int32});
  o.min_after_dequeue = -1;
  CHECK_THROWS_WITH(make_queue_spec(queue_kind::random_shuffle, o),
                    "min_after_dequeue -1 must be >= 0");
  o.min_after_dequeue = 10;
  CHECK_THROWS_WITH(make_queue_spec(queue_kind::random_shuffle, o),
                    "min_after_dequeue 10 must be < capacity 10");
  o.capacity = -1;
  CHECK_NOTHROW(make_queue_spec(queue_kind::random_shuffle, o));
}

TEST_CASE("Q-60 padding queues need one shape of known rank per component", "[Q-60]") {
  CHECK_THROWS_WITH(
      make_queue_spec(queue_kind::padding_fifo, opts(1, {dtype::int32})),
      "Shapes must be provided for all components, but received 1 dtypes and "
      "0 shapes.");
  CHECK_NOTHROW(
      make_queue_spec(queue_kind::padding_fifo, opts(1, {dtype::int32}, {{-1, 2}})));
  CHECK_THROWS_AS(
      make_queue_spec(queue_kind::padding_fifo,
                      opts(1, {dtype::int32}, {tensor_shape::unknown_rank()})),
      invalid_argument_error);
}

TEST_CASE("Q-70 priority queues prepend an int64 scalar priority", "[Q-70]") {
  auto spec = make_queue_spec(queue_kind::priority, opts(3, {dtype::string}, {{}}));
  REQUIRE(spec.dtypes.size() == 2);
  CHECK(spec.dtypes[0] == dtype::int64);
  CHECK(spec.shapes[0] == tensor_shape{});
}

TEST_CASE("Q-20 enqueue validation texts", "[Q-20]") {
  auto spec = make_queue_spec(queue_kind::fifo,
                              opts(5, {dtype::int32, dtype::float32}, {{3, 3}, {}}));
  auto m = tensor::from_values<int32_t>({3, 3}, std::vector<int32_t>(9, 1));
  CHECK_THROWS_WITH(validate_enqueue(spec, element{m}),
                    "Wrong number of components in tuple. Expected 2, got 1");
  CHECK_THROWS_WITH(validate_enqueue(spec, element{m, tensor::scalar(1.0)}),
                    "Type mismatch in tuple component 1. Expected float, got double");
  auto wrong = tensor::from_values<int32_t>({3, 4}, std::vector<int32_t>(12, 1));
  CHECK_THROWS_WITH(validate_enqueue(spec, element{wrong, tensor::scalar(1.0f)}),
                    "Shape mismatch in tuple component 0. Expected [3,3], got [3,4]");
  CHECK_NOTHROW(validate_enqueue(spec, element{m, tensor::scalar(1.0f)}));
  auto batch =
      element{tensor::from_values<int32_t>({2, 3, 4}, std::vector<int32_t>(24, 1)),
              tensor::vector<float>({1, 2})};
  CHECK_THROWS_WITH(validate_enqueue_many(spec, batch),
                    "Shape mismatch in tuple component 0. Expected [2,3,3], got [2,3,4]");
  auto unshaped =
      make_queue_spec(queue_kind::fifo, opts(5, {dtype::int32, dtype::float32}));
  CHECK_THROWS_WITH(
      validate_enqueue_many(unshaped, element{tensor::vector<int32_t>({1, 2}),
                                              tensor::vector<float>({1, 2, 3})}),
      "All input tensors must have the same size in the 0th dimension. Component 1 has "
      "3, and "
      "should have 2");
  CHECK(validate_enqueue_many(unshaped, element{tensor::vector<int32_t>({1, 2}),
                                                tensor::vector<float>({1, 2})}) == 2);
}

TEST_CASE("Q-61 padding queues accept compatible shapes", "[Q-61]") {
  auto spec =
      make_queue_spec(queue_kind::padding_fifo, opts(5, {dtype::int32}, {{-1, 2}}));
  CHECK_NOTHROW(validate_enqueue(
      spec, element{tensor::from_values<int32_t>({3, 2}, {1, 2, 3, 4, 5, 6})}));
  CHECK_THROWS_WITH(
      validate_enqueue(spec, element{tensor::from_values<int32_t>({1, 3}, {1, 2, 3})}),
      "Shape mismatch in tuple component 0. Expected [?,2], got [1,3]");
}

TEST_CASE("Q-71 priority components must be int64 scalars", "[Q-71]") {
  auto spec = make_queue_spec(queue_kind::priority, opts(5, {dtype::string}));
  CHECK_THROWS_WITH(
      validate_enqueue(spec,
                       element{tensor::vector<int64_t>({1, 2}), tensor::scalar("x")}),
      "Expected the priority element to be a scalar, but received shape: [2]");
  CHECK_THROWS_WITH(
      validate_enqueue(spec, element{tensor::scalar(1), tensor::scalar("x")}),
      "Type mismatch in tuple component 0. Expected int64, got int32");
}

TEST_CASE("Q-5 named components", "[Q-5]") {
  auto o = opts(5, {dtype::int32, dtype::string});
  o.names = {"label", "text"};
  auto spec = make_queue_spec(queue_kind::fifo, o);
  auto e = element_from_names(
      spec, {{"text", tensor::scalar("x")}, {"label", tensor::scalar(3)}});
  CHECK(e == element{tensor::scalar(3), tensor::scalar("x")});
  CHECK_THROWS_WITH(
      element_from_names(spec, {{"text", tensor::scalar("x")}}),
      "Keys in dictionary to enqueue do not match names of Queue.  Dictionary: "
      "('text'), Queue: ('label', 'text')");
}

TEST_CASE("C-1 Q-3 Q-4 set-up mistakes are argument_errors, kernel checks op errors",
          "[C-1][Q-3][Q-4]") {
  // Python raises ValueError while the graph is built ...
  CHECK_THROWS_AS(make_queue_spec(queue_kind::fifo, opts(1, {dtype::int32}, {{-1, 2}})),
                  argument_error);
  try {
    auto o = opts(1, {dtype::int32});
    o.names = {"a", "b"};
    make_queue_spec(queue_kind::fifo, o);
    FAIL("nothing thrown");
  } catch (const argument_error& e) {
    CHECK(std::string{e.python_name()} == "ValueError");
  }
  // ... the queue kernel answers InvalidArgumentError, an op error.
  CHECK_THROWS_AS(make_queue_spec(queue_kind::fifo, opts(1, {})), invalid_argument_error);
  // The two are told apart: an argument_error is not an op_error.
  try {
    make_queue_spec(queue_kind::fifo, opts(1, {dtype::int32}, {{-1, 2}}));
  } catch (const op_error&) {
    FAIL("a set-up mistake came as an op_error");
  } catch (const argument_error&) {
  }
  // Crossing an actor boundary it keeps its text, as INVALID_ARGUMENT.
  auto err = error_from_exception(std::make_exception_ptr(argument_error("bad")));
  CHECK(code_of(err) == error_code::invalid_argument);
  CHECK(message_of(err) == "bad");
}

TEST_CASE("a value that is no queue kind is refused by name", "[queue_kind]") {
  auto bad = static_cast<queue_kind>(9);
  CHECK_THROWS_AS(make_queue_spec(bad, opts(1, {dtype::int32})), invalid_argument_error);
  CHECK_THROWS_WITH(make_queue_spec(bad, opts(1, {dtype::int32})),
                    "unknown queue kind 9");
  CHECK(std::string(queue_kind_name(bad)) == "Queue");
  CHECK(std::string(queue_kind_name(queue_kind::padding_fifo)) == "PaddingFIFOQueue");
}
