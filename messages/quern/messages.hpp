#pragma once

// What an actor system needs to run quern: quern::config, an actor_system_config with
// every quern message type and quern's error category registered, or
// add_message_types(cfg) for a config of one's own. A program starts with:
//   quern::config cfg;
//   quern::actor_system sys{cfg};  // quern/actor_system.hpp: an exit that never hangs
// A program that serves or connects uses quern::remote_config (quern/remote.hpp).

#include <caf/actor_system_config.hpp>

namespace quern {

/// Registers every quern message type and quern's error category (with a
/// renderer that keeps the readable message) with `cfg`. Call it once on
/// every actor_system_config that runs quern actors; quern::config does.
void add_message_types(caf::actor_system_config& cfg);

/// An actor_system_config with quern's types and error category registered,
/// and CAF's work-sharing scheduler as default policy (see messages.cpp).
class config : public caf::actor_system_config {
public:
  config();
};

} // namespace quern
