#include "quern/input/csv_source.hpp"

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "quern/blocking_queue.hpp"
#include "quern/error.hpp"
#include "quern/input/decode_csv.hpp"
#include "quern/input/readers.hpp"
#include "quern/state_bytes.hpp"

#include "csv_common.hpp"
#include "readers/reader_files.hpp"

namespace quern {

namespace {

/// The csv_sources of one filename queue in this process, as a checkpoint
/// sees them (docs/resume.md): their work units in progress, which any of
/// them continues after a restore, so that the number of readers may change.
struct reader_group {
  std::mutex mtx;
  /// The readers of the group's sources (each source's copies share one).
  std::vector<std::weak_ptr<text_line_reader>> readers;
  /// Work units restored and not yet taken by a reader.
  std::deque<work_position> to_continue;
  /// What the group's sources give the batching helper: one for them all.
  std::shared_ptr<const source_state> state;
};

/// The group of a filename queue: one per queue while a source of it lives.
std::shared_ptr<reader_group> group_of(const queue_actor& q) {
  static std::mutex mtx;
  static std::map<caf::actor_addr, std::weak_ptr<reader_group>> groups;
  std::lock_guard<std::mutex> guard{mtx};
  for (auto i = groups.begin(); i != groups.end();)
    i = i->second.expired() ? groups.erase(i) : std::next(i);
  auto& g = groups[q.address()];
  auto strong = g.lock();
  if (!strong) {
    strong = std::make_shared<reader_group>();
    g = strong;
  }
  return strong;
}

std::string encode_work(const std::deque<work_position>& work) {
  state_writer out;
  out.write_u8(1).write_u64(work.size());
  for (auto& w : work)
    detail::write_work_position(out, w);
  return out.take();
}

std::string save_group(reader_group& g) {
  std::vector<work_position> work;
  {
    std::lock_guard<std::mutex> guard{g.mtx};
    for (auto& weak : g.readers)
      if (auto r = weak.lock())
        if (auto w = r->current_work())
          work.push_back(*w);
    work.insert(work.end(), g.to_continue.begin(), g.to_continue.end());
  }
  return encode_work({work.begin(), work.end()});
}

std::deque<work_position> decode_work(const std::string& bytes, const std::string& what) {
  state_reader in{bytes, what};
  auto version = in.read_u8();
  if (version != 1)
    throw data_loss_error(what + ": version " + std::to_string(version) +
                          ", this quern reads version 1");
  auto n = in.read_u64();
  std::deque<work_position> work;
  for (uint64_t i = 0; i < n; ++i)
    work.push_back(detail::read_work_position(in));
  in.expect_end();
  return work;
}

void restore_group(reader_group& g, const std::string& bytes, const std::string& what) {
  auto work = decode_work(bytes, what);
  std::lock_guard<std::mutex> guard{g.mtx};
  g.to_continue = std::move(work);
}

/// The work units of several groups' states as one state (a checkpoint
/// member taking over others' readers, RS-13): they are independent, so
/// any reader may continue any of them.
std::string combine_groups(const std::vector<std::string>& states,
                           const std::string& what) {
  std::deque<work_position> all;
  for (auto& bytes : states) {
    auto work = decode_work(bytes, what);
    all.insert(all.end(), work.begin(), work.end());
  }
  return encode_work(all);
}

} // namespace

example_signature check_csv_source(const char* who, const queue_actor& filenames,
                                   const std::vector<tensor>& record_defaults,
                                   const csv_source_options& opts) {
  if (!filenames)
    throw argument_error(std::string(who) + ": invalid filename queue");
  if (opts.read_batch <= 0)
    throw argument_error(std::string(who) + ": read_batch must be > 0, got " +
                         std::to_string(opts.read_batch));
  // decode_csv of no records checks the defaults and options now, with its own
  // texts, rather than in a worker thread after the pipeline started.
  auto columns =
      decode_csv(tensor::vector<std::string>({}), record_defaults, opts.field_delim,
                 opts.use_quote_delim, opts.na_value, opts.select_cols);
  example_signature sig;
  for (auto& c : columns) {
    sig.dtypes.push_back(c.type());
    sig.shapes.push_back(tensor_shape{});
  }
  sig.enqueue_many = true;
  return sig;
}

example_source csv_source(caf::actor_system& sys, queue_actor filenames,
                          std::vector<tensor> record_defaults, csv_source_options opts) {
  auto sig = check_csv_source("csv_source", filenames, record_defaults, opts);
  struct state {
    state(caf::actor_system& sys, queue_actor q, int64_t skip)
        : reader{std::make_shared<text_line_reader>(skip)}, files{sys, std::move(q)} {}
    std::shared_ptr<text_line_reader> reader;
    blocking_queue files; // shared by the copies' threads, as its calls allow
    std::vector<tensor> defaults;
    csv_source_options opts;
    std::shared_ptr<reader_group> group;
    /// What undoes each thread's last read (with_take_back, asked by that
    /// thread): one slot per thread, since the threads of one source share
    /// this state (num_threads > 1; they take nothing back).
    std::mutex undo_mtx;
    std::map<std::thread::id, std::function<void()>> undo_last;
  };
  auto group = group_of(filenames);
  auto part = "readers of " + checkpoint_name(blocking_queue{sys, filenames}.spec());
  auto st = std::make_shared<state>(sys, std::move(filenames), opts.skip_header_lines);
  st->defaults = std::move(record_defaults);
  st->opts = std::move(opts);
  st->group = group;
  {
    std::lock_guard<std::mutex> guard{group->mtx};
    group->readers.push_back(st->reader);
  }
  example_source source{example_fn{[st]() -> element {
    {
      // A work unit a checkpoint saw in progress goes on before new ones.
      auto& g = *st->group;
      std::lock_guard<std::mutex> guard{g.mtx};
      if (!g.to_continue.empty() && !st->reader->current_work()) {
        st->reader->continue_work(g.to_continue.front());
        g.to_continue.pop_front();
      }
    }
    // What a stop keeps: the reader as it was, so that a read whose rows
    // the queue refuses is taken back (its unit goes on from there, or,
    // when the read started it, waits to be continued by any reader).
    auto before = st->reader->serialize_state();
    auto was_at = st->reader->current_work();
    auto lines = st->reader->read_values_up_to(st->files, st->opts.read_batch);
    auto began = st->reader->last_read_start();
    std::weak_ptr<state> weak = st;
    std::function<void()> undo = [weak, before = std::move(before), was_at, began] {
      auto s = weak.lock();
      if (!s)
        return;
      std::lock_guard<std::mutex> guard{s->group->mtx};
      s->reader->restore_state(before);
      if (began && began != was_at)
        s->group->to_continue.push_front(*began);
    };
    {
      std::lock_guard<std::mutex> guard{st->undo_mtx};
      st->undo_last[std::this_thread::get_id()] = std::move(undo);
    }
    return element{decode_csv(lines, st->defaults, st->opts.field_delim,
                              st->opts.use_quote_delim, st->opts.na_value,
                              st->opts.select_cols)};
  }}};
  source.with_signature(std::move(sig));
  source.with_take_back([weak = std::weak_ptr<state>(st)]() -> std::function<void()> {
    auto s = weak.lock();
    if (!s)
      return nullptr;
    std::lock_guard<std::mutex> guard{s->undo_mtx};
    auto i = s->undo_last.find(std::this_thread::get_id());
    if (i == s->undo_last.end())
      return nullptr;
    auto undo = std::move(i->second);
    s->undo_last.erase(i);
    return undo;
  });
  // One state for every source of the queue, which the batching helper adds
  // to the pipeline once (it holds the group weakly: no cycle).
  std::shared_ptr<const source_state> shared;
  {
    std::lock_guard<std::mutex> guard{group->mtx};
    if (!group->state) {
      std::weak_ptr<reader_group> weak = group;
      group->state = std::make_shared<source_state>(source_state{
          part,
          [weak, part]() -> std::string {
            if (auto g = weak.lock())
              return save_group(*g);
            throw failed_precondition_error(part + ": its csv_sources are gone");
          },
          [weak, part](const std::string& bytes) {
            if (auto g = weak.lock())
              restore_group(*g, bytes, part);
            else
              throw failed_precondition_error(part + ": its csv_sources are gone");
          },
          [part](const std::vector<std::string>& states) {
            return combine_groups(states, part);
          }});
    }
    shared = group->state;
  }
  source.with_state(shared);
  return source;
}

} // namespace quern
