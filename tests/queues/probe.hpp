#pragma once

// Test harness for queue actors on the threaded scheduler, deterministic
// without any sleeps: a probe sends operations one-way, so each answer comes
// back as an ordinary message in the order the queue produced it, and
// sync() is a request that returns only after the queue processed everything
// this probe sent before. After sync(), "no answer in the mailbox" means the
// earlier operations are still pending at the queue -- no timing involved.

#include <catch2/catch.hpp>

#include <optional>
#include <variant>

#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/scoped_actor.hpp>

#include "quern/blocking_queue.hpp"
#include "quern/messages.hpp"
#include "quern/queue.hpp"

namespace quern::test {

/// A dimension of unknown size in a queue's shapes.
constexpr int64_t unk = tensor_shape::unknown_dim;

/// One answer of a queue: rows stored (int32), an element, a bool, or an error.
struct answer {
  std::variant<int32_t, element, bool, caf::error> value;

  bool ok() const { return !std::holds_alternative<caf::error>(value); }
  int32_t count() const {
    REQUIRE(std::holds_alternative<int32_t>(value));
    return std::get<int32_t>(value);
  }
  const element& elem() const {
    if (auto* e = std::get_if<caf::error>(&value))
      FAIL("expected an element, got error: " << render(*e));
    REQUIRE(std::holds_alternative<element>(value));
    return std::get<element>(value);
  }
  bool flag() const {
    REQUIRE(std::holds_alternative<bool>(value));
    return std::get<bool>(value);
  }
  const caf::error& err() const {
    REQUIRE(std::holds_alternative<caf::error>(value));
    return std::get<caf::error>(value);
  }
  /// The error's readable text ("" when it is no error).
  std::string text() const {
    auto* e = std::get_if<caf::error>(&value);
    return e ? message_of(*e) : std::string{};
  }
  error_code code() const { return code_of(err()); }
};

class probe {
public:
  probe(caf::actor_system& sys, queue_actor q) : self_(sys), q_(std::move(q)) {}

  template <class... Ts>
  void send(Ts&&... xs) {
    self_->send(q_, std::forward<Ts>(xs)...);
  }
  /// The queue's keyed extension (keyed_enqueue_actor), which every queue
  /// actor serves: enqueue_keyed and producer_mark.
  keyed_enqueue_actor keyed() const { return caf::actor_cast<keyed_enqueue_actor>(q_); }
  template <class... Ts>
  void send_keyed(Ts&&... xs) {
    self_->send(keyed(), std::forward<Ts>(xs)...);
  }

  // Operations, sent one-way; their answers arrive in order via next().
  void enqueue(element e, caf::timespan t = wait_forever) {
    send(enqueue_atom::value, std::move(e), t);
  }
  void enqueue_many(element e, caf::timespan t = wait_forever) {
    send(enqueue_many_atom::value, std::move(e), t);
  }
  void dequeue(caf::timespan t = wait_forever) { send(dequeue_atom::value, t); }
  void dequeue_many(int32_t n, caf::timespan t = wait_forever) {
    send(dequeue_many_atom::value, n, t);
  }
  void dequeue_up_to(int32_t n, caf::timespan t = wait_forever) {
    send(dequeue_up_to_atom::value, n, t);
  }
  void close(bool cancel = false) { send(close_atom::value, cancel); }

  /// Returns after the queue processed every message this probe sent.
  int32_t sync() {
    int32_t n = -1;
    self_->request(q_, caf::infinite, size_atom::value)
        .receive([&](int32_t x) { n = x; },
                 [&](caf::error& e) { FAIL("size failed: " << render(e)); });
    return n;
  }

  /// Whether an answer is waiting (call sync() first to make it meaningful).
  bool has_answer() { return self_->has_next_message(); }

  /// True when, after sync(), no answer is waiting: everything sent earlier
  /// is still pending at the queue.
  bool pending() {
    sync();
    return !has_answer();
  }

  /// The next answer; waits for it.
  answer next() {
    answer a;
    self_->receive(
        [&](int32_t x) { a.value = x; }, [&](element& e) { a.value = std::move(e); },
        [&](bool b) { a.value = b; }, [&](caf::error& e) { a.value = std::move(e); },
        caf::after(std::chrono::seconds(30)) >> [&] { FAIL("no answer within 30 s"); });
    return a;
  }

  caf::scoped_actor& self() { return self_; }
  const queue_actor& queue() const { return q_; }

  /// size() of the queue (a request; also a barrier like sync()).
  int32_t size() { return sync(); }

  /// is_closed() of the queue (a request).
  bool is_closed() {
    bool closed = false;
    self_->request(q_, caf::infinite, is_closed_atom::value)
        .receive([&](bool x) { closed = x; },
                 [&](caf::error& e) { FAIL("is_closed failed: " << render(e)); });
    return closed;
  }

  /// The queue's spec (a request).
  queue_spec spec() {
    queue_spec s;
    self_->request(q_, caf::infinite, spec_atom::value)
        .receive([&](queue_spec& x) { s = std::move(x); },
                 [&](caf::error& e) { FAIL("spec failed: " << render(e)); });
    return s;
  }

  /// The queue's resource name (C-3), as it appears in error messages.
  std::string name() { return spec().resource_name; }

private:
  caf::scoped_actor self_;
  queue_actor q_;
};

inline element i64(int64_t v) {
  return element{tensor::scalar(v)};
}

inline element i64s(std::vector<int64_t> vs) {
  return element{tensor::vector<int64_t>(std::move(vs))};
}

inline std::vector<int64_t> values_of(const element& batch) {
  return batch[0].to_vector<int64_t>();
}

inline int64_t value_of(const element& e) {
  return e[0].scalar_value<int64_t>();
}

/// Checks that `a` is an error of class `c` with exactly the text `text`.
inline void check_error(const answer& a, error_code c, const std::string& text) {
  if (a.ok())
    FAIL("expected " << error_code_name(c) << ": " << text << ", got a success");
  CHECK(error_code_name(a.code()) == std::string(error_code_name(c)));
  CHECK(a.text() == text);
}

/// The int64 values of a sequence of single-component elements.
inline std::vector<int64_t> values_of(const std::vector<element>& es) {
  std::vector<int64_t> out;
  for (auto& e : es)
    out.push_back(value_of(e));
  return out;
}

/// `n` answers of single dequeues, as int64 values.
inline std::vector<int64_t> dequeue_values(probe& p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    p.dequeue();
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i)
    out.push_back(value_of(p.next().elem()));
  return out;
}

/// A FIFOQueue of int64 scalars.
inline queue_actor int_fifo(caf::actor_system& sys, int32_t capacity,
                            std::string name = "q") {
  return spawn_fifo_queue(sys, capacity, {dtype::int64}, {tensor_shape{}},
                          std::move(name));
}

/// An actor system with quern's types registered.
struct system_fixture {
  quern::config cfg;
  caf::actor_system sys{cfg};
};

} // namespace quern::test
