#pragma once

// What a pipeline and its consumers share (private to coordination/): the
// runners, the consumed queues and the checkpoint parts (pipeline.cpp,
// pipeline_checkpoint.cpp).

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "quern/coordination.hpp"
#include "quern/pipeline.hpp"

#include "quern/detail/checkpoint_writer.hpp"

#include "runner/worker_meter.hpp"

namespace quern {

namespace detail {

/// What telemetry() remembers of a queue between two readings: its
/// counters at the previous reading (TL-11: the span's figures are their
/// deltas). Its name is the pipeline's (consumer::state::checkpoint_names).
struct queue_mark {
  queue_stats stats;
};

/// Where the previous reading of the figures ended: the span's start, and
/// what each worker's, consumer's and queue's counters read then.
struct telemetry_marks {
  using worker_map = std::map<std::shared_ptr<worker_meter>, worker_reading>;
  int64_t span = steady_ns();
  worker_map workers;
  std::map<std::shared_ptr<consumer_meter>, consumer_meter::reading> consumers;
  std::map<caf::actor_id, queue_mark> queues;
};

} // namespace detail

struct consumer::state {
  pipeline_options opts;
  mutable std::mutex mtx;
  std::vector<queue_runner> runners;
  /// Queues handed to consumers (make_consumer): checkpointed with the
  /// runners' queues.
  std::vector<queue_actor> consumed;
  /// The batch readers of make_batch_reader, whose held batches a snapshot
  /// takes (RS-17): gone ones are dropped when the next one is made.
  struct reader {
    queue_actor queue;
    std::weak_ptr<detail::pull_stream> stream;
  };
  std::vector<reader> readers;
  /// A restored snapshot's held batches, by queue name, until a batch reader
  /// of the queue that fits them takes them (the pipeline's end warns of
  /// those left).
  std::map<std::string, std::vector<element>> restored_held;
  struct part {
    std::string name;
    std::function<std::string()> save;
    std::function<void(const std::string&)> restore;
    /// Several saved states made one (empty: they cannot be, RS-13).
    std::function<std::string(const std::vector<std::string>&)> combine;
  };
  std::vector<part> parts;
  std::vector<std::pair<std::string, pipeline_setting>> settings;
  int64_t restored_step = 0;
  std::vector<std::string> restored_members;
  /// checkpoint_as_member: this pipeline's member name and actor.
  std::string member_name;
  caf::actor member;
  /// checkpoint_as_member's takes_over, and the members it took over.
  std::function<bool(const std::string&)> takes_over;
  std::vector<std::string> taken_over;
  /// Each queue's checkpoint name, from its spec, asked once by a checkpoint
  /// or a telemetry reading (known_name, remember_name).
  mutable std::map<caf::actor_addr, std::string> checkpoint_names;
  /// checkpoint_members_of: the coordinator whose members it pauses.
  coordinator_actor members_of;
  /// options().restore was acted on (by the first start_queue_runners).
  bool restore_tried = false;
  /// checkpoint() and wait_checkpoint() take turns under it: threads may
  /// share a pipeline. It guards checkpoint_files.
  std::mutex checkpoint_mtx;
  /// Where checkpoint() writes its files, one after another.
  detail::checkpoint_writer checkpoint_files;
  /// The consumers' meters (make_consumer, with opts.telemetry), and what
  /// every meter read at the previous telemetry() (its span starts there).
  std::vector<std::shared_ptr<detail::consumer_meter>> consumer_meters;
  std::mutex telemetry_mtx;
  detail::telemetry_marks marks;
  /// The checkpoint members whose figures telemetry() asked for: one that
  /// is gone is named in the verdict (TL-10).
  std::set<std::string> members_seen;
};

namespace detail {

/// A queue's checkpoint name if a checkpoint or a reading asked it before.
inline std::optional<std::string> known_name(const consumer::state& st,
                                             const queue_actor& q) {
  std::lock_guard<std::mutex> guard{st.mtx};
  auto i = st.checkpoint_names.find(q.address());
  if (i == st.checkpoint_names.end())
    return std::nullopt;
  return i->second;
}

inline void remember_name(const consumer::state& st, const queue_actor& q,
                          std::string name) {
  std::lock_guard<std::mutex> guard{st.mtx};
  st.checkpoint_names.emplace(q.address(), std::move(name));
}

/// One reading of a pipeline's figures over the span since `marks` (which
/// it moves on), without the verdict (TL-1..TL-4, TL-11), and which queue
/// each of its queue names is (TL-10). The pipeline's telemetry() reads
/// with its own marks, a checkpoint member with the marks it keeps for the
/// chief's readings; neither splits the other's span.
member_telemetry read_telemetry(caf::actor_system& sys, consumer::state& st,
                                telemetry_marks& marks);

} // namespace detail

} // namespace quern
