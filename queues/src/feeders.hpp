#pragma once

// What a queue knows of the queue runners that feed it (feeder messages),
// and of the consumers that asked to be told when nothing feeds it: the
// starvation diagnosis of queue_actor.cpp. Private to queues/.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/timespan.hpp>

#include "quern/detail/starvation.hpp"
#include "quern/interfaces.hpp"

namespace quern::detail {

class feeders {
public:
  /// feeder(declared, started, timeout) from `sender`: runners made (+1)
  /// or dropped unstarted (-1); runners started (+1) or ended (-1). The
  /// runners made are counted per sender (null: an anonymous one, a local
  /// runner's), which cannot drop those of another; a sender's count is
  /// forgotten when it goes down (client_down): the relay of a runner of
  /// another process ends when that process is lost. Returns true when this
  /// message ended the last running runner of the queue.
  bool update(const caf::actor_addr& sender, int32_t declared, int32_t started,
              caf::timespan timeout);

  /// Runners were made for the queue and none was ever started.
  bool never_started() const { return declared_ > 0 && !ever_started_; }
  /// No runner is running: none was made, none started, or all ended.
  bool unfed() const { return live_ == 0; }
  /// The shortest starvation_timeout of the queue's runners.
  caf::timespan starvation_timeout() const { return starvation_timeout_; }

  /// `<queue> has N queue runner(s) that were never started: ...`
  caf::error never_started_error(const std::string& queue) const;
  /// `<queue> has no queue runner feeding it: ...`
  caf::error unfed_error(const std::string& queue) const;

  /// starving(limit) from `client`.
  void watch_next(const caf::actor_addr& client, caf::timespan limit);
  /// A dequeue of `client` waits as attempt `id`. Returns its watch limit
  /// if it asked to be watched, max() if it asked not to be diagnosed, and
  /// nothing if it asked nothing (then the queue's own diagnosis applies).
  std::optional<caf::timespan> watching(const caf::actor_addr& client, uint64_t id);
  /// A diagnosis deadline of attempt `id` is due (`watched`: its consumer's
  /// limit; else the runners' starvation_timeout). Returns the error it
  /// fails with, or nothing: it keeps waiting (a watched one, past its
  /// limit while runners feed the queue, fails when the last one ends).
  std::optional<caf::error> due(uint64_t id, bool watched, const std::string& queue);
  /// The overdue attempts (some may have completed since), forgotten.
  std::vector<uint64_t> take_overdue();
  /// `client` went down: its watch, and the runners it declared, are
  /// forgotten.
  void client_down(const caf::actor_addr& client);

private:
  /// The runners made and not dropped, in all (declared_) and by sender.
  int64_t declared_ = 0;
  int64_t declared_anonymously_ = 0;
  std::unordered_map<caf::actor_addr, int64_t> declared_by_;
  bool ever_started_ = false;
  int32_t live_ = 0;
  caf::timespan starvation_timeout_ = caf::timespan::max();
  /// One entry per consumer client (a consumer's call holds one client at a
  /// time): its limit, and its waiting attempt once there is one.
  struct watch {
    caf::timespan limit;
    uint64_t id = 0;
    bool overdue = false;
  };
  std::unordered_map<caf::actor_addr, watch> watches_;
};

} // namespace quern::detail
