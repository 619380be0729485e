// A program that logs scalars and then dies without another call of its
// writer. Two modes:
//   crash_writer LOGDIR N abort|exception
//     logs N scalars, waits 1.5 s, then dies (writer_test.cpp);
//   crash_writer LOGDIR stream ABORT_MS
//     logs scalar after scalar (step i has value i) and prints
//     `<step> <steady_clock ns>` after every 20th call returned, until it is
//     killed or, with ABORT_MS > 0, until it calls abort() ABORT_MS ms after
//     its start (crash_consistency_test.cpp).
// The tests around it check that what it logged reached the file
// (summary_batch_delay and summary_write_delay bound what a crash can lose).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "quern/messages.hpp"
#include "quern/summary/summary_writer.hpp"

namespace {

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void stream(quern::summary_writer& w, long abort_ms) {
  auto start = std::chrono::steady_clock::now();
  for (long i = 0;; ++i) {
    w.scalar("loss", static_cast<double>(i), i);
    if (i % 20 == 0) {
      std::printf("%ld %lld\n", i, now_ns());
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    if (abort_ms > 0 &&
        std::chrono::steady_clock::now() - start > std::chrono::milliseconds(abort_ms))
      std::abort();
  }
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: crash_writer LOGDIR N abort|exception\n"
                 "       crash_writer LOGDIR stream ABORT_MS\n";
    return 2;
  }
  quern::config cfg;
  caf::actor_system sys{cfg};
  quern::summary_writer w{sys, argv[1]};
  if (std::string{argv[2]} == "stream")
    stream(w, std::stol(argv[3]));
  auto n = std::stol(argv[2]);
  for (long i = 0; i < n; ++i)
    w.scalar("loss", 1.0 / static_cast<double>(i + 1), i);
  // No further call: the events must reach the OS by themselves.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  if (std::string{argv[3]} == "exception")
    throw std::runtime_error("uncaught"); // std::terminate: no destructor runs
  std::abort();
}
