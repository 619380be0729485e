// TFRecordReader: the records of a TFRecord file (RD-6), plain or GZIP or
// ZLIB compressed (RD-8). One parser for both: logging's record_reader, over
// the file or over its decompressed bytes.

#include "quern/input/readers.hpp"

#include <unistd.h>

#include "inflating_file.hpp"
#include "quern/error.hpp"
#include "quern/format/record.hpp"
#include "reader_files.hpp"

namespace quern {

using namespace detail;

namespace {

class tf_record_source : public record_source {
public:
  /// From the first record, or from the record at offset `start` (RD-9).
  tf_record_source(const std::string& file, compression kind, size_t input_buffer,
                   size_t output_buffer, uint64_t start = 0)
      : name_(file), kind_(kind) {
    if (kind_ == compression::none) {
      if (start > 0) { // the file must still reach the saved position
        buffered_file f{file};
        f.seek(start);
      }
      reader_ = std::make_unique<record_reader>(file, start);
      if (!reader_->ok())
        throw_error(reader_->open_error());
      return;
    }
    inflater_ = std::make_unique<inflating_file>(file, kind, input_buffer, output_buffer);
    inflater_->seek(start);
    reader_ = std::make_unique<record_reader>(
        [this](char* dst, size_t n, size_t& got) -> caf::error {
          try {
            got = inflater_->read(dst, n);
            return caf::none;
          } catch (const op_error& e) {
            stream_failed_ = true; // its message names the file already
            return e.to_error();
          }
        },
        start);
  }

  std::optional<uint64_t> offset() const override { return reader_->offset(); }

  bool next(record& out) override {
    auto offset = reader_->offset();
    auto err = reader_->next(out.value);
    if (err) {
      if (is(err, error_code::out_of_range))
        return false; // clean end of the file
      if (kind_ != compression::none && !stream_failed_)
        err = with_message(err, name_ + "; " + message_of(err) +
                                    " (an offset in the decompressed " +
                                    compression_name(kind_) + " data)");
      throw_error(err);
    }
    set_key(out.key, name_, static_cast<uint64_t>(offset));
    return true;
  }

private:
  std::string name_;
  compression kind_;
  std::unique_ptr<inflating_file> inflater_;
  std::unique_ptr<record_reader> reader_;
  bool stream_failed_ = false;
};

tf_record_options checked_options(const tf_record_options& o) {
  parse_compression("compression_type", o.compression_type);
  checked_buffer_size("input_buffer_size", o.input_buffer_size);
  checked_buffer_size("output_buffer_size", o.output_buffer_size);
  return o;
}

/// The source of `file`, from the record at `start`.
std::unique_ptr<record_source> open_tf_record(const std::string& file,
                                              const tf_record_options& options,
                                              uint64_t start) {
  auto kind = parse_compression("compression_type", options.compression_type);
  auto input_buffer = checked_buffer_size("input_buffer_size", options.input_buffer_size);
  auto output_buffer =
      checked_buffer_size("output_buffer_size", options.output_buffer_size);
  if (kind == compression::none) // open errors read as every other reader's
    ::close(open_or_throw(file));
  return std::make_unique<tf_record_source>(file, kind, input_buffer, output_buffer,
                                            start);
}

} // namespace

std::unique_ptr<record_source> open_tf_record_source(const std::string& file,
                                                     const tf_record_options& options) {
  return open_tf_record(file, options, 0);
}

tf_record_reader::tf_record_reader(const std::string& compression_type)
    : tf_record_reader(tf_record_options{compression_type}) {}

// The buffer sizes change no record: a state restores across them (RD-9).
tf_record_reader::tf_record_reader(const tf_record_options& options)
    : reader(
          "TFRecordReader",
          "compression_type=\"" + checked_options(options).compression_type + "\"",
          [o = checked_options(options)](const std::string& file) {
            return open_tf_record(file, o, 0);
          },
          [o = checked_options(options)](const work_position& at) {
            return open_tf_record(at.work, o, at.offset);
          }) {}

} // namespace quern
