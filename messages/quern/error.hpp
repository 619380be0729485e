#pragma once

// quern's errors (docs/semantics.md C-1): TensorFlow's status codes as one CAF error
// category. Between actors a failure is a caf::error (make_error, code_of, message_of,
// origin_of); blocking handles throw it as the op_error subclass named after TensorFlow's
// error, and a mistake in the set-up is an argument_error (Python's ValueError):
//   try { row = q.dequeue(); } catch (const quern::out_of_range_error&) { /* drained */ }
// throw_error() and error_from_exception() convert between the two forms, keeping the
// exception object itself within one process.

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>

namespace quern {

/// TensorFlow's status codes (docs/semantics.md C-1), with the same numbers, as one
/// CAF error category. Every quern failure is a caf::error of this category
/// whose context carries a readable message, e.g.
/// `FIFOQueue 'q' is closed and has insufficient elements (requested 1, current size 0)`.
enum class error_code : uint8_t {
  cancelled = 1,
  unknown = 2,
  invalid_argument = 3,
  deadline_exceeded = 4,
  not_found = 5,
  already_exists = 6,
  permission_denied = 7,
  resource_exhausted = 8,
  failed_precondition = 9,
  aborted = 10,
  out_of_range = 11,
  unimplemented = 12,
  internal = 13,
  unavailable = 14,
  data_loss = 15,
  unauthenticated = 16,
};

/// The CAF error category of quern's errors.
constexpr caf::atom_value error_category = caf::atom("quern");

/// TensorFlow's upper-camel name: "OutOfRange", "Cancelled", ...
const char* error_code_name(error_code c);

/// A quern error: category quern, the code, and `message` as context.
caf::error make_error(error_code code, std::string message);

/// The code of a quern error; error_code::unknown for other categories.
error_code code_of(const caf::error& e);

/// Whether `e` is a quern error with code `c`.
bool is(const caf::error& e, error_code c);

/// The readable message of a quern error (its context string); for errors of
/// other categories a rendering of category and code.
std::string message_of(const caf::error& e);

/// `OutOfRange: <message>` -- used by the error renderer registered with CAF.
std::string render(const caf::error& e);

/// What a quern error carries beside its message: where it was raised (a
/// runner's op, `reader/op1`; empty when unknown) and, inside one process,
/// the exception object it was made from, so that whoever rethrows it
/// (coordinator::join, raise_requested_exception, a blocking handle) throws
/// that very object, as TensorFlow's coordinator re-raises the original
/// exception. Only `origin` crosses a process boundary (an exception object
/// cannot); the receiving side rethrows the op_error of the code.
struct error_detail {
  std::string origin;
  std::exception_ptr original;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, error_detail& x) {
    return f(caf::meta::type_name("quern::error_detail"), x.origin);
  }
};

/// The origin of `e` (empty when it has none).
std::string origin_of(const caf::error& e);
/// `e` with `origin` recorded, unless it already names one; other errors
/// (not of quern's category) are returned as they are.
caf::error with_origin(caf::error e, const std::string& origin);
/// `name@where`: a name placed in the process at `where` (`reader-3@127.0.0.1:41237`);
/// `name` as it is when `where` is empty or it already names a place.
std::string placed_at(const std::string& name, const std::string& where);
/// `e` with its origin placed at `where` (placed_at), or `where` as its origin
/// when it has none: the error of another process names that process. Other
/// errors (not of quern's category) are returned as they are.
caf::error with_origin_at(caf::error e, const std::string& where);
/// `e` with `message` instead of its own, its code and origin kept (not the
/// exception object it was made from, which says the old message). Other
/// errors (not of quern's category) are returned as they are.
caf::error with_message(caf::error e, std::string message);
/// The exception object `e` was made from (null when it was not, or when it
/// came from another process).
std::exception_ptr original_exception(const caf::error& e);

/// Exceptions thrown by blocking handles and validation functions; named
/// after TensorFlow's `tf.errors.*Error` classes.
class op_error : public std::runtime_error {
public:
  op_error(error_code code, const std::string& message);
  error_code code() const noexcept { return code_; }
  /// Where the error was raised, when known (error_detail::origin).
  const std::string& origin() const noexcept { return origin_; }
  void set_origin(std::string origin) { origin_ = std::move(origin); }
  /// The same error as a caf::error.
  caf::error to_error() const;

private:
  error_code code_;
  std::string origin_;
};

#define QUERN_DECLARE_OP_ERROR(cls, code_value)                                          \
  class cls : public op_error {                                                          \
  public:                                                                                \
    explicit cls(const std::string& message)                                             \
        : op_error(error_code::code_value, message) {}                                   \
  };

QUERN_DECLARE_OP_ERROR(cancelled_error, cancelled)
QUERN_DECLARE_OP_ERROR(unknown_error, unknown)
QUERN_DECLARE_OP_ERROR(invalid_argument_error, invalid_argument)
QUERN_DECLARE_OP_ERROR(deadline_exceeded_error, deadline_exceeded)
QUERN_DECLARE_OP_ERROR(not_found_error, not_found)
QUERN_DECLARE_OP_ERROR(already_exists_error, already_exists)
QUERN_DECLARE_OP_ERROR(permission_denied_error, permission_denied)
QUERN_DECLARE_OP_ERROR(resource_exhausted_error, resource_exhausted)
QUERN_DECLARE_OP_ERROR(failed_precondition_error, failed_precondition)
QUERN_DECLARE_OP_ERROR(aborted_error, aborted)
QUERN_DECLARE_OP_ERROR(out_of_range_error, out_of_range)
QUERN_DECLARE_OP_ERROR(unimplemented_error, unimplemented)
QUERN_DECLARE_OP_ERROR(internal_error, internal)
QUERN_DECLARE_OP_ERROR(unavailable_error, unavailable)
QUERN_DECLARE_OP_ERROR(data_loss_error, data_loss)
QUERN_DECLARE_OP_ERROR(unauthenticated_error, unauthenticated)

#undef QUERN_DECLARE_OP_ERROR

/// A mistake in how something is built, found before anything runs: what
/// TensorFlow raises as Python's ValueError or TypeError while a graph is
/// built (`capacity 10 must be bigger than min_after_dequeue 20.`,
/// `Must provide queue and enqueue_ops.`), with TensorFlow's text. The errors
/// of running operations are op_errors (InvalidArgumentError and its
/// siblings); this one is not an op_error, so that a program can tell a bug in
/// its set-up from a failed op. quern's own construction checks (a reader's
/// window, a handle on an invalid actor) throw it too.
class argument_error : public std::invalid_argument {
public:
  /// Python's class for the same mistake.
  enum class python_kind { value_error, type_error };
  explicit argument_error(const std::string& message,
                          python_kind kind = python_kind::value_error)
      : std::invalid_argument(message), kind_(kind) {}
  python_kind kind() const noexcept { return kind_; }
  /// "ValueError" or "TypeError".
  const char* python_name() const noexcept {
    return kind_ == python_kind::type_error ? "TypeError" : "ValueError";
  }

private:
  python_kind kind_;
};

/// Rethrows the exception object `e` was made from, when it carries one
/// (error_from_exception); otherwise throws the op_error subclass that matches
/// `e`, with its origin. Errors of other categories (e.g. a CAF error such as
/// an unreachable actor) become unavailable_error or unknown_error with CAF's
/// rendering as the message.
[[noreturn]] void throw_error(const caf::error& e);

/// Converts an exception (any std::exception) into a caf::error that keeps
/// the exception object itself: an op_error keeps its code, anything else
/// becomes error_code::unknown; what() is the message in both cases.
caf::error error_from_exception(std::exception_ptr ep);

} // namespace quern

namespace quern {

/// An exception handler for event-based actors that keeps what() (CAF 0.17's
/// default turns an exception into a bare error): install it with
/// `self->set_exception_handler(quern::keep_exception_message);`.
caf::error keep_exception_message(caf::scheduled_actor*, std::exception_ptr& ep);

} // namespace quern
