#include <caf/actor_system_config.hpp>

#include "quern/coordination.hpp"
#include "quern/detail/registration.hpp"

namespace quern::detail {

void add_coordination_message_types(caf::actor_system_config& cfg) {
  // add_message_type<T> also registers std::vector<T>.
  cfg.add_message_type<registration>("quern::registration");
  cfg.add_message_type<join_report>("quern::join_report");
  cfg.add_message_type<coordinator_status>("quern::coordinator_status");
  cfg.add_message_type<coordinator_actor>("quern::coordinator_actor");
  cfg.add_message_type<queue_runner_actor>("quern::queue_runner_actor");
  // A checkpoint member's telemetry, asked by the chief's pipeline (TL-10).
  cfg.add_message_type<member_telemetry>("quern::detail::member_telemetry");
}

} // namespace quern::detail
