// Taking a pipeline's snapshot (docs/resume.md), and its checkpoint: the
// batch readers' demand withdrawn, every runner paused between runs, every
// queue's rows and every part's state taken, the runners run again.

#include <caf/scoped_actor.hpp>

#include "quern/error.hpp"

#include "pipeline_checkpoint.hpp"
#include "pipeline_state.hpp"

namespace quern {

namespace pipeline_ckpt {

namespace {

std::string not_taken(int64_t step, const std::string& why) {
  return "checkpoint at step " + std::to_string(step) + " not taken: " + why +
         "; nothing was saved and the pipeline runs on";
}

void check_pause_limit(caf::timespan limit) {
  if (limit <= caf::timespan::zero())
    throw invalid_argument_error(
        "pipeline_options::checkpoint_pause_limit must be more than 0, not " +
        seconds(limit) + " (how long a checkpoint waits for every runner to pause)");
}

/// Throws deadline_exceeded_error naming the workers and members that did
/// not pause.
[[noreturn]] void not_paused(int64_t step, caf::timespan limit,
                             const std::vector<std::string>& late,
                             const std::vector<std::string>& failed) {
  std::string why;
  if (!late.empty())
    why = "worker(s) " + listed(late) + " did not pause within " + seconds(limit) +
          " (a blocking op waits inside its run for something that does not come, "
          "e.g. a dequeue from an empty queue, or the rows it streamed did not "
          "reach their queue; docs/resume.md)";
  for (auto& f : failed)
    why += (why.empty() ? "" : "; ") + f;
  throw deadline_exceeded_error(not_taken(step, why));
}

} // namespace

} // namespace pipeline_ckpt

using namespace pipeline_ckpt;

pipeline_snapshot pipeline::snapshot(int64_t step) {
  auto limit = opts_.checkpoint_pause_limit;
  check_pause_limit(limit);
  auto queues = queues_of(sys_, *state_);
  auto parts = parts_of(*state_);
  auto runners = running(*state_);
  coordinator_actor coord;
  {
    std::lock_guard<std::mutex> guard{state_->mtx};
    coord = state_->members_of;
  }
  // The batch readers first, while the runners still run: a pull() of
  // another thread ends as rows come. Their withdrawals are answered while
  // the runners pause.
  auto readers = settle_readers(sys_, *state_, limit, [step](const std::string& why) {
    return not_taken(step, why);
  });
  // The members of other processes pause with this pipeline's runners:
  // their requests go out first (RS-12).
  members_pause members{sys_, coord, limit};
  caf::scoped_actor self{sys_};
  auto late = pause_in_order(self, runners, limit);
  // However this ends, the runners run again (and so do the members): told,
  // not waited for, as a later pause reaches each runner after it.
  struct resume_at_exit {
    const runner_groups& runners;
    caf::timespan limit;
    ~resume_at_exit() { resume_all(runners.all(), limit); }
  } resume{runners, limit};
  take_held(readers);
  std::vector<std::string> failed;
  members.await_paused(failed);
  pipeline_snapshot s;
  // Every member is paused: their sections now.
  if (late.empty() && failed.empty())
    members.take_sections(s.members, failed);
  if (!late.empty() || !failed.empty()) {
    members.resume();
    not_paused(step, limit, late, failed);
  }
  s.step = step;
  for (auto& [name, batches] : readers.held)
    if (!batches.empty())
      s.held.emplace(name, std::move(batches));
  s.queues = snapshot_queues(self, queues);
  for (auto& p : parts)
    s.parts.emplace(p.name, p.save());
  // A member that ran again on its own meanwhile fails the snapshot.
  auto ran_on = members.resume();
  if (!ran_on.empty())
    throw deadline_exceeded_error(
        not_taken(step, "member(s) " + joined(ran_on) +
                            " ran again on their own before it was complete (they hold "
                            "a pause at most " +
                            seconds(hold_of(limit)) + ")"));
  return s;
}

std::string pipeline::checkpoint(int64_t step) {
  if (opts_.checkpoint_dir.empty())
    throw invalid_argument_error(
        "pipeline::checkpoint needs pipeline_options::checkpoint_dir");
  if (opts_.keep_checkpoints < 1)
    throw invalid_argument_error("pipeline_options::keep_checkpoints must be >= 1, not " +
                                 std::to_string(opts_.keep_checkpoints));
  if (step < 0)
    throw invalid_argument_error("a checkpoint's step must be >= 0, not " +
                                 std::to_string(step));
  if (opts_.sync_checkpoints_every < 1)
    throw invalid_argument_error(
        "pipeline_options::sync_checkpoints_every must be >= 1, not " +
        std::to_string(opts_.sync_checkpoints_every));
  // One checkpoint at a time, whatever the threads, and one file: the one
  // before is on disk (or its error thrown) before this one is taken.
  std::lock_guard<std::mutex> turn{state_->checkpoint_mtx};
  state_->checkpoint_files.wait();
  auto s = snapshot(step);
  // The rows are copies of immutable buffers: in the background the file is
  // encoded and written while the consumer and the runners go on.
  return state_->checkpoint_files.write(
      {opts_.checkpoint_dir, opts_.keep_checkpoints, opts_.sync_checkpoints_every,
       opts_.write_checkpoints_in_background},
      step, [s = std::move(s)] { return to_checkpoint(s); });
}

} // namespace quern
