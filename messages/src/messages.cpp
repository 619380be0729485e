#include "quern/messages.hpp"

#include <caf/message.hpp>

#include "quern/detail/registration.hpp"
#include "quern/element.hpp"
#include "quern/error.hpp"
#include "quern/interfaces.hpp"
#include "quern/queue_spec.hpp"
#include "quern/queue_state.hpp"
#include "quern/tensor.hpp"

namespace quern {

namespace detail {

void add_queue_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<tensor_shape>("quern::tensor_shape");
  cfg.add_message_type<tensor>("quern::tensor");
  cfg.add_message_type<element>("quern::element");
  cfg.add_message_type<std::vector<element>>("std::vector<quern::element>");
  cfg.add_message_type<queue_options>("quern::queue_options");
  cfg.add_message_type<queue_spec>("quern::queue_spec");
  cfg.add_message_type<queue_stats>("quern::queue_stats");
  cfg.add_message_type<demand>("quern::demand");
  cfg.add_message_type<batch_key>("quern::batch_key");
  cfg.add_message_type<queue_actor>("quern::queue_actor");
  // A checkpoint's snapshot and restore of a queue of another process.
  cfg.add_message_type<queue_state>("quern::queue_state");
  cfg.add_message_type<error_detail>("quern::error_detail");
  // CAF's default renderer drops the context; ours keeps the readable text.
  cfg.add_error_category(error_category,
                         [](uint8_t code, caf::atom_value, const caf::message& ctx) {
                           std::string s = error_code_name(static_cast<error_code>(code));
                           if (ctx.size() >= 1 && ctx.match_element<std::string>(0))
                             s += ": " + ctx.get_as<std::string>(0);
                           return s;
                         });
}

} // namespace detail

void add_message_types(caf::actor_system_config& cfg) {
  detail::add_queue_message_types(cfg);
  detail::add_summary_message_types(cfg);
  detail::add_coordination_message_types(cfg);
}

config::config() {
  quern::add_message_types(*this);
  // CAF's default work-stealing workers poll for work with sleeps (50 us,
  // then 10 ms) once idle, and every wake-up of a queue that serves blocking
  // clients pays that latency. The work-sharing policy wakes a worker through
  // a condition variable instead. Measured with bench_queue_throughput on 2
  // cores: batches of 100 P=C=1 about 16-18M elements/s against about 10M/s
  // (3.4x-4.2x against 1.7x-2.2x the mutex queue). Users may still choose
  // `scheduler.policy` themselves (config file or command line).
  set("scheduler.policy", caf::atom("sharing"));
  // quern::actor_system's exit policy (docs/coordination.md, "At exit").
  caf::config_option_adder{custom_options_, "quern"}.add<caf::timespan>(
      "exit-grace", "how long the actor system waits for actors at exit before it "
                    "reports and ends what is still running");
}

} // namespace quern
