#include "quern/io_error.hpp"

#include <cerrno>
#include <cstring>

#include "quern/error.hpp"

namespace quern {

namespace {

// TensorFlow's errno -> status code mapping (platform/errors.cc), abridged.
error_code code_for(int err) {
  switch (err) {
  case EINVAL:
  case ENAMETOOLONG:
  case E2BIG:
  case EDESTADDRREQ:
  case EDOM:
  case EFAULT:
  case EILSEQ:
  case ENOPROTOOPT:
  case ENOSTR:
  case ENOTSOCK:
  case ENOTTY:
  case EPROTOTYPE:
  case ESPIPE:
    return error_code::invalid_argument;
  case ETIMEDOUT:
  case ETIME:
    return error_code::deadline_exceeded;
  case ENODEV:
  case ENOENT:
  case ENXIO:
  case ESRCH:
    return error_code::not_found;
  case EEXIST:
  case EADDRNOTAVAIL:
  case EALREADY:
    return error_code::already_exists;
  case EPERM:
  case EACCES:
  case EROFS:
    return error_code::permission_denied;
  case ENOTEMPTY:
  case EPIPE:
  case ENOTDIR:
  case EISDIR:
  case ETXTBSY:
  case EBUSY:
  case EBADF:
    return error_code::failed_precondition;
  case ENOSPC:
  case EDQUOT:
  case EMFILE:
  case EMLINK:
  case ENFILE:
  case ENOBUFS:
  case ENOMEM:
  case EFBIG:
  case EOVERFLOW:
  case ERANGE:
    return error_code::resource_exhausted;
  case EAGAIN:
  case EINTR:
  case EIO:
    return error_code::unavailable;
  case ENOSYS:
  case ENOTSUP:
    return error_code::unimplemented;
  default:
    return error_code::unknown;
  }
}

} // namespace

caf::error io_error(int err, const std::string& what) {
  return make_error(code_for(err), what + ": " + std::strerror(err));
}

} // namespace quern
