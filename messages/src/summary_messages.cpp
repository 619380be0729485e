#include <caf/actor_system_config.hpp>

#include "quern/detail/registration.hpp"

namespace quern::detail {

void add_summary_message_types(caf::actor_system_config&) {
  // The summary writer's message types are registered here.
}

} // namespace quern::detail
