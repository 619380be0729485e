#pragma once

// The baseline the benchmarks measure against: a bounded queue guarded by a
// std::mutex and two condition variables, the way one writes it by hand.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace quern::bench {

template <class T>
class mutex_queue {
public:
  explicit mutex_queue(size_t capacity) : capacity_(capacity) {}

  /// False once closed.
  bool push(T x) {
    std::unique_lock<std::mutex> lock{mtx_};
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_)
      return false;
    items_.push_back(std::move(x));
    lock.unlock();
    not_empty_.notify_one();
    return true;
  }

  /// nullopt once closed and drained.
  std::optional<T> pop() {
    std::unique_lock<std::mutex> lock{mtx_};
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty())
      return std::nullopt;
    auto x = std::move(items_.front());
    items_.pop_front();
    lock.unlock();
    not_full_.notify_one();
    return x;
  }

  void close() {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      closed_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

private:
  size_t capacity_;
  std::mutex mtx_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<T> items_;
  bool closed_ = false;
};

} // namespace quern::bench
