#pragma once

// Internal: the memory of tensor values and element components, recycled between the
// thread that makes a batch and the thread that frees it (docs/performance.md, Tensor
// memory). quern::tensor and quern::element use it; users need nothing here, and the
// *_blocks_held() counts are for tests.

#include <cstddef>
#include <cstring>
#include <utility>

namespace quern::detail {

/// Memory for tensor values, recycled between threads. A batch is usually
/// made by one thread (a producer) and freed by another (a consumer): glibc
/// then frees each block into the producer's arena under that arena's lock
/// (a system call when both threads meet there, costly in a virtual machine),
/// and the producer's next batch finds no block in its own cache. The pool
/// keeps freed blocks of 256 B to 4 MiB in size classes (powers of two) and
/// hands them to whichever thread asks next. It never waits: when a class is
/// busy in another thread, empty, or full, the call falls back to operator
/// new / delete. It holds at most 64 blocks and 8 MiB per class, and
/// 16 MiB in all.
/// (docs/performance.md, "Tensor memory")
void* pool_allocate(std::size_t bytes);
/// Returns a block of `bytes` from pool_allocate(bytes).
void pool_deallocate(void* p, std::size_t bytes) noexcept;
/// How many freed blocks the class of a request of `bytes` holds (0 outside
/// the pooled sizes, and in builds with AddressSanitizer, which pool nothing).
std::size_t pool_blocks_held(std::size_t bytes);
/// The most blocks the class of a request of `bytes` holds.
std::size_t pool_capacity(std::size_t bytes);

/// Small blocks (up to 512 B) recycled between threads: the tensors of an
/// element (element::components). Every row a producer makes allocates one
/// and the consumer frees it, so glibc's thread cache never holds what the
/// producer asks for next (45% of the CPU of single rows went to malloc and
/// free, docs/performance.md, "Elements"). Each thread keeps freed blocks in
/// a cache of its own (no atomic operation) and trades them with other
/// threads 32 at a time through a shared stack of batches (a spin lock that
/// is only tried: a call never waits, it falls back to operator new /
/// delete). A thread keeps at most 127 blocks per class, the shared stack
/// 64 batches per class.
void* small_allocate(std::size_t bytes);
/// Returns a block of `bytes` from small_allocate(bytes).
void small_deallocate(void* p, std::size_t bytes) noexcept;
/// How many blocks of the class of `bytes` the calling thread's cache and
/// the shared stack hold (for tests; 0 with AddressSanitizer).
std::size_t small_blocks_held(std::size_t bytes);

/// A std allocator on small_allocate (stateless: all compare equal).
template <class T>
struct recycling_allocator {
  using value_type = T;
  recycling_allocator() noexcept = default;
  template <class U>
  recycling_allocator(const recycling_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(small_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { small_deallocate(p, n * sizeof(T)); }
  template <class U>
  friend bool operator==(const recycling_allocator&, const recycling_allocator<U>&) {
    return true;
  }
  template <class U>
  friend bool operator!=(const recycling_allocator&, const recycling_allocator<U>&) {
    return false;
  }
};

/// The values of a tensor buffer: bytes in a block of the pool. Not a
/// std::vector with a pool allocator: libstdc++ keeps its memset / memcpy
/// paths for std::allocator, and with any other allocator fills and copies
/// byte by byte (a batch received from another process took 50% more CPU).
class byte_vector {
public:
  byte_vector() noexcept = default;
  byte_vector(const byte_vector& other) { assign(other.begin(), other.end()); }
  byte_vector(byte_vector&& other) noexcept
      : data_(other.data_), size_(other.size_), capacity_(other.capacity_) {
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  byte_vector& operator=(const byte_vector& other) {
    if (this != &other)
      assign(other.begin(), other.end());
    return *this;
  }
  byte_vector& operator=(byte_vector&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    return *this;
  }
  ~byte_vector() { pool_deallocate(data_, capacity_); }

  unsigned char* data() noexcept { return data_; }
  const unsigned char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  unsigned char* begin() noexcept { return data_; }
  unsigned char* end() noexcept { return data_ + size_; }
  const unsigned char* begin() const noexcept { return data_; }
  const unsigned char* end() const noexcept { return data_ + size_; }
  unsigned char& operator[](std::size_t i) noexcept { return data_[i]; }
  const unsigned char& operator[](std::size_t i) const noexcept { return data_[i]; }

  /// n bytes: the first size() kept, the rest zero.
  void resize(std::size_t n) {
    reserve(n);
    if (n > size_)
      std::memset(data_ + size_, 0, n - size_);
    size_ = n;
  }
  /// n bytes of `value`.
  void assign(std::size_t n, unsigned char value) {
    size_ = 0;
    reserve(n);
    if (n > 0)
      std::memset(data_, value, n);
    size_ = n;
  }
  /// A copy of [first, last).
  void assign(const unsigned char* first, const unsigned char* last) {
    auto n = static_cast<std::size_t>(last - first);
    size_ = 0;
    reserve(n);
    if (n > 0)
      std::memcpy(data_, first, n);
    size_ = n;
  }
  void reserve(std::size_t n) {
    if (n <= capacity_)
      return;
    auto* block = static_cast<unsigned char*>(pool_allocate(n));
    if (size_ > 0)
      std::memcpy(block, data_, size_);
    pool_deallocate(data_, capacity_);
    data_ = block;
    capacity_ = n;
  }

private:
  unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

} // namespace quern::detail
