// A pipeline's restore (docs/resume.md), and what its snapshots use: its
// queues and parts by name, the runners paused and run again, the queues'
// rows taken; put a snapshot back into a pipeline built the same way.

#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>

#include <caf/actor_cast.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "quern/detail/receipts.hpp"
#include "quern/error.hpp"

#include "pipeline_checkpoint.hpp"
#include "pipeline_state.hpp"

namespace quern {

namespace pipeline_ckpt {

std::string seconds(caf::timespan t) {
  std::ostringstream os;
  os << std::chrono::duration<double>(t).count() << " s";
  return os.str();
}

/// Whether this pipeline's checkpoint spans processes: it is a member of
/// another's, or it pauses members of other processes. Then the queues of
/// other processes are left to their own process's member.
bool across_processes(const consumer::state& st) {
  std::lock_guard<std::mutex> guard{st.mtx};
  return !st.member_name.empty() || st.members_of;
}

std::string name_of(caf::actor_system& sys, const consumer::state& st,
                    const queue_actor& q) {
  if (auto known = detail::known_name(st, q))
    return *known;
  auto name = checkpoint_name(blocking_queue{sys, q}.spec());
  detail::remember_name(st, q, name);
  return name;
}

/// The queues of a pipeline (its runners' and its consumers'), each once,
/// by checkpoint name.
std::map<std::string, queue_actor> queues_of(caf::actor_system& sys,
                                             const consumer::state& st) {
  bool across = across_processes(st);
  std::vector<queue_actor> all;
  {
    std::lock_guard<std::mutex> guard{st.mtx};
    for (auto& r : st.runners)
      all.push_back(r.queue());
    all.insert(all.end(), st.consumed.begin(), st.consumed.end());
  }
  std::set<caf::actor_addr> seen;
  std::map<std::string, queue_actor> out;
  for (auto& q : all) {
    if (!seen.insert(q.address()).second)
      continue;
    if (across && detail::confirms_taking(q))
      continue; // its own process's member takes it
    auto name = name_of(sys, st, q);
    // A queue of another process answers snapshot and restore (RS-10), but
    // the runners of other processes that feed or drain it do not pause for
    // this pipeline: its rows would be taken while rows are on their way.
    if (detail::confirms_taking(q))
      throw failed_precondition_error(
          "queue '" + name +
          "' of this pipeline is a queue of another process: a pipeline's checkpoint "
          "covers the queues and runners of its own process, and runners of other "
          "processes would not pause for it (make the pipeline of the queue's process "
          "a checkpoint member, or take the queue's snapshot yourself while nothing "
          "moves through it; docs/resume.md)");
    if (!out.emplace(name, q).second)
      throw invalid_argument_error(
          "two queues of this pipeline are named '" + name +
          "': a checkpoint tells queues by name (give them different names, e.g. "
          "batch_options::name)");
  }
  return out;
}

/// The checkpoint parts, each name once.
std::vector<consumer::state::part> parts_of(const consumer::state& st) {
  std::vector<consumer::state::part> parts;
  {
    std::lock_guard<std::mutex> guard{st.mtx};
    parts = st.parts;
  }
  std::set<std::string> names;
  for (auto& p : parts)
    if (!names.insert(p.name).second)
      throw invalid_argument_error(
          "two checkpoint parts of this pipeline are named '" + p.name +
          "': a checkpoint tells them by name (give the helpers different names)");
  return parts;
}

std::vector<runner_groups::workers> runner_groups::all() const {
  auto out = blocking;
  out.insert(out.end(), others.begin(), others.end());
  return out;
}

runner_groups running(const consumer::state& st) {
  runner_groups out;
  std::lock_guard<std::mutex> guard{st.mtx};
  // Not r.running(): that asks each runner, one round trip after another,
  // which was a seventh of a checkpoint's stall.
  for (auto& r : st.runners) {
    auto w = r.workers_to_pause();
    if (!w || w->workers.empty())
      continue;
    auto& ops = r.enqueue_ops();
    bool blocking = std::any_of(ops.begin(), ops.end(), [](const enqueue_op& op) {
      return std::holds_alternative<blocking_enqueue_fn>(op.body);
    });
    (blocking ? out.blocking : out.others).push_back(std::move(w));
  }
  return out;
}

std::vector<std::string> pause_in_order(caf::scoped_actor& self, const runner_groups& r,
                                        caf::timespan limit) {
  auto late = pause_all(self, r.blocking, limit);
  auto more = pause_all(self, r.others, limit);
  late.insert(late.end(), more.begin(), more.end());
  return late;
}

std::vector<std::string> pause_in_order(caf::actor_system& sys, const runner_groups& r,
                                        caf::timespan limit) {
  caf::scoped_actor self{sys};
  return pause_in_order(self, r, limit);
}

std::vector<std::string> pause_all(caf::scoped_actor& self,
                                   const std::vector<runner_groups::workers>& runners,
                                   caf::timespan limit) {
  std::vector<std::string> late;
  // A blocking op waiting inside its run (for room in a queue it writes)
  // returns, so that its worker can pause between runs.
  for (auto& r : runners)
    if (r->hooks)
      r->hooks->fire();
  // Every request goes out before the first answer is awaited: the workers
  // pause together.
  using answer = decltype(self->request(std::declval<caf::actor>(), limit,
                                        detail::worker_pause_atom::value, true, limit));
  std::vector<std::pair<const std::string*, answer>> answers;
  for (auto& r : runners)
    for (auto& [addr, name] : r->workers)
      if (auto w = caf::actor_cast<caf::actor>(addr)) // else it ended
        answers.emplace_back(
            &name,
            self->request(w, limit, detail::worker_pause_atom::value, true, limit));
  for (auto& [name, a] : answers)
    a.receive([](bool) {},
              [&, n = name](caf::error& e) {
                // A worker that ended meanwhile runs no more: not late. One
                // whose op's rows did not settle is (deadline_exceeded), and
                // says why.
                if (e == caf::sec::request_timeout)
                  late.push_back("'" + *n + "'");
                else if (e.category() == error_category &&
                         code_of(e) == error_code::deadline_exceeded)
                  late.push_back("'" + *n + "' (" + message_of(e) + ")");
              });
  return late;
}

void resume_all(const std::vector<runner_groups::workers>& runners, caf::timespan limit) {
  for (auto& r : runners) {
    // Before the workers are told to run again: a blocking worker starts
    // no run while its runner's hooks say a pause is coming.
    if (r->hooks)
      r->hooks->resumed();
    for (auto& [addr, name] : r->workers)
      if (auto w = caf::actor_cast<caf::actor>(addr))
        caf::anon_send(w, detail::worker_pause_atom::value, false, limit);
  }
}

std::map<std::string, queue_state>
snapshot_queues(caf::scoped_actor& self,
                const std::map<std::string, queue_actor>& queues) {
  std::map<std::string, queue_state> out;
  if (queues.empty())
    return out;
  using answer = decltype(self->request(std::declval<checkpoint_queue_actor>(),
                                        caf::infinite, snapshot_atom::value));
  std::vector<std::pair<std::string, answer>> answers;
  // Every request goes out before the first answer is awaited: the queues
  // copy their rows at once. No client-side timeout: a queue always answers.
  for (auto& [name, q] : queues)
    answers.emplace_back(name, self->request(caf::actor_cast<checkpoint_queue_actor>(q),
                                             caf::infinite, snapshot_atom::value));
  caf::error first;
  for (auto& [name, a] : answers)
    a.receive([&, n = name](queue_state& s) { out.emplace(n, std::move(s)); },
              [&](caf::error& e) {
                if (!first)
                  first = std::move(e);
              });
  if (first)
    throw_error(first);
  return out;
}

std::map<std::string, queue_state>
snapshot_queues(caf::actor_system& sys,
                const std::map<std::string, queue_actor>& queues) {
  if (queues.empty())
    return {};
  caf::scoped_actor self{sys};
  return snapshot_queues(self, queues);
}

std::string listed(const std::vector<std::string>& entries) {
  std::string out;
  for (auto& e : entries)
    out += (out.empty() ? "" : ", ") + e;
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (auto& n : names)
    quoted.push_back("'" + n + "'");
  return listed(quoted);
}

/// How long a member stays paused at most: its runners pause within
/// `limit`, the checkpointing pipeline's within the same limit, and then
/// its queues and parts are taken; past this the member runs again on its
/// own, and the checkpointing pipeline, told so by member_resume, fails the
/// checkpoint.
caf::timespan hold_of(caf::timespan limit) {
  return 3 * limit + std::chrono::seconds(5);
}

} // namespace pipeline_ckpt

using namespace pipeline_ckpt;

std::string checkpoint_name(const queue_spec& spec) {
  const auto& r = spec.resource_name;
  if (r.size() > 2 && r[0] == '_') {
    auto end = r.find('_', 1);
    if (end != std::string::npos && end > 1 &&
        std::all_of(r.begin() + 1, r.begin() + static_cast<std::ptrdiff_t>(end),
                    [](char c) { return c >= '0' && c <= '9'; }))
      return r.substr(end + 1);
  }
  return r;
}

void pipeline::add_checkpoint_part(
    std::string name, std::function<std::string()> save,
    std::function<void(const std::string&)> restore,
    std::function<std::string(const std::vector<std::string>&)> combine) {
  if (name.empty() || !save || !restore)
    throw invalid_argument_error(
        "add_checkpoint_part needs a name, a save and a restore function");
  // Two parts of one name are refused by snapshot and restore, not here: a
  // pipeline that never checkpoints may build two helpers of one scope.
  std::lock_guard<std::mutex> guard{state_->mtx};
  state_->parts.push_back(
      {std::move(name), std::move(save), std::move(restore), std::move(combine)});
}

void pipeline::restore(const pipeline_snapshot& s) {
  {
    std::lock_guard<std::mutex> guard{state_->mtx};
    for (auto& r : state_->runners)
      if (r.started())
        throw failed_precondition_error(
            "restore a pipeline before start_queue_runners: runner '" + r.name() +
            "' has started");
  }
  auto queues = queues_of(sys_, *state_);
  auto parts = parts_of(*state_);
  // Every name first: nothing is restored into a pipeline built otherwise.
  auto missing = [](const std::string& what, const std::string& name,
                    const std::string& where) {
    return invalid_argument_error("the checkpoint does not fit this pipeline: " + what +
                                  " '" + name + "' " + where +
                                  " (build the pipeline as the checkpointed run did)");
  };
  for (auto& [name, q] : queues)
    if (!s.queues.count(name))
      throw missing("queue", name, "of this pipeline is not in the checkpoint");
  for (auto& [name, qs] : s.queues)
    if (!queues.count(name))
      throw missing("queue", name, "of the checkpoint is not in this pipeline");
  std::set<std::string> part_names;
  for (auto& p : parts) {
    part_names.insert(p.name);
    if (!s.parts.count(p.name))
      throw missing("part", p.name, "of this pipeline is not in the checkpoint");
  }
  for (auto& [name, bytes] : s.parts)
    if (!part_names.count(name))
      throw missing("part", name, "of the checkpoint is not in this pipeline");
  for (auto& [name, batches] : s.held)
    if (!queues.count(name))
      throw missing("queue", name,
                    "whose batch reader held batches is not in this pipeline");
  for (auto& [name, q] : queues)
    blocking_queue{sys_, q}.restore(s.queues.at(name));
  for (auto& p : parts)
    p.restore(s.parts.at(p.name));
  std::lock_guard<std::mutex> guard{state_->mtx};
  state_->restored_held = s.held;
  state_->restored_step = s.step;
  state_->restored_members.clear();
  for (auto& kv : s.members)
    state_->restored_members.push_back(kv.first);
}

void pipeline::wait_checkpoint() {
  std::lock_guard<std::mutex> turn{state_->checkpoint_mtx};
  state_->checkpoint_files.wait();
}

std::optional<std::string> pipeline::restore_latest() {
  if (opts_.checkpoint_dir.empty())
    throw invalid_argument_error(
        "pipeline::restore_latest needs pipeline_options::checkpoint_dir");
  std::vector<std::string> refused;
  std::string path;
  auto c = read_latest_checkpoint(opts_.checkpoint_dir, &refused, &path);
  for (auto& why : refused)
    std::cerr << "quern: warning: passing over a checkpoint that does not read: " << why
              << '\n';
  if (!c)
    return std::nullopt;
  std::string member;
  {
    std::lock_guard<std::mutex> guard{state_->mtx};
    member = state_->member_name;
  }
  if (member.empty()) {
    restore(from_checkpoint(*c));
    return path;
  }
  // A member takes its own sections of the checkpoint, and those of the
  // members it takes over (RS-13).
  auto whole = from_checkpoint(*c);
  auto taken = taken_over_by(*state_, whole, member);
  auto mine = whole.members.find(member);
  if (mine == whole.members.end() && taken.empty()) {
    std::cerr << "quern: checkpoint '" << path << "' holds nothing of checkpoint member '"
              << member
              << "' (it had ended, or had not joined, when the checkpoint was taken): "
                 "it starts from the beginning\n";
    std::lock_guard<std::mutex> guard{state_->mtx};
    state_->restored_step = c->step;
    return path;
  }
  checkpoint_contents own;
  own.step = c->step;
  own.sections = sections_taken_over(*state_, whole, member, taken);
  restore(from_checkpoint(own));
  std::lock_guard<std::mutex> guard{state_->mtx};
  state_->taken_over = std::move(taken);
  return path;
}

int64_t pipeline::restored_step() const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  return state_->restored_step;
}

} // namespace quern
