#include <caf/actor_system_config.hpp>

#include "quern/detail/registration.hpp"

namespace quern::detail {

void add_coordination_message_types(caf::actor_system_config&) {
  // The coordinator's and queue runner's message types are registered here.
}

} // namespace quern::detail
