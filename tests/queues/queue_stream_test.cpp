// The streaming clients (docs/queues.md): queue_writer and queue_reader.
// Nothing handed to a client is ever lost or reordered.

#include <future>
#include <memory>
#include <thread>

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;

ivec iota(int64_t from, int64_t to) {
  ivec v;
  for (int64_t i = from; i < to; ++i)
    v.push_back(i);
  return v;
}

/// One scheduler thread: while an actor holds it, no other actor of the
/// system (a queue, a writer's pump) reads its mailbox, as with a queue
/// that does not answer in time (a busy or a frozen process).
struct one_thread_config : quern::config {
  one_thread_config() { set("scheduler.max-threads", 1); }
};

/// Holds the only scheduler thread of a one_thread_config system from its
/// construction until release() or its destruction.
class scheduler_hold {
public:
  explicit scheduler_hold(caf::actor_system& sys) {
    auto entered = std::make_shared<std::promise<void>>();
    auto inside = entered->get_future();
    auto released = released_.get_future().share();
    auto holder = sys.spawn([entered, released](caf::event_based_actor* self) {
      return caf::behavior{[=](int) {
        entered->set_value();
        released.wait();
        self->quit();
      }};
    });
    caf::anon_send(holder, 0);
    // Bounded: the thread is free until now.
    REQUIRE(inside.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  }
  ~scheduler_hold() { release(); }
  scheduler_hold(const scheduler_hold&) = delete;
  scheduler_hold& operator=(const scheduler_hold&) = delete;

  void release() {
    if (!done_)
      released_.set_value();
    done_ = true;
  }

private:
  std::promise<void> released_;
  bool done_ = false;
};

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "stream: one writer, one reader keep the order of 10000 rows",
                 "[stream][Q-13]") {
  constexpr int64_t n = 10000;
  auto q = int_fifo(sys, 100);
  std::thread producer{[&] {
    queue_writer w{sys, q, 64};
    for (int64_t i = 0; i < n; ++i)
      w.push(i64(i));
    w.flush();
    CHECK(w.stored() == n);
    CHECK(w.refused() == 0);
    blocking_queue{sys, q}.close();
  }};
  ivec got;
  got.reserve(n);
  {
    queue_reader r{sys, q, 32};
    while (auto e = r.try_pull())
      got.push_back(value_of(*e));
    // The end stays the end.
    CHECK_FALSE(r.try_pull());
  }
  producer.join();
  CHECK(got.size() == size_t(n));
  CHECK(got == iota(0, n));
}

TEST_CASE_METHOD(system_fixture,
                 "stream: what a writer holds while two pushes are in flight reaches the "
                 "queue without another call",
                 "[stream]") {
  // Rows and batches pushed while two pushes await the queue's answer wait
  // in the writer; its pump sends them when an answer comes, so a consumer
  // gets every row while the producer makes no further call (no flush).
  auto q = int_fifo(sys, -1);
  blocking_queue b{sys, q};
  queue_writer w{sys, q, 1 << 20};
  SECTION("rows") {
    for (int64_t i = 0; i < 500; ++i)
      w.push(i64(i));
    CHECK(values_of(b.dequeue_many(500, std::chrono::seconds(20))) == iota(0, 500));
  }
  SECTION("batches") {
    for (int64_t i = 0; i < 500; i += 5)
      w.push_batch(i64s(iota(i, i + 5)));
    CHECK(values_of(b.dequeue_many(500, std::chrono::seconds(20))) == iota(0, 500));
  }
  w.flush();
  CHECK(w.stored() == 500);
  CHECK(w.refused() == 0);
}

TEST_CASE_METHOD(system_fixture,
                 "stream: a writer destroyed while its pushes wait for room loses no row",
                 "[stream]") {
  // The destructor does not wait for a full queue; the rows it hands over
  // are stored, in order, as a consumer makes room.
  auto q = int_fifo(sys, 3);
  blocking_queue b{sys, q};
  {
    queue_writer w{sys, q, 64};
    for (int64_t i = 0; i < 40; ++i)
      w.push(i64(i));
  }
  ivec got;
  while (got.size() < 40)
    got.push_back(value_of(b.dequeue(std::chrono::seconds(20))));
  CHECK(got == iota(0, 40));
  CHECK(b.size() == 0);
}

TEST_CASE_METHOD(system_fixture,
                 "stream: a reader ends with out_of_range once closed and drained",
                 "[stream][Q-30]") {
  auto q = int_fifo(sys, 10);
  blocking_queue b{sys, q};
  auto name = b.spec().resource_name;
  b.enqueue_many(i64s({1, 2}));
  b.close();
  queue_reader r{sys, q, 8};
  CHECK(value_of(r.pull()) == 1);
  CHECK(value_of(r.pull()) == 2);
  try {
    r.pull();
    FAIL("pull after the end did not throw");
  } catch (const out_of_range_error& e) {
    CHECK(std::string(e.what()) ==
          "FIFOQueue '" + name +
              "' is closed and has insufficient elements (requested 1, current size 0)");
  }
  CHECK_THROWS_AS(r.pull(), out_of_range_error);
  CHECK_FALSE(r.try_pull());
}

TEST_CASE_METHOD(system_fixture,
                 "stream: a reader destroyed with buffered rows gives them back in order",
                 "[stream]") {
  auto q = int_fifo(sys, -1);
  blocking_queue b{sys, q};
  b.enqueue_many(i64s(iota(0, 20)));
  {
    queue_reader r{sys, q, 8};
    CHECK(value_of(r.pull()) == 0);
    CHECK(value_of(r.pull()) == 1);
    // Up to 6 more rows are buffered or on their way to r now.
  }
  CHECK(b.size() == 18);
  CHECK(values_of(b.dequeue_many(18)) == iota(2, 20));
}

TEST_CASE_METHOD(system_fixture,
                 "stream: a writer after close throws cancelled_error and counts "
                 "consistently",
                 "[stream][Q-41]") {
  // Every row pushed is either stored or refused, including the rows whose
  // push() threw because the writer already held an error.
  auto q = int_fifo(sys, -1);
  blocking_queue b{sys, q};
  auto name = b.spec().resource_name;
  queue_writer w{sys, q, 4};
  for (int64_t i = 0; i < 5; ++i)
    w.push(i64(i));
  w.flush();
  CHECK(w.stored() == 5);
  CHECK(w.refused() == 0);
  b.close();
  int64_t pushed = 5;
  int64_t threw = 0;
  for (int64_t i = 5; i < 12; ++i) {
    ++pushed;
    try {
      w.push(i64(i));
    } catch (const cancelled_error& e) {
      ++threw;
      CHECK(std::string(e.what()) == "FIFOQueue '" + name + "' is closed.");
    }
  }
  try {
    w.flush();
    FAIL("flush after close did not throw");
  } catch (const cancelled_error& e) {
    CHECK(std::string(e.what()) == "FIFOQueue '" + name + "' is closed.");
  }
  INFO("push() threw " << threw << " times");
  CHECK(w.stored() == 5);
  CHECK(w.stored() + w.refused() == pushed);
  CHECK(values_of(b.dequeue_up_to(10)) == iota(0, 5));
}

TEST_CASE_METHOD(system_fixture, "stream: a push after the writer failed refuses its row",
                 "[stream]") {
  auto q = int_fifo(sys, -1);
  blocking_queue b{sys, q};
  queue_writer w{sys, q, 4};
  b.close();
  w.push(i64(1));
  CHECK_THROWS_AS(w.flush(), cancelled_error);
  CHECK(w.stored() == 0);
  CHECK(w.refused() == 1);
  // push() documents: "Throws the stream's first error (and refuses e)".
  CHECK_THROWS_AS(w.push(i64(2)), cancelled_error);
  CHECK(w.stored() + w.refused() == 2);
}

TEST_CASE_METHOD(system_fixture,
                 "stream: rows of a writer with a full queue are stored in order",
                 "[stream]") {
  auto q = int_fifo(sys, 3);
  probe cons{sys, q};
  {
    queue_writer w{sys, q, 2};
    // Window 2: push() itself waits for acks, so a consumer must be at work.
    cons.dequeue_many(10);
    cons.sync();
    for (int64_t i = 0; i < 10; ++i)
      w.push(i64(i));
    w.flush();
    CHECK(w.stored() == 10);
  }
  CHECK(values_of(cons.next().elem()) == iota(0, 10));
}

TEST_CASE_METHOD(system_fixture,
                 "unpush withdraws the sender's pending push and rows stored stay stored",
                 "[stream][stop]") {
  probe p{sys, int_fifo(sys, 2)};
  p.send(push_atom::value, std::vector<element>{i64(1), i64(2), i64(3), i64(4)});
  CHECK(p.pending()); // 2 stored, 2 waiting for room
  p.send(unpush_atom::value);
  int32_t stored = -1;
  caf::error err;
  p.self()->receive(
      [&](pushed_atom, int32_t n, caf::error& e) {
        stored = n;
        err = std::move(e);
      },
      caf::after(std::chrono::seconds(30)) >> [] { FAIL("no pushed answer"); });
  CHECK(stored == 2);
  CHECK(code_of(err) == error_code::cancelled);
  CHECK(message_of(err) == "Enqueue operation was cancelled");
  CHECK(p.size() == 2);
  CHECK(dequeue_values(p, 2) == std::vector<int64_t>{1, 2});
}

TEST_CASE_METHOD(
    system_fixture,
    "unpull withdraws the sender's waiting dequeues too and held rows go back",
    "[stream][stop]") {
  probe p{sys, int_fifo(sys, 10)};
  p.enqueue(i64(1));
  p.enqueue(i64(2));
  CHECK(p.next().count() == 1);
  CHECK(p.next().count() == 1);
  p.dequeue_many(3); // holds 1 and 2, waits for a third
  CHECK(p.pending());
  p.send(unpull_atom::value);
  check_error(p.next(), error_code::cancelled, "Dequeue operation was cancelled");
  CHECK(p.size() == 2);
  CHECK(dequeue_values(p, 2) == std::vector<int64_t>{1, 2}); // in order
}

TEST_CASE_METHOD(
    system_fixture,
    "stream: a queue that ends answers the pushes waiting for room: refused, "
    "none unconfirmed",
    "[stream]") {
  auto q = int_fifo(sys, 2);
  queue_writer w{sys, q, 16};
  for (int64_t i = 0; i < 10; ++i)
    w.push(i64(i));
  // Rows 0 and 1 are stored; the rest went in pushes that wait for room,
  // or wait in the writer behind two of them. A bounded wait for the two
  // answers: the queue answers at once.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  while (w.stored() < 2 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  REQUIRE(w.stored() == 2);
  caf::anon_send_exit(q, caf::exit_reason::kill);
  CHECK_THROWS_AS(w.flush(), cancelled_error);
  // The queue answered its waiting pushes as it ended (cancelled): nothing
  // is in doubt. Rows a queue of another process may hold are counted by
  // unconfirmed() (distributed tests).
  CHECK(w.stored() == 2);
  CHECK(w.unconfirmed() == 0);
  CHECK(w.stored() + w.refused() == 10);
  CHECK_THROWS_AS(w.push(i64(10)), cancelled_error);
  CHECK(w.stored() + w.refused() == 11);
}

namespace {

/// The next pushed(stored, error) answer of `p`'s pushes (bounded wait).
std::pair<int32_t, caf::error> next_pushed(probe& p) {
  std::pair<int32_t, caf::error> out{-1, caf::error{}};
  p.self()->receive(
      [&](pushed_atom, int32_t n, caf::error& e) {
        out.first = n;
        out.second = std::move(e);
      },
      caf::after(std::chrono::seconds(30)) >> [] { FAIL("no pushed answer"); });
  return out;
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "a push that fits the capacity is stored whole once there is room",
                 "[stream][stop][Q-25]") {
  probe p{sys, int_fifo(sys, 4)};
  p.enqueue(i64(0));
  p.enqueue(i64(1));
  CHECK(p.next().count() == 1);
  CHECK(p.next().count() == 1);
  p.send(push_atom::value, std::vector<element>{i64(10), i64(11), i64(12)});
  CHECK(p.pending()); // room for 2 of its 3 rows: none stored yet
  CHECK(p.size() == 2);
  p.dequeue();
  CHECK(value_of(p.next().elem()) == 0);
  auto [stored, err] = next_pushed(p); // room for all 3 now
  CHECK(stored == 3);
  CHECK_FALSE(err);
  CHECK(p.size() == 4);
  CHECK(dequeue_values(p, 4) == std::vector<int64_t>{1, 10, 11, 12});
}

TEST_CASE_METHOD(system_fixture,
                 "a push waiting whole that is cancelled or withdrawn stored none of "
                 "its rows",
                 "[stream][stop][Q-25][Q-43]") {
  const bool cancel = GENERATE(true, false);
  INFO((cancel ? "close with cancel_pending_enqueues" : "unpush"));
  probe p{sys, int_fifo(sys, 4)};
  p.enqueue_many(i64s({0, 1, 2}));
  CHECK(p.next().count() == 3);
  p.send(push_batch_atom::value, std::vector<element>{i64s({10, 11}), i64s({12})});
  CHECK(p.pending());
  if (cancel)
    p.close(true);
  else
    p.send(unpush_atom::value);
  auto [stored, err] = next_pushed(p);
  CHECK(stored == 0);
  CHECK(code_of(err) == error_code::cancelled);
  if (cancel)
    CHECK(p.next().flag());
  CHECK(p.size() == 3);
  CHECK(dequeue_values(p, 3) == std::vector<int64_t>{0, 1, 2});
}

TEST_CASE_METHOD(system_fixture,
                 "a push larger than the capacity is stored as room appears",
                 "[stream][Q-25]") {
  probe p{sys, int_fifo(sys, 2)};
  p.send(push_atom::value, std::vector<element>{i64(1), i64(2), i64(3)});
  CHECK(p.pending());
  CHECK(p.size() == 2); // as an enqueue_many
  CHECK(dequeue_values(p, 1) == std::vector<int64_t>{1});
  auto [stored, err] = next_pushed(p);
  CHECK(stored == 3);
  CHECK_FALSE(err);
}

TEST_CASE_METHOD(system_fixture,
                 "a push waiting whole stores what fits when a dequeue would wait "
                 "forever otherwise",
                 "[stream][Q-25][Q-51][Q-73]") {
  // A shuffle queue keeps min_after_dequeue rows while open; a priority
  // queue's dequeue_many takes all n at once. Either dequeue waits for rows
  // that only the waiting push can bring.
  const bool shuffle = GENERATE(true, false);
  INFO((shuffle ? "RandomShuffleQueue" : "PriorityQueue"));
  auto q = shuffle
               ? spawn_random_shuffle_queue(sys, 4, 3, {dtype::int64}, {tensor_shape{}})
               : spawn_priority_queue(sys, 4, {dtype::int64}, {tensor_shape{}});
  // A priority queue's rows lead with their priority.
  auto row = [shuffle](int64_t v) {
    return shuffle ? i64(v) : element{tensor::scalar(v), tensor::scalar(v)};
  };
  auto rows = [shuffle](std::vector<int64_t> vs) {
    return shuffle ? i64s(vs)
                   : element{tensor::vector<int64_t>(vs), tensor::vector<int64_t>(vs)};
  };
  probe p{sys, q};
  p.enqueue_many(rows({1, 2, 3}));
  CHECK(p.next().count() == 3);
  p.send(push_atom::value, std::vector<element>{row(4), row(5)});
  CHECK(p.pending()); // room for 1 of 2, and no dequeue waits: whole
  CHECK(p.size() == 3);
  if (shuffle)
    p.dequeue(); // waits for a 4th row: min_after_dequeue is 3
  else
    p.dequeue_many(4); // waits for 4 rows, taken at once
  bool got_rows = false;
  int32_t stored = -1;
  for (int i = 0; i < 2; ++i)
    p.self()->receive(
        [&](pushed_atom, int32_t n, caf::error& e) {
          stored = n;
          CHECK_FALSE(e);
        },
        [&](element&) { got_rows = true; },
        [&](caf::error& e) { FAIL("dequeue failed: " << render(e)); },
        caf::after(std::chrono::seconds(30)) >> [] { FAIL("the queue stalled"); });
  CHECK(got_rows);
  CHECK(stored == 2);
  CHECK(p.size() == (shuffle ? 4 : 1));
}

TEST_CASE_METHOD(system_fixture,
                 "stream: settle sends what the writer holds and returns once it "
                 "reached the queue",
                 "[stream][RS-14]") {
  // A full queue answers no push: with two pushes waiting for room, the
  // third batch stays in the writer, which a snapshot of the queue would
  // not see. settle() sends it with a barrier after it; once the barrier is
  // back, every row pushed is stored or waiting at the queue.
  auto q = int_fifo(sys, 4);
  blocking_queue b{sys, q};
  queue_writer w{sys, q, 64};
  for (int64_t i = 0; i < 3; ++i)
    w.push_batch(i64s(iota(8 * i, 8 * i + 8)));
  auto held = b.snapshot();
  CHECK(held.stored_rows() + held.waiting_rows() == 16);
  CHECK(w.settle(std::chrono::seconds(30)));
  auto s = b.snapshot();
  CHECK(s.stored_rows() == 4);
  CHECK(s.waiting_rows() == 20);
  // A writer whose stream ended settles at once; the error comes with the
  // next call.
  b.close(true);
  CHECK(w.settle(std::chrono::seconds(30)));
  CHECK_THROWS_AS(w.flush(), cancelled_error);
}

TEST_CASE("stream: settle returns false once its limit passed while the queue does not "
          "answer, and every row reaches the queue once it does",
          "[stream][RS-14][RS-15]") {
  one_thread_config cfg;
  caf::actor_system sys{cfg};
  auto q = int_fifo(sys, -1);
  blocking_queue b{sys, q};
  queue_writer w{sys, q, 64};
  w.push_batch(i64s(iota(0, 8)));
  REQUIRE(w.settle(std::chrono::seconds(30))); // the queue reads: true
  {
    scheduler_hold hold{sys};
    // The queue reads nothing now: two pushes go out unanswered, the rest
    // waits in the writer, and no barrier comes back.
    w.push_batch(i64s(iota(8, 16)));
    w.push_batch(i64s(iota(16, 24)));
    for (int64_t i = 24; i < 28; ++i)
      w.push(i64(i));
    CHECK_FALSE(w.settle(std::chrono::milliseconds(50)));
    // Nothing was answered, and the writer goes on taking rows.
    CHECK(w.stored() == 8);
    w.push_batch(i64s(iota(28, 36)));
    hold.release();
  }
  // The queue reads again: every row the writer was given is stored, in
  // order, once; none refused or lost.
  CHECK(w.settle(std::chrono::seconds(30)));
  w.flush();
  CHECK(w.stored() == 36);
  CHECK(w.refused() == 0);
  CHECK(w.unconfirmed() == 0);
  REQUIRE(b.size() == 36);
  CHECK(values_of(b.dequeue_many(36)) == iota(0, 36));
  CHECK(b.size() == 0);
}
