#include "quern/detail/byte_pool.hpp"

#include <array>
#include <atomic>
#include <new>

namespace quern::detail {

namespace {

constexpr std::size_t smallest_class = 256;     // up to half of it: glibc's thread cache
constexpr std::size_t largest_class = 4u << 20; // above: rare, and large to keep
constexpr std::size_t blocks_per_class = 64;    // and at most bytes_per_class
constexpr std::size_t bytes_per_class = 8u << 20;
constexpr std::size_t bytes_in_all = 16u << 20; // every class together
constexpr int class_count = 15;                 // 256 B ... 4 MiB

static_assert((smallest_class << (class_count - 1)) == largest_class);

/// Freed blocks of one size. A spin lock that is only tried: a thread that
/// finds it taken uses operator new / delete instead of waiting, so no call
/// ever waits for another thread (or makes a system call).
struct size_class {
  std::atomic<bool> busy{false};
  std::size_t count = 0;
  std::array<void*, blocks_per_class> blocks{};

  bool try_lock() noexcept {
    return !busy.load(std::memory_order_relaxed) &&
           !busy.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { busy.store(false, std::memory_order_release); }
};

struct pool {
  std::array<size_class, class_count> classes;
  // The bytes of every class's blocks; classes add and take under their own
  // lock, so two of them may pass the bound by a block each at once.
  std::atomic<std::size_t> held{0};
};

/// Never destroyed: tensors freed by static destructors still find it. The
/// blocks it holds stay reachable through it (no leak reported).
pool& the_pool() {
  static pool* p = new pool;
  return *p;
}

/// The class of a request of `bytes`, or -1 outside the pooled sizes.
int class_of(std::size_t bytes) noexcept {
  if (bytes < smallest_class / 2 + 1 || bytes > largest_class)
    return -1;
  int c = 0;
  for (auto size = smallest_class; size < bytes; size <<= 1)
    ++c;
  return c;
}

std::size_t class_size(int c) noexcept {
  return smallest_class << c;
}

std::size_t capacity(int c) noexcept {
  auto by_bytes = bytes_per_class / class_size(c);
  return by_bytes < blocks_per_class ? by_bytes : blocks_per_class;
}

} // namespace

void* pool_allocate(std::size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  // Recycled blocks would hide a use after free from AddressSanitizer.
  return ::operator new(bytes);
#endif
  auto c = class_of(bytes);
  if (c < 0)
    return ::operator new(bytes);
  auto& pl = the_pool();
  auto& sc = pl.classes[static_cast<std::size_t>(c)];
  if (sc.try_lock()) {
    void* block = sc.count > 0 ? sc.blocks[--sc.count] : nullptr;
    if (block != nullptr)
      pl.held.fetch_sub(class_size(c), std::memory_order_relaxed);
    sc.unlock();
    if (block != nullptr)
      return block;
  }
  return ::operator new(class_size(c));
}

void pool_deallocate(void* p, std::size_t bytes) noexcept {
  if (p == nullptr)
    return;
#if defined(__SANITIZE_ADDRESS__)
  ::operator delete(p);
  return;
#endif
  auto c = class_of(bytes);
  if (c < 0) {
    ::operator delete(p);
    return;
  }
  auto& pl = the_pool();
  auto& sc = pl.classes[static_cast<std::size_t>(c)];
  if (sc.try_lock()) {
    bool kept = sc.count < capacity(c) &&
                pl.held.load(std::memory_order_relaxed) + class_size(c) <= bytes_in_all;
    if (kept) {
      sc.blocks[sc.count++] = p;
      pl.held.fetch_add(class_size(c), std::memory_order_relaxed);
    }
    sc.unlock();
    if (kept)
      return;
  }
  ::operator delete(p);
}

std::size_t pool_blocks_held(std::size_t bytes) {
  auto c = class_of(bytes);
  if (c < 0)
    return 0;
  auto& sc = the_pool().classes[static_cast<std::size_t>(c)];
  while (!sc.try_lock()) {
    // only tests ask, while no other thread uses the class
  }
  auto n = sc.count;
  sc.unlock();
  return n;
}

std::size_t pool_capacity(std::size_t bytes) {
  auto c = class_of(bytes);
  return c < 0 ? 0 : capacity(c);
}

} // namespace quern::detail
