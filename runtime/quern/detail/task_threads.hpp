#pragma once

// Threads of one's own for blocking work (a file written, lines decoded),
// which must not hold a scheduler thread.

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>

namespace quern::detail {

/// `count` threads that run the tasks given, in the order given, started
/// with the first task (many owners never give one). A task's result, or
/// what it throws, goes to its future. Destroyed, the threads run the tasks
/// left, then are joined. A task must not own what owns these threads: it
/// would be destroyed in one of them. The threads carry `name` (at most 15
/// characters, as Linux keeps), so that top -H, gdb and profilers tell them
/// from the scheduler's. `background` threads run as Linux's SCHED_BATCH:
/// woken, they do not preempt the thread that woke them, so work handed to
/// them (a checkpoint file) runs beside that thread instead of holding it
/// up; they still get their share of the CPU.
template <class R>
class task_threads {
public:
  explicit task_threads(std::string name, int count = 1, bool background = false)
      : name_(std::move(name)), count_(count < 1 ? 1 : count), background_(background) {}
  task_threads(const task_threads&) = delete;
  task_threads& operator=(const task_threads&) = delete;

  ~task_threads() {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
      t.join();
  }

  std::future<R> submit(std::packaged_task<R()> task) {
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> guard{mtx_};
      tasks_.push_back(std::move(task));
      if (threads_.empty())
        for (int i = 0; i < count_; ++i)
          threads_.emplace_back([this] { work(); });
    }
    cv_.notify_one();
    return result;
  }

private:
  void work() {
    ::pthread_setname_np(::pthread_self(), name_.substr(0, 15).c_str());
#ifdef SCHED_BATCH
    if (background_) {
      sched_param normal{}; // SCHED_BATCH's only priority, 0
      ::pthread_setschedparam(::pthread_self(), SCHED_BATCH, &normal); // best effort
    }
#endif
    for (;;) {
      std::packaged_task<R()> task;
      {
        std::unique_lock<std::mutex> guard{mtx_};
        cv_.wait(guard, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty())
          return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task(); // and what it captured goes with it
    }
  }

  const std::string name_;
  const int count_;
  const bool background_;
  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<R()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

} // namespace quern::detail
