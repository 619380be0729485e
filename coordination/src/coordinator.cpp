#include "quern/coordinator.hpp"

#include "quern/actor_system.hpp"

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/local_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace quern {

namespace {

struct watched_actor {
  caf::actor handle;
  std::string name;
  uint64_t seq = 0;
  /// In the registered set that join snapshots (CO-7, CO-8 step 1).
  bool registered = false;
  bool push_stop = false;
  bool report_errors = false;
};

struct pending_join {
  /// The snapshot, in registration order, with names.
  std::vector<std::pair<caf::actor_addr, std::string>> snapshot;
  std::set<caf::actor_addr> alive;
  caf::timespan grace{0};
  bool grace_started = false;
  caf::typed_response_promise<join_report> rp;
};

struct coordinator_state {
  std::vector<error_code> clean_codes;
  std::vector<exception_matcher> clean_types;
  caf::timespan join_warning_after{0};
  std::function<void(const std::string&)> on_join_warning;
  bool stop = false;
  bool joined = false;
  caf::error error;
  // By address: ids repeat across processes (one program's runners, two processes).
  std::unordered_map<caf::actor_addr, watched_actor> watched;
  uint64_t next_seq = 0;
  std::map<uint64_t, pending_join> joins;
  uint64_t next_join = 0;
  std::map<uint64_t, caf::typed_response_promise<bool>> waiters;
  uint64_t next_wait = 0;
  /// Checkpoint members (add_member), by name, while they live.
  std::map<std::string, caf::actor> members;

  static inline const char* name = "quern.coordinator";
};

using coordinator_ptr = coordinator_actor::stateful_pointer<coordinator_state>;

// What the actor is, by CAF's name for it (quern's actors name themselves,
// e.g. quern.queue_runner), and which one.
std::string default_name(const caf::actor& a) {
  auto local = dynamic_cast<caf::local_actor*>(caf::actor_cast<caf::abstract_actor*>(a));
  std::string what = local ? local->name() : "actor";
  return what + "#" + std::to_string(a.id());
}

bool is_clean(const coordinator_state& st, const caf::error& e) {
  if (!e)
    return true;
  if (auto ep = original_exception(e))
    for (auto& matches : st.clean_types)
      if (matches(ep))
        return true;
  if (e.category() != error_category)
    return false;
  auto c = code_of(e);
  return std::find(st.clean_codes.begin(), st.clean_codes.end(), c) !=
         st.clean_codes.end();
}

/// Whether an actor's exit reason reports a failure (as opposed to ending
/// normally or being shut down).
bool is_error_exit(const caf::error& reason) {
  if (!reason)
    return false;
  if (reason.category() == caf::atom("exit")) {
    auto r = static_cast<caf::exit_reason>(reason.code());
    return r != caf::exit_reason::normal && r != caf::exit_reason::user_shutdown &&
           r != caf::exit_reason::unreachable;
  }
  return true;
}

/// An error exit as the error that stops the others, its origin the actor's
/// name (`remote-feeder/op0@127.0.0.1:41237`); a lost process is unavailable.
caf::error exit_error(const caf::error& reason, const std::string& name) {
  if (reason != caf::exit_reason::remote_link_unreachable)
    return with_origin(reason, name);
  return with_origin(make_error(error_code::unavailable,
                                "the process of " + name +
                                    " was lost: its connection dropped, or it was silent "
                                    "for longer than middleman.connection-timeout"),
                     name);
}

void finish_join(coordinator_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.joins.find(id);
  if (i == st.joins.end())
    return;
  auto j = std::move(i->second);
  st.joins.erase(i);
  st.joined = true; // CO-8 step 4
  for (auto& kv : st.watched)
    kv.second.registered = false;
  join_report rep;
  rep.error = st.error;
  for (auto& [aid, name] : j.snapshot)
    if (j.alive.count(aid) > 0)
      rep.stragglers.push_back(name);
  j.rp.deliver(std::move(rep));
}

void check_join(coordinator_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.joins.find(id);
  if (i == st.joins.end())
    return;
  auto& j = i->second;
  if (j.alive.empty()) {
    finish_join(self, id);
    return;
  }
  // CO-8 step 3: the grace period starts once stop has been requested.
  if (st.stop && !j.grace_started) {
    j.grace_started = true;
    if (j.grace <= caf::timespan{0})
      finish_join(self, id);
    else if (j.grace != caf::timespan::max())
      self->delayed_send(self, j.grace, join_timeout_atom::value, id);
  }
}

void check_joins(coordinator_ptr self) {
  std::vector<uint64_t> ids;
  for (auto& kv : self->state.joins)
    ids.push_back(kv.first);
  for (auto id : ids)
    check_join(self, id);
}

/// CO-3, CO-4. Returns whether this request set the flag.
bool do_request_stop(coordinator_ptr self, const caf::error& err) {
  auto& st = self->state;
  if (st.stop)
    return false; // CO-4: errors reported after the flag is set are ignored
  if (!is_clean(st, err) && !st.error)
    st.error = err;
  st.stop = true;
  // Push the stop to everything that asked for it; nobody has to poll.
  for (auto& kv : st.watched)
    if (kv.second.push_stop)
      caf::anon_send(kv.second.handle, stop_atom::value);
  for (auto& kv : st.waiters)
    kv.second.deliver(true);
  st.waiters.clear();
  check_joins(self);
  return true;
}

void watch(coordinator_ptr self, const caf::actor& a, std::string name, bool registered,
           bool push_stop, bool report_errors) {
  auto& st = self->state;
  auto i = st.watched.find(a.address());
  if (i == st.watched.end()) {
    watched_actor w;
    w.handle = a;
    w.name = name.empty() ? default_name(a) : std::move(name);
    w.seq = st.next_seq++;
    w.registered = registered;
    w.push_stop = push_stop;
    w.report_errors = report_errors;
    st.watched.emplace(a.address(), std::move(w));
    self->monitor(a);
  } else if (registered) {
    auto& w = i->second;
    if (!name.empty())
      w.name = std::move(name);
    w.registered = true;
    w.push_stop = w.push_stop || push_stop;
    w.report_errors = w.report_errors || report_errors;
  }
  if (st.stop && push_stop)
    caf::anon_send(a, stop_atom::value); // registered after the stop: stop at once
}

std::string straggler_text(const std::vector<std::string>& names);

// A join still waiting with no stop requested: say once what it waits for.
void warn_join(coordinator_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.joins.find(id);
  if (i == st.joins.end() || st.stop)
    return;
  std::vector<std::string> names;
  for (auto& [aid, name] : i->second.snapshot)
    if (i->second.alive.count(aid) > 0)
      names.push_back(name);
  auto secs =
      std::chrono::duration_cast<std::chrono::duration<double>>(st.join_warning_after)
          .count();
  std::ostringstream text;
  text << "Coordinator.join has waited " << secs << " s with no stop requested for "
       << straggler_text(names).substr(std::string("Coordinator stopped with ").size());
  if (st.on_join_warning)
    st.on_join_warning(text.str());
  else
    std::cerr << "quern: " << text.str() << '\n';
}

// Shut down (its owning handle went away) while a join or wait_for_stop
// waits: answer them, so no thread waits forever for a coordinator gone.
void coordinator_exit(coordinator_ptr self, const caf::exit_msg& msg) {
  auto& st = self->state;
  auto gone = make_error(error_code::cancelled,
                         "the coordinator was shut down while this call waited");
  for (auto& kv : st.joins)
    kv.second.rp.deliver(gone);
  st.joins.clear();
  for (auto& kv : st.waiters)
    kv.second.deliver(gone);
  st.waiters.clear();
  self->quit(msg.reason);
}

// A watched actor ended: its error may stop the others (CO-3), and the
// joins that wait for it learn it.
void watched_down(coordinator_ptr self, const caf::down_msg& dm) {
  auto& st = self->state;
  const auto& id = dm.source;
  auto i = st.watched.find(id);
  if (i == st.watched.end())
    return;
  bool report = i->second.report_errors;
  auto name = std::move(i->second.name);
  st.watched.erase(i);
  if (report && is_error_exit(dm.reason))
    do_request_stop(self, exit_error(dm.reason, name));
  std::vector<uint64_t> touched;
  for (auto& kv : st.joins)
    if (kv.second.alive.erase(id) > 0)
      touched.push_back(kv.first);
  for (auto jid : touched)
    check_join(self, jid);
}

caf::result<bool> wait_for_stop(coordinator_ptr self, caf::timespan timeout) {
  auto& st = self->state;
  if (st.stop || timeout <= caf::timespan{0})
    return st.stop;
  auto rp = self->make_response_promise<bool>();
  auto id = st.next_wait++;
  st.waiters.emplace(id, rp);
  if (timeout != caf::timespan::max())
    self->delayed_send(self, timeout, wait_timeout_atom::value, id);
  return rp;
}

// CO-8: a join waits for the registered actors plus the given ones, as they
// are at call time, in registration order.
caf::result<join_report> start_join(coordinator_ptr self, std::vector<caf::actor>& actors,
                                    caf::timespan grace) {
  auto& st = self->state;
  for (auto& a : actors)
    if (a)
      watch(self, a, {}, false, false, false);
  std::vector<const std::pair<const caf::actor_addr, watched_actor>*> members;
  std::set<caf::actor_addr> given;
  for (auto& a : actors)
    if (a)
      given.insert(a.address());
  for (auto& kv : st.watched)
    if (kv.second.registered || given.count(kv.first) > 0)
      members.push_back(&kv);
  std::sort(members.begin(), members.end(),
            [](auto* x, auto* y) { return x->second.seq < y->second.seq; });
  pending_join j;
  for (auto* m : members) {
    j.snapshot.emplace_back(m->first, m->second.name);
    j.alive.insert(m->first);
  }
  j.grace = grace;
  j.rp = self->make_response_promise<join_report>();
  auto rp = j.rp;
  auto id = st.next_join++;
  st.joins.emplace(id, std::move(j));
  if (!st.stop && st.join_warning_after > caf::timespan{0} &&
      st.join_warning_after != caf::timespan::max())
    self->delayed_send(self, st.join_warning_after, join_warning_atom::value, id);
  check_join(self, id);
  return rp;
}

coordinator_status status_of(const coordinator_state& st) {
  coordinator_status s;
  s.stop_requested = st.stop;
  s.joined = st.joined;
  s.error = st.error;
  for (auto& kv : st.watched)
    if (kv.second.registered)
      ++s.live;
  return s;
}

// -- checkpoint members (docs/resume.md, "Across processes") ----------------------

caf::result<bool> add_member(coordinator_ptr self, caf::actor& member,
                             std::string& name) {
  if (!member)
    return make_error(error_code::invalid_argument,
                      "add_member: checkpoint member '" + name + "' is no actor");
  if (name.empty() || name.find('/') != std::string::npos)
    return make_error(
        error_code::invalid_argument,
        "a checkpoint member's name must be non-empty and without '/', not '" + name +
            "'");
  auto& members = self->state.members;
  if (members.count(name) > 0)
    return make_error(error_code::invalid_argument,
                      "a checkpoint member named '" + name +
                          "' is already registered with this coordinator (give each "
                          "process's pipeline a name of its own)");
  self->monitor(member);
  members.emplace(std::move(name), std::move(member));
  return true;
}

std::vector<registration> members_of(const coordinator_state& st) {
  std::vector<registration> out;
  for (auto& [name, member] : st.members)
    out.push_back({member, name, false, false});
  return out;
}

/// A member that went down is forgotten; false when `who` was none.
bool forget_member(coordinator_state& st, const caf::actor_addr& who) {
  for (auto i = st.members.begin(); i != st.members.end(); ++i)
    if (i->second.address() == who) {
      st.members.erase(i);
      return true;
    }
  return false;
}

coordinator_actor::behavior_type coordinator_impl(coordinator_ptr self,
                                                  coordinator_options opts) {
  self->state.clean_codes = std::move(opts.clean_stop_codes);
  self->state.clean_types = std::move(opts.clean_stop_exception_types);
  self->state.join_warning_after = opts.join_warning_after;
  self->state.on_join_warning = std::move(opts.on_join_warning);
  self->set_exception_handler(keep_exception_message);
  self->set_exit_handler([self](caf::exit_msg& msg) { coordinator_exit(self, msg); });
  self->set_down_handler([self](caf::down_msg& dm) {
    if (!forget_member(self->state, dm.source))
      watched_down(self, dm);
  });
  return {
      [self](request_stop_atom, caf::error& err) -> caf::result<bool> {
        auto& st = self->state;
        // CO-5: after join, a non-clean error is raised in the caller.
        if (st.joined && !is_clean(st, err))
          return std::move(err);
        return do_request_stop(self, err);
      },
      [self](should_stop_atom) { return self->state.stop; },
      [self](wait_for_stop_atom, caf::timespan timeout) {
        return wait_for_stop(self, timeout);
      },
      [self](wait_timeout_atom, uint64_t id) {
        auto& st = self->state;
        auto i = st.waiters.find(id);
        if (i != st.waiters.end()) {
          i->second.deliver(st.stop);
          st.waiters.erase(i);
        }
      },
      [self](clear_stop_atom) {
        auto& st = self->state;
        st.stop = false;
        st.error = caf::error{};
        st.joined = false;
        return true;
      },
      [self](register_atom, std::vector<registration>& regs) {
        int32_t n = 0;
        for (auto& r : regs) {
          if (!r.actor)
            continue;
          watch(self, r.actor, std::move(r.name), true, r.push_stop, r.report_errors);
          ++n;
        }
        return n;
      },
      [self](join_atom, std::vector<caf::actor>& actors, caf::timespan grace,
             bool) { // ignore_live: the handle decides whether stragglers throw
        return start_join(self, actors, grace);
      },
      [self](join_timeout_atom, uint64_t id) { finish_join(self, id); },
      [self](join_warning_atom, uint64_t id) { warn_join(self, id); },
      [self](status_atom) { return status_of(self->state); },
      [self](add_member_atom, caf::actor& member, std::string& name) {
        return add_member(self, member, name);
      },
      [self](members_atom) { return members_of(self->state); },
  };
}

std::string straggler_text(const std::vector<std::string>& names) {
  std::string s = "Coordinator stopped with threads still running:";
  for (auto& n : names) {
    s += ' ';
    s += n;
  }
  return s;
}

} // namespace

coordinator_actor spawn_coordinator(caf::actor_system& sys, coordinator_options opts) {
  auto c = sys.spawn(coordinator_impl, std::move(opts));
  detail::exit_watch::track(sys, caf::actor_cast<caf::actor>(c), "coordinator");
  return c;
}

live_actors_error::live_actors_error(std::vector<std::string> names)
    : std::runtime_error(straggler_text(names)), names_(std::move(names)) {}

caf::error error_from(const std::exception& e, std::exception_ptr copy) {
  // Inside the catch block of `e`, the exception being handled is `e`
  // itself: keep that object (a copy of `e` would lose its dynamic type).
  if (auto ep = std::current_exception()) {
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& current) {
      if (&current == &e)
        return error_from_exception(ep);
    } catch (...) {
    }
  }
  if (copy)
    return error_from_exception(copy);
  if (auto op = dynamic_cast<const op_error*>(&e))
    return op->to_error();
  return make_error(error_code::unknown, e.what());
}

} // namespace quern
