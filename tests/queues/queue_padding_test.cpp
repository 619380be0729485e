// PaddingFIFOQueue (docs/semantics.md) and its texts.

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;

} // namespace

TEST_CASE_METHOD(system_fixture, "Q-61 enqueue validation uses shape compatibility",
                 "[Q-61]") {
  auto q =
      spawn_padding_fifo_queue(sys, 10, {dtype::int32}, {tensor_shape{unk, 2}}, "pq");
  probe p{sys, q};
  p.enqueue(element{tensor::zeros(dtype::int32, {1, 3})});
  check_error(p.next(), error_code::invalid_argument,
              "Shape mismatch in tuple component 0. Expected [?,2], got [1,3]");
  p.enqueue(element{tensor::zeros(dtype::int32, {2})});
  check_error(p.next(), error_code::invalid_argument,
              "Shape mismatch in tuple component 0. Expected [?,2], got [2]");
  p.enqueue(element{tensor::zeros(dtype::int32, {5, 2})});
  CHECK(p.next().count() == 1);
  p.enqueue(element{tensor::zeros(dtype::int32, {0, 2})});
  CHECK(p.next().count() == 1);
  // enqueue_many: [B] + partial shape.
  p.enqueue_many(element{tensor::zeros(dtype::int32, {3, 4, 2})});
  CHECK(p.next().count() == 3);
  p.enqueue_many(element{tensor::zeros(dtype::int32, {3, 4, 1})});
  check_error(p.next(), error_code::invalid_argument,
              "Shape mismatch in tuple component 0. Expected [3,?,2], got [3,4,1]");
  CHECK(p.size() == 5);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-62 dequeue_many pads unknown dimensions to this batch's maximum",
                 "[Q-62]") {
  // int64 [?], string [?], bool [?,?], float [2] (fully known: no padding).
  auto q = spawn_padding_fifo_queue(
      sys, 10, {dtype::int64, dtype::string, dtype::boolean, dtype::float32},
      {tensor_shape{unk}, tensor_shape{unk}, tensor_shape{unk, unk}, tensor_shape{2}},
      "pq");
  probe p{sys, q};
  auto row = [](ivec ints, std::vector<std::string> strs, int64_t r, int64_t c, float f) {
    return element{tensor::vector<int64_t>(std::move(ints)),
                   tensor::vector<std::string>(std::move(strs)),
                   tensor::from_values<bool>(tensor_shape{r, c},
                                             std::vector<bool>(size_t(r * c), true)),
                   tensor::vector<float>({f, f})};
  };
  auto r0 = row({1}, {"a", "b"}, 1, 2, 1.f);
  auto r1 = row({2, 3, 4}, {}, 2, 1, 2.f);
  auto r2 = row({5, 6}, {"c"}, 0, 0, 3.f);
  for (auto& r : {r0, r1, r2})
    p.enqueue(r);
  for (int i = 0; i < 3; ++i)
    CHECK(p.next().count() == 1);
  // A single dequeue returns the element unpadded.
  p.dequeue();
  CHECK(p.next().elem() == r0);
  p.enqueue(r0);
  CHECK(p.next().count() == 1);
  p.dequeue_many(3); // r1, r2, r0
  auto b = p.next().elem();
  CHECK(b[0].shape() == tensor_shape{3, 3});
  CHECK(b[0].to_vector<int64_t>() == ivec{2, 3, 4, 5, 6, 0, 1, 0, 0});
  CHECK(b[1].shape() == tensor_shape{3, 2});
  CHECK(b[1].to_vector<std::string>() ==
        std::vector<std::string>{"", "", "c", "", "a", "b"});
  CHECK(b[2].shape() == tensor_shape{3, 2, 2});
  CHECK(b[2].to_vector<bool>() == std::vector<bool>{true, false, true, false,   //
                                                    false, false, false, false, //
                                                    true, true, false, false});
  CHECK(b[3].shape() == tensor_shape{3, 2});
  CHECK(b[3].to_vector<float>() == std::vector<float>{2.f, 2.f, 3.f, 3.f, 1.f, 1.f});
  // The maximum is per batch: a later batch of short rows is narrower.
  p.enqueue(row({7}, {"x"}, 1, 1, 4.f));
  CHECK(p.next().count() == 1);
  p.dequeue_up_to(1);
  auto small = p.next().elem();
  CHECK(small[0].shape() == tensor_shape{1, 1});
  CHECK(small[1].shape() == tensor_shape{1, 1});
  CHECK(small[2].shape() == tensor_shape{1, 1, 1});
}

TEST_CASE_METHOD(system_fixture,
                 "Q-64 dequeue_many(0) gives zero rows with unknown dimensions 0",
                 "[Q-64]") {
  auto q = spawn_padding_fifo_queue(sys, 10, {dtype::int64, dtype::float32},
                                    {tensor_shape{unk, 3}, tensor_shape{2}}, "pq");
  probe p{sys, q};
  p.enqueue(
      element{tensor::zeros(dtype::int64, {4, 3}), tensor::zeros(dtype::float32, {2})});
  CHECK(p.next().count() == 1);
  for (bool closed : {false, true}) {
    INFO("closed " << closed);
    p.dequeue_many(0);
    auto b = p.next().elem();
    CHECK(b[0].shape() == tensor_shape{0, 0, 3});
    CHECK(b[1].shape() == tensor_shape{0, 2});
    p.dequeue_up_to(0);
    CHECK(p.next().elem()[0].shape() == tensor_shape{0, 0, 3});
    p.close();
    p.next();
  }
}

TEST_CASE_METHOD(system_fixture,
                 "Q-64 closed PaddingFIFOQueue: put-back in order and kind texts",
                 "[Q-64]") {
  auto q = spawn_padding_fifo_queue(sys, 10, {dtype::int64}, {tensor_shape{unk}}, "pq");
  probe cons{sys, q};
  probe prod{sys, q};
  auto name = cons.name();
  cons.dequeue_many(4);
  cons.sync();
  prod.enqueue(element{tensor::vector<int64_t>({1})});
  prod.enqueue(element{tensor::vector<int64_t>({2, 2})});
  prod.enqueue(element{tensor::vector<int64_t>({3, 3, 3})});
  for (int i = 0; i < 3; ++i)
    CHECK(prod.next().count() == 1);
  CHECK(prod.size() == 0);
  prod.close();
  CHECK(prod.next().flag());
  check_error(cons.next(), error_code::out_of_range,
              "PaddingFIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 1, current "
                  "size 0)");
  CHECK(prod.size() == 3);
  cons.dequeue();
  CHECK(cons.next().elem()[0].to_vector<int64_t>() == ivec{1});
  cons.dequeue_up_to(5); // the small final batch, padded
  auto b = cons.next().elem();
  CHECK(b[0].shape() == tensor_shape{2, 3});
  CHECK(b[0].to_vector<int64_t>() == ivec{2, 2, 0, 3, 3, 3});
  // Single dequeue and enqueue speak as FIFOQueue.
  cons.dequeue();
  check_error(cons.next(), error_code::out_of_range,
              "FIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 1, current "
                  "size 0)");
  cons.dequeue_up_to(2);
  check_error(cons.next(), error_code::out_of_range,
              "PaddingFIFOQueue '" + name +
                  "' is closed and has insufficient elements (requested 2, current "
                  "size 0)");
  prod.enqueue(element{tensor::vector<int64_t>({1})});
  check_error(prod.next(), error_code::cancelled, "FIFOQueue '" + name + "' is closed.");
}
