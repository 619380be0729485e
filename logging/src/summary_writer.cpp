#include "quern/summary/summary_writer.hpp"

#include "quern/actor_system.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_set>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/response_handle.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "quern/error.hpp"
#include "quern/summary/event.hpp"
#include "quern/summary/event_file.hpp"

namespace quern {

namespace {

/// The writer hands its buffer to the OS at the latest at this size.
constexpr size_t max_buffered_bytes = size_t{1} << 20;

/// Scalars per message sent by the blocking handle.
constexpr size_t handle_batch_size = 16384;

/// Batches a blocking handle has sent and not yet seen answered.
constexpr size_t max_batches_in_flight = 2;

/// A blocking handle sends a partial batch when this much time has passed
/// since its last send, so that a slow loop's events are not held back.
constexpr double handle_max_delay = 0.020; // seconds

struct writer_state {
  summary_writer_options opts;
  event_file_writer file;
  /// The log directory could not be created: answered to every request.
  caf::error init_error;
  /// A write failed and no request has been told yet.
  caf::error write_error;
  bool closed = false;
  /// SW-3: starts at "0", so that the first events are flushed at once.
  std::chrono::steady_clock::time_point next_flush{};
  std::unordered_set<std::string> seen_tags;
  uint32_t files = 0;
  std::string last_path;
  /// A writer_tick is on its way (summary_write_delay).
  bool tick_scheduled = false;

  double now() const { return opts.clock ? opts.clock() : wall_time_now(); }

  static inline const char* name = "quern.summary_writer";

  ~writer_state() {
    file.close(opts.sync); // errors have nowhere to go here
  }

  void init() {
    init_error = create_log_directory(opts.logdir);
    if (!init_error && !opts.filename_suffix.empty())
      keep(open_file(now())); // SW-11: a suffix creates the file at once
  }

  /// `wall`: the file's time (its name's seconds and first record), the
  /// time of the event that opens it, so that a given clock gives the same
  /// file whichever thread reads it first.
  caf::error open_file(double wall) {
    if (file.is_open())
      return caf::none;
    if (auto err = file.create(opts.logdir, opts.filename_suffix, opts.sync, wall))
      return err;
    ++files;
    last_path = file.path();
    next_flush = {};
    return caf::none;
  }

  void keep(caf::error err) {
    if (err && !write_error)
      write_error = std::move(err);
  }

  /// Before appending: the error that stops this add, if any.
  caf::error ready(double wall) {
    if (init_error)
      return init_error;
    check_vanished();
    return open_file(wall);
  }

  /// SW-13: when the file was deleted (or replaced) under the writer, the
  /// writer reports it (kept for the next request) and the next events go to
  /// a new file. Returns whether the file had vanished.
  bool check_vanished() {
    if (!file.is_open() || file.still_exists())
      return false;
    auto old = file.path();
    auto held = file.pending_events();
    file.close(false);
    keep(make_error(error_code::unknown, "The events file " + old + " has disappeared (" +
                                             std::to_string(held) +
                                             " events not yet written are lost)."));
    return true;
  }

  /// After appending a message's events: max_queue and flush_secs (SW-3).
  caf::error after_events() {
    if ((opts.max_queue > 0 &&
         file.pending_events() >= static_cast<size_t>(opts.max_queue)) ||
        file.pending_bytes() >= max_buffered_bytes)
      if (auto err = file.write())
        return err;
    auto now = std::chrono::steady_clock::now();
    if (now > next_flush) {
      // flush_secs clamped to [0, 10^9] s: no overflow in the conversion.
      auto secs = std::min(std::max(opts.flush_secs, 0.0), 1e9);
      next_flush = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(secs));
      return file.flush(opts.sync);
    }
    return caf::none;
  }

  /// Takes the pending write error (it is reported once).
  caf::error take_write_error() { return std::exchange(write_error, caf::error{}); }

  writer_status status() const {
    writer_status st;
    st.logdir = opts.logdir;
    st.path = last_path;
    st.events = file.events();
    st.bytes_written = file.bytes_written();
    st.files = files;
    st.closed = closed;
    return st;
  }
};

using writer_pointer = summary_writer_actor::stateful_pointer<writer_state>;

/// The end of an add_*: a request learns of an error now, a one-way message
/// leaves it for the next request.
caf::result<void> finish_add(writer_pointer self, caf::error err) {
  auto& st = self->state;
  if (!err)
    err = self->current_mailbox_element()->mid.is_request() ? st.take_write_error()
                                                            : caf::error{};
  if (!err)
    return caf::unit;
  if (self->current_mailbox_element()->mid.is_request())
    return err;
  st.keep(std::move(err));
  return caf::unit;
}

template <class Events>
caf::result<void> add_events(writer_pointer self, const Events& events) {
  auto& st = self->state;
  if (st.closed) // SW-5: dropped after close()
    return caf::unit;
  auto first = events.begin() == events.end() || events.begin()->wall_time <= 0
                   ? st.now()
                   : events.begin()->wall_time;
  if (auto err = st.ready(first))
    return finish_add(self, std::move(err));
  // An event a reader could not parse is refused, not written: it would hide
  // every later event of the file. The others are written.
  caf::error refused;
  for (auto& ev : events) {
    auto bad = check_strings(ev);
    auto size = encoded_size_bound(ev);
    if (!bad && size > st.opts.max_event_bytes)
      bad = make_error(error_code::invalid_argument,
                       "an event of about " + std::to_string(size) +
                           " bytes exceeds the writer's max_event_bytes (" +
                           std::to_string(st.opts.max_event_bytes) + ")");
    if (bad) {
      if (!refused)
        refused = std::move(bad);
      continue;
    }
    st.file.append(ev);
  }
  auto err = st.after_events();
  if (!err)
    err = std::move(refused);
  // What is held goes to the OS within summary_write_delay even when no
  // further message comes, so a crash of the program loses little.
  if (st.file.pending_events() > 0 && !st.tick_scheduled) {
    st.tick_scheduled = true;
    self->delayed_send(self, summary_write_delay, writer_tick_atom::value);
  }
  return finish_add(self, std::move(err));
}

/// add_summary (SW-7): values with metadata keep it only the first time
/// their tag is seen.
caf::result<void> add_summary(writer_pointer self, std::vector<summary_value> values,
                              int64_t step, double wall_time) {
  auto& st = self->state;
  if (!st.closed) {
    for (auto& v : values) {
      if (!v.has_metadata())
        continue;
      if (!st.seen_tags.insert(v.tag).second) {
        v.plugin_name.clear();
        v.plugin_content.clear();
        v.display_name.clear();
        v.description.clear();
      }
    }
  }
  summary_event ev;
  ev.wall_time = wall_time;
  ev.step = step;
  ev.what = summary_event::summary{std::move(values)};
  return add_events(self, std::array<summary_event, 1>{std::move(ev)});
}

summary_writer_actor::behavior_type summary_writer_impl(writer_pointer self,
                                                        summary_writer_options opts) {
  self->set_exception_handler(keep_exception_message);
  self->state.opts = std::move(opts);
  self->state.init();
  return {
      [=](add_scalars_atom, const std::vector<scalar_event>& batch) -> caf::result<void> {
        return add_events(self, batch);
      },
      [=](add_summary_atom, std::vector<summary_value>& values,
          int64_t step) -> caf::result<void> {
        return add_summary(self, std::move(values), step, self->state.now());
      },
      [=](add_summary_atom, std::vector<summary_value>& values, int64_t step,
          double wall_time) -> caf::result<void> {
        return add_summary(self, std::move(values), step, wall_time);
      },
      [=](add_events_atom, const std::vector<summary_event>& events)
          -> caf::result<void> { return add_events(self, events); },
      [=](writer_flush_atom) -> caf::result<writer_status> {
        auto& st = self->state;
        if (st.init_error)
          return st.init_error;
        st.check_vanished();
        if (auto err = st.take_write_error())
          return err;
        if (auto err = st.file.flush(st.opts.sync))
          return err;
        return st.status();
      },
      [=](close_atom) -> caf::result<void> {
        auto& st = self->state;
        auto err = st.take_write_error();
        auto close_err = st.file.close(st.opts.sync);
        st.closed = true;
        if (err)
          return err;
        if (close_err)
          return close_err;
        return caf::unit;
      },
      [=](writer_reopen_atom) -> caf::result<void> {
        auto& st = self->state;
        if (!st.closed) // SW-5: reopen on an open writer does nothing
          return caf::unit;
        st.closed = false;
        st.init();
        if (st.init_error)
          return st.init_error;
        if (auto err = st.take_write_error())
          return err;
        return caf::unit;
      },
      [=](writer_status_atom) -> writer_status { return self->state.status(); },
      [=](writer_tick_atom) {
        auto& st = self->state;
        st.tick_scheduled = false;
        if (st.file.is_open() && st.file.pending_events() > 0)
          st.keep(st.file.write());
      },
  };
}

} // namespace

summary_writer_actor spawn_summary_writer(caf::actor_system& sys,
                                          summary_writer_options opts) {
  auto what = "summary writer of '" + opts.logdir + "'";
  auto w = sys.spawn<caf::detached>(summary_writer_impl, std::move(opts));
  detail::exit_watch::track(sys, caf::actor_cast<caf::actor>(w), std::move(what));
  return w;
}

// -- blocking handle ----------------------------------------------------------

namespace {

/// The reply to a batch, as the handle's request returned it.
using batch_reply = decltype(std::declval<caf::scoped_actor&>()->request(
    std::declval<const summary_writer_actor&>(), caf::infinite, add_scalars_atom::value,
    std::declval<std::vector<scalar_event>>()));

} // namespace

struct summary_writer::batch_state {
  std::mutex mtx; // one call at a time: the batch and the in-flight reply
  std::vector<scalar_event> batch;
  /// Batches sent and not yet answered, oldest first (at most
  /// max_batches_in_flight).
  std::deque<batch_reply> in_flight;
  double last_send = 0; // wall-clock seconds of the last batch sent
  /// A tick is on its way to the ticker.
  std::atomic<bool> armed{false};
};

namespace {

summary_writer_options options_for(const std::string& logdir) {
  summary_writer_options opts;
  opts.logdir = logdir;
  return opts;
}

// Sends a partial batch that no further call of the handle came for. It
// never waits for the handle's lock (a scheduler thread must not block): a
// busy handle is making a call, and every call sends the batch first or
// comes back to it within 20 ms; the ticker then looks again later.
caf::behavior batch_ticker(caf::event_based_actor* self,
                           std::shared_ptr<summary_writer::batch_state> st,
                           summary_writer_actor writer) {
  return {
      [=](writer_tick_atom) {
        std::unique_lock<std::mutex> lock{st->mtx, std::try_to_lock};
        if (!lock.owns_lock()) {
          self->delayed_send(self, summary_batch_delay, writer_tick_atom::value);
          return;
        }
        st->armed = false;
        if (st->batch.empty())
          return;
        // One-way: the writer keeps an error for the handle's next request.
        st->last_send = st->batch.back().wall_time;
        self->send(writer, add_scalars_atom::value, std::move(st->batch));
        st->batch.clear();
        st->batch.reserve(handle_batch_size);
      },
  };
}

} // namespace

summary_writer::summary_writer(caf::actor_system& sys, summary_writer_options opts)
    : batch_(std::make_shared<batch_state>()), self_(sys), owner_(true),
      clock_(opts.clock) {
  writer_ = spawn_summary_writer(sys, std::move(opts));
  // The writer answers every request, a failed log directory included.
  caf::error err;
  self_->request(writer_, caf::infinite, writer_flush_atom::value)
      .receive([](writer_status&) {}, [&](caf::error& e) { err = std::move(e); });
  if (err) {
    caf::anon_send_exit(writer_, caf::exit_reason::user_shutdown);
    throw_error(err);
  }
  start_ticker();
}

summary_writer::summary_writer(caf::actor_system& sys, const std::string& logdir)
    : summary_writer(sys, options_for(logdir)) {
  // nop
}

summary_writer::summary_writer(caf::actor_system& sys, summary_writer_actor writer)
    : batch_(std::make_shared<batch_state>()), self_(sys), writer_(std::move(writer)),
      owner_(false) {
  start_ticker();
}

void summary_writer::start_ticker() {
  batch_->batch.reserve(handle_batch_size);
  ticker_ = self_->home_system().spawn(batch_ticker, batch_, writer_);
}

summary_writer::~summary_writer() {
  std::lock_guard<std::mutex> guard{batch_->mtx};
  caf::anon_send_exit(ticker_, caf::exit_reason::user_shutdown);
  try {
    send_batch(true);
    await_in_flight();
  } catch (...) {
    // dropped: call close() to see errors
  }
  if (owner_) {
    self_->request(writer_, caf::infinite, close_atom::value)
        .receive([] {}, [](caf::error&) {});
    self_->send_exit(writer_, caf::exit_reason::user_shutdown);
  }
}

void summary_writer::await_in_flight(size_t keep) {
  auto& st = *batch_;
  while (st.in_flight.size() > keep) {
    auto reply = st.in_flight.front();
    st.in_flight.pop_front();
    caf::error err;
    reply.receive([] {}, [&](caf::error& e) { err = std::move(e); });
    if (err)
      throw_error(err); // the later replies are awaited by the next call
  }
}

void summary_writer::send_batch(bool force) {
  auto& st = *batch_;
  if (st.batch.empty())
    return;
  if (!force) {
    // One clock read per scalar: its wall_time, also used here. A clock that
    // went backwards counts as "long ago".
    auto wall = st.batch.back().wall_time;
    if (st.batch.size() < handle_batch_size && wall >= st.last_send &&
        wall - st.last_send < handle_max_delay) {
      // Held back: if no further call comes, the ticker sends it.
      if (st.batch.size() == 1 && !st.armed.exchange(true))
        caf::delayed_anon_send(ticker_, summary_batch_delay, writer_tick_atom::value);
      return;
    }
  }
  // Two batches in flight: the writer finds the next batch waiting when it
  // ends one, instead of idling while this thread wakes up and sends it. A
  // write error reaches this thread up to two batches later.
  await_in_flight(max_batches_in_flight - 1);
  st.last_send = st.batch.back().wall_time;
  st.in_flight.emplace_back(self_->request(writer_, caf::infinite,
                                           add_scalars_atom::value, std::move(st.batch)));
  st.batch.clear();
  st.batch.reserve(handle_batch_size);
}

template <class T, class... Ts>
T summary_writer::call(Ts&&... xs) {
  send_batch(true);
  await_in_flight();
  return blocking_client::receive_answer<T>(self_, writer_, std::forward<Ts>(xs)...);
}

void summary_writer::scalar(const std::string& tag, double value, int64_t step) {
  std::lock_guard<std::mutex> guard{batch_->mtx};
  if (auto err = check_tag(tag)) // at the call, not a batch later
    throw_error(err);
  auto& ev = batch_->batch.emplace_back();
  ev.wall_time = clock_ ? clock_() : wall_time_now(); // SW-6: the time of the call
  ev.step = step;
  ev.tag = tag;
  ev.value = static_cast<float>(value);
  send_batch(false);
}

void summary_writer::histogram(const std::string& tag, const std::vector<double>& values,
                               int64_t step) {
  add_summary({histogram_value(tag, values)}, step);
}

void summary_writer::text(const std::string& tag, const std::string& text, int64_t step) {
  add_summary({text_value(tag, text)}, step);
}

void summary_writer::image(const std::string& tag, const std::string& png, int64_t step) {
  add_summary({png_image_value(tag, png)}, step);
}

void summary_writer::add_session_log(session_status status,
                                     const std::string& checkpoint_path, int64_t step,
                                     const std::string& msg) {
  add_event(session_log_event(status, checkpoint_path, msg, step,
                              clock_ ? clock_() : wall_time_now()));
}

void summary_writer::restarted_at(int64_t step) {
  add_session_log(session_status::start, {}, step);
}

void summary_writer::hparams(const hparam_list& hparams,
                             const std::vector<std::string>& metrics) {
  add_summary(hparams_values(hparams, metrics, clock_ ? clock_() : wall_time_now()), 0);
}

void summary_writer::hparams_end(hparams_status status) {
  add_summary({hparams_end_value(status, clock_ ? clock_() : wall_time_now())}, 0);
}

void summary_writer::add_summary(std::vector<summary_value> values, int64_t step) {
  std::lock_guard<std::mutex> guard{batch_->mtx};
  // Stamped here, at the call (SW-6), with the handle's clock.
  call<void>(add_summary_atom::value, std::move(values), step,
             clock_ ? clock_() : wall_time_now());
}

void summary_writer::add_event(summary_event ev) {
  std::lock_guard<std::mutex> guard{batch_->mtx};
  call<void>(add_events_atom::value, std::vector<summary_event>{std::move(ev)});
}

writer_status summary_writer::flush() {
  std::lock_guard<std::mutex> guard{batch_->mtx};
  return call<writer_status>(writer_flush_atom::value);
}

void summary_writer::close() {
  std::lock_guard<std::mutex> guard{batch_->mtx};
  call<void>(close_atom::value);
}

void summary_writer::reopen() {
  std::lock_guard<std::mutex> guard{batch_->mtx};
  call<void>(writer_reopen_atom::value);
}

writer_status summary_writer::status() {
  std::lock_guard<std::mutex> guard{batch_->mtx};
  return call<writer_status>(writer_status_atom::value);
}

} // namespace quern
