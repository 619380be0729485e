// TextLineReader: one record per line (RD-4).

#include "quern/input/readers.hpp"

#include "reader_files.hpp"

namespace quern {

using namespace detail;

namespace {

class text_line_source : public record_source {
public:
  text_line_source(const std::string& file, int64_t skip) : file_(file) {
    std::string line;
    for (; line_ < skip; ++line_) {
      if (!file_.read_line(line)) {
        done_ = true; // fewer lines than the header: no records
        break;
      }
    }
    offset_ = file_.offset();
  }

  /// At `at` (RD-9): its header was skipped, and each record was one line.
  text_line_source(const work_position& at, int64_t skip) : file_(at.work) {
    file_.seek(at.offset);
    offset_ = at.offset;
    line_ = skip + at.records;
  }

  std::optional<uint64_t> offset() const override { return offset_; }

  bool next(record& out) override {
    out.value.clear();
    if (!append_value(out.value))
      return false;
    set_key(out.key, file_.name(), static_cast<uint64_t>(line_));
    return true;
  }

  bool append_value(std::string& block) override {
    if (done_)
      return false;
    if (!file_.append_line(block)) {
      done_ = true;
      return false;
    }
    ++line_;
    offset_ = file_.offset();
    return true;
  }

private:
  buffered_file file_;
  int64_t line_ = 0;
  uint64_t offset_ = 0; // where the next line starts
  bool done_ = false;
};

} // namespace

std::unique_ptr<record_source> open_text_line_source(const std::string& file,
                                                     int64_t skip_header_lines) {
  check_non_negative("skip_header_lines", skip_header_lines);
  return std::make_unique<text_line_source>(file, skip_header_lines);
}

text_line_reader::text_line_reader(int64_t skip_header_lines)
    : reader(
          "TextLineReader", "skip_header_lines=" + std::to_string(skip_header_lines),
          [skip = checked("skip_header_lines", skip_header_lines)](
              const std::string& file) { return open_text_line_source(file, skip); },
          [skip = skip_header_lines](const work_position& at) {
            return std::make_unique<text_line_source>(at, skip);
          }) {}

} // namespace quern
