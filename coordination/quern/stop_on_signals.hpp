#pragma once

// stop_on_signals: Ctrl-C (SIGINT) and SIGTERM as a request to stop, for
// programs run from a terminal or a job scheduler. A TensorFlow 1.x training
// loop relied on KeyboardInterrupt reaching `finally: coord.request_stop();
// coord.join(threads)`; quern's equivalent is one object beside the
// coordinator:
//   quern::coordinator coord{sys};
//   quern::stop_on_signals interrupt{coord};   // until it goes out of scope
//   while (!coord.should_stop()) train(consumer.dequeue());
//   coord.join(threads);                       // runners stopped, writers closed
//   return interrupt.received() ? 128 + interrupt.received() : 0;
// docs/coordination.md, "Stopping from the terminal".

#include <atomic>
#include <csignal>
#include <thread>
#include <vector>

#include "quern/coordinator.hpp"

namespace quern {

/// While it lives, the first SIGINT or SIGTERM (or the signals given) calls
/// `coord.request_stop()` (a clean stop: join returns normally, the queue
/// runners' cancel ops close their queues, summary writers can be closed),
/// and restores the signal's previous action, so that a second one ends the
/// program as it would have without this object. The handler only writes a
/// byte to a pipe; a thread of this object makes the request. The previous
/// actions are restored at destruction. One at a time per process:
/// constructing a second while one lives throws failed_precondition_error.
class stop_on_signals {
public:
  explicit stop_on_signals(coordinator& coord,
                           std::vector<int> signals = {SIGINT, SIGTERM});
  ~stop_on_signals();
  stop_on_signals(const stop_on_signals&) = delete;
  stop_on_signals& operator=(const stop_on_signals&) = delete;

  /// The signal that requested the stop, or 0 if none came.
  int received() const noexcept;

private:
  coordinator& coord_;
  std::vector<int> signals_;
  std::vector<struct sigaction> previous_;
  std::thread watcher_;
};

} // namespace quern
