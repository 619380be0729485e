// quern::coordinator, the blocking handle of a coordinator actor
// (docs/coordination.md): its calls, each one request to the actor
// (coordinator.cpp).

#include "quern/coordinator.hpp"

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

namespace quern {

coordinator::coordinator(caf::actor_system& sys, coordinator_options opts)
    : sys_(sys), client_(sys), actor_(spawn_coordinator(sys, std::move(opts))),
      owning_(true) {}

coordinator::coordinator(caf::actor_system& sys, coordinator_actor existing)
    : sys_(sys), client_(sys), actor_(std::move(existing)), owning_(false) {}

coordinator::~coordinator() {
  if (!owning_ || !actor_)
    return;
  // Stop everything this coordinator watches (runners cancel their queues
  // and end), then end the coordinator itself: ~actor_system cannot hang on
  // a pipeline whose owner forgot request_stop or join.
  try {
    request_stop();
  } catch (...) {
  }
  caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown);
}

template <class T, class... Ts>
T coordinator::call(Ts&&... xs) {
  return client_.call<T>(actor_, std::forward<Ts>(xs)...);
}

bool coordinator::should_stop() {
  return call<bool>(should_stop_atom::value);
}

bool coordinator::request_stop() {
  return call<bool>(request_stop_atom::value, caf::error{});
}

bool coordinator::request_stop(const caf::error& e) {
  return call<bool>(request_stop_atom::value, e);
}

bool coordinator::request_stop(std::exception_ptr ep) {
  if (!ep)
    return request_stop();
  return request_stop(error_from_exception(ep));
}

bool coordinator::wait_for_stop(caf::timespan timeout) {
  return call<bool>(wait_for_stop_atom::value, timeout);
}

void coordinator::clear_stop() {
  call<bool>(clear_stop_atom::value);
}

void coordinator::raise_requested_exception() {
  auto s = status();
  if (s.error)
    throw_error(s.error);
}

void coordinator::register_actor(const caf::actor& a, std::string name, bool push_stop,
                                 bool report_errors) {
  std::vector<registration> regs{
      registration{a, std::move(name), push_stop, report_errors}};
  call<int32_t>(register_atom::value, std::move(regs));
}

join_report coordinator::join_report_of(std::vector<caf::actor> actors,
                                        caf::timespan stop_grace_period) {
  return call<join_report>(join_atom::value, std::move(actors), stop_grace_period, false);
}

void coordinator::join(std::vector<caf::actor> actors, caf::timespan stop_grace_period,
                       bool ignore_live) {
  auto rep = call<join_report>(join_atom::value, std::move(actors), stop_grace_period,
                               ignore_live);
  if (rep.error)
    throw_error(rep.error); // CO-8 step 5: the error takes precedence
  if (!rep.stragglers.empty()) {
    if (!ignore_live)
      throw live_actors_error(std::move(rep.stragglers));
    std::cerr << "quern: " << straggler_text(rep.stragglers) << '\n';
  }
}

coordinator_status coordinator::status() {
  return call<coordinator_status>(status_atom::value);
}

} // namespace quern
