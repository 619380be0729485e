#pragma once

// How a queue answers an attempt: through a response promise (the request
// calls) or by a message to the client (the streaming protocol). Private to
// queues/.

#include <cstdint>
#include <vector>

#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/response_promise.hpp>

#include "quern/element.hpp"

namespace quern::detail {

/// How an attempt ends, sent to whoever waits for it.
class completion {
public:
  /// A request/response attempt: answered through a promise.
  static completion promise(caf::response_promise rp);
  /// A streamed push: the sender gets pushed(stored, error).
  static completion pushed_to(caf::strong_actor_ptr client);
  /// A streamed pull (a demand): the sender gets pulled(xs, error), possibly
  /// several times.
  static completion pulled_to(caf::strong_actor_ptr client);

  bool is_stream() const { return kind_ != kind::promise; }
  const caf::strong_actor_ptr& client() const { return client_; }

  void deliver_count(caf::local_actor* self, int32_t stored, caf::error err);
  /// What a demand yields: the batches (or rows) ready now and why it ended,
  /// if it did. A promise (a strict dequeue, count 1) gets either the one
  /// element or the error.
  void deliver_pulled(caf::local_actor* self, std::vector<element> xs, caf::error err);
  void deliver_bool(bool value);
  void deliver_error(caf::local_actor* self, caf::error err);

private:
  enum class kind { promise, pushed, pulled };
  kind kind_ = kind::promise;
  caf::response_promise rp_;
  caf::strong_actor_ptr client_;
};

} // namespace quern::detail
