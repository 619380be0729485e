#include "feeders.hpp"

#include <algorithm>

#include "quern/error.hpp"

namespace quern::detail {

bool feeders::update(const caf::actor_addr& sender, int32_t declared, int32_t started,
                     caf::timespan timeout) {
  if (declared != 0) {
    // (caf::actor_addr's hash dereferences it: no null key.)
    auto& mine = sender ? declared_by_[sender] : declared_anonymously_;
    auto now = std::max<int64_t>(mine + declared, 0);
    declared_ += now - mine;
    mine = now;
    if (sender && mine == 0)
      declared_by_.erase(sender);
  }
  if (declared > 0)
    starvation_timeout_ = std::min(starvation_timeout_, timeout);
  if (started > 0)
    ever_started_ = true;
  auto was_live = live_ > 0;
  live_ = std::max(live_ + started, 0);
  return was_live && live_ == 0;
}

caf::error feeders::never_started_error(const std::string& queue) const {
  return make_error(
      error_code::failed_precondition,
      queue + " has " + std::to_string(declared_) +
          " queue runner(s) that were never started: call start_queue_runners (or "
          "queue_runner::start) before dequeuing (TensorFlow would hang here forever)");
}

caf::error feeders::unfed_error(const std::string& queue) const {
  return make_error(error_code::unavailable,
                    queue + " has no queue runner feeding it: " +
                        (ever_started_ ? "every queue runner of it has ended without "
                                         "closing it"
                                       : "none was made for it") +
                        "; unless other code enqueues into it, this dequeue waits "
                        "forever");
}

void feeders::watch_next(const caf::actor_addr& client, caf::timespan limit) {
  if (client)
    watches_[client] = watch{limit, 0, false};
}

std::optional<caf::timespan> feeders::watching(const caf::actor_addr& client,
                                               uint64_t id) {
  auto i = watches_.find(client);
  if (i == watches_.end() || i->second.id != 0)
    return std::nullopt; // not asked, or asked for an earlier dequeue
  i->second.id = id;
  return i->second.limit;
}

std::optional<caf::error> feeders::due(uint64_t id, bool watched,
                                       const std::string& queue) {
  if (never_started())
    return never_started_error(queue);
  if (!watched)
    return std::nullopt;
  if (unfed())
    return unfed_error(queue);
  for (auto& kv : watches_)
    if (kv.second.id == id)
      kv.second.overdue = true;
  return std::nullopt;
}

std::vector<uint64_t> feeders::take_overdue() {
  std::vector<uint64_t> ids;
  for (auto& kv : watches_) {
    if (kv.second.overdue)
      ids.push_back(kv.second.id);
    kv.second.overdue = false;
  }
  return ids;
}

void feeders::client_down(const caf::actor_addr& client) {
  watches_.erase(client);
  if (auto i = declared_by_.find(client); i != declared_by_.end()) {
    declared_ -= i->second;
    declared_by_.erase(i);
  }
}

} // namespace quern::detail
