#pragma once

#include <string>

#include <caf/error.hpp>

namespace quern {

/// A quern error for a failed system call (file and directory I/O of the
/// event files, readers and tools): the code follows TensorFlow's
/// errno mapping (ENOSPC resource_exhausted, EACCES permission_denied,
/// ENOTDIR failed_precondition, ENOENT not_found, ...), the message is
/// `<what>: <strerror(err)>`.
caf::error io_error(int err, const std::string& what);

} // namespace quern
