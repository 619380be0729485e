#pragma once

// A queue's side of producers that retry (enqueue_keyed, quern/batch_key.hpp,
// docs/distributed.md#retried-batches): per producer name, its recent batches
// and how much of each is stored, so that a retry stores nothing twice and
// nothing is left out. Private to queues/.

#include <optional>
#include <string>
#include <unordered_map>

#include <caf/response_promise.hpp>

#include "quern/batch_key.hpp"
#include "quern/element.hpp"

#include "attempts.hpp"

namespace quern::detail {

class queue_core;

class producer_marks {
public:
  /// Judges a keyed enqueue of `batch`. Answers `rp` itself when nothing is
  /// to be stored (a refusal, a batch the queue holds whole, an empty one);
  /// otherwise, when it is the first batch sent again under a new attempt,
  /// withdraws what the producer's earlier attempt left waiting (sent again
  /// after it, in order), and returns the attempt that stores the rows not
  /// stored yet, for the caller to add with its deadline.
  std::optional<enqueue_attempt> admit(queue_core& q, const batch_key& key,
                                       element& batch,
                                       caf::typed_response_promise<int32_t>& rp);

  /// The last batch of `producer` before the first one it remembers that is
  /// not stored whole, and the last attempt seen.
  batch_key position(const std::string& producer) const;

private:
  // Never erased: an attempt points at its producer's mark while it waits.
  std::unordered_map<std::string, keyed_mark> marks_;
};

} // namespace quern::detail
