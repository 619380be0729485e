#include "quern/error.hpp"

#include <caf/make_message.hpp>
#include <caf/message.hpp>

namespace quern {

const char* error_code_name(error_code c) {
  switch (c) {
  case error_code::cancelled:
    return "Cancelled";
  case error_code::unknown:
    return "Unknown";
  case error_code::invalid_argument:
    return "InvalidArgument";
  case error_code::deadline_exceeded:
    return "DeadlineExceeded";
  case error_code::not_found:
    return "NotFound";
  case error_code::already_exists:
    return "AlreadyExists";
  case error_code::permission_denied:
    return "PermissionDenied";
  case error_code::resource_exhausted:
    return "ResourceExhausted";
  case error_code::failed_precondition:
    return "FailedPrecondition";
  case error_code::aborted:
    return "Aborted";
  case error_code::out_of_range:
    return "OutOfRange";
  case error_code::unimplemented:
    return "Unimplemented";
  case error_code::internal:
    return "Internal";
  case error_code::unavailable:
    return "Unavailable";
  case error_code::data_loss:
    return "DataLoss";
  case error_code::unauthenticated:
    return "Unauthenticated";
  }
  return "Invalid";
}

caf::error make_error(error_code code, std::string message) {
  return caf::error(static_cast<uint8_t>(code), error_category,
                    caf::make_message(std::move(message)));
}

error_code code_of(const caf::error& e) {
  if (!e || e.category() != error_category)
    return error_code::unknown;
  return static_cast<error_code>(e.code());
}

bool is(const caf::error& e, error_code c) {
  return e && e.category() == error_category && e.code() == static_cast<uint8_t>(c);
}

namespace {

// A quern error's context: (message) or (message, error_detail).
const error_detail* detail_of(const caf::error& e) {
  if (!e || e.category() != error_category)
    return nullptr;
  const auto& ctx = e.context();
  if (ctx.size() == 2 && ctx.match_element<error_detail>(1))
    return &ctx.get_as<error_detail>(1);
  return nullptr;
}

caf::error make_error(error_code code, std::string message, error_detail detail) {
  return caf::error(static_cast<uint8_t>(code), error_category,
                    caf::make_message(std::move(message), std::move(detail)));
}

} // namespace

std::string origin_of(const caf::error& e) {
  auto d = detail_of(e);
  return d ? d->origin : std::string{};
}

std::exception_ptr original_exception(const caf::error& e) {
  auto d = detail_of(e);
  return d ? d->original : nullptr;
}

namespace {

// `e` made again with its code, and with its message and detail as
// `change(message, detail)` leaves them; other errors (not of quern's
// category) as they are.
template <class F>
caf::error remade(caf::error e, F change) {
  if (!e || e.category() != error_category)
    return e;
  error_detail d;
  if (auto old = detail_of(e))
    d = *old;
  auto message = message_of(e);
  change(message, d);
  return make_error(code_of(e), std::move(message), std::move(d));
}

// `e` with the origin `origin_for(its origin)` (empty when it has none); its
// code, message and the rest of its detail kept.
template <class F>
caf::error reorigined(caf::error e, F origin_for) {
  return remade(std::move(e),
                [&](std::string&, error_detail& d) { d.origin = origin_for(d.origin); });
}

} // namespace

caf::error with_origin(caf::error e, const std::string& origin) {
  if (origin.empty() || !origin_of(e).empty())
    return e;
  return reorigined(std::move(e), [&](const std::string&) { return origin; });
}

caf::error with_message(caf::error e, std::string message) {
  return remade(std::move(e), [&](std::string& m, error_detail& d) {
    m = std::move(message);
    d.original = nullptr; // the exception says the old message
  });
}

std::string placed_at(const std::string& name, const std::string& where) {
  if (where.empty() || name.find('@') != std::string::npos)
    return name;
  return name + "@" + where;
}

caf::error with_origin_at(caf::error e, const std::string& where) {
  if (where.empty())
    return e;
  return reorigined(std::move(e), [&](const std::string& old) {
    return old.empty() ? where : placed_at(old, where);
  });
}

std::string message_of(const caf::error& e) {
  if (!e)
    return {};
  if (e.category() == error_category) {
    const auto& ctx = e.context();
    if (ctx.size() >= 1 && ctx.match_element<std::string>(0))
      return ctx.get_as<std::string>(0);
    return error_code_name(static_cast<error_code>(e.code()));
  }
  return caf::to_string(e);
}

std::string render(const caf::error& e) {
  if (e && e.category() == error_category)
    return std::string(error_code_name(static_cast<error_code>(e.code()))) + ": " +
           message_of(e);
  return message_of(e);
}

op_error::op_error(error_code code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

caf::error op_error::to_error() const {
  if (origin_.empty())
    return make_error(code_, what());
  error_detail d;
  d.origin = origin_;
  return make_error(code_, what(), std::move(d));
}

namespace {

template <class Error>
[[noreturn]] void throw_with_origin(const std::string& msg, std::string origin) {
  Error ex{msg};
  ex.set_origin(std::move(origin));
  throw ex;
}

} // namespace

void throw_error(const caf::error& e) {
  if (auto ep = original_exception(e))
    std::rethrow_exception(ep);
  auto msg = message_of(e);
  if (e.category() != error_category) {
    if (e.category() == caf::atom("system"))
      throw unavailable_error(msg);
    throw_with_origin<unknown_error>(msg, origin_of(e));
  }
  switch (static_cast<error_code>(e.code())) {
  case error_code::cancelled:
    throw_with_origin<cancelled_error>(msg, origin_of(e));
  case error_code::invalid_argument:
    throw_with_origin<invalid_argument_error>(msg, origin_of(e));
  case error_code::deadline_exceeded:
    throw_with_origin<deadline_exceeded_error>(msg, origin_of(e));
  case error_code::not_found:
    throw_with_origin<not_found_error>(msg, origin_of(e));
  case error_code::already_exists:
    throw_with_origin<already_exists_error>(msg, origin_of(e));
  case error_code::permission_denied:
    throw_with_origin<permission_denied_error>(msg, origin_of(e));
  case error_code::resource_exhausted:
    throw_with_origin<resource_exhausted_error>(msg, origin_of(e));
  case error_code::failed_precondition:
    throw_with_origin<failed_precondition_error>(msg, origin_of(e));
  case error_code::aborted:
    throw_with_origin<aborted_error>(msg, origin_of(e));
  case error_code::out_of_range:
    throw_with_origin<out_of_range_error>(msg, origin_of(e));
  case error_code::unimplemented:
    throw_with_origin<unimplemented_error>(msg, origin_of(e));
  case error_code::internal:
    throw_with_origin<internal_error>(msg, origin_of(e));
  case error_code::unavailable:
    throw_with_origin<unavailable_error>(msg, origin_of(e));
  case error_code::data_loss:
    throw_with_origin<data_loss_error>(msg, origin_of(e));
  case error_code::unauthenticated:
    throw_with_origin<unauthenticated_error>(msg, origin_of(e));
  case error_code::unknown:
    break;
  }
  throw_with_origin<unknown_error>(msg, origin_of(e));
}

caf::error error_from_exception(std::exception_ptr ep) {
  error_detail d;
  d.original = ep;
  try {
    std::rethrow_exception(ep);
  } catch (const op_error& e) {
    d.origin = e.origin();
    return make_error(e.code(), e.what(), std::move(d));
  } catch (const argument_error& e) {
    return make_error(error_code::invalid_argument, e.what(), std::move(d));
  } catch (const std::exception& e) {
    return make_error(error_code::unknown, e.what(), std::move(d));
  } catch (...) {
    return make_error(error_code::unknown, "unknown exception (not a std::exception)",
                      std::move(d));
  }
}

} // namespace quern

namespace quern {

caf::error keep_exception_message(caf::scheduled_actor*, std::exception_ptr& ep) {
  return error_from_exception(ep);
}

} // namespace quern
