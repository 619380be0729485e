// The reader base (TF's ReaderBase): work units from a queue, one record
// source at a time, counts, sticky errors; and records as elements. Each
// reader kind is one file beside this one.

#include "quern/input/readers.hpp"

#include <algorithm>
#include <mutex>

#include "quern/error.hpp"
#include "quern/queue_spec.hpp"
#include "quern/state_bytes.hpp"

namespace quern {

struct reader::impl {
  explicit impl(source_factory f) : open(std::move(f)) {}
  impl(std::string k, std::string o, source_factory f, positioned_source_factory at)
      : open(std::move(f)), kind(std::move(k)), options(std::move(o)),
        open_at(std::move(at)) {}

  source_factory open;
  std::string kind;    // TF's class name; empty for a plain source_factory
  std::string options; // those that change the records (RD-9)
  positioned_source_factory open_at;
  mutable std::mutex mtx;
  std::unique_ptr<record_source> source; // the work unit in progress
  std::string work;                      // its name
  int64_t unit_records = 0;              // records produced from it
  std::exception_ptr error;              // sticky read error of that unit
  int64_t produced = 0;
  std::optional<work_position> last_read; // RD-11
  int64_t started = 0;
  int64_t finished = 0;
  caf::actor_addr validated; // last queue whose spec passed RD-1

  /// Makes the next work unit current. A unit that fails to open is dropped
  /// (its error is thrown) and does not count as started.
  void start_next(const work_source& next_work) {
    auto next = next_work();
    auto opened = open(next); // throws the open error; the unit is dropped
    if (!opened)
      throw internal_error("reader: no record source for work unit '" + next + "'");
    source = std::move(opened);
    work = std::move(next);
    unit_records = 0;
    error = nullptr;
    ++started;
  }

  void finish_work() {
    source.reset();
    work.clear();
    unit_records = 0;
    error = nullptr;
    finished = started;
  }

  /// The state's owner's name: `TextLineReader(skip_header_lines=1)`.
  std::string described() const { return kind + "(" + options + ")"; }

  void check_positionable(const char* call) const {
    if (kind.empty())
      throw unimplemented_error(std::string(call) +
                                ": this reader was made from a source_factory, whose "
                                "record sources cannot be positioned");
  }

  /// The current unit's position (RD-10); nullopt without one.
  std::optional<work_position> position() const {
    if (!source)
      return std::nullopt;
    auto at = source->offset();
    if (!at)
      throw internal_error("reader " + described() + ": the record source of '" + work +
                           "' cannot say where it is");
    return work_position{work, *at, unit_records};
  }

  /// Opens `at` through open_at; throws its errors, changing nothing.
  std::unique_ptr<record_source> reopen(const work_position& at) const {
    auto opened = open_at(at);
    if (!opened)
      throw internal_error("reader: no record source for work unit '" + at.work + "'");
    return opened;
  }

  /// Reads one record of the current unit with `next(source)` (its next or
  /// append_value): true if produced; false at its end (the unit is then
  /// finished). Rethrows a sticky error.
  template <class Next>
  bool read_one_with(Next next) {
    if (error)
      std::rethrow_exception(error);
    bool ok;
    try {
      ok = next(*source);
    } catch (...) {
      error = std::current_exception();
      throw;
    }
    if (!ok) {
      finish_work();
      return false;
    }
    ++produced;
    ++unit_records;
    if (source->exhausted())
      finish_work();
    return true;
  }

  bool read_one(record& out) {
    return read_one_with([&out](record_source& s) { return s.next(out); });
  }

  record read(const work_source& next_work) {
    std::lock_guard<std::mutex> guard{mtx};
    record out;
    for (;;) {
      if (!source)
        start_next(next_work);
      if (read_one(out))
        return out;
    }
  }

  /// RD-2: reads up to n records, each by `take(source)` (true: one was
  /// produced and kept), never starting a new work unit once one was
  /// produced in this call. Returns how many were.
  template <class Take>
  int64_t read_up_to(const work_source& next_work, int64_t n, Take take) {
    if (n < 0)
      throw invalid_argument_error("num_records must be >= 0 not " + std::to_string(n));
    std::lock_guard<std::mutex> guard{mtx};
    int64_t got = 0;
    last_read.reset();
    if (n == 0)
      return got; // as TF: nothing read, nothing dequeued
    for (;;) {
      if (!source) {
        if (got > 0)
          return got; // never cross into a new work unit (RD-2)
        start_next(next_work);
      }
      if (got == n)
        return got;
      // Where this read's records begin (RD-11): kept once one is produced.
      std::optional<work_position> at;
      if (got == 0 && !kind.empty())
        at = position();
      bool ok;
      try {
        ok = read_one_with(take);
      } catch (...) {
        if (got > 0)
          return got; // the unit's error stays sticky for the next call
        throw;
      }
      if (ok && got == 0)
        last_read = std::move(at);
      got += ok ? 1 : 0;
    }
  }
};

namespace {

/// Work units from a blocking queue, validated as TF's ReaderBase does (RD-1).
reader::work_source queue_work(blocking_queue& q, caf::actor_addr& validated) {
  return [&q, &validated]() -> std::string {
    auto addr = q.actor().address();
    if (addr != validated) {
      auto spec = q.spec();
      if (spec.num_components() != 1)
        throw invalid_argument_error("Expected single component queue");
      if (spec.dtypes[0] != dtype::string)
        throw invalid_argument_error("Expected queue with single string component");
      if (spec.shapes_specified() && spec.shapes[0].fully_defined() &&
          spec.shapes[0].num_elements() != 1)
        throw invalid_argument_error("Expected to dequeue a one-element string tensor");
      validated = addr;
    }
    auto e = q.dequeue();
    if (e.size() != 1)
      throw invalid_argument_error("Expected single component queue");
    if (e[0].type() != dtype::string)
      throw invalid_argument_error("Expected queue with single string component");
    if (e[0].num_elements() != 1)
      throw invalid_argument_error("Expected to dequeue a one-element string tensor");
    return e[0].values<std::string>()[0];
  };
}

} // namespace

reader::reader(source_factory open) : impl_(std::make_unique<impl>(std::move(open))) {}

reader::reader(std::string kind, std::string options, source_factory open,
               positioned_source_factory open_at)
    : impl_(std::make_unique<impl>(std::move(kind), std::move(options), std::move(open),
                                   std::move(open_at))) {}

reader::~reader() = default;
reader::reader(reader&&) noexcept = default;
reader& reader::operator=(reader&&) noexcept = default;

record reader::read(blocking_queue& filenames) {
  // validated is only touched under the lock, inside impl::read.
  return impl_->read(queue_work(filenames, impl_->validated));
}

record reader::read(const work_source& next_work) {
  return impl_->read(next_work);
}

std::vector<record> reader::read_up_to(blocking_queue& filenames, int64_t n) {
  return read_up_to(queue_work(filenames, impl_->validated), n);
}

std::vector<record> reader::read_up_to(const work_source& next_work, int64_t n) {
  std::vector<record> out;
  // One allocation instead of a doubling series: each large allocation
  // makes glibc's malloc consolidate every small chunk freed since the
  // last one (the previous call's record strings), under the arena lock.
  out.reserve(static_cast<size_t>(std::clamp<int64_t>(n, 0, 1 << 16)));
  impl_->read_up_to(next_work, n, [&out](record_source& s) {
    record r;
    if (!s.next(r))
      return false;
    out.push_back(std::move(r));
    return true;
  });
  return out;
}

packed_values reader::read_values_up_to(blocking_queue& filenames, int64_t n) {
  return read_values_up_to(queue_work(filenames, impl_->validated), n);
}

packed_values reader::read_values_up_to(const work_source& next_work, int64_t n) {
  packed_values out;
  out.ends.reserve(static_cast<size_t>(std::clamp<int64_t>(n, 0, 1 << 16)));
  impl_->read_up_to(next_work, n, [&out](record_source& s) {
    auto before = out.text.size();
    bool ok;
    try {
      ok = s.append_value(out.text);
    } catch (...) {
      out.text.resize(before); // a value cut short by a read error is no value
      throw;
    }
    if (ok)
      out.ends.push_back(out.text.size());
    else
      out.text.resize(before);
    return ok;
  });
  return out;
}

bool record_source::append_value(std::string& block) {
  record r;
  if (!next(r))
    return false;
  block += r.value;
  return true;
}

int64_t reader::num_records_produced() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return impl_->produced;
}

int64_t reader::num_work_units_completed() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return impl_->finished;
}

void reader::reset() {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->source.reset();
  impl_->work.clear();
  impl_->unit_records = 0;
  impl_->error = nullptr;
  impl_->produced = 0;
  impl_->started = 0;
  impl_->finished = 0;
}

// -- state (RD-9, RD-10) ------------------------------------------------------

namespace {

// The layout of a reader's state (serialize_state), version 1: u32 version,
// string kind, string options, i64 work units completed, i64 records
// produced, u8 whether a unit is in progress, then that unit: string name,
// u64 offset, i64 records produced from it.
constexpr uint32_t reader_state_version = 1;

} // namespace

void detail::write_work_position(state_writer& w, const work_position& at) {
  w.write_string(at.work).write_u64(at.offset).write_i64(at.records);
}

work_position detail::read_work_position(state_reader& r) {
  work_position at;
  at.work = r.read_string();
  at.offset = r.read_u64();
  auto records_at = r.offset();
  at.records = r.read_i64();
  if (at.records < 0)
    r.fail("negative records " + std::to_string(at.records), records_at);
  return at;
}

std::string reader::serialize_state() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->check_positionable("serialize_state");
  state_writer w;
  w.write_u32(reader_state_version);
  w.write_string(impl_->kind).write_string(impl_->options);
  w.write_i64(impl_->finished).write_i64(impl_->produced);
  auto at = impl_->position();
  w.write_u8(at ? 1 : 0);
  if (at)
    detail::write_work_position(w, *at);
  return w.take();
}

void reader::restore_state(std::string_view state) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->check_positionable("restore_state");
  state_reader r{state, "reader state"};
  auto version = r.read_u32();
  if (version != reader_state_version)
    r.fail("format version " + std::to_string(version) + ", this quern reads " +
               std::to_string(reader_state_version),
           0);
  auto kind = r.read_string();
  auto options = r.read_string();
  auto finished = r.read_i64();
  auto produced = r.read_i64();
  auto has_unit_at = r.offset();
  auto has_unit = r.read_u8();
  if (has_unit > 1)
    r.fail("a unit flag of " + std::to_string(has_unit), has_unit_at);
  std::optional<work_position> at;
  if (has_unit == 1)
    at = detail::read_work_position(r);
  r.expect_end();
  if (kind != impl_->kind || options != impl_->options)
    throw invalid_argument_error("cannot restore the state of a " + kind + "(" + options +
                                 ") into a " + impl_->described());
  if (finished < 0 || produced < 0)
    r.fail("negative counts (" + std::to_string(finished) + " work units, " +
               std::to_string(produced) + " records)",
           0);
  // Everything that can fail is done before the reader changes.
  std::unique_ptr<record_source> opened;
  if (at)
    opened = impl_->reopen(*at);
  impl_->source = std::move(opened);
  impl_->work = at ? at->work : std::string();
  impl_->unit_records = at ? at->records : 0;
  impl_->error = nullptr;
  impl_->produced = produced;
  impl_->finished = finished;
  impl_->started = finished + (at ? 1 : 0);
}

std::optional<work_position> reader::current_work() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->check_positionable("current_work");
  return impl_->position();
}

void reader::continue_work(const work_position& position) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->check_positionable("continue_work");
  if (impl_->source)
    throw failed_precondition_error("continue_work: the reader is in the middle of '" +
                                    impl_->work +
                                    "'; it continues one work unit at a time");
  if (position.records < 0)
    throw invalid_argument_error("continue_work: records must be >= 0 not " +
                                 std::to_string(position.records));
  impl_->source = impl_->reopen(position);
  impl_->work = position.work;
  impl_->unit_records = position.records;
  impl_->error = nullptr;
  ++impl_->started;
}

std::optional<work_position> reader::last_read_start() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return impl_->last_read;
}

// -- records as elements ------------------------------------------------------

element record_element(const record& r) {
  return element{tensor::scalar(r.key), tensor::scalar(r.value)};
}

element record_batch(const std::vector<record>& rs) {
  std::vector<std::string> keys, values;
  keys.reserve(rs.size());
  values.reserve(rs.size());
  for (auto& r : rs) {
    keys.push_back(r.key);
    values.push_back(r.value);
  }
  auto n = static_cast<int64_t>(rs.size());
  return element{tensor::from_values(tensor_shape{n}, std::move(keys)),
                 tensor::from_values(tensor_shape{n}, std::move(values))};
}

} // namespace quern
