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

std::string message_of(const caf::error& e) {
  if (!e)
    return {};
  if (e.category() == error_category) {
    const auto& ctx = e.context();
    if (ctx.size() == 1 && ctx.match_element<std::string>(0))
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
  return make_error(code_, what());
}

void throw_error(const caf::error& e) {
  auto msg = message_of(e);
  if (e.category() != error_category) {
    if (e.category() == caf::atom("system"))
      throw unavailable_error(msg);
    throw unknown_error(msg);
  }
  switch (static_cast<error_code>(e.code())) {
  case error_code::cancelled:
    throw cancelled_error(msg);
  case error_code::invalid_argument:
    throw invalid_argument_error(msg);
  case error_code::deadline_exceeded:
    throw deadline_exceeded_error(msg);
  case error_code::not_found:
    throw not_found_error(msg);
  case error_code::already_exists:
    throw already_exists_error(msg);
  case error_code::permission_denied:
    throw permission_denied_error(msg);
  case error_code::resource_exhausted:
    throw resource_exhausted_error(msg);
  case error_code::failed_precondition:
    throw failed_precondition_error(msg);
  case error_code::aborted:
    throw aborted_error(msg);
  case error_code::out_of_range:
    throw out_of_range_error(msg);
  case error_code::unimplemented:
    throw unimplemented_error(msg);
  case error_code::internal:
    throw internal_error(msg);
  case error_code::unavailable:
    throw unavailable_error(msg);
  case error_code::data_loss:
    throw data_loss_error(msg);
  case error_code::unauthenticated:
    throw unauthenticated_error(msg);
  case error_code::unknown:
    break;
  }
  throw unknown_error(msg);
}

caf::error error_from_exception(std::exception_ptr ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const op_error& e) {
    return e.to_error();
  } catch (const std::exception& e) {
    return make_error(error_code::unknown, e.what());
  } catch (...) {
    return make_error(error_code::unknown, "unknown exception (not a std::exception)");
  }
}

} // namespace quern

namespace quern {

caf::error keep_exception_message(caf::scheduled_actor*, std::exception_ptr& ep) {
  return error_from_exception(ep);
}

} // namespace quern
