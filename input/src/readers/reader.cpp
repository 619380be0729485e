// The reader base (TF's ReaderBase): work units from a queue, one record
// source at a time, counts, sticky errors; and records as elements. Each
// reader kind is one file beside this one.

#include "quern/input/readers.hpp"

#include <algorithm>
#include <mutex>

#include "quern/error.hpp"
#include "quern/queue_spec.hpp"

namespace quern {

struct reader::impl {
  explicit impl(source_factory f) : open(std::move(f)) {}

  source_factory open;
  mutable std::mutex mtx;
  std::unique_ptr<record_source> source; // the work unit in progress
  std::exception_ptr error;              // sticky read error of that unit
  int64_t produced = 0;
  int64_t started = 0;
  int64_t finished = 0;
  caf::actor_addr validated; // last queue whose spec passed RD-1

  /// Makes the next work unit current. A unit that fails to open is dropped
  /// (its error is thrown) and does not count as started.
  void start_next(const work_source& next_work) {
    auto work = next_work();
    auto opened = open(work); // throws the open error; the unit is dropped
    if (!opened)
      throw internal_error("reader: no record source for work unit '" + work + "'");
    source = std::move(opened);
    error = nullptr;
    ++started;
  }

  void finish_work() {
    source.reset();
    error = nullptr;
    finished = started;
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
      bool ok;
      try {
        ok = read_one_with(take);
      } catch (...) {
        if (got > 0)
          return got; // the unit's error stays sticky for the next call
        throw;
      }
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
  impl_->error = nullptr;
  impl_->produced = 0;
  impl_->started = 0;
  impl_->finished = 0;
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
