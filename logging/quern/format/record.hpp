#pragma once

// TFRecord framing (docs/semantics.md SW-20..SW-22), shared by event files and
// TFRecord input files: the one encoder (append_record, begin_record and
// end_record) and the one parser (record_reader, read_records).
//   uint64 length (little-endian) | uint32 masked_crc32c(length bytes)
//   | payload | uint32 masked_crc32c(payload)

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/error.hpp>

#include "quern/format/crc32c.hpp"

namespace quern {

/// Header (length + its CRC) and footer (payload CRC) sizes.
constexpr size_t record_header_size = 12;
constexpr size_t record_footer_size = 4;

/// Appends one framed record holding `payload` to `out`.
void append_record(std::string& out, std::string_view payload);

/// The same in two steps, for a payload written in place (the event encoder
/// serialises straight into the file buffer): begin_record grows `out` by a
/// whole record of `size` payload bytes, writes its header and returns where
/// the payload goes; end_record writes the footer once the payload is there.
char* begin_record(std::string& out, size_t size);
void end_record(char* payload, size_t size);

/// Reads framed records one at a time from a file, verifying both CRCs.
/// next() returns none and the payload, or:
///   out_of_range "eof"                 clean end of the file
///   data_loss "truncated record at X"  the file ends inside a record
///   data_loss "corrupted record at X"  a CRC does not match
/// with X as in SW-22 (the offset at which the failing checksummed read
/// started). After an error, next() keeps returning the same error.
class record_reader {
public:
  /// Where a record_reader takes its bytes when they are not a plain file
  /// (input/ reads compressed TFRecord files through one): fills `dst` with
  /// up to `n` bytes and sets `got`, fewer than `n` only at the end of the
  /// data. An error it returns is what next() returns, from then on.
  using byte_source = std::function<caf::error(char* dst, size_t n, size_t& got)>;

  /// Opens `path`; a failure is reported by ok()/open_error() and next().
  /// With `start`, reading begins at that offset of the file (the start of a
  /// record, as offset() said: a reader resumed where it stopped).
  explicit record_reader(const std::string& path, uint64_t start = 0);
  /// Reads the records of what `bytes` gives; offsets count its bytes, from
  /// `start` (the offset of its first byte in the data it is part of). A
  /// payload grows as its bytes arrive, so a damaged length that passes its
  /// CRC costs no more memory than the data that is there.
  explicit record_reader(byte_source bytes, uint64_t start = 0);
  ~record_reader();
  record_reader(const record_reader&) = delete;
  record_reader& operator=(const record_reader&) = delete;

  bool ok() const { return !open_error_; }
  const caf::error& open_error() const { return open_error_; }

  /// The offset of the record the next call to next() reads.
  uint64_t offset() const { return offset_; }

  caf::error next(std::string& payload);

private:
  caf::error next_from_file(std::string& payload);
  caf::error next_from_bytes(std::string& payload);

  std::FILE* file_ = nullptr;
  byte_source bytes_;
  uint64_t offset_ = 0;
  uint64_t known_size_ = 0;
  caf::error open_error_;
  caf::error sticky_;
};

/// Every record of a buffer or a file, with the offset of each, and the error
/// that ended reading (none at a clean end). Records before a damaged one are
/// all kept.
struct record_list {
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  caf::error error;
};

record_list read_records(std::string_view buffer);
record_list read_record_file(const std::string& path);

} // namespace quern
