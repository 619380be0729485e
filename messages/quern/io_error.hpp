#pragma once

// io_error(errno, what): the quern error of a failed system call, coded by TensorFlow's
// errno mapping (docs/semantics.md C-1, RD-3), for the file I/O of readers, event files
// and tools; return it as a caf::error or throw it with throw_error().

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
