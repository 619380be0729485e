#pragma once

// TensorFlow's QUEUE_RUNNERS collection and start_queue_runners (docs/semantics.md QR-10,
// docs/coordination.md), and a consumer that says why its queue is not fed instead of
// hanging (CC-2). Blocking handles, for main() and detached actors:
//
//   quern::pipeline p{sys};
//   p.add_queue_runner(quern::queue_runner{q, {read_op}});
//   p.start_queue_runners(coord);  // forgotten: the consumer fails after 10 s
//   auto batch = p.make_consumer(q).dequeue_many(32);
//
// ~pipeline stops every runner it started.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "quern/blocking_queue.hpp"
#include "quern/checkpoint_file.hpp"
#include "quern/coordination.hpp"
#include "quern/coordinator.hpp"
#include "quern/interfaces.hpp"
#include "quern/pipeline_telemetry.hpp"
#include "quern/queue_runner.hpp"
#include "quern/queue_state.hpp"

namespace quern {

namespace detail {
class consumer_meter; // coordination/src/runner/worker_meter.hpp
} // namespace detail

/// What a consumer does when its dequeue has waited `starvation_timeout`
/// and the pipeline sees why it may never be fed.
enum class starvation_action {
  /// Keep waiting silently (TensorFlow's behaviour).
  ignore,
  /// Print a warning to stderr once per call and keep waiting.
  warn,
  /// Throw failed_precondition_error with the diagnosis.
  fail,
};

struct pipeline_options {
  /// How long a consumer's dequeue waits before it is told why it is not
  /// fed, if nothing feeds its queue; a dequeue still waiting then is told
  /// when the last runner of the queue ends without closing it.
  caf::timespan starvation_timeout = std::chrono::seconds(10);
  /// The queue has queue runners, but none was ever started
  /// (start_queue_runners was forgotten: TensorFlow hangs forever).
  starvation_action when_never_started = starvation_action::fail;
  /// No queue runner feeds the queue (it may still be fed by plain code), or
  /// every runner of the queue has ended without closing it.
  starvation_action when_unfed = starvation_action::warn;

  // -- checkpoints (docs/resume.md) ------------------------------------------------

  /// Where checkpoint() writes `ckpt-<step>.quern` files (created if
  /// missing); empty: checkpoint() is refused.
  std::string checkpoint_dir;
  /// start_queue_runners() first restores the newest checkpoint of
  /// checkpoint_dir that reads (none there: the run starts from the
  /// beginning, restored_step() 0).
  bool restore = false;
  /// The checkpoint files kept: older ones are removed after each write.
  int keep_checkpoints = 3;
  /// Every Nth checkpoint file, the first included, is synced to disk (the
  /// file and its directory) before checkpoint()'s write ends; the others
  /// are renamed into place without waiting for the disk (CK-6). A crash of
  /// the process loses none of them, but a crash of the machine may lose or
  /// damage those written after the last synced one: a restore passes over
  /// a damaged one (restore_latest), and the newest synced file is kept
  /// until a newer one is synced, beside keep_checkpoints. 1 (the default):
  /// every file is synced. More: for checkpoints many times a second on a
  /// disk whose syncs are slow (docs/resume.md, "What a checkpoint costs").
  int sync_checkpoints_every = 1;
  /// checkpoint() returns once the pipeline runs again and writes the file
  /// in the background (the consumer's stall is the snapshot alone); false:
  /// it returns once the file is on disk.
  bool write_checkpoints_in_background = true;
  /// How long snapshot() waits for every runner to pause between runs
  /// before it gives up (nothing is saved then, and the pipeline runs on).
  caf::timespan checkpoint_pause_limit = std::chrono::seconds(10);

  // -- telemetry (docs/input.md, "Where the pipeline waits") -------------------------

  /// Measure where the pipeline's time goes (pipeline::telemetry): each
  /// consumer's dequeues (two clock reads each) and each runner's workers
  /// (a clock read when a worker starts or ends a wait). false: nothing is
  /// measured and telemetry() reports zeros.
  bool telemetry = true;
};

/// What a checkpoint of a pipeline holds (docs/resume.md): the consumer's
/// step, the state of every queue of the pipeline by name (the queue's node
/// name, `shuffle_batch` for `_3_shuffle_batch`, or its shared_name), and the
/// saved state of every checkpoint part by name (a producer's epochs, a
/// reader's position).
struct pipeline_snapshot {
  int64_t step = 0;
  std::map<std::string, queue_state> queues;
  std::map<std::string, std::string> parts;
  /// The sections of the checkpoint members of other processes, by member
  /// name (pipeline::checkpoint_members_of): `queue/<name>` (the bytes of
  /// encode_queue_state) and `part/<name>`, as each member took them.
  std::map<std::string, std::map<std::string, std::string>> members;
  /// The batches that this pipeline's batch readers (make_batch_reader) had
  /// received and not handed out, by their queue's name, oldest first: a
  /// restored pipeline's reader of that queue hands them out first (RS-17).
  std::map<std::string, std::vector<element>> held;
};

class pipeline;

/// A setting of a pipeline's helpers (a capacity, a batch size, a seed), as
/// input's log_pipeline_settings logs it: a number, a text or a flag.
using pipeline_setting = std::variant<double, std::string, bool>;

/// A queue's name in a checkpoint (docs/resume.md): its node name
/// (`shuffle_batch` for the resource `_3_shuffle_batch`, whose counter depends
/// on what the process made before), or its shared_name.
std::string checkpoint_name(const queue_spec& spec);

/// A consumer-side blocking handle (for `main()` or detached actors) on a
/// queue of a pipeline: the calls of blocking_queue, but a dequeue that has
/// waited `starvation_timeout` while no queue runner feeds the queue (or
/// that is still waiting when the last one ends without closing it) warns
/// or fails with a clear message instead of hanging silently. Each call is
/// one request: the queue itself answers it when that happens (nobody
/// polls), and keeps every element. On a remote queue, the
/// diagnosis comes after `starvation_timeout` only.
class consumer {
public:
  element dequeue();
  element dequeue_many(int32_t n);
  element dequeue_up_to(int32_t n);
  int32_t size() { return q_.size(); }
  bool is_closed() { return q_.is_closed(); }
  const queue_actor& actor() const { return q_.actor(); }

  struct state;

private:
  friend class pipeline;

  /// A queue's name in a checkpoint (docs/resume.md): its node name
  /// (`shuffle_batch` for the resource `_3_shuffle_batch`, whose counter depends
  /// on what the process made before), or its shared_name.
  std::string checkpoint_name(const queue_spec& spec);
  consumer(caf::actor_system& sys, queue_actor q, std::shared_ptr<const state> st);
  /// One dequeue, `attempt(self, timeout)`, with the starvation diagnosis.
  template <class F>
  element guarded(F attempt);
  /// guarded(attempt), its wait measured (TL-1).
  template <class F>
  element measured(F attempt, bool batch);
  /// The queue said (or the wait of a remote queue showed) that the dequeue
  /// may never be served: warns, throws or does nothing, as the options say.
  void starving(const std::string& queue_said, bool queue_never_started,
                caf::timespan waited) const;

  blocking_queue q_;
  /// The dequeues: each call leases one actor, which tells the queue to
  /// watch its dequeue and then makes it (the queue knows the dequeue by
  /// its sender).
  blocking_client client_;
  /// The queue is a queue actor of this process (it watches dequeues).
  bool watched_ = false;
  std::shared_ptr<const state> state_;
  std::string queue_name_;
  /// Its dequeues' waits (none: telemetry is off).
  std::shared_ptr<detail::consumer_meter> meter_;
};

/// TensorFlow's QUEUE_RUNNERS collection with add_queue_runner and
/// start_queue_runners (QR-10): collects runners, starts them all under a
/// coordinator, and knows which queue is fed by which runner (for the
/// starvation diagnosis of consumer()). The destructor stops every runner it
/// started, so a program cannot hang at exit.
class pipeline {
public:
  explicit pipeline(caf::actor_system& sys, pipeline_options opts = {});
  ~pipeline();
  pipeline(const pipeline&) = delete;
  pipeline& operator=(const pipeline&) = delete;

  caf::actor_system& system() const noexcept { return sys_; }
  const pipeline_options& options() const noexcept { return opts_; }

  /// QR-10 add_queue_runner.
  void add_queue_runner(queue_runner qr);
  std::vector<queue_runner> queue_runners() const;

  /// QR-10 start_queue_runners: starts every collected runner (QR-4: a
  /// runner still running is skipped) under `coord`, registering each runner
  /// and worker with it, and returns the actors in collection order (each
  /// runner followed by its workers). Prints a warning if the collection is
  /// empty.
  std::vector<caf::actor> start_queue_runners(coordinator& coord);
  std::vector<caf::actor> start_queue_runners(const coordinator_actor& coord);
  /// Without a coordinator: the runners end when the data runs out or when
  /// this pipeline is destroyed.
  std::vector<caf::actor> start_queue_runners();

  /// A consumer of `q` with the starvation diagnosis.
  consumer make_consumer(queue_actor q) const;
  /// A batch_reader of `q` (quern/blocking_queue.hpp: demand for `window`
  /// batches kept granted, the fast way to take batches) whose batches
  /// received and not yet handed out are in this pipeline's checkpoints
  /// (RS-17): a snapshot withdraws its demand and keeps copies of them (the
  /// reader still hands them out), and the reader of `q` that a restored
  /// pipeline makes hands them out first, before anything of the queue. One
  /// made with a batch size or cut those batches do not fit is
  /// invalid_argument_error, and a consumer (make_consumer) of the queue
  /// failed_precondition_error, both naming the queue; the batches wait for
  /// a reader that fits. Threads may share the reader; a snapshot waits for
  /// a pull() of another thread at most options().checkpoint_pause_limit.
  /// No starvation diagnosis on this path.
  batch_reader make_batch_reader(queue_actor q, int32_t batch_size,
                                 batch_cut cut = batch_cut::any_size,
                                 size_t window = 64) const;

  /// Why a dequeue on `q` may never be served (empty when a started runner
  /// is still feeding it); `never_started` tells whether its runners exist
  /// but none was started.
  std::string starvation_diagnosis(const queue_actor& q, bool& never_started) const;

  /// Sends stop to every runner started by this pipeline.
  void stop() const;

  /// The helpers' settings, `<scope>/<setting>` (`shuffle_batch_join/capacity`,
  /// `input_producer/num_epochs`), in the order they were added; a name added
  /// again takes the later value. The input helpers add theirs; add_setting
  /// adds one of your own.
  void add_setting(std::string name, pipeline_setting value);
  std::vector<std::pair<std::string, pipeline_setting>> settings() const;

  // -- telemetry (docs/input.md, "Where the pipeline waits") ---------------------------

  /// Where the pipeline's time went since the previous call (the first:
  /// since the pipeline was made): each consumer's exposed wait, each
  /// runner's and worker's busy / waiting-for-input / waiting-for-room
  /// shares, each queue's fill and rates, and the verdict naming the stage
  /// that limits the pipeline (TL-1..TL-6). Asks each queue for its size
  /// (a bounded wait; blocks its caller: call it from main() or a detached
  /// actor). Cheap to call, but meant for intervals of seconds.
  pipeline_telemetry telemetry();

  // -- checkpoints (docs/resume.md) --------------------------------------------------

  /// Something with state of its own that a checkpoint saves and a restore
  /// puts back (the input helpers add their producers' epoch counters and
  /// their readers' positions): `save` runs while every runner is paused,
  /// `restore` before any runner starts. Names must be unique in a pipeline:
  /// snapshot and restore refuse two of one name (invalid_argument_error).
  /// `combine`, optional, makes one state of several saved ones (the
  /// sections of a checkpoint member taken over by another, RS-13): a part
  /// without it refuses to be combined.
  void add_checkpoint_part(
      std::string name, std::function<std::string()> save,
      std::function<void(const std::string&)> restore,
      std::function<std::string(const std::vector<std::string>&)> combine = {});

  /// A consistent snapshot at the consumer's step `step` (call it between
  /// two dequeues of the pipeline's one consumer thread): every started
  /// runner pauses between runs (an async op's run in progress is abandoned,
  /// what it took goes back; a blocking op finishes its run), every queue's
  /// rows and every part's state are taken, and the runners run again. No
  /// row is on its way between two queues while the runners are paused, so
  /// every row is in exactly one place of the snapshot. Throws
  /// deadline_exceeded_error naming the runners' workers that did not pause
  /// within options().checkpoint_pause_limit (a blocking op that waits inside
  /// its run for input that does not come); nothing is taken then and the
  /// pipeline runs on. Two queues of the same name, or a pause limit that is
  /// not more than 0: invalid_argument_error.
  pipeline_snapshot snapshot(int64_t step);
  /// Puts a snapshot back: before start_queue_runners, into a pipeline built
  /// the same way (the same queues and parts by name; other counts of reader
  /// threads are fine). Every name is checked before anything is restored:
  /// a queue or part of one side missing on the other is an
  /// invalid_argument_error naming it. Then restored_step() is the
  /// snapshot's step.
  void restore(const pipeline_snapshot& s);
  /// The step of the restored snapshot (0 without one).
  int64_t restored_step() const;

  /// snapshot(step) written to options().checkpoint_dir as
  /// `ckpt-<step>.quern`, whole or not at all (docs/resume.md), and returns
  /// its path. The runners run again before the file is encoded; with
  /// write_checkpoints_in_background (the default) it is written while the
  /// consumer goes on, and wait_checkpoint() (or the next checkpoint(), or
  /// ~pipeline) waits until it is on disk. Throws snapshot()'s errors,
  /// invalid_argument_error without a checkpoint_dir or for a negative step,
  /// and the I/O error of this write or of the one before (earlier
  /// checkpoints stay). Threads may share the pipeline: their checkpoints
  /// take turns, each waiting for the file before.
  std::string checkpoint(int64_t step);
  /// Waits until the checkpoint file being written is on disk; throws its
  /// write's error.
  void wait_checkpoint();
  /// Restores the newest checkpoint of options().checkpoint_dir that reads
  /// (a damaged newer one is passed over with a warning naming it and why)
  /// and returns its path; none: nothing is restored. start_queue_runners
  /// calls it with options().restore.
  std::optional<std::string> restore_latest();
  /// The snapshot as a checkpoint file's sections, and back (the sections
  /// `queue/<name>` and `part/<name>`); from_checkpoint throws
  /// data_loss_error naming a section that does not read.
  /// The members' sections are `member/<member>/queue/<name>` and
  /// `member/<member>/part/<name>`.
  static checkpoint_contents to_checkpoint(const pipeline_snapshot& s);
  static pipeline_snapshot from_checkpoint(const checkpoint_contents& c);

  // -- checkpoints across processes (docs/resume.md, "Across processes") ------------

  /// A queue of this process that no runner or consumer of this pipeline
  /// uses (one it serves to other processes), kept in its checkpoint.
  void add_checkpoint_queue(queue_actor q);
  /// Makes this pipeline the checkpoint member `name` (no '/') of the
  /// pipeline of another process that checkpoints with the members of
  /// `coord` (checkpoint_members_of): its snapshot pauses this pipeline's
  /// runners too and takes this pipeline's queues and parts as the member's
  /// sections. Call it before start_queue_runners. The queues of other
  /// processes that its runners and consumers use are left to their own
  /// process's member. With options().restore, start_queue_runners restores
  /// this member's sections of the newest checkpoint of checkpoint_dir (a
  /// directory the checkpointing process writes); a checkpoint that has no
  /// sections of this member restores nothing here, and says so on stderr.
  /// Throws invalid_argument_error for a malformed name (before anything is
  /// restored) and the coordinator's for a name taken, unavailable_error when
  /// it cannot be reached within a minute; the pipeline is no member then.
  ///
  /// `takes_over` restores on another number of processes (RS-13): it is
  /// asked for every other member of the restored checkpoint, and this
  /// member restores the sections of those it answers true for together with
  /// its own: each part's states combined (a part without a combine function
  /// fails the restore, naming it), a queue of theirs only if it held nothing.
  /// Each member of the checkpoint must be started again or taken over by
  /// exactly one member, or what it held is lost or delivered twice.
  void checkpoint_as_member(const coordinator_actor& coord, std::string name,
                            std::function<bool(const std::string&)> takes_over = {});
  /// The members of the restored checkpoint whose sections this member took
  /// over (checkpoint_as_member's `takes_over`).
  std::vector<std::string> taken_over_members() const;
  /// The checkpoint members registered with `coord` take part in every
  /// snapshot of this pipeline: each pauses its runners with this
  /// pipeline's (within options().checkpoint_pause_limit), answers its
  /// sections, and runs again once this pipeline's queues and parts are
  /// taken. A member that does not pause, or is lost, fails the snapshot
  /// naming it, and every runner runs on. The queues of other processes this
  /// pipeline's runners and consumers use are left to their process's member.
  void checkpoint_members_of(const coordinator_actor& coord);
  /// Waits until every one of `names` is a member registered with the
  /// coordinator of checkpoint_members_of; throws deadline_exceeded_error
  /// naming those missing after `limit`.
  void await_checkpoint_members(const std::vector<std::string>& names,
                                caf::timespan limit);
  /// The names of the members of the checkpoint restore() took (none
  /// without one).
  std::vector<std::string> restored_members() const;

private:
  caf::actor_system& sys_;
  pipeline_options opts_;
  std::shared_ptr<consumer::state> state_;
};

} // namespace quern
