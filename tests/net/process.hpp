#pragma once
// Child processes for the distributed tests: started with posix_spawn, their
// output in files of a scratch directory, and always reaped -- a child still
// running when its handle goes (a failed check) is killed with SIGKILL.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace quern::test {

/// A fresh directory under the temporary directory, removed at the end.
class scratch_dir {
public:
  scratch_dir() {
    auto base = std::filesystem::temp_directory_path() / "quern-distributed-XXXXXX";
    std::string tmpl = base.string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

/// One child process. With `pipe_stdin`, its stdin is a pipe that the test
/// holds open: close_stdin() (or the test's death) closes it.
class child {
public:
  child(std::string name, const std::vector<std::string>& args, const scratch_dir& dir,
        bool pipe_stdin = false)
      : name_(std::move(name)), out_(dir.file(name_ + ".stdout")),
        err_(dir.file(name_ + ".stderr")) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    int in_pipe[2] = {-1, -1};
    if (pipe_stdin) {
      if (::pipe2(in_pipe, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe failed");
      posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
    } else {
      posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    }
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    auto rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (pipe_stdin) {
      ::close(in_pipe[0]);
      stdin_ = in_pipe[1];
    }
    if (rc != 0)
      throw std::runtime_error("cannot start " + args.front());
  }

  ~child() {
    close_stdin();
    if (!status_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }
  child(const child&) = delete;
  child& operator=(const child&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }

  void close_stdin() {
    if (stdin_ >= 0) {
      ::close(stdin_);
      stdin_ = -1;
    }
  }

  void signal(int sig) { ::kill(pid_, sig); }

  /// The exit status once the child ended within `limit` (a signal's
  /// number + 128 for a child killed by it), nothing otherwise.
  std::optional<int> wait(std::chrono::milliseconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (!status_) {
      int st = 0;
      auto r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_)
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      else if (std::chrono::steady_clock::now() >= until)
        break;
      else
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return status_;
  }

  std::string out() const { return read_file(out_); }
  std::string err() const { return read_file(err_); }
  /// For a failed check: who, status, and what it printed.
  std::string report() const {
    std::ostringstream s;
    s << name_ << " (pid " << pid_ << ", status "
      << (status_ ? std::to_string(*status_) : std::string("running"))
      << ")\n--stdout--\n"
      << out() << "--stderr--\n"
      << err();
    return s.str();
  }

private:
  std::string name_;
  std::string out_;
  std::string err_;
  pid_t pid_ = -1;
  int stdin_ = -1;
  std::optional<int> status_;
};

/// Polls `pred` until it holds or `limit` passes.
template <class Pred>
bool eventually(std::chrono::milliseconds limit, Pred pred) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return true;
}

} // namespace quern::test
