// Checkpoint members (docs/resume.md, "Across processes"; RS-12): the
// pipeline of another process that pauses with a pipeline's checkpoint and
// answers its own queues and parts, and the checkpointing pipeline's side
// of them.

#include <atomic>
#include <iostream>
#include <set>
#include <thread>

#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "quern/error.hpp"

#include "pipeline_checkpoint.hpp"

namespace quern {

namespace pipeline_ckpt {

namespace {

/// A member's sections: its own queues and its parts, taken while its
/// runners are paused.
std::map<std::string, std::string> member_sections(caf::actor_system& sys,
                                                   const consumer::state& st) {
  // A member's batches on their way to a reader are not taken: refused.
  for (auto& [q, stream] : live_readers(st))
    throw failed_precondition_error(
        "the batch reader of queue '" + name_of(sys, st, q) +
        "' (make_batch_reader) is of a checkpoint member, whose checkpoint does not take "
        "the batches it holds (take batches with make_consumer there)");
  std::map<std::string, std::string> out;
  for (auto& [name, q] : snapshot_queues(sys, queues_of(sys, st)))
    out.emplace("queue/" + name, encode_queue_state(q));
  for (auto& p : parts_of(st))
    out.emplace("part/" + p.name, p.save());
  return out;
}

struct member_state {
  std::shared_ptr<consumer::state> st;
  std::string member;
  /// Paused for the checkpoint of `token`: these runners run again at its
  /// member_resume, or when the hold passed.
  bool paused = false;
  uint64_t token = 0;
  runner_groups runners;
  caf::timespan limit{0};
  /// Where the chief's previous reading of this member's figures ended
  /// (TL-10): apart from the pipeline's own, so that neither splits the
  /// other's span.
  detail::telemetry_marks marks;
  static inline const char* name = "quern.checkpoint_member";
};

using member_ptr = checkpoint_member_actor::stateful_pointer<member_state>;

checkpoint_member_actor::behavior_type
member_behavior(member_ptr self, std::shared_ptr<consumer::state> st, std::string name) {
  self->state.st = std::move(st);
  self->state.member = std::move(name);
  auto resume = [self] {
    auto& ms = self->state;
    resume_all(ms.runners.all(), ms.limit);
    ms.runners = {};
    ms.paused = false;
  };
  return {
      [self, resume](member_pause_atom, uint64_t token,
                     caf::timespan limit) -> caf::result<bool> {
        auto& ms = self->state;
        if (ms.paused)
          return make_error(error_code::failed_precondition,
                            "checkpoint member '" + ms.member +
                                "' is paused for another checkpoint already");
        ms.runners = running(*ms.st);
        ms.limit = limit;
        ms.paused = true;
        ms.token = token;
        auto late = pause_in_order(self->home_system(), ms.runners, limit);
        if (!late.empty()) {
          resume();
          return make_error(error_code::deadline_exceeded,
                            "worker(s) " + listed(late) + " of checkpoint member '" +
                                ms.member + "' did not pause within " + seconds(limit));
        }
        caf::delayed_anon_send(caf::actor_cast<checkpoint_member_actor>(self),
                               hold_of(limit), member_resume_atom::value, token);
        return true;
      },
      [self](member_sections_atom,
             uint64_t token) -> caf::result<std::map<std::string, std::string>> {
        auto& ms = self->state;
        if (!ms.paused || ms.token != token)
          return make_error(
              error_code::failed_precondition,
              "checkpoint member '" + ms.member +
                  "' is not paused for this checkpoint (it ran again on its "
                  "own after " +
                  seconds(hold_of(ms.limit)) + ")");
        try {
          return member_sections(self->home_system(), *ms.st);
        } catch (const op_error& e) {
          return make_error(e.code(),
                            "checkpoint member '" + ms.member + "': " + e.what());
        } catch (const std::exception& e) {
          return make_error(error_code::internal,
                            "checkpoint member '" + ms.member + "': " + e.what());
        }
      },
      [self, resume](member_resume_atom, uint64_t token) {
        auto& ms = self->state;
        if (!ms.paused || ms.token != token)
          return false;
        resume();
        return true;
      },
      [self](member_telemetry_atom) {
        // A detached actor: the reading's asks of the queues may block.
        auto& ms = self->state;
        return detail::read_telemetry(self->home_system(), *ms.st, ms.marks);
      },
  };
}

} // namespace

/// Asks `coord` for its checkpoint members.
std::vector<registration>
members_of(caf::actor_system& sys, const coordinator_actor& coord, caf::timespan limit) {
  std::vector<registration> out;
  caf::error failed;
  caf::scoped_actor self{sys};
  self->request(coord, limit, members_atom::value)
      .receive([&](std::vector<registration>& rs) { out = std::move(rs); },
               [&](caf::error& err) { failed = std::move(err); });
  if (failed)
    throw_error(make_error(
        failed.category() == error_category ? code_of(failed) : error_code::unavailable,
        "cannot ask the coordinator for its checkpoint members: " + sys.render(failed)));
  return out;
}

members_pause::members_pause(caf::actor_system& sys, const coordinator_actor& coord,
                             caf::timespan limit)
    : sys_(sys), limit_(limit), token_(0) {
  static std::atomic<uint64_t> next_token{1};
  token_ = next_token++;
  if (!coord)
    return;
  self_ = std::make_unique<caf::scoped_actor>(sys);
  members_ = members_of(sys, coord, limit);
  for (auto& m : members_)
    asked_.push_back((*self_)->request(m.actor, limit + std::chrono::seconds(5),
                                       member_pause_atom::value, token_, limit));
}

members_pause::~members_pause() {
  resume();
}

void members_pause::await_paused(std::vector<std::string>& failed) {
  for (size_t i = 0; i < asked_.size(); ++i)
    asked_[i].receive([&](bool) { paused_.push_back(members_[i]); },
                      [&](caf::error& err) {
                        failed.push_back("member '" + members_[i].name +
                                         "': " + sys_.render(err));
                      });
  asked_.clear();
}

void members_pause::take_sections(
    std::map<std::string, std::map<std::string, std::string>>& out,
    std::vector<std::string>& failed) {
  for (auto& m : paused_)
    (*self_)
        ->request(m.actor, limit_, member_sections_atom::value, token_)
        .receive(
            [&](std::map<std::string, std::string>& sections) {
              out.emplace(m.name, std::move(sections));
            },
            [&](caf::error& err) {
              failed.push_back("member '" + m.name + "': " + sys_.render(err));
            });
}

std::vector<std::string> members_pause::resume() {
  // Answers still owed to a pause are read first: a member that paused
  // late runs again too.
  std::vector<std::string> ignored;
  await_paused(ignored);
  std::vector<std::string> ran_on;
  for (auto& m : paused_)
    (*self_)
        ->request(m.actor, limit_, member_resume_atom::value, token_)
        .receive(
            [&](bool was_paused) {
              if (!was_paused)
                ran_on.push_back(m.name);
            },
            [](caf::error&) {}); // lost after its sections were taken
  paused_.clear();
  return ran_on;
}

std::vector<std::string> taken_over_by(const consumer::state& st,
                                       const pipeline_snapshot& whole,
                                       const std::string& me) {
  std::function<bool(const std::string&)> takes_over;
  {
    std::lock_guard<std::mutex> guard{st.mtx};
    takes_over = st.takes_over;
  }
  std::vector<std::string> out;
  if (takes_over)
    for (auto& kv : whole.members)
      if (kv.first != me && takes_over(kv.first))
        out.push_back(kv.first);
  return out;
}

std::map<std::string, std::string>
sections_taken_over(const consumer::state& st, const pipeline_snapshot& whole,
                    const std::string& me, const std::vector<std::string>& taken) {
  // `others`: `'a', 'b'`.
  auto refused = [&](const std::string& others, const std::string& why) {
    return failed_precondition_error("checkpoint member '" + me +
                                     "' cannot take over member(s) " + others + ": " +
                                     why);
  };
  std::map<std::string, std::string> out;
  std::map<std::string, std::vector<std::string>> states; // part states by part
  auto add = [&](const std::string& who, const std::map<std::string, std::string>& secs) {
    for (auto& [section, bytes] : secs) {
      if (section.rfind("part/", 0) == 0) {
        states[section.substr(5)].push_back(bytes);
        continue;
      }
      // A queue: this member's own; one of a member taken over only if empty
      // (its rows would have no queue of theirs to go back to).
      if (who != me) {
        auto q = decode_queue_state(bytes, "the checkpoint of member '" + who + "''s " +
                                               section);
        if (auto n = q.stored_rows() + q.waiting_rows(); n > 0)
          throw refused(joined({who}), "its " + section + " held " + std::to_string(n) +
                                           " row(s); restore it as a member of its own");
        if (out.count(section))
          continue;
      }
      out[section] = bytes;
    }
  };
  if (auto mine = whole.members.find(me); mine != whole.members.end())
    add(me, mine->second);
  for (auto& other : taken)
    add(other, whole.members.at(other));
  std::map<std::string, consumer::state::part> parts;
  for (auto& p : parts_of(st))
    parts.emplace(p.name, p);
  for (auto& [name, bytes] : states) {
    if (bytes.size() == 1) {
      out["part/" + name] = bytes.front();
      continue;
    }
    auto p = parts.find(name);
    if (p == parts.end() || !p->second.combine)
      throw refused(joined(taken), "part '" + name +
                                       "' cannot combine the states of several members "
                                       "(it has no combine function); restore on as many "
                                       "processes as the checkpointed run had");
    out["part/" + name] = p->second.combine(bytes);
  }
  return out;
}

} // namespace pipeline_ckpt

using namespace pipeline_ckpt;

void pipeline::add_checkpoint_queue(queue_actor q) {
  if (!q)
    throw invalid_argument_error("add_checkpoint_queue: invalid queue handle");
  std::lock_guard<std::mutex> guard{state_->mtx};
  state_->consumed.push_back(std::move(q));
}

void pipeline::checkpoint_as_member(const coordinator_actor& coord, std::string name,
                                    std::function<bool(const std::string&)> takes_over) {
  if (!coord)
    throw invalid_argument_error("checkpoint_as_member needs a coordinator");
  // Checked here too (the coordinator checks it), before anything is restored.
  if (name.empty() || name.find('/') != std::string::npos)
    throw invalid_argument_error(
        "a checkpoint member's name must be non-empty and without '/', not '" + name +
        "'");
  {
    std::lock_guard<std::mutex> guard{state_->mtx};
    if (!state_->member_name.empty())
      throw failed_precondition_error("this pipeline is checkpoint member '" +
                                      state_->member_name + "' already");
  }
  // Restored first, registered then: no checkpoint pauses a member that
  // has not taken its sections back.
  bool restore_first = false;
  {
    std::lock_guard<std::mutex> guard{state_->mtx};
    state_->member_name = name;
    state_->takes_over = std::move(takes_over);
    restore_first = opts_.restore && !state_->restore_tried;
    state_->restore_tried = true;
  }
  try {
    if (restore_first)
      restore_latest();
  } catch (...) {
    std::lock_guard<std::mutex> guard{state_->mtx};
    state_->member_name.clear();
    state_->takes_over = nullptr;
    throw;
  }
  auto member = sys_.spawn<caf::detached>(member_behavior, state_, name);
  caf::scoped_actor self{sys_};
  caf::error failed;
  self->request(coord, std::chrono::seconds(60), add_member_atom::value,
                caf::actor_cast<caf::actor>(member), name)
      .receive([](bool) {}, [&](caf::error& err) { failed = std::move(err); });
  if (failed) {
    caf::anon_send_exit(member, caf::exit_reason::user_shutdown);
    {
      std::lock_guard<std::mutex> guard{state_->mtx};
      state_->member_name.clear();
    }
    if (failed.category() == error_category)
      throw_error(failed);
    throw unavailable_error("cannot register checkpoint member '" + name +
                            "' with its coordinator: " + sys_.render(failed));
  }
  std::lock_guard<std::mutex> guard{state_->mtx};
  state_->member = caf::actor_cast<caf::actor>(member);
}

void pipeline::checkpoint_members_of(const coordinator_actor& coord) {
  if (!coord)
    throw invalid_argument_error("checkpoint_members_of needs a coordinator");
  std::lock_guard<std::mutex> guard{state_->mtx};
  state_->members_of = coord;
}

void pipeline::await_checkpoint_members(const std::vector<std::string>& names,
                                        caf::timespan limit) {
  coordinator_actor coord;
  {
    std::lock_guard<std::mutex> guard{state_->mtx};
    coord = state_->members_of;
  }
  if (!coord)
    throw failed_precondition_error(
        "await_checkpoint_members: call checkpoint_members_of first");
  auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    std::set<std::string> present;
    for (auto& r : members_of(sys_, coord, std::chrono::seconds(10)))
      present.insert(r.name);
    std::vector<std::string> missing;
    for (auto& n : names)
      if (!present.count(n))
        missing.push_back(n);
    if (missing.empty())
      return;
    if (std::chrono::steady_clock::now() >= until)
      throw deadline_exceeded_error("checkpoint member(s) " + joined(missing) +
                                    " did not register with the coordinator within " +
                                    seconds(limit));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<std::string> pipeline::taken_over_members() const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  return state_->taken_over;
}

std::vector<std::string> pipeline::restored_members() const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  return state_->restored_members;
}

} // namespace quern
