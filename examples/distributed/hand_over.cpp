#include "hand_over.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>

#include <quern/blocking_queue.hpp>
#include <quern/element.hpp>
#include <quern/error.hpp>
#include <quern/input/decode_csv.hpp>
#include <quern/remote.hpp>

namespace quern::examples {

namespace {

std::string string_of(const element& e) {
  return e[0].values<std::string>()[0];
}

/// Leaves the reader's id in the host's 'alive' every `every` while it
/// lives, so that the host can tell a reader that is lost from one that is
/// busy. Ends when the queue is closed or its host lost.
class heartbeat {
public:
  heartbeat(caf::actor_system& sys, queue_actor alive, int id,
            std::chrono::milliseconds every)
      : thread_([this, &sys, alive, id, every] {
          blocking_queue q{sys, alive};
          std::unique_lock<std::mutex> lock{mtx_};
          while (!stop_) {
            lock.unlock();
            try {
              q.enqueue(element{tensor::scalar(static_cast<int32_t>(id))}, every);
            } catch (const deadline_exceeded_error&) {
            } catch (const op_error&) {
              return;
            }
            lock.lock();
            cv_.wait_for(lock, every, [this] { return stop_; });
          }
        }) {}
  ~heartbeat() {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  heartbeat(const heartbeat&) = delete;
  heartbeat& operator=(const heartbeat&) = delete;

private:
  std::mutex mtx_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_; // last: it starts once the others are made
};

} // namespace

unit_dispatcher::unit_dispatcher(caf::actor_system& sys, queue_actor filenames,
                                 queue_actor examples, queue_actor finished,
                                 queue_actor alive, std::vector<queue_actor> work,
                                 std::chrono::milliseconds lost_after)
    : sys_(sys), filenames_(std::move(filenames)), examples_(std::move(examples)),
      finished_(std::move(finished)), alive_(std::move(alive)), work_(std::move(work)),
      lost_after_(lost_after) {}

unit_dispatcher::~unit_dispatcher() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (size_t k = 1; k <= work_.size(); ++k)
      lost_.insert(static_cast<int>(k)); // every thread ends
  }
  cv_.notify_all();
  auto close = [&](const queue_actor& q) {
    try {
      blocking_queue{sys_, q}.close(true);
    } catch (const op_error&) {
    }
  };
  for (auto& q : work_)
    close(q);
  close(finished_);
  close(alive_);
  close(filenames_);
  for (auto& t : threads_)
    t.join();
}

void unit_dispatcher::start() {
  for (size_t k = 1; k <= work_.size(); ++k)
    threads_.emplace_back([this, k] { hand_out(static_cast<int>(k)); });
  threads_.emplace_back([this] { take_finished(); });
  threads_.emplace_back([this] { watch(); });
}

std::optional<std::string> unit_dispatcher::next_unit(int id) {
  std::unique_lock<std::mutex> lock{mtx_};
  for (;;) {
    if (lost_.count(id) || closed_)
      return std::nullopt;
    // One unit at a time, once the reader was heard: a reader that never
    // starts holds none, and a fast one takes the next as it needs it.
    bool holds_one = std::any_of(open_.begin(), open_.end(),
                                 [id](const auto& kv) { return kv.second == id; });
    if (!heard_.count(id) || holds_one) {
      cv_.wait(lock);
      continue;
    }
    if (!to_continue_.empty()) {
      auto unit = std::move(to_continue_.front());
      to_continue_.pop_front();
      open_[unit] = id;
      return unit;
    }
    if (no_more_files_) {
      cv_.wait(lock); // for a lost reader's unit, or the end
      continue;
    }
    lock.unlock();
    std::optional<std::string> path;
    try {
      path = string_of(blocking_queue{sys_, filenames_}.dequeue());
    } catch (const out_of_range_error&) {
    } catch (const cancelled_error&) {
    }
    lock.lock();
    if (!path) {
      no_more_files_ = true;
      if (all_finished()) {
        lock.unlock();
        close_when_finished();
        lock.lock();
      }
      cv_.notify_all();
      continue;
    }
    auto unit = *path + "#" + std::to_string(++times_[*path]);
    if (lost_.count(id)) { // lost while it waited for the file: another reads it
      to_continue_.push_back(unit);
      cv_.notify_all();
      return std::nullopt;
    }
    open_[unit] = id;
    return unit;
  }
}

void unit_dispatcher::hand_out(int id) {
  blocking_queue work{sys_, work_[static_cast<size_t>(id - 1)]};
  while (auto unit = next_unit(id)) {
    try {
      work.enqueue(element{tensor::scalar(*unit)}); // once the reader took the last
    } catch (const op_error&) {
      // Closed by lost(): the unit goes on elsewhere, unless lost() moved it.
      std::lock_guard<std::mutex> guard{mtx_};
      auto i = open_.find(*unit);
      if (i != open_.end() && i->second == id) {
        open_.erase(i);
        to_continue_.push_front(*unit);
        cv_.notify_all();
      }
      return;
    }
  }
  try {
    work.close(); // the reader's next dequeue ends: no more work
  } catch (const op_error&) {
  }
}

void unit_dispatcher::take_finished() {
  blocking_queue finished{sys_, finished_};
  for (;;) {
    std::string unit;
    try {
      unit = string_of(finished.dequeue());
    } catch (const op_error&) {
      return; // closed: every unit finished, or the job ends
    }
    bool done = false;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      open_.erase(unit);
      done = all_finished();
    }
    cv_.notify_all(); // its reader takes the next unit
    if (done)
      close_when_finished();
  }
}

void unit_dispatcher::watch() {
  blocking_queue alive{sys_, alive_};
  for (;;) {
    try {
      auto id = static_cast<int>(alive.dequeue(lost_after_ / 4)[0].values<int32_t>()[0]);
      std::lock_guard<std::mutex> guard{mtx_};
      if (id >= 1 && id <= static_cast<int>(work_.size()) && !lost_.count(id)) {
        heard_[id] = std::chrono::steady_clock::now();
        cv_.notify_all();
      }
    } catch (const deadline_exceeded_error&) {
    } catch (const op_error&) {
      return; // closed: the job ends
    }
    std::vector<int> silent;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (closed_)
        continue; // every unit is read: a reader that ends is not lost
      auto now = std::chrono::steady_clock::now();
      for (auto& [id, last] : heard_)
        if (!lost_.count(id) && now - last > lost_after_)
          silent.push_back(id);
    }
    for (auto id : silent)
      if (!lost(id, "not heard for " + std::to_string(lost_after_.count()) + " ms")) {
        if (no_reader_left_)
          no_reader_left_();
        return;
      }
  }
}

bool unit_dispatcher::all_finished() const {
  return no_more_files_ && open_.empty() && to_continue_.empty() && !closed_;
}

void unit_dispatcher::close_when_finished() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (closed_)
      return;
    closed_ = true;
  }
  cv_.notify_all();
  try {
    blocking_queue{sys_, examples_}.close();
  } catch (const op_error&) {
  }
  try {
    blocking_queue{sys_, finished_}.close();
  } catch (const op_error&) {
  }
  std::cout << "host: every unit read; 'examples' closed" << std::endl;
}

bool unit_dispatcher::lost(int id, const std::string& why) {
  std::vector<std::string> units;
  bool anyone_left = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!lost_.insert(id).second)
      return lost_.size() < work_.size() || closed_;
    for (auto i = open_.begin(); i != open_.end();) {
      if (i->second == id) {
        units.push_back(i->first);
        to_continue_.push_back(i->first);
        i = open_.erase(i);
      } else {
        ++i;
      }
    }
    handed_over_ += static_cast<int64_t>(units.size());
    anyone_left = lost_.size() < work_.size();
  }
  cv_.notify_all();
  try {
    // Its dispatcher's enqueue waiting for room ends; what the queue holds
    // is read by no one.
    blocking_queue{sys_, work_[static_cast<size_t>(id - 1)]}.close(true);
  } catch (const op_error&) {
  }
  auto go_on = anyone_left || complete();
  std::cout << "host: reader-" << id << " lost (" << why << ")";
  if (!go_on)
    std::cout << "; no reader is left to go on with its units";
  else if (units.empty())
    std::cout << "; it held no unfinished unit";
  else
    for (auto& u : units)
      std::cout << "; unit " << u << " goes on with another reader";
  std::cout << std::endl;
  return go_on;
}

int64_t unit_dispatcher::handed_over() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return handed_over_;
}

bool unit_dispatcher::complete() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return closed_;
}

int64_t read_units(caf::actor_system& sys, const std::string& host_address, int id,
                   int32_t batch_size, const std::vector<tensor>& record_defaults,
                   std::chrono::milliseconds lost_after,
                   const std::function<void(int64_t)>& log) {
  auto host = connect(sys, host_address);
  auto name = "reader-" + std::to_string(id);
  heartbeat beat{sys, host.queue("alive"), id, lost_after / 5};
  blocking_queue work{sys, host.queue("work-" + std::to_string(id))};
  blocking_queue finished{sys, host.queue("finished")};
  int64_t sent = 0;
  for (;;) {
    std::string unit;
    try {
      unit = string_of(work.dequeue());
    } catch (const out_of_range_error&) {
      return sent; // every unit of the job is finished
    }
    auto path = unit.substr(0, unit.rfind('#'));
    // Named after the unit: a reader that goes on with it after this one
    // was lost learns from the queue what this one stored.
    remote_producer out{sys, host_address, "examples", unit};
    auto skip = static_cast<int64_t>(out.resumed_after()) * batch_size;
    if (skip > 0)
      std::cout << name << ": goes on with " << unit << " after its " << skip
                << " rows the queue holds" << std::endl;
    std::ifstream in{path};
    if (!in)
      throw not_found_error(name + ": cannot read unit " + unit + ": cannot open '" +
                            path + "'");
    std::string line;
    std::getline(in, line); // the header
    for (int64_t i = 0; i < skip && std::getline(in, line); ++i) {
    }
    std::vector<std::string> lines;
    auto send = [&] {
      auto n = static_cast<int64_t>(lines.size());
      out.push_batch(element{
          decode_csv(tensor::vector<std::string>(std::move(lines)), record_defaults)});
      lines.clear();
      sent += n;
      log(sent);
    };
    while (std::getline(in, line)) {
      lines.push_back(line);
      if (lines.size() == static_cast<size_t>(batch_size))
        send();
    }
    if (!lines.empty())
      send();
    out.flush(); // every row of the unit stored
    finished.enqueue(element{tensor::scalar(unit)});
  }
}

} // namespace quern::examples
