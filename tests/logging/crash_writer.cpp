// A program that logs scalars and then dies without another call of its
// writer: `crash_writer LOGDIR N abort|exception`. The test around it checks
// that what it logged reached the file (summary_batch_delay and
// summary_write_delay bound what a crash can lose).

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "quern/messages.hpp"
#include "quern/summary/summary_writer.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: crash_writer LOGDIR N abort|exception\n";
    return 2;
  }
  quern::config cfg;
  caf::actor_system sys{cfg};
  quern::summary_writer w{sys, argv[1]};
  auto n = std::stol(argv[2]);
  for (long i = 0; i < n; ++i)
    w.scalar("loss", 1.0 / static_cast<double>(i + 1), i);
  // No further call: the events must reach the OS by themselves.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  if (std::string{argv[3]} == "exception")
    throw std::runtime_error("uncaught"); // std::terminate: no destructor runs
  std::abort();
}
