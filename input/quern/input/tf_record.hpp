#pragma once

// TFRecord files with TensorFlow's options (docs/semantics.md RD-6, RD-8):
// tf_record_options (tf.io.TFRecordOptions: the compression and zlib's
// buffer sizes) and tf_record_writer (tf.io.TFRecordWriter), which writes
// plain, ZLIB or GZIP TFRecord files that TensorFlow and quern's
// tf_record_reader read. The framing is logging's (<quern/format/record.hpp>).
//
//   quern::tf_record_writer out{"train.tfrecord.gz", "GZIP"};
//   out.write(serialized_example);
//   out.close();  // throws what a write or close failed with
//
//   quern::tf_record_reader reader{"GZIP"};

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace quern {

/// tf.io.TFRecordOptions, the parts that matter to quern's reader and writer.
struct tf_record_options {
  /// "" (none), "ZLIB" (a zlib stream, RFC 1950) or "GZIP" (RFC 1952).
  std::string compression_type;
  /// Compressed bytes read from the file at a time (reading); uncompressed
  /// bytes gathered before they are compressed (writing). TF's default.
  int64_t input_buffer_size = 256 << 10;
  /// Bytes decompressed at a time (reading; a file that decompresses into
  /// this many bytes is checked whole before its first record); compressed
  /// bytes gathered before a write to the file (writing, at least 8).
  int64_t output_buffer_size = 256 << 10;
  /// Writing: zlib's level, 0 (none) to 9 (best), or -1 (zlib's default, 6).
  int compression_level = -1;
};

/// tf.io.TFRecordWriter: writes one framed record per write() to `path`
/// (created or truncated), compressed as the options say. Throws the file's
/// I/O error (`<path>; <OS reason>`) from the constructor, write(), flush()
/// or close(); after a failure every call throws it again. The destructor
/// closes an open writer but cannot report a failure: call close().
/// Not thread-safe; movable.
class tf_record_writer {
public:
  explicit tf_record_writer(const std::string& path,
                            const tf_record_options& options = {});
  /// The same with only a compression type ("", "ZLIB" or "GZIP").
  tf_record_writer(const std::string& path, const std::string& compression_type);
  ~tf_record_writer();
  tf_record_writer(tf_record_writer&&) noexcept;
  tf_record_writer& operator=(tf_record_writer&&) noexcept;

  const std::string& path() const;

  /// Appends one record. Throws failed_precondition_error after close().
  void write(std::string_view record);
  /// Hands everything written so far to the OS; compressed, through a zlib
  /// sync flush, so that the bytes in the file decompress to every record
  /// written so far. The compressed stream is whole only after close():
  /// quern's reader reports a file that ends inside it as truncated.
  void flush();
  /// Ends the compressed stream, writes what is left and closes the file.
  /// Closing again does nothing.
  void close();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace quern
