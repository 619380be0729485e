// Keyed enqueues: a producer that retries (quern/batch_key.hpp) gets each of
// its batches stored once, whatever it sends again (docs/distributed.md,
// Retried batches). Deterministic: the probes' answers come in the queue's
// order, and sync() is a barrier.

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;

void keyed(probe& p, const std::string& producer, uint64_t batch, uint64_t attempt,
           ivec rows) {
  p.send_keyed(enqueue_keyed_atom::value, batch_key{producer, batch, attempt},
               i64s(std::move(rows)), wait_forever);
}

// "FIFOQueue '<resource name>': ", as the queue's messages start.
std::string at(const queue_actor& q) {
  probe p{q->home_system(), q};
  return "FIFOQueue '" + p.name() + "': ";
}

batch_key mark_of(probe& p, const std::string& producer) {
  batch_key k;
  p.self()
      ->request(p.keyed(), caf::infinite, producer_mark_atom::value, producer)
      .receive([&](batch_key& x) { k = std::move(x); },
               [&](caf::error& e) { FAIL("producer_mark failed: " << render(e)); });
  return k;
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "keyed enqueue: a retry of a batch the queue holds whole stores nothing",
                 "[keyed]") {
  auto q = int_fifo(sys, 10);
  probe p{sys, q};
  auto fresh = mark_of(p, "p");
  CHECK(fresh.producer == "p");
  CHECK(fresh.batch == 0);
  CHECK(fresh.attempt == 0);
  keyed(p, "p", 1, 1, {1, 2});
  CHECK(p.next().count() == 2);
  keyed(p, "p", 1, 2, {1, 2}); // its answer was lost: sent again
  CHECK(p.next().count() == 2);
  keyed(p, "p", 2, 3, {3});
  CHECK(p.next().count() == 1);
  CHECK(p.size() == 3);
  auto m = mark_of(p, "p");
  CHECK(m.batch == 2);
  CHECK(m.attempt == 3);
  CHECK(dequeue_values(p, 3) == ivec{1, 2, 3});
  // Another producer's numbers are its own.
  keyed(p, "other", 1, 1, {7});
  CHECK(p.next().count() == 1);
  CHECK(dequeue_values(p, 1) == ivec{7});
}

TEST_CASE_METHOD(system_fixture,
                 "keyed enqueue: a batch stored in part when its client went down gets "
                 "the rest from its retry",
                 "[keyed]") {
  auto q = int_fifo(sys, 3);
  probe p{sys, q};
  p.enqueue(i64(1));
  CHECK(p.next().count() == 1);
  {
    probe lost{sys, q};
    keyed(lost, "p", 1, 1, {10, 11, 12, 13});
    CHECK(lost.pending()); // 10 and 11 stored, 12 and 13 wait for room
  }
  p.sync(); // the queue saw the client go: its attempt is dropped
  auto m = mark_of(p, "p");
  CHECK(m.batch == 0); // batch 1 is not whole
  CHECK(m.attempt == 1);
  CHECK(dequeue_values(p, 3) == ivec{1, 10, 11});
  CHECK(p.size() == 0);
  keyed(p, "p", 1, 2, {10, 11, 12, 13});
  CHECK(p.next().count() == 4);
  CHECK(dequeue_values(p, 2) == ivec{12, 13});
  CHECK(p.size() == 0);
  CHECK(mark_of(p, "p").batch == 1);
}

TEST_CASE_METHOD(system_fixture,
                 "keyed enqueue: a retry of a batch still waiting replaces the earlier "
                 "request",
                 "[keyed]") {
  auto q = int_fifo(sys, 2);
  probe early{sys, q};
  probe retry{sys, q};
  probe consumer{sys, q};
  keyed(early, "p", 1, 1, {1, 2, 3});
  CHECK(early.pending()); // 1 and 2 stored, 3 waits
  keyed(retry, "p", 1, 2, {1, 2, 3});
  CHECK(retry.pending());
  check_error(early.next(), error_code::aborted,
              at(q) + "batch 1 of producer 'p' was sent again (attempt 2), which "
                      "stores the rest of it");
  CHECK(dequeue_values(consumer, 3) == ivec{1, 2, 3});
  CHECK(retry.next().count() == 3);
  CHECK(consumer.size() == 0);
  // The earlier connection's request, read after its retry, is refused.
  keyed(early, "p", 1, 1, {1, 2, 3});
  check_error(early.next(), error_code::aborted,
              at(q) + "attempt 1 of batch 1 of producer 'p' is not stored: the "
                      "queue already saw its attempt 2 (an earlier request read late)");
  CHECK(consumer.size() == 0);
}

TEST_CASE_METHOD(system_fixture, "keyed enqueue: what it refuses, each named",
                 "[keyed]") {
  auto q = int_fifo(sys, 2);
  probe p{sys, q};
  keyed(p, "", 1, 1, {1});
  check_error(p.next(), error_code::invalid_argument,
              at(q) + "a keyed enqueue needs a producer name");
  keyed(p, "p", 0, 1, {1});
  check_error(p.next(), error_code::invalid_argument,
              at(q) + "the batches of producer 'p' are numbered from 1, got 0");
  // Validated as enqueue_many before anything else: the producer is
  // not marked by a batch the queue cannot take.
  p.send_keyed(enqueue_keyed_atom::value, batch_key{"p", 1, 1}, i64(5), wait_forever);
  CHECK(p.next().code() == error_code::invalid_argument);
  CHECK(mark_of(p, "p").attempt == 0);

  keyed(p, "p", 2, 1, {1, 2, 3}); // 1 and 2 stored, 3 waits
  CHECK(p.pending());
  keyed(p, "p", 3, 2, {4});
  check_error(p.next(), error_code::failed_precondition,
              at(q) + "batch 3 of producer 'p' came under attempt 2 while its batches "
                      "of attempt 1 still wait for room: a producer that retries "
                      "sends what waits again first, in order");
  keyed(p, "p", 2, 3, {1, 2});
  check_error(p.next(), error_code::invalid_argument,
              at(q) + "batch 2 of producer 'p' had 3 rows, its retry has 2");
  keyed(p, "p", 1, 4, {9});
  check_error(p.next(), error_code::failed_precondition,
              at(q) + "batch 1 of producer 'p' is older than its batch 2 the queue "
                      "already has (does a second producer use the name 'p'?)");
  keyed(p, "p", 2, 1, {1, 2, 3}); // refusals do not count as attempts
  check_error(p.next(), error_code::aborted,
              at(q) + "attempt 1 of batch 2 of producer 'p' is not stored: the "
                      "queue already saw its attempt 1 (an earlier request read late)");
  // None of the refusals touched the waiting attempt 1 of batch 2.
  probe consumer{sys, q};
  CHECK(dequeue_values(consumer, 2) == ivec{1, 2});
  CHECK(p.next().count() == 3);
  CHECK(dequeue_values(consumer, 1) == ivec{3});
}

TEST_CASE_METHOD(system_fixture,
                 "keyed enqueue: another batch under a name and number already held is "
                 "refused, not taken for a retry",
                 "[keyed]") {
  // Two producers under one name: the second's batch 1 has the first's
  // number and row count. Taken for a retry it would be answered without
  // being stored (or store the rest of the first): lost without a word.
  auto q = int_fifo(sys, 2);
  probe first{sys, q};
  probe second{sys, q};
  probe consumer{sys, q};
  auto other_values = at(q) +
                      "batch 1 of producer 'p' was sent again with other values than "
                      "the queue has (does a second producer use the name 'p'?)";
  SECTION("held whole") {
    keyed(first, "p", 1, 1, {1, 2});
    CHECK(first.next().count() == 2);
    keyed(second, "p", 1, 2, {8, 9});
    check_error(second.next(), error_code::failed_precondition, other_values);
    CHECK(consumer.size() == 2);
    keyed(first, "p", 1, 3, {1, 2}); // a true retry is still answered
    CHECK(first.next().count() == 2);
    CHECK(dequeue_values(consumer, 2) == ivec{1, 2});
  }
  SECTION("still waiting for room") {
    keyed(first, "p", 1, 1, {1, 2, 3}); // 1 and 2 stored, 3 waits
    CHECK(first.pending());
    keyed(second, "p", 1, 2, {7, 8, 9});
    check_error(second.next(), error_code::failed_precondition, other_values);
    CHECK(first.pending()); // not replaced by the other producer's batch
    CHECK(dequeue_values(consumer, 3) == ivec{1, 2, 3});
    CHECK(first.next().count() == 3);
  }
  CHECK(consumer.size() == 0);
  CHECK(mark_of(consumer, "p").batch == 1);
}

TEST_CASE_METHOD(system_fixture,
                 "keyed enqueue: a closed queue cancels it, and the rows stored stay",
                 "[keyed]") {
  auto q = int_fifo(sys, 1);
  probe p{sys, q};
  keyed(p, "p", 1, 1, {1, 2});
  CHECK(p.pending());
  p.close(true);
  check_error(p.next(), error_code::cancelled, "Enqueue operation was cancelled");
  CHECK(p.next().flag());
  keyed(p, "p", 1, 2, {1, 2});
  check_error(p.next(), error_code::cancelled, "FIFOQueue '" + p.name() + "' is closed.");
  CHECK(dequeue_values(p, 1) == ivec{1});
  CHECK(mark_of(p, "p").batch == 0);
}

TEST_CASE_METHOD(system_fixture,
                 "keyed enqueue: batches of one attempt wait together and are stored in "
                 "order",
                 "[keyed]") {
  auto q = int_fifo(sys, 2);
  probe p{sys, q};
  probe consumer{sys, q};
  keyed(p, "p", 1, 1, {1, 2, 3}); // 1 and 2 stored, 3 waits
  keyed(p, "p", 2, 1, {4, 5});
  keyed(p, "p", 3, 1, {6});
  CHECK(p.pending());
  CHECK(mark_of(consumer, "p").batch == 0);
  CHECK(dequeue_values(consumer, 6) == ivec{1, 2, 3, 4, 5, 6});
  CHECK(p.next().count() == 3);
  CHECK(p.next().count() == 2);
  CHECK(p.next().count() == 1);
  auto m = mark_of(consumer, "p");
  CHECK(m.batch == 3);
  CHECK(m.attempt == 1);
  // The same batch twice under one attempt is refused, and nothing stored.
  keyed(p, "p", 3, 1, {6});
  check_error(p.next(), error_code::aborted,
              at(q) + "attempt 1 of batch 3 of producer 'p' is not stored: the queue "
                      "already saw its attempt 1 (an earlier request read late)");
  CHECK(consumer.size() == 0);
}

TEST_CASE_METHOD(system_fixture,
                 "keyed enqueue: sent again in order, the batches an earlier attempt "
                 "left waiting are replaced and each stored once",
                 "[keyed]") {
  // Batch 1 stored whole, batch 2 in part, batch 3 waiting, when the
  // producer's connection is lost and it sends all three again.
  auto q = int_fifo(sys, 3);
  probe early{sys, q};
  probe retry{sys, q};
  probe consumer{sys, q};
  keyed(early, "p", 1, 1, {1, 2});
  keyed(early, "p", 2, 1, {3, 4}); // 3 stored, 4 waits
  keyed(early, "p", 3, 1, {5});
  CHECK(early.next().count() == 2);
  CHECK(early.pending());
  keyed(retry, "p", 1, 2, {1, 2}); // held whole: answered, nothing stored
  CHECK(retry.next().count() == 2);
  check_error(early.next(), error_code::aborted,
              at(q) + "batch 2 of producer 'p' waited under attempt 1, which attempt 2 "
                      "replaces");
  check_error(early.next(), error_code::aborted,
              at(q) + "batch 3 of producer 'p' waited under attempt 1, which attempt 2 "
                      "replaces");
  keyed(retry, "p", 2, 2, {3, 4}); // its rest, 4, waits for room
  keyed(retry, "p", 3, 2, {5});
  CHECK(retry.pending());
  CHECK(mark_of(consumer, "p").batch == 1);
  CHECK(dequeue_values(consumer, 5) == ivec{1, 2, 3, 4, 5});
  CHECK(retry.next().count() == 2);
  CHECK(retry.next().count() == 1);
  CHECK(consumer.size() == 0);
  CHECK(mark_of(consumer, "p").batch == 3);
  // The earlier attempt's requests, read late, store nothing.
  keyed(early, "p", 3, 1, {5});
  check_error(early.next(), error_code::aborted,
              at(q) + "attempt 1 of batch 3 of producer 'p' is not stored: the queue "
                      "already saw its attempt 2 (an earlier request read late)");
  CHECK(consumer.size() == 0);
}

TEST_CASE_METHOD(system_fixture,
                 "keyed enqueue: a producer has at most max_keyed_in_flight batches "
                 "waiting",
                 "[keyed]") {
  auto q = int_fifo(sys, 1);
  probe p{sys, q};
  probe consumer{sys, q};
  auto waiting = static_cast<int64_t>(max_keyed_in_flight);
  for (int64_t i = 1; i <= waiting + 1; ++i)
    keyed(p, "p", static_cast<uint64_t>(i), 1, {i});
  CHECK(p.next().count() == 1); // the first is stored, the others wait
  auto next = static_cast<uint64_t>(waiting + 2);
  keyed(p, "p", next, 1, {0});
  check_error(p.next(), error_code::failed_precondition,
              at(q) + "batch " + std::to_string(next) + " of producer 'p' came while " +
                  std::to_string(waiting) +
                  " of its batches wait for room: a producer that retries has at most " +
                  std::to_string(waiting) + " in flight");
  ivec want;
  for (int64_t i = 1; i <= waiting + 1; ++i)
    want.push_back(i);
  CHECK(dequeue_values(consumer, waiting + 1) == want);
  for (int64_t i = 2; i <= waiting + 1; ++i)
    CHECK(p.next().count() == 1);
  CHECK(mark_of(consumer, "p").batch == static_cast<uint64_t>(waiting + 1));
}
