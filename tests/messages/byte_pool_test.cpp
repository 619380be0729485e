#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "quern/detail/byte_pool.hpp"
#include "quern/element.hpp"
#include "quern/tensor.hpp"

using quern::detail::byte_vector;
using quern::detail::pool_allocate;
using quern::detail::pool_blocks_held;
using quern::detail::pool_capacity;
using quern::detail::pool_deallocate;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool pooling = false; // AddressSanitizer builds pool nothing
#else
constexpr bool pooling = true;
#endif

TEST_CASE("byte_vector: resize zero-fills, assign copies, copies are deep",
          "[byte_pool]") {
  byte_vector v;
  CHECK(v.empty());
  CHECK(v.data() == nullptr);
  v.resize(5000);
  REQUIRE(v.size() == 5000);
  for (auto b : v)
    REQUIRE(b == 0);
  v[4999] = 7;
  v.resize(9000); // keeps the first bytes, zero-fills the rest
  CHECK(v[4999] == 7);
  CHECK(v[8999] == 0);
  v.assign(300, 0xAB);
  CHECK(v.size() == 300);
  CHECK(v[0] == 0xAB);
  CHECK(v[299] == 0xAB);
  const unsigned char text[] = "tensor values";
  v.assign(text, text + sizeof text);
  CHECK(std::memcmp(v.data(), text, sizeof text) == 0);

  byte_vector copy = v;
  CHECK(copy.data() != v.data());
  CHECK(std::memcmp(copy.data(), text, sizeof text) == 0);
  const auto& same = copy;
  copy = same; // assigning a vector to itself keeps its bytes
  CHECK(std::memcmp(copy.data(), text, sizeof text) == 0);

  byte_vector moved = std::move(copy);
  CHECK(copy.empty()); // NOLINT(bugprone-use-after-move): a moved-from vector is empty
  CHECK(std::memcmp(moved.data(), text, sizeof text) == 0);
  v = std::move(moved);
  CHECK(v.size() == sizeof text);
}

TEST_CASE(
    "the byte pool keeps a freed block for the next request of its class, up to its "
    "bound",
    "[byte_pool]") {
  constexpr size_t bytes = 3000; // the 4 KiB class
  auto held = pool_blocks_held(bytes);
  std::vector<void*> blocks;
  auto extra = pool_capacity(bytes) + 10;
  for (size_t i = 0; i < held + extra; ++i)
    blocks.push_back(pool_allocate(bytes));
  CHECK(pool_blocks_held(bytes) == 0); // every block it held was handed out
  for (auto* p : blocks)
    std::memset(p, 0x5A, bytes); // each block has room for the request
  for (auto* p : blocks)
    pool_deallocate(p, bytes);
  // It keeps its bound's worth and frees the rest.
  CHECK(pool_blocks_held(bytes) == (pooling ? pool_capacity(bytes) : 0));
  auto* again = pool_allocate(bytes);
  if (pooling) {
    // The first blocks freed were kept; the last of them comes back first.
    CHECK(again == blocks[pool_capacity(bytes) - 1]);
    CHECK(pool_blocks_held(bytes) == pool_capacity(bytes) - 1);
  }
  pool_deallocate(again, bytes);

  // Sizes outside the classes pass through.
  auto* small = pool_allocate(64);
  auto* huge = pool_allocate(size_t{16} << 20);
  CHECK(pool_blocks_held(64) == 0);
  pool_deallocate(small, 64);
  pool_deallocate(huge, size_t{16} << 20);
  CHECK(pool_blocks_held(64) == 0);
  CHECK(pool_blocks_held(size_t{16} << 20) == 0);
  pool_deallocate(nullptr, bytes); // as delete of nullptr: nothing
}

namespace {

/// A producer thread makes `count` values with make(i) while this thread
/// takes each as soon as it is made, checks it with wrong_in(value, i) (how
/// many of its parts are wrong) and frees it: a block reused too early, or
/// handed to two values, shows up as a wrong part. Returns the wrong parts.
template <class T, class Make, class WrongIn>
int64_t wrong_after_handoff(int64_t count, Make make, WrongIn wrong_in) {
  std::vector<T> made(static_cast<size_t>(count));
  std::atomic<int64_t> ready{0};
  std::thread producer([&] {
    for (int64_t i = 0; i < count; ++i) {
      made[static_cast<size_t>(i)] = make(i);
      ready.store(i + 1, std::memory_order_release);
    }
  });
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    while (ready.load(std::memory_order_acquire) <= i)
      std::this_thread::yield();
    auto x = std::move(made[static_cast<size_t>(i)]);
    wrong += wrong_in(x, i);
  }
  producer.join();
  return wrong;
}

} // namespace

TEST_CASE("tensors made in one thread and freed in another keep their values",
          "[byte_pool]") {
  // Batches of pooled buffers, of several sizes.
  auto value = [](int64_t b, size_t i) {
    return static_cast<float>(b) + static_cast<float>(i) / 4096.0f;
  };
  auto wrong = wrong_after_handoff<quern::tensor>(
      2000,
      [&](int64_t b) {
        std::vector<float> values(1024 + static_cast<size_t>(b % 7) * 300);
        for (size_t i = 0; i < values.size(); ++i)
          values[i] = value(b, i);
        return quern::tensor::vector<float>(std::move(values));
      },
      [&](const quern::tensor& t, int64_t b) {
        int64_t n = 0;
        auto values = t.values<float>();
        for (size_t i = 0; i < values.size(); ++i)
          n += values[i] != value(b, i);
        return n;
      });
  CHECK(wrong == 0);
}

namespace {

/// small_blocks_held(bytes) seen from a new thread, whose own cache is
/// empty: the blocks of the shared stack.
size_t shared_small_blocks(size_t bytes) {
  size_t n = 0;
  std::thread([&] { n = quern::detail::small_blocks_held(bytes); }).join();
  return n;
}

} // namespace

TEST_CASE("small blocks freed by one thread go to another 32 at a time", "[byte_pool]") {
  using quern::detail::small_allocate;
  using quern::detail::small_blocks_held;
  using quern::detail::small_deallocate;
  constexpr size_t bytes = 100; // the 128-byte class
  std::vector<void*> blocks(64);
  std::thread([&] {
    for (auto& p : blocks) {
      p = small_allocate(bytes);
      std::memset(p, 0x5A, bytes);
    }
  }).join();
  auto before = shared_small_blocks(bytes);
  std::thread([&] {
    for (auto* p : blocks)
      small_deallocate(p, bytes);
    // At its 64th block the thread traded 32 to the shared stack and kept 32.
    CHECK(small_blocks_held(bytes) == (pooling ? before + 64 : 0));
    CHECK(shared_small_blocks(bytes) == (pooling ? before + 32 : 0));
  }).join();
  // A thread that ends gives its blocks to the shared stack.
  CHECK(shared_small_blocks(bytes) == (pooling ? before + 64 : 0));
  std::thread([&] {
    auto* p = small_allocate(bytes);
    if (pooling) { // one of the 64, from a batch of 32 that this thread took
      CHECK(std::find(blocks.begin(), blocks.end(), p) != blocks.end());
      CHECK(small_blocks_held(bytes) == before + 63);
    }
    small_deallocate(p, bytes);
  }).join();
  // Sizes above the classes pass through.
  auto* big = small_allocate(4096);
  CHECK(small_blocks_held(4096) == 0);
  small_deallocate(big, 4096);
  CHECK(small_blocks_held(4096) == 0);
  small_deallocate(nullptr, bytes); // as delete of nullptr: nothing
}

TEST_CASE("elements made in one thread and freed in another keep their components",
          "[byte_pool]") {
  // The component arrays of elements are small blocks.
  auto wrong = wrong_after_handoff<quern::element>(
      20000,
      [](int64_t r) {
        return quern::element{quern::tensor::scalar(r), quern::tensor::scalar(-r)};
      },
      [](const quern::element& e, int64_t r) -> int64_t {
        return e.size() != 2 || e[0].scalar_value<int64_t>() != r ||
               e[1].scalar_value<int64_t>() != -r;
      });
  CHECK(wrong == 0);
}

TEST_CASE("an element freed after its thread's block cache is gone is freed all the same",
          "[byte_pool]") {
  // A thread_local made before the thread's first element outlives the
  // thread's cache: destroyed after it, its element's block goes straight
  // to operator delete (AddressSanitizer builds would report a leak or a
  // use after free).
  std::thread([] {
    thread_local std::vector<quern::element> late;
    late.emplace_back(quern::element{quern::tensor::scalar(int64_t{1})});
    CHECK(late.front()[0].scalar_value<int64_t>() == 1);
  }).join();
}
