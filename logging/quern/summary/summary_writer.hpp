#pragma once

// The summary writer: TensorFlow's FileWriter (docs/semantics.md, Summary writing) as a
// CAF actor, and a blocking handle for plain main() code:
//
//   quern::config cfg;
//   caf::actor_system sys{cfg};
//   quern::summary_writer writer{sys, "runs/a"};
//   for (int step = 0; step < 100; ++step)
//     writer.scalar("loss", loss, step);
//   // writer.close() is optional: the destructor closes and stops the actor.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <chrono>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "quern/blocking_client.hpp"
#include "quern/summary.hpp"
#include "quern/summary/values.hpp"

namespace quern {

/// FileWriter's arguments (SW-1) and quern's additions.
struct summary_writer_options {
  /// Created recursively if missing.
  std::string logdir;
  /// Events the writer buffers before handing them to the OS; <= 0: only the
  /// buffer size (1 MiB), flush_secs, flush() and close() write them.
  int32_t max_queue = 10;
  /// After writing events, the file is flushed (and synced) when more than
  /// flush_secs passed since the last flush; the first events of a file are
  /// flushed at once (SW-3). There is no timer, as in TensorFlow.
  double flush_secs = 120;
  /// Appended to the file name; a non-empty suffix creates the file at once,
  /// otherwise the first event does (SW-11).
  std::string filename_suffix;
  /// Flushes also fsync the file (TensorFlow's Flush does). Off: flushes only
  /// hand the data to the OS.
  bool sync = true;
  /// Events that would encode to more bytes are refused with
  /// invalid_argument (the rest are written). libprotobuf cannot encode an
  /// event over 2 GiB at all (it aborts the process), and readers handle huge
  /// records badly.
  size_t max_event_bytes = size_t{1} << 30;
  /// The wall clock, in seconds since the epoch: the wall_time of events and
  /// the seconds in the file name. Empty: the system clock. Set it to write
  /// byte-identical files in tests.
  std::function<double()> clock;
};

/// How long the writer holds events before it hands them to the operating
/// system without being asked (beyond TensorFlow, which has no timer): a
/// program that crashes loses at most this much of what its writer got.
constexpr auto summary_write_delay = std::chrono::milliseconds(500);

/// How long a blocking handle holds a partial batch of scalars when no
/// further call comes. With summary_write_delay: a crash loses at most the
/// last 0.75 s of scalars.
constexpr auto summary_batch_delay = std::chrono::milliseconds(250);

/// Spawns a summary writer. It creates the log directory at once; failures
/// (e.g. `cannot create log directory '<dir>': Not a directory`) are
/// answered to every add_* request, flush and close.
///
/// The writer runs detached (its own thread): flush() syncs the file to disk,
/// which may block far longer than a scheduler thread should be. Write
/// errors go to the requester; one-way add_* messages keep the error for the
/// next request. The actor stops (flushing and closing its file) when it
/// receives an exit message or its last handle goes away.
summary_writer_actor spawn_summary_writer(caf::actor_system& sys,
                                          summary_writer_options opts);

/// A blocking handle for main(): the FileWriter API on top of a summary
/// writer actor (built on caf::scoped_actor, so not for use inside actors).
/// Scalars are batched here and sent in one message per batch (when the
/// batch is full, when 20 ms passed since the last send, before any other
/// call, or, when no further call comes, after summary_batch_delay), with at
/// most two batches in flight; every other call waits for the writer's answers. A failed
/// write is thrown (op_error, quern/error.hpp) by the call that learns of it: the next
/// send, flush() or close(). Any number of threads may share one handle, as TensorFlow's
/// threads share one FileWriter: its calls take turns, so each thread's events keep their
/// order and none is lost. Several handles may also share one writer actor.
class summary_writer {
public:
  /// Spawns a writer owned by this handle; throws op_error when the log
  /// directory cannot be created.
  summary_writer(caf::actor_system& sys, summary_writer_options opts);
  summary_writer(caf::actor_system& sys, const std::string& logdir);

  /// A handle on an existing writer, which it does not own (it neither
  /// closes nor stops it).
  summary_writer(caf::actor_system& sys, summary_writer_actor writer);

  /// Sends what is batched; an owning handle also closes the writer and stops
  /// its actor, so that a program that forgets close() does not hang in
  /// ~actor_system. Errors are dropped here: call close() to see them.
  ~summary_writer();

  summary_writer(const summary_writer&) = delete;
  summary_writer& operator=(const summary_writer&) = delete;

  /// Event{wall_time = now, step, summary{value{tag, simple_value}}}.
  void scalar(const std::string& tag, double value, int64_t step = 0);
  /// A histogram of `values` (histogram_value, values.hpp).
  void histogram(const std::string& tag, const std::vector<double>& values,
                 int64_t step = 0);
  /// A text summary (text_value, values.hpp).
  void text(const std::string& tag, const std::string& text, int64_t step = 0);
  /// An already-encoded PNG image (png_image_value, values.hpp).
  void image(const std::string& tag, const std::string& png, int64_t step = 0);
  /// add_session_log (SW-7): START, STOP or CHECKPOINT (with the checkpoint's
  /// path) at `step`.
  void add_session_log(session_status status, const std::string& checkpoint_path = {},
                       int64_t step = 0, const std::string& msg = {});
  /// A run restored from a checkpoint at `step` goes on from there (SW-46):
  /// SessionLog START at `step`, as TensorFlow's Supervisor wrote it on
  /// restore. TensorBoard and quern-board then drop the points the run's
  /// earlier life wrote at steps >= `step` (TB-2), so its charts do not zigzag.
  /// Call it before the restored run's first summary.
  void restarted_at(int64_t step);

  /// TensorBoard's `hp.hparams(hparams)` (SW-45): the run's hyper-parameters
  /// and, when given, the scalar tags to compare runs by, at step 0:
  ///   writer.hparams({{"batch_size", 32}, {"optimizer", "adam"}}, {"loss"});
  /// Throws invalid_argument_error for an empty, repeated or non-UTF-8 name
  /// or metric, a non-UTF-8 string value or a number that is not finite.
  void hparams(const hparam_list& hparams, const std::vector<std::string>& metrics = {});
  /// The run's end for the hparams plugin (SW-45): its status and time.
  void hparams_end(hparams_status status = hparams_status::success);

  /// add_summary(summary, global_step) (SW-7): values with metadata keep it
  /// only the first time their tag is seen; wall_time = now.
  void add_summary(std::vector<summary_value> values, int64_t step = 0);
  /// add_event(event): written as it is.
  void add_event(summary_event ev);

  /// Everything added so far is in the file (and synced, SW-4).
  writer_status flush();
  /// flush and close the file; later adds are dropped until reopen() (SW-5).
  void close();
  /// A closed writer takes events again, into a new file (SW-5).
  void reopen();
  writer_status status();

  const summary_writer_actor& actor() const { return writer_; }

  /// The batch of scalars, the replies to the batches in flight, and the lock
  /// that makes calls take turns; shared with the ticker that sends a batch
  /// no further call comes for.
  struct batch_state;

private:
  void send_batch(bool force);
  /// Waits for the answers to the batches in flight until `keep` are left;
  /// throws the first error among them.
  void await_in_flight(size_t keep = 0);
  void start_ticker();
  /// Sends what is batched, then one request and its answer (T: void for
  /// none); throws the op_error of an error answer.
  template <class T, class... Ts>
  T call(Ts&&... xs);

  std::shared_ptr<batch_state> batch_;
  caf::scoped_actor self_;
  summary_writer_actor writer_;
  bool owner_;
  std::function<double()> clock_;
  caf::actor ticker_;
};

} // namespace quern
