#pragma once

// A GZIP or ZLIB file read as its decompressed bytes (TF's ZlibInputStream
// over the file, docs/semantics.md RD-8), for the TFRecord and fixed-length
// readers. Private to input/.
//
// Compressed bytes are read input_buffer_size at a time and inflated into an
// output buffer of output_buffer_size, which is filled as far as the data
// goes before any byte of it is handed out: a file whose decompressed size
// fits in that buffer is checked whole (its CRC-32 or Adler-32 included)
// before its first record. Concatenated GZIP members are one stream (as
// gzip(1) and TF read them); after a ZLIB stream nothing may follow. Damage
// is a data_loss_error that names the file and the compressed offset; the
// file ending inside a stream is one too, never a quiet end.

#include <cstdint>
#include <exception>
#include <memory>
#include <string>

#include "reader_files.hpp"

namespace quern::detail {

class inflating_file {
public:
  /// Opens `name` (throws its I/O error, as buffered_file does).
  inflating_file(std::string name, compression kind, size_t input_buffer_size,
                 size_t output_buffer_size);
  ~inflating_file();
  inflating_file(const inflating_file&) = delete;
  inflating_file& operator=(const inflating_file&) = delete;

  const std::string& name() const { return name_; }

  /// Appends up to n decompressed bytes to `out`; returns how many, fewer
  /// than n only at the end of the data. Throws data_loss_error for damaged
  /// or truncated data, the file's I/O error for a failed read; after an
  /// error every call throws it again.
  size_t read(size_t n, std::string& out);
  /// The same into `dst`.
  size_t read(char* dst, size_t n);
  /// Skips up to n decompressed bytes; returns how many were skipped.
  uint64_t skip(uint64_t n);

  /// Decompressed bytes handed out or skipped so far.
  uint64_t offset() const { return consumed_; }
  /// Goes to decompressed byte `target` (from the start: decompresses and
  /// skips what lies before it), to resume reading there. Throws
  /// data_loss_error `<file>; shorter than the saved position: <n>
  /// decompressed bytes, the position is <target>` when the data ends
  /// before, and what reading the data throws.
  void seek(uint64_t target);

private:
  struct state;

  /// Hands out up to n bytes of the output buffer to `take(ptr, k)`,
  /// refilling it as needed; returns how many were handed out.
  template <class Take>
  uint64_t consume(uint64_t n, Take take);
  /// Refills the (consumed) output buffer; false at the end of the data.
  bool fill();
  void inflate_into_buffer();
  void read_input();
  void next_member();
  void inflate_some();
  uint64_t compressed_offset() const;
  [[noreturn]] void fail(const std::string& what);

  std::string name_;
  compression kind_;
  int fd_;
  std::unique_ptr<state> z_;
  size_t in_size_;
  size_t out_size_;
  std::unique_ptr<unsigned char[]> in_;
  std::unique_ptr<unsigned char[]> out_;
  size_t out_pos_ = 0;
  size_t out_end_ = 0;
  uint64_t file_read_ = 0;  // compressed bytes read from the file
  uint64_t consumed_ = 0;   // decompressed bytes handed out or skipped
  bool file_end_ = false;   // the file has no more bytes
  bool stream_end_ = false; // the last inflate ended a stream (or member)
  bool finished_ = false;   // the data ended cleanly
  std::exception_ptr error_;
};

} // namespace quern::detail
