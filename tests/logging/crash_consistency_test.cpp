// Crash consistency of event files (issue: "keep every promise under
// attack"): a writing process is killed with SIGKILL, or calls abort(), at a
// random moment, 50 times. After each death the file is readable up to its
// last whole record (at most a torn final record, never a damaged one
// before it), and every scalar logged longer ago than the writer's flush
// bound (summary_batch_delay + summary_write_delay) is in it, in order.

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "quern/summary/reader.hpp"
#include "quern/summary/summary_writer.hpp"
#include "test_util.hpp"

extern char** environ;

using namespace quern;
using quern::test::event_files;
using quern::test::temp_dir;

namespace {

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct logged {
  long step;
  long long at_ns;
};

struct death {
  std::vector<logged> progress; // what the child said it had logged, and when
  long long died_ns = 0;        // when it was killed (or said its last line)
  int status = 0;
};

/// Runs the streaming crash_writer into `logdir`; kills it with SIGKILL
/// after `kill_ms`, or lets it abort() itself after `abort_ms`.
death run_child(const std::string& logdir, int kill_ms, int abort_ms) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::string path = QUERN_CRASH_WRITER_PATH;
  std::string abort_arg = std::to_string(abort_ms);
  char* argv[] = {path.data(), const_cast<char*>(logdir.c_str()),
                  const_cast<char*>("stream"), abort_arg.data(), nullptr};
  pid_t pid = 0;
  REQUIRE(::posix_spawn(&pid, path.c_str(), &fa, nullptr, argv, environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  death d;
  std::thread killer;
  if (kill_ms > 0)
    killer = std::thread{[&d, pid, kill_ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(kill_ms));
      d.died_ns = now_ns();
      ::kill(pid, SIGKILL);
    }};
  // Everything the child printed, up to its death (the pipe ends then).
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) > 0)
    text.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  if (killer.joinable())
    killer.join();
  REQUIRE(::waitpid(pid, &d.status, 0) == pid);
  std::istringstream in{text};
  logged l;
  while (in >> l.step >> l.at_ns)
    d.progress.push_back(l);
  if (kill_ms == 0 && !d.progress.empty())
    d.died_ns = d.progress.back().at_ns; // abort() came right after
  return d;
}

} // namespace

namespace {

// 25 children, each killed by SIGKILL (`by_kill`) or by its own abort() at a
// random moment, leave readable files with every event older than the
// writer's flush bound. Two test cases of 25 trials, so that CTest runs them
// side by side.
void check_crashes(bool by_kill, unsigned seed) {
  // The writer's bound, plus slack for a loaded 2-core machine (the test
  // runs beside others, and under ASan).
  auto bound = summary_batch_delay + summary_write_delay;
  auto slack = std::chrono::milliseconds(750);
  auto old_enough_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(bound + slack).count();
  std::mt19937 rng{seed};
  int crashes = 0, checked_steps = 0;
  for (int trial = 0; trial < 25; ++trial) {
    temp_dir dir;
    int ms = 50 + static_cast<int>(rng() % 2200);
    INFO("trial " << trial << ": " << (by_kill ? "SIGKILL" : "abort()") << " after " << ms
                  << " ms");
    auto d = run_child(dir.path(), by_kill ? ms : 0, by_kill ? 0 : ms);
    CHECK(WIFSIGNALED(d.status));
    ++crashes;
    auto files = event_files(dir.path());
    if (files.empty()) {
      // Killed before the writer created its file: nothing was logged long
      // enough ago to be owed.
      for (auto& p : d.progress)
        CHECK(d.died_ns - p.at_ns < old_enough_ns);
      continue;
    }
    REQUIRE(files.size() == 1);
    auto c = read_event_file(files[0]);
    // Readable up to its last whole record: at most the final record is
    // torn; no record before it is damaged.
    if (c.error) {
      auto msg = message_of(c.error);
      INFO(msg);
      CHECK(msg.rfind("truncated record at ", 0) == 0);
    }
    REQUIRE(!c.events.empty()); // the file_version record
    // The scalars in file order: steps 0, 1, 2, ... without a gap.
    long expect = 0;
    long out_of_order = 0;
    for (auto& ev : c.events)
      if (auto s = caf::get_if<summary_event::summary>(&ev.what))
        for (auto& v : s->values)
          if (auto x = caf::get_if<float>(&v.value)) {
            if (ev.step != expect || *x != static_cast<float>(expect))
              ++out_of_order;
            ++expect;
          }
    CHECK(out_of_order == 0);
    // Every step the child had logged longer ago than the bound is there.
    long owed = -1;
    for (auto& p : d.progress)
      if (d.died_ns - p.at_ns >= old_enough_ns)
        owed = p.step;
    INFO("file has steps 0.." << expect - 1 << ", owed 0.." << owed);
    CHECK(expect > owed);
    checked_steps += static_cast<int>(owed + 1);
  }
  CHECK(crashes == 25);
  CHECK(checked_steps > 0); // some trials ran long enough to owe steps
}

} // namespace

TEST_CASE("a writer killed by SIGKILL at a random moment leaves a readable file with "
          "every event older than its flush bound",
          "[writer][crash]") {
  check_crashes(true, 1124);
}

TEST_CASE("a writer that aborts at a random moment leaves a readable file with every "
          "event older than its flush bound",
          "[writer][crash]") {
  check_crashes(false, 1125);
}
