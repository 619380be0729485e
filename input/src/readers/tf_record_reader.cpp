// TFRecordReader: the records of a TFRecord file (RD-6).

#include "quern/input/readers.hpp"

#include <unistd.h>

#include "quern/error.hpp"
#include "quern/format/record.hpp"
#include "reader_files.hpp"

namespace quern {

using namespace detail;

namespace {

class tf_record_source : public record_source {
public:
  explicit tf_record_source(const std::string& file) : name_(file), reader_(file) {
    if (!reader_.ok())
      throw_error(reader_.open_error());
  }

  bool next(record& out) override {
    auto offset = reader_.offset();
    auto err = reader_.next(out.value);
    if (err) {
      if (is(err, error_code::out_of_range))
        return false; // clean end of the file
      throw_error(err);
    }
    set_key(out.key, name_, static_cast<uint64_t>(offset));
    return true;
  }

private:
  std::string name_;
  record_reader reader_;
};

} // namespace

std::unique_ptr<record_source> open_tf_record_source(const std::string& file) {
  // Open once ourselves so that open errors read as every other reader's.
  ::close(open_or_throw(file));
  return std::make_unique<tf_record_source>(file);
}

tf_record_reader::tf_record_reader(const std::string& compression_type)
    : reader([](const std::string& file) { return open_tf_record_source(file); }) {
  check_compression("compression_type", compression_type);
}

} // namespace quern
