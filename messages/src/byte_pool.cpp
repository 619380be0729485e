#include "quern/detail/byte_pool.hpp"

#include <array>
#include <atomic>
#include <new>

namespace quern::detail {

namespace {

#if defined(__SANITIZE_ADDRESS__)
// Recycled blocks would hide a use after free from AddressSanitizer: such
// builds pool nothing.
constexpr bool pooling = false;
#else
constexpr bool pooling = true;
#endif

/// Frees what no pool keeps: nothing for nullptr, and every block in builds
/// that pool nothing. True when `p` is dealt with.
bool freed_unpooled(void* p) noexcept {
  if (p == nullptr)
    return true;
  if (!pooling)
    ::operator delete(p);
  return !pooling;
}

constexpr std::size_t smallest_class = 256;     // up to half of it: glibc's thread cache
constexpr std::size_t largest_class = 4u << 20; // above: rare, and large to keep
constexpr std::size_t blocks_per_class = 64;    // and at most bytes_per_class
constexpr std::size_t bytes_per_class = 8u << 20;
constexpr std::size_t bytes_in_all = 16u << 20; // every class together
constexpr int class_count = 15;                 // 256 B ... 4 MiB

static_assert((smallest_class << (class_count - 1)) == largest_class);

/// A spin lock that is only tried: a thread that finds it taken uses
/// operator new / delete instead of waiting, so no call ever waits for
/// another thread (or makes a system call).
struct tried_lock {
  std::atomic<bool> busy{false};

  bool try_lock() noexcept {
    return !busy.load(std::memory_order_relaxed) &&
           !busy.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { busy.store(false, std::memory_order_release); }
  /// Spins until it has the lock: only tests ask for what a pool holds,
  /// while no other thread uses it.
  void lock_for_test() noexcept {
    while (!try_lock()) {
    }
  }
};

/// Freed blocks of one size.
struct size_class : tried_lock {
  std::size_t count = 0;
  std::array<void*, blocks_per_class> blocks{};
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
  auto c = class_of(bytes);
  if (c < 0 || !pooling)
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
  if (freed_unpooled(p))
    return;
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
  sc.lock_for_test();
  auto n = sc.count;
  sc.unlock();
  return n;
}

std::size_t pool_capacity(std::size_t bytes) {
  auto c = class_of(bytes);
  return c < 0 ? 0 : capacity(c);
}

// -- small blocks: per-thread caches that trade batches ----------------------

namespace {

constexpr int small_class_count = 4; // 64, 128, 256, 512 B
constexpr std::size_t smallest_small = 64;
constexpr std::size_t trade_size = 32;               // blocks per batch traded
constexpr std::size_t thread_limit = 2 * trade_size; // then trade a batch
constexpr std::size_t thread_cap = 4 * trade_size;   // most a thread keeps
constexpr std::size_t shared_batches = 64;           // per class

int small_class_of(std::size_t bytes) noexcept {
  int c = 0;
  for (auto size = smallest_small; size < bytes; size <<= 1)
    if (++c == small_class_count)
      return -1;
  return c;
}

std::size_t small_size(int c) noexcept {
  return smallest_small << c;
}

struct free_block {
  free_block* next;
};

/// Batches of trade_size blocks, each a list, shared by every thread.
struct shared_stack : tried_lock {
  std::size_t count = 0;
  std::array<free_block*, shared_batches> batches{};
};

/// Never destroyed, like the_pool().
std::array<shared_stack, small_class_count>& shared_stacks() {
  static auto* s = new std::array<shared_stack, small_class_count>;
  return *s;
}

free_block* batch_tail(free_block* b) noexcept {
  while (b->next != nullptr)
    b = b->next;
  return b;
}

void delete_list(free_block* b) noexcept {
  while (b != nullptr) {
    auto* next = b->next;
    ::operator delete(b);
    b = next;
  }
}

enum class given { kept, busy, full };

/// Gives a list of trade_size blocks to the shared stack.
given give_batch(int c, free_block* batch) noexcept {
  auto& st = shared_stacks()[static_cast<std::size_t>(c)];
  if (!st.try_lock())
    return given::busy;
  bool kept = st.count < shared_batches;
  if (kept)
    st.batches[st.count++] = batch;
  st.unlock();
  return kept ? given::kept : given::full;
}

free_block* take_batch(int c) noexcept {
  auto& st = shared_stacks()[static_cast<std::size_t>(c)];
  if (!st.try_lock())
    return nullptr;
  free_block* batch = st.count > 0 ? st.batches[--st.count] : nullptr;
  st.unlock();
  return batch;
}

/// A thread's freed blocks. Constant-initialized; once destroyed (thread
/// exit) `gone` sends later frees of that thread (other thread_local
/// destructors) straight to operator delete.
struct thread_cache {
  std::array<free_block*, small_class_count> head{};
  std::array<std::size_t, small_class_count> count{};
  bool gone = false;

  ~thread_cache() {
    for (int c = 0; c < small_class_count; ++c) {
      auto i = static_cast<std::size_t>(c);
      while (count[i] >= trade_size) {
        auto* batch = detach(c, trade_size);
        if (give_batch(c, batch) != given::kept)
          delete_list(batch);
      }
      delete_list(head[i]);
      head[i] = nullptr;
      count[i] = 0;
    }
    gone = true;
  }

  /// The first n blocks of class c as a list of their own.
  free_block* detach(int c, std::size_t n) noexcept {
    auto i = static_cast<std::size_t>(c);
    auto* first = head[i];
    auto* last = first;
    for (std::size_t k = 1; k < n; ++k)
      last = last->next;
    head[i] = last->next;
    last->next = nullptr;
    count[i] -= n;
    return first;
  }
};

thread_local thread_cache cache;

} // namespace

void* small_allocate(std::size_t bytes) {
  auto c = small_class_of(bytes);
  if (c < 0 || !pooling)
    return ::operator new(bytes);
  auto& tc = cache;
  auto i = static_cast<std::size_t>(c);
  if (tc.head[i] == nullptr && !tc.gone) {
    if (auto* batch = take_batch(c)) {
      tc.head[i] = batch;
      tc.count[i] = trade_size;
    }
  }
  if (auto* b = tc.head[i]) {
    tc.head[i] = b->next;
    --tc.count[i];
    return b;
  }
  return ::operator new(small_size(c));
}

void small_deallocate(void* p, std::size_t bytes) noexcept {
  if (freed_unpooled(p))
    return;
  auto c = small_class_of(bytes);
  auto& tc = cache;
  if (c < 0 || tc.gone) {
    ::operator delete(p);
    return;
  }
  auto i = static_cast<std::size_t>(c);
  auto* b = static_cast<free_block*>(p);
  b->next = tc.head[i];
  tc.head[i] = b;
  if (++tc.count[i] < thread_limit)
    return;
  // Trade the 32 freed last; when another thread holds the stack, keep them
  // and try again at the next free, up to thread_cap.
  auto* batch = tc.detach(c, trade_size);
  auto g = give_batch(c, batch);
  if (g == given::full || (g == given::busy && tc.count[i] + trade_size >= thread_cap)) {
    delete_list(batch);
  } else if (g == given::busy) {
    batch_tail(batch)->next = tc.head[i];
    tc.head[i] = batch;
    tc.count[i] += trade_size;
  }
}

std::size_t small_blocks_held(std::size_t bytes) {
  auto c = small_class_of(bytes);
  if (c < 0 || !pooling)
    return 0;
  auto i = static_cast<std::size_t>(c);
  auto& st = shared_stacks()[i];
  st.lock_for_test();
  auto n = st.count * trade_size;
  st.unlock();
  return n + cache.count[i];
}

} // namespace quern::detail
