#pragma once

// The coordinator: TensorFlow's tf.train.Coordinator (docs/semantics.md CO-1..CO-8,
// docs/coordination.md) as a CAF actor, spawn_coordinator(), and quern::coordinator, a
// blocking handle for main() code and detached actors:
//
//   quern::coordinator coord{sys};  // owns its actor: ~coordinator requests stop
//   runner.start(sys, coord.actor());  // registers the runner's workers with it
//   while (!coord.should_stop()) { ...train step... }
//   coord.request_stop();
//   coord.join();  // waits for every registered actor; rethrows the first error itself
// Event-based actors send the coordinator_actor the messages of quern/coordination.hpp.

#include <chrono>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>

#include "quern/blocking_client.hpp"
#include "quern/coordination.hpp"
#include "quern/error.hpp"

namespace quern {

/// Tells whether an exception is of a kind (see exception_type<T>()).
using exception_matcher = std::function<bool(const std::exception_ptr&)>;

/// A matcher for exceptions of type T or derived from it.
template <class T>
exception_matcher exception_type() {
  return [](const std::exception_ptr& ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const T&) {
      return true;
    } catch (...) {
      return false;
    }
  };
}

/// Options of a coordinator (CO-1).
struct coordinator_options {
  /// Errors with these codes are a clean stop: request_stop(e) behaves like
  /// request_stop() and join never re-raises them. TensorFlow's default is
  /// {OutOfRange}.
  std::vector<error_code> clean_stop_codes{error_code::out_of_range};
  /// Exceptions of these types are a clean stop too (TensorFlow's
  /// clean_stop_exception_types), e.g. `{quern::exception_type<my_done>()}`.
  /// Checked against the exception object an error was made from, so they
  /// apply to exceptions reported in this process.
  std::vector<exception_matcher> clean_stop_exception_types;
  /// A join that waits this long with no stop requested (TensorFlow would wait
  /// forever, silently) reports the actors it still waits for through
  /// `on_join_warning` once, then keeps waiting as asked. Zero or less: never.
  caf::timespan join_warning_after = std::chrono::seconds(60);
  /// Receives that report; the default prints it to stderr as
  /// `quern: Coordinator.join has waited 60 s with no stop requested for
  /// threads still running: <name> <name> ...`.
  std::function<void(const std::string&)> on_join_warning;
};

/// TensorFlow's default stop_grace_period_secs (120 s).
constexpr caf::timespan default_stop_grace_period = std::chrono::seconds(120);

/// Spawns a coordinator actor (docs/semantics.md, Coordinator). It keeps the stop
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
/// is kept verbatim in both cases. When `e` is the exception being handled
/// (called in its catch block), the error keeps the object itself, so that
/// join rethrows it with its own type; otherwise a given `copy` of it.
caf::error error_from(const std::exception& e, std::exception_ptr copy = nullptr);

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
/// Any number of threads may share one handle (one thread in join() while
/// others call should_stop() or request_stop(), as TensorFlow's threads
/// share one Coordinator). join() and raise_requested_exception() rethrow
/// the very exception object that request_stop(e) was given in this process
/// (same type, same what()), as TensorFlow does.
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
  /// The exception object is kept: join() and raise_requested_exception()
  /// rethrow it with its own type. Called in the catch block of `e`, that is
  /// the very object thrown; otherwise a copy of `e` when E is its dynamic
  /// type (a copy as a base class would lose the rest: then only the code of
  /// an op_error and what() are kept; pass std::current_exception() instead).
  template <class E, class = std::enable_if_t<std::is_base_of<std::exception, E>::value>>
  bool request_stop(const E& e) {
    return request_stop(
        error_from(e, typeid(e) == typeid(E) ? std::make_exception_ptr(e) : nullptr));
  }
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
  /// report_errors), and join it. An empty name becomes the actor's own
  /// name and id, e.g. `quern.queue_runner#17`.
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
  blocking_client client_;
  coordinator_actor actor_;
  bool owning_;
};

} // namespace quern
