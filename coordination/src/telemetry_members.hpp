#pragma once

// The chief's side of its checkpoint members' telemetry (docs/semantics.md
// TL-10; docs/input.md, "Stages of other processes"): asking them all at
// once within a bound, and merging their readings with its own. Private to
// coordination/ (pipeline_telemetry.cpp).

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "quern/coordination.hpp"
#include "quern/telemetry.hpp"

namespace quern::detail {

/// How long the chief's telemetry() waits for its coordinator's list of
/// checkpoint members and then for their readings, asked all at once.
constexpr auto member_answer_limit = std::chrono::seconds(1);

/// A participant of a merged reading: the chief's pipeline (empty name) or a
/// checkpoint member, and what it read.
struct participant {
  std::string member;
  member_telemetry reading;
};

/// The readings of the checkpoint members `coord` lists, other than
/// `self_member`, asked all at once, each within member_answer_limit, added
/// to `out`; `missing` gets a note for each member that gave none, and for
/// each member in `seen` (those asked before) that is gone.
void ask_members(caf::actor_system& sys, const coordinator_actor& coord,
                 const caf::actor& self_member, std::set<std::string>& seen,
                 std::vector<participant>& out, std::vector<std::string>& missing);

/// The chief's reading (the first of `all`) and its members' as one:
/// members' stages and workers named `<member>/...`, a queue of a member's
/// process `<member>/<queue>`, of the chief's process or of no member's its
/// own name, every reference renamed alike, each queue once (its owner's
/// reading when the owner took part, else the first that has it).
pipeline_telemetry merged_reading(const std::vector<participant>& all);

} // namespace quern::detail
