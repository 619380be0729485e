#pragma once

// What a consumer of a queue in another process confirms taking (taken,
// remote_queue_actor in quern/interfaces.hpp): the units it received,
// numbered from 1 in the order they came, are done with in any order; the
// queue's side is told the longest prefix done with, since that is all a
// count can say. Shared by the clients that confirm (the readers of
// queues/, a runner's workers in coordination/) and quern::net's endpoint;
// not for users.

#include <cstdint>
#include <map>

#include "quern/interfaces.hpp"

namespace quern::detail {

class prefix_receipts {
public:
  /// `n` more units came; returns the number of the first.
  uint64_t arrive(uint64_t n) {
    auto first = arrived_ + 1;
    arrived_ += n;
    return first;
  }
  /// Units first .. first + n - 1 are done with.
  void release(uint64_t first, uint64_t n) {
    if (n == 0)
      return;
    auto last = first + n - 1;
    if (last <= confirmed_)
      return;
    done_.emplace(first, last);
    for (auto i = done_.begin(); i != done_.end() && i->first <= confirmed_ + 1;
         i = done_.erase(i))
      confirmed_ = std::max(confirmed_, i->second);
  }
  /// Every unit that came is done with.
  void release_all() {
    confirmed_ = arrived_;
    done_.clear();
  }
  /// Units 1 .. confirmed() are done with.
  uint64_t confirmed() const { return confirmed_; }
  /// The confirmation to send, if there is a new one: marks it told.
  bool tell(uint64_t& n) {
    if (confirmed_ == told_)
      return false;
    n = told_ = confirmed_;
    return true;
  }

private:
  uint64_t arrived_ = 0;
  uint64_t confirmed_ = 0;
  uint64_t told_ = 0;
  std::map<uint64_t, uint64_t> done_; // done ranges [first, last] past confirmed_
};

/// The name (caf::local_actor::name) of quern::net's endpoint of a queue of
/// another process, by which confirms_taking knows it.
constexpr const char* remote_queue_endpoint_name = "quern.queue_endpoint";

/// Whether `q` stands for a queue of another process (quern::net's endpoint
/// of a remote_node, or a CAF proxy): its consumers confirm what they take
/// there. A queue of this process keeps nothing for them.
bool confirms_taking(const queue_actor& q);

/// Where a consumer of `q` sends taken(n): `q` itself when it stands for a
/// queue of another process, else none (nothing to tell).
remote_queue_actor receipts_to(const queue_actor& q);

} // namespace quern::detail
