#include "deadlines.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "quern/atoms.hpp"

namespace quern::detail {

namespace {

/// Wakes one queue up when its earliest deadline is due. A delayed message
/// holds a strong reference to its receiver until it fires, so a queue that
/// sent wake-ups to itself would outlive its last handle by its longest
/// timeout, and ~actor_system would wait that long. The relay holds the
/// queue weakly and is stopped by the queue's on_exit.
caf::behavior deadline_relay(caf::event_based_actor* self, caf::weak_actor_ptr queue) {
  return {
      [=](deadline_atom, uint64_t tag, caf::timespan timeout) {
        self->delayed_send(self, timeout, deadline_atom::value, tag);
      },
      [=](deadline_atom, uint64_t tag) {
        if (auto q = queue.lock())
          caf::anon_send(caf::actor_cast<caf::actor>(q), deadline_atom::value, tag);
      },
  };
}

} // namespace

void deadlines::arm(uint64_t id, caf::timespan timeout, kind k) {
  auto now = steady::now();
  if (timeout >
      std::chrono::duration_cast<caf::timespan>(steady::time_point::max() - now))
    return;
  auto due = now + std::chrono::duration_cast<steady::duration>(timeout);
  heap_.push({due, id, k});
  schedule_wakeup(due, now);
}

void deadlines::schedule_wakeup(steady::time_point due, steady::time_point now) {
  if (wakeup_at_ && *wakeup_at_ <= due)
    return; // an earlier wake-up will look at this one
  if (!relay_)
    relay_ = owner_->spawn(deadline_relay,
                           caf::actor_cast<caf::weak_actor_ptr>(owner_->ctrl()));
  wakeup_at_ = due;
  caf::anon_send(relay_, deadline_atom::value, uint64_t{0},
                 std::chrono::duration_cast<caf::timespan>(
                     std::max(due - now, steady::duration{0})));
}

void deadlines::expire_due(const std::function<void(uint64_t, kind)>& on_due) {
  auto now = steady::now();
  if (wakeup_at_ && *wakeup_at_ <= now)
    wakeup_at_.reset();
  while (!heap_.empty() && std::get<0>(heap_.top()) <= now) {
    auto [due, id, k] = heap_.top();
    heap_.pop();
    on_due(id, k);
  }
  if (!heap_.empty())
    schedule_wakeup(std::get<0>(heap_.top()), now);
}

void deadlines::stop() {
  if (relay_)
    caf::anon_send_exit(relay_, caf::exit_reason::user_shutdown);
}

} // namespace quern::detail
