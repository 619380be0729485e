#pragma once

// Internal: the registration function of each part of the message vocabulary, which
// quern::add_message_types (quern/messages.hpp) calls. Programs use quern::config or
// add_message_types, never these.

#include <caf/fwd.hpp>

namespace quern::detail {

// Each part of the vocabulary registers its own message types; the public
// entry point quern::add_message_types (messages.hpp) calls all of them.
void add_queue_message_types(caf::actor_system_config& cfg);
void add_summary_message_types(caf::actor_system_config& cfg);      // summary.hpp
void add_coordination_message_types(caf::actor_system_config& cfg); // coordination.hpp

} // namespace quern::detail
