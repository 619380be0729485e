#pragma once

// The deadlines of a queue's waiting attempts: a heap, and one
// wake-up scheduled for the earliest, so that a consumer whose calls all
// carry a long timeout costs one timer per timeout period, not one per call.
// Private to queues/.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <tuple>
#include <vector>

#include <caf/actor.hpp>
#include <caf/local_actor.hpp>
#include <caf/timespan.hpp>

namespace quern::detail {

class deadlines {
public:
  /// What a deadline ends: a call's timeout, the wait of a consumer whose
  /// queue runners were never started, or the limit of a watched dequeue
  /// (a pipeline consumer's, feeders.hpp).
  enum class kind { timeout, starvation, watch };

  /// `owner` receives (deadline_atom, uint64_t) when a deadline is due and
  /// then calls expire_due().
  explicit deadlines(caf::local_actor* owner) : owner_(owner) {}

  /// Attempt `id` ends after `timeout` unless it completed before (then
  /// expiring it is a no-op for the owner). A timeout too long to represent
  /// is no deadline at all.
  void arm(uint64_t id, caf::timespan timeout, kind k = kind::timeout);

  /// Calls `on_due(id, kind)` for every deadline that is due, in order.
  void expire_due(const std::function<void(uint64_t, kind)>& on_due);

  /// The owner ends: the wake-up relay goes with it.
  void stop();

private:
  using steady = std::chrono::steady_clock;
  using entry = std::tuple<steady::time_point, uint64_t, kind>;

  void schedule_wakeup(steady::time_point due, steady::time_point now);

  caf::local_actor* owner_;
  caf::actor relay_;
  std::priority_queue<entry, std::vector<entry>, std::greater<entry>> heap_;
  std::optional<steady::time_point> wakeup_at_;
};

} // namespace quern::detail
