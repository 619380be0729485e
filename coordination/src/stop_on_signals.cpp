#include "quern/stop_on_signals.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "quern/error.hpp"

namespace quern {

namespace {

// The one live object's pipe and what its handler saw. A signal handler may
// only touch lock-free atomics and call async-signal-safe functions (write).
std::atomic<int> pipe_in{-1};
std::atomic<int> pipe_out{-1};
std::atomic<int> first_signal{0};
std::atomic<bool> in_use{false};
// The previous actions, for the handler to put back (read-only while live).
constexpr int max_signal = 65;
struct sigaction saved[max_signal];

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  first_signal.compare_exchange_strong(expected, sig);
  // A second signal takes the action it had before this object.
  if (sig > 0 && sig < max_signal)
    sigaction(sig, &saved[sig], nullptr);
  int saved_errno = errno;
  char byte = 1;
  auto fd = pipe_in.load();
  if (fd >= 0)
    (void)!::write(fd, &byte, 1);
  errno = saved_errno;
}

} // namespace

stop_on_signals::stop_on_signals(coordinator& coord, std::vector<int> signals)
    : coord_(coord), signals_(std::move(signals)) {
  for (int sig : signals_)
    if (sig <= 0 || sig >= max_signal || sig == SIGKILL || sig == SIGSTOP)
      throw invalid_argument_error("stop_on_signals: signal " + std::to_string(sig) +
                                   " cannot be caught");
  if (in_use.exchange(true))
    throw failed_precondition_error(
        "stop_on_signals: another one is alive in this process; one at a time");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    in_use = false;
    throw failed_precondition_error(std::string("stop_on_signals: pipe failed: ") +
                                    std::strerror(errno));
  }
  pipe_out = fds[0];
  pipe_in = fds[1];
  first_signal = 0;
  struct sigaction act {};
  act.sa_handler = on_stop_signal;
  sigemptyset(&act.sa_mask);
  act.sa_flags = SA_RESTART;
  for (int sig : signals_) {
    sigaction(sig, nullptr, &saved[sig]);
    previous_.push_back(saved[sig]);
    sigaction(sig, &act, nullptr);
  }
  watcher_ = std::thread{[this, fd = fds[0]] {
    char byte = 0;
    while (true) {
      auto n = ::read(fd, &byte, 1);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0 || byte == 0) // the destructor's byte, or the pipe closed
        return;
      coord_.request_stop();
    }
  }};
}

stop_on_signals::~stop_on_signals() {
  for (size_t i = 0; i < signals_.size(); ++i)
    sigaction(signals_[i], &previous_[i], nullptr);
  char stop = 0;
  (void)!::write(pipe_in.load(), &stop, 1);
  watcher_.join();
  ::close(pipe_in.exchange(-1));
  ::close(pipe_out.exchange(-1));
  in_use = false;
}

int stop_on_signals::received() const noexcept {
  return first_signal.load();
}

} // namespace quern
