#pragma once

// What csv_source and ordered_csv_source share (private to input/).

#include <vector>

#include "quern/input/csv_source.hpp"

namespace quern {

/// Checks a CSV source's arguments before anything runs (texts of `who`, of
/// decode_csv and of the reader) and returns its signature: one scalar per
/// column, a batch of examples per call.
example_signature check_csv_source(const char* who, const queue_actor& filenames,
                                   const std::vector<tensor>& record_defaults,
                                   const csv_source_options& opts);

} // namespace quern
