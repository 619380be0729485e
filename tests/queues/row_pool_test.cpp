#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>

#include "kinds/row_pool.hpp"

using namespace quern;

namespace {

/// A picker that returns the given indices in turn and records the sizes it
/// was asked about.
struct scripted_picks {
  explicit scripted_picks(std::vector<size_t> picks) : indices(std::move(picks)) {}
  std::vector<size_t> indices;
  std::vector<size_t> sizes_seen;
  size_t next = 0;
  size_t operator()(size_t size) {
    sizes_seen.push_back(size);
    return indices.at(next++);
  }
};

} // namespace

TEST_CASE("row_pool takes rows by index, the last row moving into the freed slot",
          "[row_pool]") {
  row_pool pool{{dtype::int64, dtype::float32}, {tensor_shape{2}, tensor_shape{}}};
  CHECK(pool.empty());
  // Rows 1..2 of a batch of three, then a single row, then a whole batch.
  element a{tensor::from_values<int64_t>({3, 2}, {0, 0, 1, 10, 2, 20}),
            tensor::vector<float>({0.0f, 1.5f, 2.5f})};
  pool.append(a, 1, 2, true);
  pool.append(element{tensor::vector<int64_t>({3, 30}), tensor::scalar(3.5f)}, 0, 1,
              false);
  element b{tensor::from_values<int64_t>({1, 2}, {4, 40}), tensor::vector<float>({4.5f})};
  pool.append(b, 0, 1, true);
  REQUIRE(pool.size() == 4); // stored: r1 r2 r3 r4

  // Index 0 (r1) -> r4 moves to slot 0: r4 r2 r3; index 2 (r3): r4 r2.
  scripted_picks picks{{0, 2}};
  auto batch = pool.take(2, std::ref(picks));
  CHECK(picks.sizes_seen == std::vector<size_t>{4, 3});
  CHECK(batch.components[0].shape() == tensor_shape({2, 2}));
  CHECK(batch.components[0].to_vector<int64_t>() == std::vector<int64_t>{1, 10, 3, 30});
  CHECK(batch.components[1].to_vector<float>() == std::vector<float>{1.5f, 3.5f});
  // One new buffer for the whole batch, not shared with what was appended.
  CHECK(batch.components[0].shares_buffer_with(batch.components[1]));
  CHECK_FALSE(batch.components[0].shares_buffer_with(a.components[0]));
  REQUIRE(pool.size() == 2);

  scripted_picks rest{{1, 0}};
  auto last = pool.take(2, std::ref(rest));
  CHECK(last.components[0].to_vector<int64_t>() == std::vector<int64_t>{2, 20, 4, 40});
  CHECK(last.components[1].to_vector<float>() == std::vector<float>{2.5f, 4.5f});
  CHECK(pool.empty());

  // Zero rows: an empty batch of the right shapes.
  auto none = pool.take(0, [](size_t) -> size_t { throw std::logic_error("no pick"); });
  CHECK(none.components[0].shape() == tensor_shape({0, 2}));
  CHECK(none.components[1].shape() == tensor_shape({0}));
}

TEST_CASE("row_pool keeps strings, booleans and wide rows, and grows as needed",
          "[row_pool]") {
  row_pool pool{{dtype::string, dtype::boolean, dtype::float64},
                {tensor_shape{}, tensor_shape{}, tensor_shape{3}}};
  // Enough rows to grow the columns several times.
  const int64_t n = 1000;
  std::vector<std::string> names;
  std::vector<bool> flags;
  std::vector<double> wide;
  for (int64_t i = 0; i < n; ++i) {
    names.push_back("row " + std::to_string(i));
    flags.push_back(i % 3 == 0);
    for (int d = 0; d < 3; ++d)
      wide.push_back(static_cast<double>(i) + d / 10.0);
  }
  element batch{tensor::vector<std::string>(names), tensor::vector<bool>(flags),
                tensor::from_values<double>({n, 3}, wide)};
  for (int64_t first = 0; first < n; first += 100)
    pool.append(batch, first, 100, true);
  REQUIRE(pool.size() == static_cast<size_t>(n));

  // Always the last row: the rows come out in reverse, unchanged.
  auto out = pool.take(static_cast<size_t>(n), [](size_t size) { return size - 1; });
  auto got_names = out.components[0].to_vector<std::string>();
  auto got_flags = out.components[1].to_vector<bool>();
  auto got_wide = out.components[2].to_vector<double>();
  REQUIRE(got_names.size() == static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    auto i = static_cast<size_t>(n - 1 - k);
    auto kk = static_cast<size_t>(k);
    CHECK(got_names[kk] == names[i]);
    CHECK(got_flags[kk] == flags[i]);
    CHECK(got_wide[3 * kk + 2] == wide[3 * i + 2]);
  }
  CHECK(out.components[2].shape() == tensor_shape({n, 3}));
  CHECK(pool.empty());
}

TEST_CASE("row_pool refuses what does not fit and appends nothing then", "[row_pool]") {
  CHECK_THROWS_WITH((row_pool{{dtype::int32}, {tensor_shape{-1}}}),
                    "row_pool: component 0 needs a fully defined shape, got [?]");
  CHECK_THROWS_WITH((row_pool{{dtype::int32, dtype::int32}, {tensor_shape{}}}),
                    "row_pool: 2 dtypes for 1 shapes");

  row_pool pool{{dtype::int64, dtype::float32}, {tensor_shape{2}, tensor_shape{}}};
  element good_then_bad{tensor::from_values<int64_t>({1, 2}, {1, 2}),
                        tensor::vector<int32_t>({7})};
  CHECK_THROWS_WITH(pool.append(good_then_bad, 0, 1, true),
                    "row_pool: component 1 is int32[1], not a batch of float[]");
  CHECK(pool.empty()); // component 0 was not appended either
  CHECK_THROWS_WITH(pool.append(element{tensor::from_values<int64_t>({1, 2}, {1, 2}),
                                        tensor::scalar(1.0f)},
                                0, 1, true),
                    "row_pool: component 1 is float[], not a batch of float[]");
  CHECK_THROWS_WITH(pool.append(element{tensor::from_values<int64_t>({1, 2}, {1, 2}),
                                        tensor::vector<float>({1.0f})},
                                0, 1, false),
                    "row_pool: component 0 is int64[1,2], not one row of int64[2]");
  element two{tensor::from_values<int64_t>({2, 2}, {1, 2, 3, 4}),
              tensor::vector<float>({1.0f, 2.0f})};
  CHECK_THROWS_WITH(pool.append(two, 1, 2, true),
                    "row_pool: rows [1, 3) out of range for leading dimension 2");
  CHECK_THROWS_WITH(pool.append(two, -1, 1, true), "row_pool: rows [-1, 0) out of range");
  CHECK_THROWS_WITH(pool.append(element{tensor::vector<int64_t>({1, 2})}, 0, 1, false),
                    "row_pool: an element of 1 components for a pool of 2");
  CHECK_THROWS_WITH(pool.append(two, 0, 2, false),
                    "row_pool: a single row is appended as rows [0, 1)");
  CHECK(pool.empty());

  pool.append(two, 0, 2, true);
  CHECK_THROWS_WITH(pool.take(3, [](size_t) { return size_t{0}; }),
                    "row_pool: cannot take 3 rows of 2");
  CHECK(pool.size() == 2); // a refused take takes nothing
}

TEST_CASE("row_pool gives spare memory back once drained, keeping the live rows",
          "[row_pool]") {
  row_pool pool{{dtype::int64}, {tensor_shape{2}}};
  const int64_t n = 200000; // 3.2 MB of rows
  std::vector<int64_t> values;
  for (int64_t i = 0; i < n; ++i) {
    values.push_back(i);
    values.push_back(-i);
  }
  pool.append(element{tensor::from_values<int64_t>({n, 2}, values)}, 0, n, true);
  REQUIRE(pool.reserved_bytes() >= static_cast<size_t>(n) * 16);

  // Always the last row: the first ten rows stay in slots 0..9.
  auto most =
      pool.take(static_cast<size_t>(n - 10), [](size_t size) { return size - 1; });
  CHECK(most.components[0].shape() == tensor_shape({n - 10, 2}));
  CHECK(pool.size() == 10);
  CHECK(pool.reserved_bytes() == size_t{1} << 20); // shrunk, 1 MiB kept

  auto rest = pool.take(10, [](size_t) { return size_t{0}; });
  // Slot 0 each time, the last row moving into it: 0, 9, 8, ..., 1.
  std::vector<int64_t> want{0, 0};
  for (int64_t i = 9; i >= 1; --i) {
    want.push_back(i);
    want.push_back(-i);
  }
  CHECK(rest.components[0].to_vector<int64_t>() == want);
  // A small pool keeps its room: no reallocation at every take.
  pool.append(element{tensor::from_values<int64_t>({n, 2}, values)}, 0, 100, true);
  auto before = pool.reserved_bytes();
  pool.take(90, [](size_t size) { return size - 1; });
  CHECK(pool.reserved_bytes() == before);
}

namespace {

/// One layout of a row: (dtype, values per row) per component.
struct layout {
  std::vector<dtype> types;
  std::vector<int64_t> widths;
};

/// A number that tells value v of component k of row r from its neighbours,
/// below 250 so that every numeric dtype below holds it exactly.
double tag(int64_t r, size_t k, int64_t v) {
  return static_cast<double>((r * 7 + static_cast<int64_t>(k) * 3 + v) % 250);
}

/// f(T{}) with T the C++ type of the numeric dtype t.
template <class F>
auto with_type(dtype t, F&& f) {
  switch (t) {
  case dtype::float32:
    return f(float{});
  case dtype::float64:
    return f(double{});
  case dtype::int32:
    return f(int32_t{});
  case dtype::int64:
    return f(int64_t{});
  case dtype::uint8:
    return f(uint8_t{});
  default:
    throw std::logic_error("with_type: no such test dtype");
  }
}

tensor column_of(dtype t, int64_t first, int64_t rows, size_t k, int64_t width) {
  tensor_shape shape = width == 1 ? tensor_shape{rows} : tensor_shape{rows, width};
  return with_type(t, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> values;
    for (int64_t r = first; r < first + rows; ++r)
      for (int64_t v = 0; v < width; ++v)
        values.push_back(static_cast<T>(tag(r, k, v)));
    return tensor::from_values<T>(shape, std::move(values));
  });
}

std::vector<double> as_doubles(const tensor& t) {
  return with_type(t.type(), [&](auto zero) {
    auto v = t.to_vector<decltype(zero)>();
    return std::vector<double>(v.begin(), v.end());
  });
}

} // namespace

TEST_CASE("row_pool takes the picked rows of every record size, as a model of "
          "swap-remove says",
          "[row_pool]") {
  // Record sizes 4, 8, 12, 16, 24, 32 (read with sizes known at compile
  // time) and 1, 13, 20 (any size), with columns of 1, 4 and 8 bytes per value.
  std::vector<layout> layouts{
      {{dtype::uint8}, {1}},
      {{dtype::float32}, {1}},
      {{dtype::int64}, {1}},
      {{dtype::float32, dtype::float32, dtype::float32}, {1, 1, 1}},
      {{dtype::int32, dtype::float32}, {3, 1}},
      {{dtype::float64}, {3}},
      {{dtype::float64, dtype::int64}, {2, 2}},
      {{dtype::uint8, dtype::float32, dtype::int64}, {1, 1, 1}},
      {{dtype::int64, dtype::float32}, {2, 1}},
  };
  for (const auto& l : layouts) {
    std::vector<tensor_shape> shapes;
    for (auto w : l.widths)
      shapes.push_back(w == 1 ? tensor_shape{} : tensor_shape{w});
    row_pool pool{l.types, shapes};
    // Every component of `out` holds the rows `taken`, in that order.
    auto check_taken = [&l](const element& out, const std::vector<int64_t>& taken) {
      REQUIRE(out.components.size() == l.types.size());
      const auto n = static_cast<int64_t>(taken.size());
      for (size_t k = 0; k < l.types.size(); ++k) {
        auto want_shape =
            l.widths[k] == 1 ? tensor_shape{n} : tensor_shape{n, l.widths[k]};
        CHECK(out.components[k].shape() == want_shape);
        CHECK(out.components[k].type() == l.types[k]);
        std::vector<double> want;
        for (auto r : taken)
          for (int64_t v = 0; v < l.widths[k]; ++v)
            want.push_back(tag(r, k, v));
        CHECK(as_doubles(out.components[k]) == want);
      }
    };
    std::vector<int64_t> model; // the id of the row in each slot
    std::mt19937_64 gen{42};
    int64_t next_row = 0;
    for (int round = 0; round < 6; ++round) {
      const int64_t rows = 50 + round * 37;
      element batch;
      for (size_t k = 0; k < l.types.size(); ++k)
        batch.components.push_back(column_of(l.types[k], next_row, rows, k, l.widths[k]));
      // Rows [3, rows): a run that does not start at the batch's first row.
      pool.append(batch, 3, rows - 3, true);
      for (int64_t r = next_row + 3; r < next_row + rows; ++r)
        model.push_back(r);
      next_row += rows;

      const size_t n = std::min<size_t>(model.size(), 29 + 11 * round);
      std::vector<size_t> picked;
      auto out = pool.take(n, [&](size_t size) {
        picked.push_back(static_cast<size_t>(gen() % size));
        return picked.back();
      });
      // The same picks on the model: the row at the slot, the last into it.
      std::vector<int64_t> taken;
      for (auto j : picked) {
        taken.push_back(model[j]);
        model[j] = model.back();
        model.pop_back();
      }
      REQUIRE(pool.size() == model.size());
      check_taken(out, taken);
    }
    // The rest, always the last slot, so every stored value was read once.
    auto rest = pool.take(model.size(), [](size_t size) { return size - 1; });
    check_taken(rest, std::vector<int64_t>(model.rbegin(), model.rend()));
    CHECK(pool.empty());
  }
}
