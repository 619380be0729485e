// The deterministic mode of reading (docs/resume.md, RS-9): one reader reads
// in order, a few threads of the source's own decode ahead, and batches come
// out in the order they were read, whatever the number of threads.

#include <deque>
#include <exception>
#include <future>
#include <memory>
#include <mutex>

#include "quern/blocking_queue.hpp"
#include "quern/detail/task_threads.hpp"
#include "quern/error.hpp"
#include "quern/input/decode_csv.hpp"
#include "quern/input/readers.hpp"
#include "quern/pipeline.hpp"
#include "quern/state_bytes.hpp"

#include "csv_common.hpp"

namespace quern {

namespace {

/// Lines read and not yet returned, and their decoding under way.
struct chunk {
  packed_values lines;
  std::shared_future<element> decoded;
};

struct ordered_state {
  ordered_state(caf::actor_system& sys, queue_actor q, int64_t skip, int threads)
      : reader{skip}, files{sys, std::move(q)}, pool{"quern.decode", threads},
        depth{static_cast<size_t>(threads) + 1} {}

  text_line_reader reader;
  blocking_queue files;
  std::vector<tensor> defaults;
  csv_source_options opts;
  /// Decodes in the order given; a task blocks on nothing but the CPU.
  detail::task_threads<element> pool;
  const size_t depth;
  /// Guards `ahead` and `end` against a checkpoint's save (which runs while
  /// the runner is paused, between two calls).
  std::mutex mtx;
  std::deque<chunk> ahead;
  /// What ended the reading (out_of_range at the end of the files): thrown
  /// once everything read ahead was returned.
  std::exception_ptr end;

  std::shared_future<element> decode(const packed_values& lines) {
    return pool
        .submit(std::packaged_task<element()>{[this, lines] {
          return element{decode_csv(lines, defaults, opts.field_delim,
                                    opts.use_quote_delim, opts.na_value,
                                    opts.select_cols)};
        }})
        .share();
  }

  /// One call of the source: reads ahead up to `depth` batches, returns the
  /// oldest once decoded.
  element next() {
    std::unique_lock<std::mutex> guard{mtx};
    while (ahead.size() < depth && !end) {
      guard.unlock();
      packed_values lines;
      std::exception_ptr failed;
      try {
        lines = reader.read_values_up_to(files, opts.read_batch);
      } catch (...) {
        failed = std::current_exception();
      }
      guard.lock();
      if (failed) {
        end = failed;
        break;
      }
      ahead.push_back(chunk{lines, decode(lines)});
    }
    if (ahead.empty())
      std::rethrow_exception(end);
    auto decoded = ahead.front().decoded;
    guard.unlock();
    auto batch = decoded.get(); // a decode error is thrown in its turn
    guard.lock();
    ahead.pop_front();
    return batch;
  }

  std::string save() {
    std::lock_guard<std::mutex> guard{mtx};
    state_writer out;
    out.write_u8(1).write_string(reader.serialize_state()).write_u64(ahead.size());
    for (auto& c : ahead) {
      out.write_string(c.lines.text).write_u64(c.lines.ends.size());
      for (auto e : c.lines.ends)
        out.write_u64(e);
    }
    return out.take();
  }

  void restore(const std::string& bytes, const std::string& what) {
    state_reader in{bytes, what};
    auto version = in.read_u8();
    if (version != 1)
      throw data_loss_error(what + ": version " + std::to_string(version) +
                            ", this quern reads version 1");
    auto reader_state = in.read_string();
    auto n = in.read_u64();
    std::deque<packed_values> lines;
    for (uint64_t i = 0; i < n; ++i) {
      packed_values v;
      v.text = in.read_string();
      auto ends = in.read_u64();
      if (ends > in.remaining() / 8)
        throw data_loss_error(what + ": " + std::to_string(ends) +
                              " line ends cannot fit in the bytes left at byte " +
                              std::to_string(in.offset()));
      for (uint64_t k = 0; k < ends; ++k)
        v.ends.push_back(static_cast<size_t>(in.read_u64()));
      try {
        v.check_ends(what);
      } catch (const op_error& e) {
        throw data_loss_error(e.what());
      }
      lines.push_back(std::move(v));
    }
    in.expect_end();
    reader.restore_state(reader_state);
    std::lock_guard<std::mutex> guard{mtx};
    ahead.clear();
    end = nullptr;
    for (auto& v : lines)
      ahead.push_back(chunk{v, decode(v)});
  }
};

} // namespace

example_source ordered_csv_source(caf::actor_system& sys, queue_actor filenames,
                                  std::vector<tensor> record_defaults,
                                  csv_source_options opts, int decode_threads) {
  auto sig = check_csv_source("ordered_csv_source", filenames, record_defaults, opts);
  if (decode_threads < 1)
    throw argument_error("ordered_csv_source: decode_threads must be >= 1, got " +
                         std::to_string(decode_threads));
  auto part =
      "ordered reader of " + checkpoint_name(blocking_queue{sys, filenames}.spec());
  auto st = std::make_shared<ordered_state>(sys, std::move(filenames),
                                            opts.skip_header_lines, decode_threads);
  st->defaults = std::move(record_defaults);
  st->opts = std::move(opts);
  example_source source{example_fn{[st] { return st->next(); }}};
  source.with_signature(std::move(sig));
  std::weak_ptr<ordered_state> weak = st;
  source.with_state(std::make_shared<source_state>(
      source_state{part,
                   [weak, part]() -> std::string {
                     if (auto s = weak.lock())
                       return s->save();
                     throw failed_precondition_error(part + ": the source is gone");
                   },
                   [weak, part](const std::string& bytes) {
                     if (auto s = weak.lock())
                       s->restore(bytes, part);
                     else
                       throw failed_precondition_error(part + ": the source is gone");
                   }}));
  return source;
}

} // namespace quern
