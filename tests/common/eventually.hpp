#pragma once

// A bounded wait for a condition another thread makes true: every suite's
// tests poll with it rather than with a loop of their own.

#include <chrono>
#include <thread>

namespace quern::test {

/// Polls `pred` (sleeping 1 ms between tries) up to a safety limit.
template <class Pred>
bool eventually(Pred pred, std::chrono::seconds limit = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

} // namespace quern::test
