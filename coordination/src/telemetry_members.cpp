// The chief's side of its checkpoint members' telemetry (docs/semantics.md
// TL-10): see telemetry_members.hpp.

#include "telemetry_members.hpp"

#include <map>
#include <utility>

#include <caf/scoped_actor.hpp>

#include "quern/error.hpp"

#include "pipeline_checkpoint.hpp"

namespace quern::detail {

namespace {

/// The name a participant's queue gets in the merged reading (TL-10): a
/// queue of a member's process is `<member>/<queue>`; one of the chief's
/// process, or of a process that takes no part, keeps its name.
class queue_namer {
public:
  queue_namer(const std::string& chief_node, const std::vector<participant>& all)
      : chief_(chief_node) {
    for (auto& p : all)
      if (!p.member.empty() && p.reading.node != chief_)
        owners_.emplace(p.reading.node, p.member); // the first of a process
  }

  const queue_ref* ref(const participant& p, const std::string& name) const {
    for (auto& r : p.reading.queues)
      if (r.name == name)
        return &r;
    return nullptr;
  }

  std::string operator()(const participant& p, const std::string& name) const {
    if (name.empty())
      return name;
    auto r = ref(p, name);
    if (!r)
      return name;
    auto i = owners_.find(r->node);
    return i == owners_.end() ? name : i->second + "/" + name;
  }

private:
  std::string chief_;
  std::map<std::string, std::string> owners_; // node -> member
};

} // namespace

/// One reading of the chief and its members as one (TL-10): members'
/// stages and workers named `<member>/...`, queues named by queue_namer and
/// each queue once (the figures of its owner's reading when the owner took
/// part, else the first reading that has it: a queue's figures are its own
/// counters, whoever asks).
pipeline_telemetry merged_reading(const std::vector<participant>& all) {
  auto& chief = all.front();
  queue_namer name_of{chief.reading.node, all};
  pipeline_telemetry t;
  t.span_seconds = chief.reading.figures.span_seconds;
  std::map<std::string, std::pair<queue_telemetry, bool>> queues; // by name; owner's?
  std::vector<std::string> order;
  for (auto& p : all) {
    auto prefix = p.member.empty() ? std::string{} : p.member + "/";
    auto& f = p.reading.figures;
    for (auto c : f.consumers) {
      c.queue = name_of(p, c.queue);
      t.consumers.push_back(std::move(c));
    }
    for (auto r : f.runners) {
      r.name = prefix + r.name;
      r.queue = name_of(p, r.queue);
      r.input_queue = name_of(p, r.input_queue);
      if (!r.straggler.empty())
        r.straggler = prefix + r.straggler;
      for (auto& w : r.workers) {
        w.name = prefix + w.name;
        w.input_queue = name_of(p, w.input_queue);
      }
      t.runners.push_back(std::move(r));
    }
    for (auto q : f.queues) {
      auto r = name_of.ref(p, q.name);
      bool owner = r && !r->node.empty() && r->node == p.reading.node;
      auto name = name_of(p, q.name);
      q.name = name;
      auto i = queues.find(name);
      if (i == queues.end()) {
        order.push_back(name);
        queues.emplace(name, std::make_pair(std::move(q), owner));
      } else if (owner && !i->second.second) {
        i->second = std::make_pair(std::move(q), true);
      }
    }
  }
  for (auto& n : order)
    t.queues.push_back(queues.at(n).first);
  return t;
}

/// The readings of the coordinator's checkpoint members other than `self`,
/// asked all at once, each within member_answer_limit; `missing` gets a
/// note for each member that gave none (and for members seen by an earlier
/// reading that are gone).
void ask_members(caf::actor_system& sys, const coordinator_actor& coord,
                 const caf::actor& self_member, std::set<std::string>& seen,
                 std::vector<participant>& out, std::vector<std::string>& missing) {
  auto limit =
      std::to_string(
          std::chrono::duration_cast<std::chrono::seconds>(member_answer_limit).count()) +
      " s";
  std::vector<registration> members;
  try {
    members = pipeline_ckpt::members_of(sys, coord, member_answer_limit);
  } catch (const op_error& e) {
    missing.push_back("no figures from the checkpoint members (" + std::string{e.what()} +
                      ")");
    return;
  }
  caf::scoped_actor self{sys};
  std::vector<registration> asked;
  std::set<std::string> present;
  for (auto& m : members) {
    present.insert(m.name);
    if (m.actor == self_member)
      continue;
    asked.push_back(m);
  }
  using handle_t = decltype(self->request(
      caf::actor_cast<checkpoint_member_actor>(asked.front().actor), member_answer_limit,
      member_telemetry_atom::value));
  std::vector<handle_t> answers;
  for (auto& m : asked)
    answers.push_back(self->request(caf::actor_cast<checkpoint_member_actor>(m.actor),
                                    member_answer_limit, member_telemetry_atom::value));
  for (size_t i = 0; i < asked.size(); ++i) {
    auto& name = asked[i].name;
    answers[i].receive(
        [&](member_telemetry& m) {
          seen.insert(name);
          out.push_back(participant{name, std::move(m)});
        },
        [&](caf::error& err) {
          seen.insert(name);
          missing.push_back("no figures from member `" + name + "` (" +
                            (err == caf::sec::request_timeout
                                 ? "it did not answer within " + limit
                                 : sys.render(err)) +
                            ")");
        });
  }
  for (auto& n : seen)
    if (!present.count(n))
      missing.push_back("no figures from member `" + n + "` (it is gone)");
}

} // namespace quern::detail
