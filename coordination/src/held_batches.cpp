// The batches a pipeline's batch readers (make_batch_reader) had received
// and not handed out: taken by a snapshot with the readers' demand withdrawn,
// saved as `held/<queue>` sections, and handed out first by the restored
// pipeline's reader of that queue (RS-17).

#include <algorithm>

#include "quern/detail/receipts.hpp"
#include "quern/error.hpp"

#include "pipeline_checkpoint.hpp"
#include "pipeline_state.hpp"

namespace quern {

namespace pipeline_ckpt {

std::vector<std::pair<queue_actor, std::shared_ptr<detail::pull_stream>>>
live_readers(const consumer::state& st) {
  std::vector<std::pair<queue_actor, std::shared_ptr<detail::pull_stream>>> out;
  std::lock_guard<std::mutex> guard{st.mtx};
  for (auto& r : st.readers)
    if (auto stream = r.stream.lock())
      out.emplace_back(r.queue, std::move(stream));
  return out;
}

bool fits(const std::vector<element>& batches, int32_t batch_size, batch_cut cut) {
  return std::all_of(batches.begin(), batches.end(), [&](const element& b) {
    auto n = b.batch_size();
    return n <= batch_size && (cut != batch_cut::dequeue_many || n == batch_size);
  });
}

void refuse_if_held(caf::actor_system& sys, const consumer::state& st,
                    const queue_actor& q, const std::string& instead) {
  {
    std::lock_guard<std::mutex> guard{st.mtx};
    if (st.restored_held.empty())
      return;
  }
  auto name = name_of(sys, st, q);
  std::lock_guard<std::mutex> guard{st.mtx};
  auto i = st.restored_held.find(name);
  if (i == st.restored_held.end())
    return;
  throw failed_precondition_error(
      "the restored checkpoint holds " + std::to_string(i->second.size()) +
      " batches that the batch reader of queue '" + name +
      "' had received and not handed out: " + instead +
      " cannot hand them out (make the batch reader as the checkpointed run did, "
      "make_batch_reader with the same batch size and cut)");
}

settled_readers
settle_readers(caf::actor_system& sys, const consumer::state& st, caf::timespan limit,
               const std::function<std::string(const std::string&)>& not_taken) {
  // Should a later reader throw, the destructor awaits what was sent.
  settled_readers out;
  for (auto& [q, stream] : live_readers(st)) {
    auto name = name_of(sys, st, q);
    if (detail::confirms_taking(q))
      throw failed_precondition_error(
          "the batch reader of queue '" + name +
          "' reads a queue of another process: a checkpoint cannot take the batches "
          "on their way to it (read it with a batch_reader of its own, outside the "
          "pipeline, or take batches with make_consumer)");
    std::unique_lock<std::timed_mutex> lock{stream->mtx, std::defer_lock};
    if (!lock.try_lock_for(limit))
      throw deadline_exceeded_error(not_taken("the batch reader of queue '" + name +
                                              "' was in a pull() of another thread for " +
                                              seconds(limit) +
                                              " (take checkpoints between pulls)"));
    // Its demand withdrawn and the lock held, nothing moves from its queue
    // to it until the snapshot is taken.
    stream->begin_settle();
    out.streams.emplace_back(std::move(name), std::move(stream));
    out.locks.push_back(std::move(lock));
  }
  return out;
}

settled_readers::~settled_readers() {
  take_held(*this);
}

void take_held(settled_readers& readers) {
  if (readers.taken)
    return;
  readers.taken = true;
  for (auto& [name, stream] : readers.streams) {
    auto batches = stream->settle();
    auto& into = readers.held[name];
    into.insert(into.end(), std::make_move_iterator(batches.begin()),
                std::make_move_iterator(batches.end()));
  }
}

} // namespace pipeline_ckpt

using namespace pipeline_ckpt;

batch_reader pipeline::make_batch_reader(queue_actor q, int32_t batch_size, batch_cut cut,
                                         size_t window) const {
  batch_reader r{sys_, q, batch_size, cut, window};
  bool any_restored;
  {
    std::lock_guard<std::mutex> guard{state_->mtx};
    any_restored = !state_->restored_held.empty();
  }
  if (any_restored) {
    auto name = name_of(sys_, *state_, q);
    std::lock_guard<std::mutex> guard{state_->mtx};
    if (auto i = state_->restored_held.find(name); i != state_->restored_held.end()) {
      // Kept for a reader that fits them, when this one does not.
      if (!fits(i->second, batch_size, cut))
        throw invalid_argument_error(
            "the restored checkpoint holds " + std::to_string(i->second.size()) +
            " batches that the batch reader of queue '" + name +
            "' had received and not handed out, the first of " +
            std::to_string(i->second.front().batch_size()) +
            " rows: a batch reader of batch size " + std::to_string(batch_size) +
            (cut == batch_cut::dequeue_many ? " that cuts dequeue_many" : "") +
            " cannot hand them out (make it with the checkpointed run's batch size "
            "and cut)");
      std::lock_guard<std::timed_mutex> stream_guard{r.stream()->mtx};
      r.stream()->prefill(std::move(i->second));
      state_->restored_held.erase(i);
    }
  }
  std::lock_guard<std::mutex> guard{state_->mtx};
  auto& readers = state_->readers;
  readers.erase(std::remove_if(readers.begin(), readers.end(),
                               [](const auto& x) { return x.stream.expired(); }),
                readers.end());
  readers.push_back({q, r.stream()});
  state_->consumed.push_back(std::move(q));
  return r;
}

} // namespace quern
