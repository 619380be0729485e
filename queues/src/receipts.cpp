#include "quern/detail/receipts.hpp"

#include <cstring>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>

namespace quern::detail {

bool confirms_taking(const queue_actor& q) {
  if (!q)
    return false;
  auto a = caf::actor_cast<caf::abstract_actor*>(q);
  if (a->node() != a->home_system().node())
    return true; // a proxy
  auto local = dynamic_cast<caf::local_actor*>(a);
  return local != nullptr && std::strcmp(local->name(), remote_queue_endpoint_name) == 0;
}

remote_queue_actor receipts_to(const queue_actor& q) {
  if (!confirms_taking(q))
    return {};
  return caf::actor_cast<remote_queue_actor>(q);
}

} // namespace quern::detail
