// WholeFileReader: one record per file, the whole file (RD-7).

#include "quern/input/readers.hpp"

#include "quern/error.hpp"
#include "reader_files.hpp"

namespace quern {

using namespace detail;

namespace {

class whole_file_source : public record_source {
public:
  explicit whole_file_source(const std::string& file) : file_(file) {}

  bool next(record& out) override {
    if (done_)
      return false;
    file_.read_all(out.value);
    out.key = file_.name();
    done_ = true;
    return true;
  }

  bool exhausted() const override { return done_; }

  /// Its one record is all of it: before it, the start.
  std::optional<uint64_t> offset() const override { return 0; }

private:
  buffered_file file_;
  bool done_ = false;
};

} // namespace

std::unique_ptr<record_source> open_whole_file_source(const std::string& file) {
  return std::make_unique<whole_file_source>(file);
}

whole_file_reader::whole_file_reader()
    : reader(
          "WholeFileReader", "",
          [](const std::string& file) { return open_whole_file_source(file); },
          [](const work_position& at) {
            // A whole file is in progress only before its one record.
            if (at.offset != 0 || at.records != 0)
              throw data_loss_error(at.work +
                                    "; no position inside a whole file: offset " +
                                    std::to_string(at.offset) + ", " +
                                    std::to_string(at.records) + " records");
            return open_whole_file_source(at.work);
          }) {}

} // namespace quern
