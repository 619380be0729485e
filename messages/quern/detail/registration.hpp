#pragma once

#include <caf/fwd.hpp>

namespace quern::detail {

// Each part of the vocabulary registers its own message types; the public
// entry point quern::add_message_types (messages.hpp) calls all of them.
void add_queue_message_types(caf::actor_system_config& cfg);
void add_summary_message_types(caf::actor_system_config& cfg);      // summary.hpp
void add_coordination_message_types(caf::actor_system_config& cfg); // coordination.hpp

} // namespace quern::detail
