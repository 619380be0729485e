#pragma once

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "quern/coordination.hpp"
#include "quern/error.hpp"

namespace quern {

/// Options of a coordinator (tf-semantics CO-1).
struct coordinator_options {
  /// Errors with these codes are a clean stop: request_stop(e) behaves like
  /// request_stop() and join never re-raises them. TensorFlow's default is
  /// {OutOfRange}.
  std::vector<error_code> clean_stop_codes{error_code::out_of_range};
};

/// TensorFlow's default stop_grace_period_secs (120 s).
constexpr caf::timespan default_stop_grace_period = std::chrono::seconds(120);

/// Spawns a coordinator actor (tf-semantics section 3). It keeps the stop
/// flag and the first non-clean error, monitors every registered actor, pushes
/// (stop) to those that asked for it when stop is requested, treats an
/// error exit of a registered actor as request_stop(reason), and answers join
/// when every joined actor ended, or when stop was requested and the grace
/// period elapsed. Nobody polls: every answer is event-driven.
coordinator_actor spawn_coordinator(caf::actor_system& sys,
                                    coordinator_options opts = {});

/// Thrown by coordinator::join when actors are still alive after the grace
/// period (CO-8 step 6). what() is TensorFlow's text:
/// `Coordinator stopped with threads still running: <name> <name> ...`.
class live_actors_error : public std::runtime_error {
public:
  explicit live_actors_error(std::vector<std::string> names);
  const std::vector<std::string>& names() const noexcept { return names_; }

private:
  std::vector<std::string> names_;
};

/// Converts an exception into the error that request_stop records: an
/// op_error keeps its code, anything else becomes error_code::unknown; what()
/// is kept verbatim in both cases.
caf::error error_from(const std::exception& e);

/// A blocking handle on a coordinator for plain `main()` code (or detached
/// actors): the seed's loop shape
///
///     quern::coordinator coord{sys};
///     try {
///       while (!coord.should_stop()) { ...train step... }
///     } catch (const quern::out_of_range_error&) { ...done... }
///     catch (const std::exception& e) { coord.request_stop(e); }
///     coord.request_stop();
///     coord.join(actors);
///
/// Each call is one request to the coordinator actor, which always answers.
/// The handle made by the first constructor owns its coordinator: its
/// destructor requests stop (so every registered runner cancels its queue and
/// ends) and then terminates the coordinator actor, so a program that forgets
/// request_stop or join still ends.
class coordinator {
public:
  explicit coordinator(caf::actor_system& sys, coordinator_options opts = {});
  /// A non-owning handle on an existing coordinator actor.
  coordinator(caf::actor_system& sys, coordinator_actor existing);
  ~coordinator();
  coordinator(const coordinator&) = delete;
  coordinator& operator=(const coordinator&) = delete;

  const coordinator_actor& actor() const noexcept { return actor_; }
  caf::actor_system& system() const noexcept { return sys_; }

  /// CO-2.
  bool should_stop();

  /// CO-3/CO-4: a clean stop. Returns true if this call set the flag. May be
  /// called any number of times.
  bool request_stop();
  /// CO-3/CO-4: records `e` if it is the first non-clean error reported
  /// before stop. After join completed, a non-clean error is thrown at once
  /// instead (CO-5).
  bool request_stop(const caf::error& e);
  bool request_stop(const std::exception& e);
  bool request_stop(std::exception_ptr ep);

  /// CO-2: waits until stop is requested or `timeout` elapsed; returns the
  /// flag. Without a timeout it waits for the stop request.
  bool wait_for_stop(caf::timespan timeout = caf::timespan::max());
  template <class Rep, class Period>
  bool wait_for_stop(std::chrono::duration<Rep, Period> timeout) {
    return wait_for_stop(std::chrono::duration_cast<caf::timespan>(timeout));
  }

  /// CO-6: clears the flag, the recorded error and the joined flag.
  void clear_stop();

  /// CO-6: throws the recorded error (as the op_error subclass of its code,
  /// with its original message) if there is one; does not clear it.
  void raise_requested_exception();

  /// CO-7: watch `a`: monitor it, push (stop) to it when stop is requested
  /// (if push_stop), treat an error exit as request_stop(reason) (if
  /// report_errors), and join it. An empty name becomes `actor#<id>`.
  void register_actor(const caf::actor& a, std::string name = {}, bool push_stop = true,
                      bool report_errors = true);
  template <class Handle,
            class = std::enable_if_t<!std::is_same<Handle, caf::actor>::value>>
  void register_actor(const Handle& a, std::string name = {}, bool push_stop = true,
                      bool report_errors = true) {
    register_actor(caf::actor_cast<caf::actor>(a), std::move(name), push_stop,
                   report_errors);
  }

  /// CO-8: waits until every registered actor and every actor in `actors` has
  /// ended, or stop was requested and then `stop_grace_period` elapsed. Throws
  /// the first recorded error (its original code and message); else, if
  /// actors are still alive, throws live_actors_error naming each of them
  /// (or only prints the message to stderr if `ignore_live`).
  void join(std::vector<caf::actor> actors = {},
            caf::timespan stop_grace_period = default_stop_grace_period,
            bool ignore_live = false);
  /// Like join(), but returns what join found instead of throwing.
  join_report join_report_of(std::vector<caf::actor> actors = {},
                             caf::timespan stop_grace_period = default_stop_grace_period);

  coordinator_status status();
  bool joined() { return status().joined; }

  /// CO-6 stop_on_exception for plain code: runs `body`; an exception leaving
  /// it is reported with request_stop(exception) and swallowed. Returns
  /// false if `body` threw.
  template <class F>
  bool stop_on_exception(F&& body) {
    try {
      std::forward<F>(body)();
      return true;
    } catch (...) {
      request_stop(std::current_exception());
      return false;
    }
  }

private:
  template <class T, class... Ts>
  T call(Ts&&... xs);

  caf::actor_system& sys_;
  caf::scoped_actor self_;
  coordinator_actor actor_;
  bool owning_;
};

} // namespace quern
