#pragma once

// The messages of coordination: the coordinator's and the queue runner's atoms, the
// registration, join_report and coordinator_status they exchange, and their typed
// interfaces, coordinator_actor and queue_runner_actor (docs/semantics.md CO-1..CO-8,
// QR-1..QR-10). spawn_coordinator() and remote_node::coordinator() give a
// coordinator_actor; main() wraps it in a quern::coordinator (quern/coordinator.hpp),
// an actor sends it these messages.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/timespan.hpp>

#include "quern/telemetry.hpp"
#include <caf/typed_actor.hpp>

namespace quern {

// The vocabulary of the coordinator and the queue runners (docs/semantics.md
// QR-1..QR-10, CO-1..CO-8). Atom texts are at most 10 characters (CAF 0.17).

// -- coordinator requests (tf.train.Coordinator) --
/// (request_stop, error) -> bool: sets the stop flag; a none error or a
/// clean-stop error (out_of_range by default) is a clean stop (CO-3, CO-4).
/// Replies true when this request set the flag.
using request_stop_atom = caf::atom_constant<caf::atom("req_stop")>;
/// (should_stop) -> bool (CO-2).
using should_stop_atom = caf::atom_constant<caf::atom("should_stp")>;
/// (wait_for_stop, timeout) -> bool, answered when stop is requested or the
/// timeout elapsed (CO-2).
using wait_for_stop_atom = caf::atom_constant<caf::atom("wait_stop")>;
/// (clear_stop) -> bool: clears flag, recorded error and joined flag (CO-6).
using clear_stop_atom = caf::atom_constant<caf::atom("clear_stop")>;
/// (register, registrations) -> int32 registered count (CO-7).
using register_atom = caf::atom_constant<caf::atom("register")>;
/// (join, actors, grace, ignore_live) -> join_report (CO-8).
using join_atom = caf::atom_constant<caf::atom("join")>;
/// (status) -> coordinator_status.
using status_atom = caf::atom_constant<caf::atom("coord_stat")>;
/// (add_member, member, name) -> bool: a pipeline of some process takes
/// part in the checkpoints of a pipeline of another (docs/resume.md,
/// "Across processes"); the coordinator keeps it under `name` while it lives.
using add_member_atom = caf::atom_constant<caf::atom("add_member")>;
/// (members) -> std::vector<registration>: the checkpoint members alive, by
/// name.
using members_atom = caf::atom_constant<caf::atom("members")>;

// -- a checkpoint member (checkpoint_member_actor) --
/// (member_pause, token, limit) -> bool: pause every runner (within
/// `limit`) and stay paused until member_resume(token) or the hold passes.
using member_pause_atom = caf::atom_constant<caf::atom("mem_pause")>;
/// (member_sections, token) -> sections, while paused for `token`.
using member_sections_atom = caf::atom_constant<caf::atom("mem_sect")>;
/// (member_resume, token) -> bool: run again; false when the member had
/// already run again on its own (its hold passed).
using member_resume_atom = caf::atom_constant<caf::atom("mem_resume")>;
/// (member_telemetry) -> detail::member_telemetry: the member's telemetry
/// over the span since the previous asking (TL-10), for the chief's
/// pipeline::telemetry().
using member_telemetry_atom = caf::atom_constant<caf::atom("mem_tele")>;

// -- pushed by the coordinator to what it watches; understood by runners --
/// (stop): stop was requested; end soon. Sent once per stop request to every
/// registered actor whose registration asks for it.
using stop_atom = caf::atom_constant<caf::atom("stop")>;

// -- queue runner --
/// (runner_start) -> std::vector<caf::actor>: spawns one worker per enqueue
/// op and answers with the workers.
using runner_start_atom = caf::atom_constant<caf::atom("qr_start")>;

// -- internal timers --
using join_timeout_atom = caf::atom_constant<caf::atom("join_tmo")>;
using wait_timeout_atom = caf::atom_constant<caf::atom("wait_tmo")>;
using join_warning_atom = caf::atom_constant<caf::atom("join_warn")>;

/// One actor the coordinator watches (monitors). `name` is used when join
/// names stragglers (empty: "actor#<id>"). With `push_stop` the coordinator
/// sends it (stop) when stop is requested. With `report_errors` an exit with
/// an error reason is treated as request_stop(reason); a queue runner
/// registers its workers with both flags off because it supervises them.
struct registration {
  caf::actor actor;
  std::string name;
  bool push_stop = true;
  bool report_errors = true;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, registration& x) {
    return f(caf::meta::type_name("quern::registration"), x.actor, x.name, x.push_stop,
             x.report_errors);
  }
};

/// What join found (CO-8): the first recorded error (none for a clean stop)
/// and the names of the actors still alive after the grace period.
struct join_report {
  caf::error error;
  std::vector<std::string> stragglers;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, join_report& x) {
    return f(caf::meta::type_name("quern::join_report"), x.error, x.stragglers);
  }
};

/// A snapshot of the coordinator's state.
struct coordinator_status {
  bool stop_requested = false;
  bool joined = false;
  /// The first non-clean error (none if there is none).
  caf::error error;
  /// Registered actors that are still alive.
  int32_t live = 0;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, coordinator_status& x) {
    return f(caf::meta::type_name("quern::coordinator_status"), x.stop_requested,
             x.joined, x.error, x.live);
  }
};

/// The coordinator actor (docs/semantics.md, Coordinator).
using coordinator_actor = caf::typed_actor<
    caf::replies_to<request_stop_atom, caf::error>::with<bool>,
    caf::replies_to<should_stop_atom>::with<bool>,
    caf::replies_to<wait_for_stop_atom, caf::timespan>::with<bool>,
    caf::replies_to<clear_stop_atom>::with<bool>,
    caf::replies_to<register_atom, std::vector<registration>>::with<int32_t>,
    caf::replies_to<join_atom, std::vector<caf::actor>, caf::timespan,
                    bool>::with<join_report>,
    caf::replies_to<status_atom>::with<coordinator_status>,
    caf::replies_to<add_member_atom, caf::actor, std::string>::with<bool>,
    caf::replies_to<members_atom>::with<std::vector<registration>>,
    caf::reacts_to<join_timeout_atom, uint64_t>,
    caf::reacts_to<wait_timeout_atom, uint64_t>,
    caf::reacts_to<join_warning_atom, uint64_t>>;

/// A pipeline that takes part in the checkpoints of a pipeline of another
/// process (pipeline::checkpoint_as_member): its sections are the states of
/// its own queues (`queue/<name>`, encode_queue_state) and of its parts
/// (`part/<name>`). Every member pauses before any member's sections are
/// taken, so that no row is on its way between two processes then.
using checkpoint_member_actor = caf::typed_actor<
    caf::replies_to<member_pause_atom, uint64_t, caf::timespan>::with<bool>,
    caf::replies_to<member_sections_atom,
                    uint64_t>::with<std::map<std::string, std::string>>,
    caf::replies_to<member_resume_atom, uint64_t>::with<bool>,
    caf::replies_to<member_telemetry_atom>::with<detail::member_telemetry>>;

/// The queue runner actor (docs/semantics.md, QueueRunner). It supervises one worker
/// per enqueue op, closes its queue when the last worker ran out of input,
/// cancels pending enqueues on stop and ends when every worker has ended.
using queue_runner_actor =
    caf::typed_actor<caf::replies_to<runner_start_atom>::with<std::vector<caf::actor>>,
                     caf::reacts_to<stop_atom>>;

} // namespace quern
