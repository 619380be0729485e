#pragma once

// blocking_client: how a blocking handle (blocking_queue, coordinator, summary_writer,
// ...) calls an actor from a thread that may block: a request, a wait for its answer
// without a client-side timeout, and the answer's error thrown as its op_error. Threads
// may call at once; each call leases a scoped_actor of its own. A handle of one's own:
//   quern::blocking_client client{sys};
//   auto n = client.call<int32_t>(q, quern::size_atom::value);

#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "quern/actor_system.hpp"
#include "quern/element.hpp"
#include "quern/error.hpp"

namespace quern {

namespace detail {
/// The atom a request starts with (its operation), for exit reports.
template <class T>
struct request_atom {
  static constexpr caf::atom_value value = caf::atom("");
};
template <caf::atom_value V>
struct request_atom<caf::atom_constant<V>> {
  static constexpr caf::atom_value value = V;
};
template <class T, class... Ts>
constexpr caf::atom_value first_atom() {
  return request_atom<std::decay_t<T>>::value;
}

/// Told of the blocking calls a thread makes (a queue runner's blocking op
/// measures how long its calls inside the op wait: docs/input.md, "Where
/// the pipeline waits"): begin() before the request, end() once it is
/// answered or failed. One per thread at most; none: nothing is measured
/// (one thread-local read per call).
class call_meter {
public:
  virtual ~call_meter() = default;
  /// A call of `op` (its first atom) to the actor `dest` starts.
  virtual void begin(caf::atom_value op, caf::actor_id dest) noexcept = 0;
  virtual void end() noexcept = 0;
  /// The calling thread's meter (null: none).
  static call_meter*& current() noexcept {
    static thread_local call_meter* meter = nullptr;
    return meter;
  }
};

/// Tells the calling thread's meter, if any, of one call for its scope.
class metered_call {
public:
  metered_call(caf::atom_value op, caf::actor_id dest) noexcept
      : meter_(call_meter::current()) {
    if (meter_ != nullptr)
      meter_->begin(op, dest);
  }
  ~metered_call() {
    if (meter_ != nullptr)
      meter_->end();
  }
  metered_call(const metered_call&) = delete;
  metered_call& operator=(const metered_call&) = delete;

private:
  call_meter* meter_;
};
} // namespace detail

/// The machinery every blocking handle (`blocking_queue`, `coordinator`,
/// `summary_writer`, ...) makes its calls with: a request to an actor, a wait
/// for its answer, and an error turned into the op_error it names.
///
/// It may be used by any number of threads at once. A caf::scoped_actor has
/// one mailbox and must be used by one thread at a time: two threads waiting
/// on one mailbox each take the other's answer, and one of them waits
/// forever. So each call leases a scoped_actor of its own from a small pool
/// (one per thread that is inside a call at the same moment), and returns it
/// when the answer is in. A thread blocked in a call therefore never stops
/// another thread from calling the same handle: a dequeue that waits for
/// data does not keep another thread from enqueueing it.
class blocking_client {
public:
  explicit blocking_client(caf::actor_system& sys)
      : sys_(&sys), pool_(std::make_shared<pool>()) {}

  blocking_client(blocking_client&&) noexcept = default;
  blocking_client& operator=(blocking_client&&) noexcept = default;

  /// A scoped_actor for one thread's exclusive use until the lease ends.
  class lease;

private:
  struct pool {
    std::mutex mtx;
    std::vector<std::unique_ptr<caf::scoped_actor>> free;

    void release(std::unique_ptr<caf::scoped_actor> a) {
      std::lock_guard<std::mutex> guard{mtx};
      free.push_back(std::move(a));
    }
  };

public:
  class lease {
  public:
    lease(lease&& other) noexcept
        : owner_(std::move(other.owner_)), actor_(std::move(other.actor_)) {}
    lease& operator=(lease&&) = delete;
    ~lease() {
      if (owner_)
        owner_->release(std::move(actor_));
    }
    caf::scoped_actor& operator*() const noexcept { return *actor_; }
    caf::scoped_actor* operator->() const noexcept { return actor_.get(); }

  private:
    friend class blocking_client;
    lease(std::shared_ptr<pool> owner, std::unique_ptr<caf::scoped_actor> actor)
        : owner_(std::move(owner)), actor_(std::move(actor)) {}
    std::shared_ptr<pool> owner_;
    std::unique_ptr<caf::scoped_actor> actor_;
  };

  lease acquire() {
    {
      std::lock_guard<std::mutex> guard{pool_->mtx};
      if (!pool_->free.empty()) {
        auto a = std::move(pool_->free.back());
        pool_->free.pop_back();
        return lease{pool_, std::move(a)};
      }
    }
    auto a = std::make_unique<caf::scoped_actor>(*sys_);
    // Named in exit reports: a handle still alive when the actor system
    // goes (made before it, or kept by a thread) keeps it from ending.
    detail::exit_watch::track(*sys_, caf::actor_cast<caf::actor>(*a),
                              "the caller actor of a blocking handle (a blocking_queue, "
                              "coordinator or summary_writer that is still alive)",
                              {}, false);
    return lease{pool_, std::move(a)};
  }

  caf::actor_system& system() const noexcept { return *sys_; }

  /// One request to `dest` and its answer of type T (void for none). The
  /// request carries no timeout of CAF's: the actors quern calls always
  /// answer, and one that enforces a deadline answers when it passes (a
  /// reply dropped by a client-side timeout could lose an element). Throws
  /// the op_error that the answer's error names.
  template <class T, class Dest, class... Ts>
  T call(const Dest& dest, Ts&&... xs) {
    auto self = acquire();
    return receive_answer<T>(*self, dest, std::forward<Ts>(xs)...);
  }

  /// Like call(), on a scoped_actor the caller holds (a handle that keeps
  /// its own mailbox for streaming, under its own lock).
  template <class T, class Dest, class... Ts>
  static T receive_answer(caf::scoped_actor& self, const Dest& dest, Ts&&... xs) {
    // Named in the exit report while it waits (quern::actor_system).
    auto addr = caf::actor_cast<caf::actor_addr>(dest);
    detail::exit_watch::blocked_call waiting{self->home_system(), addr,
                                             detail::first_atom<Ts...>()};
    detail::metered_call metered{detail::first_atom<Ts...>(), addr.id()};
    caf::error err;
    if constexpr (std::is_void<T>::value) {
      self->request(dest, caf::infinite, std::forward<Ts>(xs)...)
          .receive([] {}, [&](caf::error& e) { err = std::move(e); });
      if (err)
        throw_error(err);
    } else {
      std::optional<T> result;
      self->request(dest, caf::infinite, std::forward<Ts>(xs)...)
          .receive([&](T& x) { result = std::move(x); },
                   [&](caf::error& e) { err = std::move(e); });
      if (err)
        throw_error(err);
      return std::move(*result);
    }
  }

private:
  caf::actor_system* sys_;
  // Shared with the leases: a call still waiting when the handle goes (one
  // thread destroys a coordinator while another waits in its join) returns
  // its scoped_actor to a pool that is still there.
  std::shared_ptr<pool> pool_;
};

} // namespace quern
