#pragma once

// What a pipeline and its consumers share (private to coordination/): the
// runners, the consumed queues and the checkpoint parts (pipeline.cpp,
// pipeline_checkpoint.cpp).

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "quern/coordination.hpp"
#include "quern/pipeline.hpp"

#include "runner/worker_meter.hpp"

namespace quern {

struct consumer::state {
  pipeline_options opts;
  mutable std::mutex mtx;
  std::vector<queue_runner> runners;
  /// Queues handed to consumers (make_consumer): checkpointed with the
  /// runners' queues.
  std::vector<queue_actor> consumed;
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
  /// checkpoint_members_of: the coordinator whose members it pauses.
  coordinator_actor members_of;
  /// options().restore was acted on (by the first start_queue_runners).
  bool restore_tried = false;
  /// The checkpoint file being written in the background (checkpoint()),
  /// and its path; only the caller of checkpoint() touches it.
  std::future<void> writing;
  std::string writing_path;
  /// The consumers' meters (make_consumer, with opts.telemetry), and what
  /// every meter read at the previous telemetry() (its span starts there).
  std::vector<std::shared_ptr<detail::consumer_meter>> consumer_meters;
  std::mutex telemetry_mtx;
  int64_t telemetry_mark = detail::steady_ns();
  std::map<std::shared_ptr<detail::worker_meter>, detail::worker_reading> worker_marks;
  std::map<std::shared_ptr<detail::consumer_meter>, detail::consumer_meter::reading>
      consumer_marks;
};

} // namespace quern
