#pragma once

// Where a pipeline's time goes (docs/input.md, "Where the pipeline waits";
// private to coordination/): each queue runner worker keeps how long it was
// busy in its op, waiting for input and waiting for room, and each consumer
// how long its dequeues waited. The figures live with the one thread that
// measures them and are written without a lock (single-writer atomics, a
// sequence counter so that a reader sees the state and its time together);
// the pipeline reads them when asked (pipeline::telemetry).

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "quern/blocking_client.hpp"
#include "quern/interfaces.hpp"

namespace quern::detail {

/// Nanoseconds of the steady clock.
inline int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// What a worker is doing: between runs (or paused), in its op, waiting for
/// an upstream queue's answer, waiting for room in its queue.
enum class activity : int { idle = 0, busy = 1, input = 2, room = 3 };

/// A worker's figures, as a reader sees them at one instant.
struct worker_reading {
  std::array<int64_t, 4> ns{}; // per activity, including the current one
  int64_t rows_out = 0;        // rows its pushes stored
  int64_t runs = 0;
  caf::actor_id input = 0; // the upstream queue it last waited for
};

/// One worker's figures. Written by the worker only (its actor, or its
/// op's thread through the call_meter); read by anyone.
class worker_meter final : public call_meter {
public:
  explicit worker_meter(std::string name) : name_(std::move(name)) {
    since_.store(steady_ns(), std::memory_order_relaxed);
  }
  const std::string& name() const noexcept { return name_; }

  /// The worker now does `a` (one clock read when it changes).
  void to(activity a) noexcept {
    auto cur = state_.load(std::memory_order_relaxed);
    if (cur == static_cast<int>(a))
      return;
    auto now = steady_ns();
    auto s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    auto& acc = ns_[static_cast<size_t>(cur)];
    acc.store(acc.load(std::memory_order_relaxed) +
                  (now - since_.load(std::memory_order_relaxed)),
              std::memory_order_relaxed);
    since_.store(now, std::memory_order_relaxed);
    state_.store(static_cast<int>(a), std::memory_order_relaxed);
    seq_.store(s + 2, std::memory_order_release);
  }
  /// Waits for the queue `q`'s answer.
  void waiting_for(caf::actor_id q) noexcept {
    input_.store(q, std::memory_order_relaxed);
    to(activity::input);
  }
  bool is(activity a) const noexcept {
    return state_.load(std::memory_order_relaxed) == static_cast<int>(a);
  }
  void add_rows_out(int64_t n) noexcept { add(rows_out_, n); }
  void add_run() noexcept { add(runs_, 1); }

  /// The blocking op's calls inside its run (call_meter): a dequeue waits
  /// for input, an enqueue for room; other calls count as busy.
  void begin(caf::atom_value op, caf::actor_id dest) noexcept override;
  void end() noexcept override {
    if (is(activity::input) || is(activity::room))
      to(activity::busy);
  }

  /// The figures now (the current activity counted up to now).
  worker_reading read() const noexcept;

private:
  static void add(std::atomic<int64_t>& x, int64_t n) noexcept {
    x.store(x.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::string name_;
  std::atomic<uint32_t> seq_{0};
  std::atomic<int> state_{0};
  std::atomic<int64_t> since_{0};
  std::array<std::atomic<int64_t>, 4> ns_{};
  std::atomic<int64_t> rows_out_{0};
  std::atomic<int64_t> runs_{0};
  std::atomic<caf::actor_id> input_{0};
};

using worker_meter_ptr = std::shared_ptr<worker_meter>;

/// The meters of a queue runner's workers of its last start (replaced by
/// each start); shared by the runner handle and its runner actor.
class runner_meters {
public:
  explicit runner_meters(bool on) : on_(on) {}
  bool on() const noexcept { return on_; }
  void set_on(bool on) noexcept { on_ = on; }
  /// A new start: its workers' meters replace the old ones.
  void restart() {
    std::lock_guard<std::mutex> guard{mtx_};
    workers_.clear();
  }
  /// A meter for the worker `name` (null when measuring is off).
  worker_meter_ptr add(const std::string& name) {
    if (!on_)
      return nullptr;
    auto m = std::make_shared<worker_meter>(name);
    std::lock_guard<std::mutex> guard{mtx_};
    workers_.push_back(m);
    return m;
  }
  std::vector<worker_meter_ptr> workers() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return workers_;
  }

private:
  bool on_;
  mutable std::mutex mtx_;
  std::vector<worker_meter_ptr> workers_;
};

/// A consumer's dequeues: how long each waited, and the wall time between
/// the ends of two dequeues (a step). Two clock reads per dequeue.
class consumer_meter {
public:
  explicit consumer_meter(queue_actor q) : queue_(std::move(q)) {}
  const queue_actor& queue() const noexcept { return queue_; }
  /// A dequeue that started at `begin` and returned `rows` at `end`.
  void dequeued(int64_t begin, int64_t end, int64_t rows) noexcept {
    auto last = last_end_.exchange(end, std::memory_order_relaxed);
    auto wall = last == 0 ? end - begin : end - last;
    wait_ns_.fetch_add(end - begin, std::memory_order_relaxed);
    wall_ns_.fetch_add(wall, std::memory_order_relaxed);
    dequeues_.fetch_add(1, std::memory_order_relaxed);
    rows_.fetch_add(rows, std::memory_order_relaxed);
  }
  struct reading {
    int64_t wait_ns = 0;
    int64_t wall_ns = 0;
    int64_t dequeues = 0;
    int64_t rows = 0;
  };
  reading read() const noexcept {
    return {wait_ns_.load(std::memory_order_relaxed),
            wall_ns_.load(std::memory_order_relaxed),
            dequeues_.load(std::memory_order_relaxed),
            rows_.load(std::memory_order_relaxed)};
  }

private:
  queue_actor queue_;
  std::atomic<int64_t> last_end_{0};
  std::atomic<int64_t> wait_ns_{0};
  std::atomic<int64_t> wall_ns_{0};
  std::atomic<int64_t> dequeues_{0};
  std::atomic<int64_t> rows_{0};
};

} // namespace quern::detail
