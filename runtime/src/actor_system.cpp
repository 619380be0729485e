#include "quern/actor_system.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <caf/actor_cast.hpp>
#include <caf/actor_registry.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

namespace quern {

namespace detail {

namespace {

using clock = std::chrono::steady_clock;

struct tracked {
  caf::actor_addr addr;
  std::string what;
  std::function<void()> stop;
  bool end_at_exit = true;
};

/// What one thread is blocked in. Each thread owns one slot; the report
/// reads every slot. A slot's own mutex is uncontended except while a
/// report is made, so marking a call costs little.
struct thread_slot {
  std::mutex mtx;
  caf::actor_system* call_sys = nullptr;
  caf::actor_addr dest;
  caf::atom_value op = caf::atom("");
  clock::time_point call_since;
  caf::actor_system* run_sys = nullptr;
  std::string worker;
  uint64_t run = 0;
  clock::time_point run_since;
};

struct watch_state {
  std::mutex mtx;
  std::unordered_map<caf::actor_system*, std::map<caf::actor_id, tracked>> actors;
  std::unordered_map<caf::actor_id, caf::actor_system*> owner;
  std::vector<std::weak_ptr<thread_slot>> slots;
};

// Never destroyed: actors may end (and untrack) during static destruction.
watch_state& state() {
  static auto* s = new watch_state;
  return *s;
}

thread_slot& my_slot() {
  thread_local std::shared_ptr<thread_slot> slot = [] {
    auto s = std::make_shared<thread_slot>();
    auto& st = state();
    std::lock_guard<std::mutex> guard{st.mtx};
    st.slots.erase(
        std::remove_if(st.slots.begin(), st.slots.end(),
                       [](const std::weak_ptr<thread_slot>& w) { return w.expired(); }),
        st.slots.end());
    st.slots.push_back(s);
    return s;
  }();
  return *slot;
}

void untrack(caf::actor_id id) {
  auto& st = state();
  std::lock_guard<std::mutex> guard{st.mtx};
  auto i = st.owner.find(id);
  if (i == st.owner.end())
    return;
  auto j = st.actors.find(i->second);
  if (j != st.actors.end()) {
    j->second.erase(id);
    if (j->second.empty())
      st.actors.erase(j);
  }
  st.owner.erase(i);
}

std::string seconds(clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", std::chrono::duration<double>(d).count());
  return buf;
}

std::string name_locked(watch_state& st, const caf::actor_addr& a) {
  auto i = st.owner.find(a.id());
  if (i != st.owner.end()) {
    auto& m = st.actors[i->second];
    auto j = m.find(a.id());
    if (j != m.end())
      return j->second.what;
  }
  return "actor #" + std::to_string(a.id());
}

} // namespace

void exit_watch::track(caf::actor_system& sys, const caf::actor& a, std::string what,
                       std::function<void()> stop, bool end_at_exit) {
  if (!a)
    return;
  auto id = a.id();
  {
    auto& st = state();
    std::lock_guard<std::mutex> guard{st.mtx};
    st.actors[&sys][id] =
        tracked{a.address(), std::move(what), std::move(stop), end_at_exit};
    st.owner[id] = &sys;
  }
  // Runs when the actor ends (at once if it already did).
  a->attach_functor([id] { untrack(id); });
}

size_t exit_watch::alive(caf::actor_system& sys) {
  auto& st = state();
  std::lock_guard<std::mutex> guard{st.mtx};
  auto i = st.actors.find(&sys);
  if (i == st.actors.end())
    return 0;
  return static_cast<size_t>(
      std::count_if(i->second.begin(), i->second.end(),
                    [](const auto& kv) { return kv.second.end_at_exit; }));
}

void exit_watch::rename(const caf::actor_addr& a, std::string what) {
  auto& st = state();
  std::lock_guard<std::mutex> guard{st.mtx};
  auto i = st.owner.find(a.id());
  if (i == st.owner.end())
    return;
  auto& m = st.actors[i->second];
  auto j = m.find(a.id());
  if (j != m.end())
    j->second.what = std::move(what);
}

std::string exit_watch::name_of(const caf::actor_addr& a) {
  auto& st = state();
  std::lock_guard<std::mutex> guard{st.mtx};
  return name_locked(st, a);
}

exit_watch::blocked_call::blocked_call(caf::actor_system& sys,
                                       const caf::actor_addr& dest, caf::atom_value op) {
  auto& s = my_slot();
  std::lock_guard<std::mutex> guard{s.mtx};
  s.call_sys = &sys;
  s.dest = dest;
  s.op = op;
  s.call_since = clock::now();
}

exit_watch::blocked_call::~blocked_call() {
  auto& s = my_slot();
  std::lock_guard<std::mutex> guard{s.mtx};
  s.call_sys = nullptr;
  s.dest = caf::actor_addr{};
}

exit_watch::in_run::in_run(caf::actor_system& sys, std::string worker, uint64_t run) {
  auto& s = my_slot();
  std::lock_guard<std::mutex> guard{s.mtx};
  s.run_sys = &sys;
  s.worker = std::move(worker);
  s.run = run;
  s.run_since = clock::now();
}

exit_watch::in_run::~in_run() {
  auto& s = my_slot();
  std::lock_guard<std::mutex> guard{s.mtx};
  s.run_sys = nullptr;
}

std::vector<std::string> exit_watch::report(caf::actor_system& sys) {
  std::vector<std::string> lines;
  auto now = clock::now();
  auto& st = state();
  std::vector<std::shared_ptr<thread_slot>> slots;
  {
    std::lock_guard<std::mutex> guard{st.mtx};
    for (auto& w : st.slots)
      if (auto s = w.lock())
        slots.push_back(std::move(s));
  }
  for (auto& s : slots) {
    caf::actor_addr dest;
    caf::atom_value op;
    clock::time_point since;
    bool in_call = false;
    bool in_run = false;
    std::string worker;
    uint64_t run = 0;
    clock::time_point run_since;
    {
      std::lock_guard<std::mutex> guard{s->mtx};
      if (s->call_sys == &sys) {
        in_call = true;
        dest = s->dest;
        op = s->op;
        since = s->call_since;
      }
      if (s->run_sys == &sys) {
        in_run = true;
        worker = s->worker;
        run = s->run;
        run_since = s->run_since;
      }
    }
    if (in_run)
      lines.push_back("worker '" + worker + "' has been inside its blocking op for " +
                      seconds(now - run_since) + " (run " + std::to_string(run) +
                      "); a long op has to check run.should_stop() and return");
    if (in_call)
      lines.push_back("a thread has waited " + seconds(now - since) + " in " +
                      caf::to_string(op) + " on " + name_of(dest));
  }
  std::lock_guard<std::mutex> guard{st.mtx};
  auto i = st.actors.find(&sys);
  if (i != st.actors.end())
    for (auto& kv : i->second)
      lines.push_back(kv.second.what + " is still running");
  return lines;
}

void exit_watch::shut_down(caf::actor_system& sys) {
  std::vector<tracked> all;
  {
    auto& st = state();
    std::lock_guard<std::mutex> guard{st.mtx};
    auto i = st.actors.find(&sys);
    if (i != st.actors.end())
      for (auto& kv : i->second)
        all.push_back(kv.second);
  }
  for (auto& t : all)
    if (t.stop)
      t.stop();
  for (auto& t : all)
    if (auto a = t.end_at_exit ? caf::actor_cast<caf::actor>(t.addr) : caf::actor{})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

void exit_watch::forget(caf::actor_system& sys) {
  auto& st = state();
  std::lock_guard<std::mutex> guard{st.mtx};
  auto i = st.actors.find(&sys);
  if (i == st.actors.end())
    return;
  for (auto& kv : i->second)
    st.owner.erase(kv.first);
  st.actors.erase(i);
}

} // namespace detail

namespace {

caf::timespan configured_grace(const caf::actor_system_config& cfg) {
  return caf::get_or(cfg, "quern.exit-grace", caf::timespan{std::chrono::seconds(2)});
}

} // namespace

actor_system::actor_system(caf::actor_system_config& cfg)
    : caf::actor_system(cfg), grace_(configured_grace(cfg)) {}

actor_system::~actor_system() {
  using detail::exit_watch;
  auto& reg = registry();
  auto settled_within = [&](caf::timespan d) {
    auto deadline = std::chrono::steady_clock::now() + d;
    while (reg.running() > 0) {
      if (std::chrono::steady_clock::now() >= deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  };
  auto say = [&](const std::string& line) {
    if (report_)
      report_(line);
    else
      std::cerr << line << '\n';
  };
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s",
                std::chrono::duration<double>(grace_).count());
  std::string grace = buf;
  if (!settled_within(grace_)) {
    say("quern: the actor system is shutting down, but " + std::to_string(reg.running()) +
        " actor(s) are still running after " + grace +
        " (quern.exit-grace); ending quern's:");
    for (auto& line : exit_watch::report(*this))
      say("quern:   " + line);
    exit_watch::shut_down(*this);
    while (!settled_within(grace_)) {
      say("quern: still waiting for " + std::to_string(reg.running()) +
          " actor(s) to end:");
      for (auto& line : exit_watch::report(*this))
        say("quern:   " + line);
    }
  }
  exit_watch::forget(*this);
}

} // namespace quern
