#include <caf/actor_system_config.hpp>

#include "quern/detail/registration.hpp"
#include "quern/summary.hpp"

namespace quern::detail {

void add_summary_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<histogram_data>("quern::histogram_data");
  cfg.add_message_type<image_data>("quern::image_data");
  cfg.add_message_type<summary_value>("quern::summary_value");
  cfg.add_message_type<std::vector<summary_value>>("std::vector<quern::summary_value>");
  cfg.add_message_type<summary_event>("quern::summary_event");
  cfg.add_message_type<std::vector<summary_event>>("std::vector<quern::summary_event>");
  cfg.add_message_type<scalar_event>("quern::scalar_event");
  cfg.add_message_type<std::vector<scalar_event>>("std::vector<quern::scalar_event>");
  cfg.add_message_type<writer_status>("quern::writer_status");
  cfg.add_message_type<summary_writer_actor>("quern::summary_writer_actor");
}

} // namespace quern::detail
