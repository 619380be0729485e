#pragma once

// Where a pipeline writes its checkpoint files while it runs on.

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>

namespace quern::detail {

/// Runs jobs one after another in one thread of its own, started with the
/// first job; destroyed, it finishes the jobs it holds and joins. One thread
/// for every file written (std::async) cost the pipeline more than the file:
/// its creation and end stop every thread of the process for a moment.
class background_writes {
public:
  background_writes() = default;
  background_writes(const background_writes&) = delete;
  background_writes& operator=(const background_writes&) = delete;

  ~background_writes() {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable())
      thread_.join();
  }

  /// Queues `job`; its future holds what it returns, or what it throws.
  /// The job must not own what owns this object (it would be destroyed in
  /// this object's own thread).
  std::future<std::string> submit(std::packaged_task<std::string()> job) {
    auto done = job.get_future();
    {
      std::lock_guard<std::mutex> guard{mtx_};
      jobs_.push_back(std::move(job));
      if (!thread_.joinable())
        thread_ = std::thread{[this] { run(); }};
    }
    cv_.notify_one();
    return done;
  }

private:
  void run() {
    for (;;) {
      std::packaged_task<std::string()> job;
      {
        std::unique_lock<std::mutex> guard{mtx_};
        cv_.wait(guard, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty())
          return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job(); // and what it captured goes with it
    }
  }

  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<std::string()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace quern::detail
