#include <catch2/catch.hpp>

#include <cstring>
#include <memory>

#include "quern/element.hpp"
#include "quern/tensor.hpp"

using namespace quern;

TEST_CASE("tensor scalars are typed and printable", "[tensor]") {
  auto t = tensor::scalar(int64_t{42});
  CHECK(t.type() == dtype::int64);
  CHECK(t.shape() == tensor_shape{});
  CHECK(t.scalar_value<int64_t>() == 42);
  CHECK(t.to_string() == "int64[]{42}");
  auto s = tensor::scalar("hello");
  CHECK(s.type() == dtype::string);
  CHECK(s.scalar_value<std::string>() == "hello");
  CHECK(tensor::scalar(true).scalar_value<bool>());
  CHECK(tensor::scalar(2.5f).to_string() == "float[]{2.5}");
}

TEST_CASE("typed access with the wrong dtype fails clearly", "[tensor]") {
  auto t = tensor::scalar(1.0f);
  CHECK_THROWS_WITH(t.scalar_value<int64_t>(),
                    "Type mismatch: tensor has dtype float, requested int64");
  CHECK_THROWS_AS(t.values<double>(), invalid_argument_error);
  auto v = tensor::vector<int32_t>({1, 2});
  CHECK_THROWS_WITH(v.scalar_value<int32_t>(),
                    "expected a scalar, got a tensor of shape [2]");
}

TEST_CASE("from_values checks the value count against the shape", "[tensor]") {
  CHECK_THROWS_WITH(tensor::from_values<float>({2, 3}, {1, 2, 3}),
                    "shape [2,3] needs 6 values, got 3");
  CHECK_THROWS_WITH(tensor::from_values<float>(tensor_shape{-1, 3}, {}),
                    "a tensor needs a fully defined shape, got [?,3]");
  auto t = tensor::from_values<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(t.num_elements() == 6);
  CHECK(t.to_string(3) == "float[2,3]{1, 2, 3, ...}");
}

TEST_CASE("build writes a tensor's values in place", "[tensor]") {
  size_t seen = 0;
  auto t = tensor::build<float>({2, 3}, [&](float* v, size_t n) {
    seen = n;
    for (size_t i = 0; i < n; ++i) {
      CHECK(v[i] == 0.0f); // zero when fill starts
      v[i] = static_cast<float>(i) + 0.5f;
    }
  });
  CHECK(seen == 6);
  CHECK(t.type() == dtype::float32);
  CHECK(t == tensor::from_values<float>({2, 3}, {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
  CHECK(t.row(1).to_vector<float>() == std::vector<float>{3.5f, 4.5f, 5.5f});

  auto s = tensor::build<int64_t>(tensor_shape{}, [](int64_t* v, size_t n) {
    CHECK(n == 1);
    *v = 7;
  });
  CHECK(s == tensor::scalar(int64_t{7}));

  auto empty = tensor::build<double>({0, 4}, [](double*, size_t n) { CHECK(n == 0); });
  CHECK(empty.shape() == tensor_shape{0, 4});

  bool called = false;
  CHECK_THROWS_WITH(
      tensor::build<float>(tensor_shape{-1, 3}, [&](float*, size_t) { called = true; }),
      "a tensor needs a fully defined shape, got [?,3]");
  CHECK_FALSE(called);
}

TEST_CASE("view_of makes tensors that share one buffer at offsets", "[tensor]") {
  // Two int32 columns and one string column of a 2-row batch, in one buffer.
  auto buf = std::make_shared<tensor_buffer>();
  std::vector<int32_t> ints{1, 2, 3, 4, 5, 6};
  buf->bytes.resize(ints.size() * sizeof(int32_t));
  std::memcpy(buf->bytes.data(), ints.data(), buf->bytes.size());
  buf->strings = {"a", "b"};
  std::shared_ptr<const tensor_buffer> shared = buf;
  auto first = tensor::view_of(dtype::int32, tensor_shape{2}, shared, 0);
  auto second = tensor::view_of(dtype::int32, tensor_shape{2, 2}, shared, 2);
  auto names = tensor::view_of(dtype::string, tensor_shape{2}, shared, 0);
  CHECK(first.to_string() == "int32[2]{1, 2}");
  CHECK(second.to_string() == "int32[2,2]{3, 4, 5, 6}");
  CHECK(names.values<std::string>()[1] == "b");
  CHECK(first.shares_buffer_with(second));
  CHECK(first.shares_buffer_with(names));

  // Views that do not fit are refused, naming the problem.
  auto refused = [&](dtype t, tensor_shape s, int64_t offset, const char* text) {
    try {
      (void)tensor::view_of(t, std::move(s), shared, offset);
      FAIL("accepted a view that does not fit");
    } catch (const invalid_argument_error& e) {
      CHECK_THAT(e.what(), Catch::Contains(text));
    }
  };
  refused(dtype::int32, tensor_shape{4}, 3, "do not fit in a buffer of 6 int32 values");
  refused(dtype::int64, tensor_shape{4}, 0, "do not fit in a buffer of 3 int64 values");
  refused(dtype::string, tensor_shape{3}, 0, "do not fit in a buffer of 2 string values");
  refused(dtype::int32, tensor_shape{1}, -1, "negative offset");
  refused(dtype::int32, tensor_shape{-1}, 0, "");
  try {
    (void)tensor::view_of(dtype::int32, tensor_shape{1}, nullptr, 0);
    FAIL("accepted no buffer");
  } catch (const invalid_argument_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("no buffer"));
  }
}

TEST_CASE("copies and row views share the buffer", "[tensor]") {
  auto t = tensor::from_values<int64_t>({3, 2}, {1, 2, 3, 4, 5, 6});
  auto copy = t;
  CHECK(copy.shares_buffer_with(t));
  auto r = t.row(1);
  CHECK(r.shape() == tensor_shape{2});
  CHECK(r.to_vector<int64_t>() == std::vector<int64_t>{3, 4});
  CHECK(r.shares_buffer_with(t));
  // Stacking consecutive views gives a view again: no copy.
  auto back = tensor::stack({t.row(0), t.row(1), t.row(2)});
  CHECK(back == t);
  CHECK(back.shares_buffer_with(t));
  // Stacking out of order copies.
  auto swapped = tensor::stack({t.row(1), t.row(0)});
  CHECK(swapped.to_vector<int64_t>() == std::vector<int64_t>{3, 4, 1, 2});
  CHECK_FALSE(swapped.shares_buffer_with(t));
}

TEST_CASE("rows of a vector become inline scalars", "[tensor]") {
  auto v = tensor::vector<int64_t>({7, 8, 9});
  auto r = v.row(2);
  CHECK(r.shape() == tensor_shape{});
  CHECK(r.scalar_value<int64_t>() == 9);
  CHECK_FALSE(r.shares_buffer_with(v));
  CHECK(tensor::stack({v.row(0), v.row(1), v.row(2)}) == v);
  CHECK_THROWS_WITH(v.row(3), "rows [3, 4) out of range for leading dimension 3");
  CHECK_THROWS_WITH(tensor::scalar(1).row(0), "a scalar has no leading dimension");
}

TEST_CASE("stack refuses mixed dtypes and shapes", "[tensor]") {
  CHECK_THROWS_WITH(tensor::stack({tensor::scalar(1), tensor::scalar(1.0f)}),
                    "cannot stack: row 1 has dtype float, expected int32");
  CHECK_THROWS_WITH(
      tensor::stack({tensor::vector<int32_t>({1}), tensor::vector<int32_t>({1, 2})}),
      "cannot stack: row 1 has shape [2], expected [1]");
  auto empty = tensor::stack_or_empty({}, dtype::float32, tensor_shape{3});
  CHECK(empty.shape() == tensor_shape({0, 3}));
}

TEST_CASE("padding copies into the top-left corner", "[tensor]") {
  auto t = tensor::from_values<int32_t>({2, 2}, {1, 2, 3, 4});
  auto p = t.padded_to(tensor_shape{3, 3});
  CHECK(p.to_vector<int32_t>() == std::vector<int32_t>{1, 2, 0, 3, 4, 0, 0, 0, 0});
  auto s = tensor::from_values<std::string>({1}, {"a"}).padded_to(tensor_shape{2});
  CHECK(s.to_vector<std::string>() == std::vector<std::string>{"a", ""});
  CHECK_THROWS_AS(t.padded_to(tensor_shape{1, 3}), invalid_argument_error);
}

TEST_CASE("equality compares dtype, shape and values", "[tensor]") {
  CHECK(tensor::scalar(1) == tensor::scalar(1));
  CHECK(tensor::scalar(1) != tensor::scalar(2));
  CHECK(tensor::scalar(1) != tensor::scalar(int64_t{1}));
  CHECK(tensor::vector<int32_t>({1, 2}) != tensor::from_values<int32_t>({2, 1}, {1, 2}));
}

TEST_CASE("shapes print as TensorFlow prints them (C-2)", "[tensor][C-2]") {
  CHECK(tensor_shape{}.to_string() == "[]");
  CHECK(tensor_shape({3, 4}).to_string() == "[3,4]");
  CHECK(tensor_shape({-1, 2}).to_string() == "[?,2]");
  CHECK(tensor_shape::unknown_rank().to_string() == "<unknown>");
  CHECK(tensor_shape({-1, 2}).compatible_with(tensor_shape{5, 2}));
  CHECK_FALSE(tensor_shape({-1, 2}).compatible_with(tensor_shape{1, 3}));
  CHECK_FALSE(tensor_shape({-1, 2}).compatible_with(tensor_shape{2}));
}

TEST_CASE("elements stack into batches and split into rows", "[element]") {
  element a{tensor::scalar(int64_t{1}), tensor::scalar("a")};
  element b{tensor::scalar(int64_t{2}), tensor::scalar("b")};
  auto batch = stack_elements({a, b});
  CHECK(batch.batch_size() == 2);
  CHECK(batch.row(0) == a);
  CHECK(batch.row(1) == b);
  CHECK(to_string(a) == "(int64[]{1}, string[]{\"a\"})");
  CHECK_THROWS_WITH(stack_elements({a, element{tensor::scalar(int64_t{3})}}),
                    "cannot stack: element 1 has 1 components, expected 2");
}

TEST_CASE("concat_rows joins batches and single rows, zero-copy when contiguous",
          "[tensor]") {
  auto t = tensor::from_values<int64_t>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto a = t.rows(0, 1);
  auto b = t.rows(1, 3);
  auto whole =
      tensor::concat_rows({{&a, true}, {&b, true}}, dtype::int64, tensor_shape{2});
  CHECK(whole == t);
  CHECK(whole.shares_buffer_with(t));
  auto single = tensor::vector<int64_t>({9, 9});
  auto mixed =
      tensor::concat_rows({{&b, true}, {&single, false}}, dtype::int64, tensor_shape{2});
  CHECK(mixed.to_vector<int64_t>() == std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9, 9});
  CHECK_FALSE(mixed.shares_buffer_with(t));
  auto only = tensor::concat_rows({{&b, true}}, dtype::int64, tensor_shape{2});
  CHECK(only.shares_buffer_with(t));
  auto empty = tensor::concat_rows({}, dtype::int64, tensor_shape{2});
  CHECK(empty.shape() == tensor_shape({0, 2}));
  auto wrong = tensor::vector<int64_t>({1, 2, 3});
  CHECK_THROWS_WITH(tensor::concat_rows({{&wrong, false}}, dtype::int64, tensor_shape{2}),
                    "cannot concatenate: part 0 has rows of shape [3], expected [2]");
  auto strings = tensor::vector<std::string>({"a", "b"});
  auto s1 = tensor::scalar("c");
  CHECK(
      tensor::concat_rows({{&strings, true}, {&s1, false}}, dtype::string, tensor_shape{})
          .to_vector<std::string>() == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("visit_dtype maps every dtype to its type and refuses other values",
          "[dtype]") {
  for (auto t : all_dtypes) {
    auto same =
        visit_dtype(t, [](auto tag) { return dtype_of_v<typename decltype(tag)::type>; });
    CHECK(same == t);
  }
  CHECK(dtype_size(dtype::float64) == 8);
  CHECK(dtype_size(dtype::string) == 0);
  CHECK_THROWS_AS(dtype_size(static_cast<dtype>(99)), invalid_argument_error);
  CHECK_THROWS_WITH(dtype_size(static_cast<dtype>(99)), "invalid dtype 99");
}

TEST_CASE("digests follow the values, not the buffer", "[tensor]") {
  auto m = tensor::from_values<float>(tensor_shape{2, 2}, {1, 2, 3, 4});
  auto copy = tensor::from_values<float>(tensor_shape{2, 2}, {1, 2, 3, 4});
  CHECK(m.digest() == copy.digest());
  // A view hashes as the values it shows.
  CHECK(m.rows(1, 1).digest() ==
        tensor::from_values<float>(tensor_shape{1, 2}, {3, 4}).digest());
  CHECK(m.row(0).digest() == tensor::vector<float>({1, 2}).digest());
  CHECK(m.digest() !=
        tensor::from_values<float>(tensor_shape{2, 2}, {1, 2, 3, 5}).digest());
  CHECK(m.digest() != tensor::from_values<float>(tensor_shape{4}, {1, 2, 3, 4}).digest());
  CHECK(tensor::vector<int32_t>({1, 2}).digest() !=
        tensor::vector<float>({1, 2}).digest());
  CHECK(tensor::vector<std::string>({"ab", "c"}).digest() ==
        tensor::vector<std::string>({"ab", "c"}).digest());
  CHECK(tensor::vector<std::string>({"ab", "c"}).digest() !=
        tensor::vector<std::string>({"a", "bc"}).digest());
  element e{m, tensor::vector<int64_t>({7, 8})};
  CHECK(e.digest() == element{copy, tensor::vector<int64_t>({7, 8})}.digest());
  CHECK(e.digest() != element{tensor::vector<int64_t>({7, 8}), m}.digest());
}
