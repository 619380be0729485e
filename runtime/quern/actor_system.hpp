#pragma once

// quern::actor_system: a caf::actor_system whose end is bounded (docs/coordination.md,
// At exit). After exit_grace() (2 s) it names what still runs, cancels blocked calls and
// ends quern's actors, where CAF's own would wait forever without a word. Make it in
// main() from a quern::config (quern/messages.hpp), before every handle that uses it:
//   quern::config cfg;
//   quern::actor_system sys{cfg};
// detail::exit_watch is the bookkeeping behind its report.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>

namespace quern {

/// A caf::actor_system with quern's exit policy (docs/coordination.md, "At
/// exit"). CAF's own destructor waits, without a bound and without a word,
/// until every actor has ended, so one thread still blocked in dequeue(), a
/// blocking op that never returns, or a handle that outlives the system
/// keeps the program from exiting. This one:
/// 1. waits up to exit_grace() (default 2 s; config `quern.exit-grace`)
///    for every actor to end, as CAF does;
/// 2. then reports by name what is still running (threads blocked in a
///    quern call and for how long, blocking ops inside their run, quern
///    actors still referenced), requests stop of every runner and ends every
///    quern actor of this system: a thread blocked in a call gets
///    CancelledError (`Dequeue operation was cancelled`), as TensorFlow's
///    Session.close() cancels pending ops;
/// 3. waits again, repeating the report every exit_grace() while anything
///    is still running: a blocking op that ignores should_stop() holds the
///    program, and the report names it.
class actor_system : public caf::actor_system {
public:
  explicit actor_system(caf::actor_system_config& cfg);
  ~actor_system() override;

  caf::timespan exit_grace() const noexcept { return grace_; }
  void exit_grace(caf::timespan grace) noexcept { grace_ = grace; }
  /// Where exit reports go (default: std::cerr, one line each).
  void exit_reporter(std::function<void(const std::string&)> f) {
    report_ = std::move(f);
  }

private:
  caf::timespan grace_;
  std::function<void(const std::string&)> report_;
};

namespace detail {

/// quern's actors and blocking calls, per actor system, for the exit
/// policy's report and shutdown. Process-local; cheap to keep up to date.
struct exit_watch {
  /// Tracks a quern actor of `sys` until it ends: `what` names it in
  /// reports ("FIFOQueue 'q'"); `stop` (optional) runs before the actors
  /// are ended at exit (a runner sets its stop flag, so that blocking ops
  /// see should_stop()). `end_at_exit` false: only named, not ended (the
  /// caller actor of a blocking handle ends with its handle).
  static void track(caf::actor_system& sys, const caf::actor& a, std::string what,
                    std::function<void()> stop = {}, bool end_at_exit = true);
  /// How many tracked actors that end at exit are still alive.
  static size_t alive(caf::actor_system& sys);
  /// Renames a tracked actor (a runner learns its queue's name late).
  static void rename(const caf::actor_addr& a, std::string what);
  /// The name a tracked actor was given, or `actor #<id>`.
  static std::string name_of(const caf::actor_addr& a);

  /// Marks the calling thread as blocked in a call to `dest` (`op`: the
  /// request's atom) until the scope ends.
  class blocked_call {
  public:
    blocked_call(caf::actor_system& sys, const caf::actor_addr& dest, caf::atom_value op);
    ~blocked_call();
    blocked_call(const blocked_call&) = delete;
    blocked_call& operator=(const blocked_call&) = delete;
  };

  /// Marks a blocking op's run (in its worker's own thread) until the
  /// scope ends.
  class in_run {
  public:
    in_run(caf::actor_system& sys, std::string worker, uint64_t run);
    ~in_run();
    in_run(const in_run&) = delete;
    in_run& operator=(const in_run&) = delete;
  };

  /// One line per thing of `sys` still busy or alive.
  static std::vector<std::string> report(caf::actor_system& sys);
  /// Runs every tracked actor's stop function, then ends every tracked
  /// actor of `sys` (exit reason user_shutdown).
  static void shut_down(caf::actor_system& sys);
  /// Forgets `sys` (its destructor is done with it).
  static void forget(caf::actor_system& sys);
};

} // namespace detail
} // namespace quern
