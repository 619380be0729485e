#pragma once

// What a pipeline's checkpoint (pipeline_checkpoint.cpp) and its members of
// other processes (checkpoint_members.cpp) share; private to coordination/.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "quern/coordination.hpp"

#include "pipeline_state.hpp"
#include "runner/runner_shared.hpp"

namespace quern::pipeline_ckpt {

std::string seconds(caf::timespan t);
/// Whether this pipeline's checkpoint spans processes: it is a member of
/// another's, or it pauses members of other processes. Then the queues of
/// other processes are left to their own process's member.
bool across_processes(const consumer::state& st);
/// A queue's checkpoint name: asked of the queue once, then remembered.
std::string name_of(caf::actor_system& sys, const consumer::state& st,
                    const queue_actor& q);
/// The queues of a pipeline (its runners' and its consumers'), each once,
/// by checkpoint name; a queue of another process is refused (RS-11), or
/// left out across processes.
std::map<std::string, queue_actor> queues_of(caf::actor_system& sys,
                                             const consumer::state& st);
/// The checkpoint parts, each name once.
std::vector<consumer::state::part> parts_of(const consumer::state& st);
/// The workers of the runners started (asking no actor: a worker that ended
/// answers a pause at once, and is not late): those of runners with a
/// blocking op, and the others.
struct runner_groups {
  using workers = std::shared_ptr<const detail::started_workers>;
  std::vector<workers> blocking;
  std::vector<workers> others;
  std::vector<workers> all() const;
};
runner_groups running(const consumer::state& st);
/// Pauses the runners with a blocking op, then, once they paused, the others
/// (RS-18): a blocking run may wait inside for rows that an asynchronous
/// runner brings, and an asynchronous run is abandoned at once when paused.
/// Returns the workers that did not pause within `limit`.
std::vector<std::string> pause_in_order(caf::scoped_actor& self, const runner_groups& r,
                                        caf::timespan limit);
std::vector<std::string> pause_in_order(caf::actor_system& sys, const runner_groups& r,
                                        caf::timespan limit);
/// Pauses the workers of every runner at once (their runners' pause hooks
/// fired first); returns those still in a run after `limit`, each named in
/// quotes and, when it said why, its reason after it in parentheses. A
/// worker that ended meanwhile runs no more. `self` asks (one caller actor
/// serves a whole snapshot).
std::vector<std::string> pause_all(caf::scoped_actor& self,
                                   const std::vector<runner_groups::workers>& runners,
                                   caf::timespan limit);
/// Lets every worker run again (worker_pause, false) without waiting for
/// its answer: the messages a worker gets are handled in the order they
/// came, so a later pause reaches it after this resume.
void resume_all(const std::vector<runner_groups::workers>& runners, caf::timespan limit);
/// Every queue's rows and state (snapshot_atom), asked of all at once;
/// throws the first error a queue answered.
std::map<std::string, queue_state>
snapshot_queues(caf::scoped_actor& self,
                const std::map<std::string, queue_actor>& queues);
std::map<std::string, queue_state>
snapshot_queues(caf::actor_system& sys, const std::map<std::string, queue_actor>& queues);
/// The checkpoint members registered with `coord` (asked within `limit`);
/// throws unavailable_error (or the coordinator's error) naming why not.
std::vector<registration> members_of(caf::actor_system& sys,
                                     const coordinator_actor& coord, caf::timespan limit);
/// `a, b`: entries as they are, e.g. pause_all's late workers, each named
/// in quotes already, with the worker's reason when it gave one.
std::string listed(const std::vector<std::string>& entries);
/// `'a', 'b'`.
std::string joined(const std::vector<std::string>& names);
// -- the batches of batch readers (held_batches.cpp, RS-17) ----------------------

/// The batch readers of make_batch_reader that are still alive.
std::vector<std::pair<queue_actor, std::shared_ptr<detail::pull_stream>>>
live_readers(const consumer::state& st);
/// The batch readers of a snapshot, each locked (no pull of another thread
/// runs) until this is destroyed, with its demand withdrawn: by queue name,
/// and, once take_held() awaited the withdrawals, the batches they held.
struct settled_readers {
  settled_readers() = default;
  settled_readers(settled_readers&&) = default;
  settled_readers& operator=(settled_readers&&) = delete;
  /// A snapshot that ended early still awaits the withdrawals (take_held):
  /// a withdrawal unanswered would be mixed up with the next.
  ~settled_readers();

  std::vector<std::pair<std::string, std::shared_ptr<detail::pull_stream>>> streams;
  std::vector<std::unique_lock<std::timed_mutex>> locks; // unlocked before streams go
  std::map<std::string, std::vector<element>> held;
  bool taken = false; // take_held() ran
};
/// Locks each live batch reader and sends its withdrawal, not waiting for
/// the answers: they come while the runners pause. Throws
/// deadline_exceeded_error, `not_taken(why)`, when a reader's pull() of
/// another thread holds it past `limit`, and failed_precondition_error for
/// a reader of a queue of another process.
settled_readers
settle_readers(caf::actor_system& sys, const consumer::state& st, caf::timespan limit,
               const std::function<std::string(const std::string&)>& not_taken);
/// Awaits the withdrawals' answers: nothing more is on its way to the
/// readers. Then copies the batches each holds (they stay, to be handed
/// out) into `readers.held`.
void take_held(settled_readers& readers);
/// Whether held batches fit a reader of `batch_size` and `cut`: it would
/// have handed out each of them itself.
bool fits(const std::vector<element>& batches, int32_t batch_size, batch_cut cut);
/// Throws failed_precondition_error if a restored snapshot holds batches of
/// a batch reader of `q` that no batch reader took yet: `instead` (`a
/// consumer`) would not hand them out.
void refuse_if_held(caf::actor_system& sys, const consumer::state& st,
                    const queue_actor& q, const std::string& instead);

/// How long a member stays paused at most (see checkpoint_members.cpp).
caf::timespan hold_of(caf::timespan limit);

/// The other members of `whole` that member `me` takes over (its
/// takes_over answered true; RS-13).
std::vector<std::string> taken_over_by(const consumer::state& st,
                                       const pipeline_snapshot& whole,
                                       const std::string& me);
/// The sections member `me` restores: its own, and those of `taken`, each
/// part's states combined and their queues checked empty (RS-13).
std::map<std::string, std::string>
sections_taken_over(const consumer::state& st, const pipeline_snapshot& whole,
                    const std::string& me, const std::vector<std::string>& taken);

/// The checkpointing pipeline's side of its members (RS-12): asks the
/// coordinator for them and sends each its pause at once; then reads the
/// answers, takes the sections of all once all paused, and lets them run
/// again (at the latest at its end).
class members_pause {
public:
  /// No coordinator: no members.
  members_pause(caf::actor_system& sys, const coordinator_actor& coord,
                caf::timespan limit);
  ~members_pause();
  members_pause(const members_pause&) = delete;
  members_pause& operator=(const members_pause&) = delete;

  /// Reads every member's answer to its pause; `failed` gets one line per
  /// member that did not pause.
  void await_paused(std::vector<std::string>& failed);
  /// Every paused member's sections, by member name.
  void take_sections(std::map<std::string, std::map<std::string, std::string>>& out,
                     std::vector<std::string>& failed);
  /// Lets the paused members run again; returns those that had run again on
  /// their own already (their hold passed).
  std::vector<std::string> resume();

private:
  caf::actor_system& sys_;
  caf::timespan limit_;
  uint64_t token_;
  std::unique_ptr<caf::scoped_actor> self_; // with members only
  std::vector<registration> members_;
  std::vector<caf::response_handle<caf::blocking_actor, caf::message, true>> asked_;
  std::vector<registration> paused_;
};

} // namespace quern::pipeline_ckpt
