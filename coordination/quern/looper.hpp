#pragma once

// TensorFlow's LooperThread (docs/semantics.md CO-9, docs/coordination.md, LooperThread):
// a body run at fixed intervals, in a thread of its own, until the coordinator stops.
//
//   auto saver = quern::loop(coord, std::chrono::seconds(10), [&] { save(); }, "saver");
//   // keep `saver`: destroying it stops the looper, unless it was detach()ed
//
// quern::loop takes a callable; derive from quern::looper for start_loop(), run_loop()
// and stop_loop(). The body may block; coordinator::join waits for the looper.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/timespan.hpp>

#include "quern/coordinator.hpp"

namespace quern {

/// TensorFlow's LooperThread, subclass form (docs/semantics.md CO-9): derive
/// and override run_loop(), and optionally start_loop() and stop_loop(). All
/// three run in the looper's own thread (a blocking actor), so they may block.
/// An exception leaving any of them ends the looper and is reported to the
/// coordinator with its own type (join rethrows it).
class looper {
public:
  virtual ~looper() = default;
  /// Once, before the first run_loop(), even when stop was requested before
  /// the looper started (TensorFlow calls it first, too).
  virtual void start_loop() {}
  /// At each interval boundary, or back to back without an interval.
  virtual void run_loop() = 0;
  /// Once, after the last run_loop(): when stop was requested, when the
  /// looper's handle stopped it, and also when run_loop() threw (TensorFlow
  /// skips it then). Not called when start_loop() threw.
  virtual void stop_loop() {}
};

/// A started looper (TensorFlow's `LooperThread(...)` followed by `start()`):
/// an actor with its own thread, registered with the coordinator under
/// `name` (push stop and report errors on), so coordinator::join waits for it
/// and names it when it outlives the grace period.
///
/// The loop: start_loop(); then, unless stop was requested, run_loop() at
/// once and again at each interval boundary (start + k * interval, on the
/// steady clock; a run longer than the interval is followed by the runs it
/// missed, back to back, as in TensorFlow), or back to back with no interval
/// (nullopt, or an interval of zero or less); then stop_loop(). Between runs
/// the looper waits in a blocking receive for the coordinator's (stop) with
/// the time left as its timeout, so a stop ends any wait at once; a run in
/// progress is finished first. The looper also ends when its coordinator
/// actor goes down.
///
/// A target exception ends the looper; the coordinator records it (the
/// looper's name as its origin, `origin_of`) and join rethrows the original
/// object. `out_of_range_error` (a clean stop code) stops the coordinator
/// cleanly, as TensorFlow's OutOfRangeError does.
///
/// Owning, like std::jthread: the destructor of a looper_thread that still
/// owns its looper sends it an exit message (user_shutdown, not an error)
/// and returns without waiting; the looper ends after its current run, so a
/// program whose coordinator never stops still ends. Only a run that never
/// returns can delay the actor system's exit. detach() gives TensorFlow's
/// daemon thread instead: the looper runs until the coordinator stops or
/// goes. Movable, not copyable.
class [[nodiscard]] looper_thread {
public:
  /// `target` runs each interval; it must not be empty (invalid_argument_error).
  looper_thread(coordinator& coord, std::optional<caf::timespan> interval,
                std::function<void()> target, std::string name = "looper");
  /// The subclass form; `body` must not be null (invalid_argument_error).
  looper_thread(coordinator& coord, std::optional<caf::timespan> interval,
                std::shared_ptr<looper> body, std::string name = "looper");
  ~looper_thread();
  looper_thread(looper_thread&& other) noexcept;
  looper_thread& operator=(looper_thread&& other) noexcept;
  looper_thread(const looper_thread&) = delete;
  looper_thread& operator=(const looper_thread&) = delete;

  /// The looper's actor; empty after detach() or a move.
  const caf::actor& actor() const noexcept { return actor_; }
  /// The name it was registered with.
  const std::string& name() const noexcept { return name_; }

  /// Waits until the looper's actor has ended. Bounded only by the looper
  /// itself: it ends after the coordinator's stop (or this handle's
  /// destruction) once its current run returns, so a run that never
  /// returns makes join wait forever; coordinator::join with a grace period
  /// is the bounded wait. Does not throw the looper's error (the
  /// coordinator's join does). Call it from a plain thread, not from an
  /// actor's handler. Returns at once after detach().
  void join();

  /// Gives up ownership: the destructor no longer stops the looper, which
  /// then runs until the coordinator stops or goes down (TensorFlow's
  /// daemon thread). coordinator::join still waits for it.
  void detach() noexcept;

private:
  caf::actor_system* sys_;
  caf::actor actor_;
  std::string name_;
};

/// TensorFlow's `LooperThread.loop(coord, timer_interval_secs, target)`:
/// creates and starts a looper that calls `target` every `interval` (back to
/// back with nullopt). Keep the result (or detach() it): destroying it stops
/// the looper.
looper_thread loop(coordinator& coord, std::optional<caf::timespan> interval,
                   std::function<void()> target, std::string name = "looper");

} // namespace quern
