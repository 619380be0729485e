#pragma once

// The flagship's --hand-over (docs/distributed.md, "A lost reader's work goes
// on"): work units are the files of 'filenames', one epoch's reading of one
// file each, named `<path>#<n>` (the n-th time the file was handed out). The
// host hands each reader its units one at a time, the next once the last is
// finished, through a queue of its own ('work-<id>'), so the host knows which
// unit each reader holds before the reader sees it. A reader sends a unit's rows as a
// quern::remote_producer named after the unit, one batch per --batch-size lines, and
// leaves the unit's name in 'finished' once the queue confirmed all of them. Each reader
// leaves its id in 'alive' every lost_after / 5 while it runs. When a reader is lost (its
// process, started by the host, ended; or the host has not heard it for lost_after), its
// unfinished units go to the next reader that asks, which goes on where the queue stands:
// the batches stored whole are skipped, one stored in part gets its rest, and every row
// is stored once. A reader thought lost that was only slow finds the rows it sends after
// that refused by the queue (its unit's producer name is another's now), and ends.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>

#include <quern/queue.hpp>
#include <quern/tensor.hpp>

namespace quern::examples {

class unit_dispatcher {
public:
  /// `work[k]` is the queue of reader k + 1.
  unit_dispatcher(caf::actor_system& sys, queue_actor filenames, queue_actor examples,
                  queue_actor finished, queue_actor alive, std::vector<queue_actor> work,
                  std::chrono::milliseconds lost_after);
  /// Called once, from the dispatcher's thread, when it finds the last
  /// reader lost (not heard for lost_after): the job cannot go on.
  void on_no_reader_left(std::function<void()> f) { no_reader_left_ = std::move(f); }
  ~unit_dispatcher();
  unit_dispatcher(const unit_dispatcher&) = delete;
  unit_dispatcher& operator=(const unit_dispatcher&) = delete;

  /// Hands out units until every unit is finished, to each reader once it
  /// was heard; then closes the work queues and 'examples'.
  void start();
  /// Reader `id` is lost (`why`): its unfinished units go to the next
  /// readers that ask. False when no reader is left to take them: the job
  /// cannot go on. Once per reader; later calls only answer.
  bool lost(int id, const std::string& why);
  /// Units handed over from lost readers so far.
  int64_t handed_over() const;
  /// Whether every unit was finished and 'examples' closed.
  bool complete() const;

private:
  std::optional<std::string> next_unit(int id);
  void hand_out(int id);
  void take_finished();
  /// Reads 'alive', and finds the readers not heard for lost_after.
  void watch();
  /// Under the lock: whether every unit is finished (then, once, the
  /// caller closes what ends the job).
  bool all_finished() const;
  void close_when_finished();

  caf::actor_system& sys_;
  queue_actor filenames_, examples_, finished_, alive_;
  std::vector<queue_actor> work_;
  std::chrono::milliseconds lost_after_;
  std::function<void()> no_reader_left_;
  std::map<int, std::chrono::steady_clock::time_point> heard_; // last, by reader
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<std::string> to_continue_; // units of lost readers
  std::map<std::string, int> open_;     // unit -> the reader holding it
  std::map<std::string, int> times_;    // file -> units made of it
  std::set<int> lost_;
  bool no_more_files_ = false;
  bool closed_ = false;
  int64_t handed_over_ = 0;
  std::vector<std::thread> threads_;
};

/// A --hand-over reader: reads the units of its queue 'work-<id>' into
/// 'examples' and leaves each finished unit's name in 'finished', and its
/// id in 'alive' every lost_after / 5; logs its count to `log` (called with
/// the examples read so far, per batch). Returns the examples it sent.
int64_t read_units(caf::actor_system& sys, const std::string& host_address, int id,
                   int32_t batch_size, const std::vector<tensor>& record_defaults,
                   std::chrono::milliseconds lost_after,
                   const std::function<void(int64_t)>& log);

} // namespace quern::examples
