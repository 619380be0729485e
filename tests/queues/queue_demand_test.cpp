// One shape for every dequeue (quern/demand.hpp): `count` batches of n rows,
// cut exact, up to or any. The strict calls are its one-batch case; a
// streaming pull sends it with any count.

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

/// A pulled(xs, error) answer.
struct pulled_answer {
  std::vector<element> xs;
  caf::error err;
};

pulled_answer next_pulled(probe& p) {
  pulled_answer a;
  p.self()->receive(
      [&](pulled_atom, std::vector<element>& xs, caf::error& err) {
        a.xs = std::move(xs);
        a.err = std::move(err);
      },
      caf::after(std::chrono::seconds(30)) >> [&] { FAIL("no pulled within 30 s"); });
  return a;
}

demand make_demand(int32_t n, int32_t count, batch_cut cut, bool as_rows = false) {
  demand d;
  d.n = n;
  d.count = count;
  d.cut = cut;
  d.as_rows = as_rows;
  return d;
}

std::vector<std::vector<int64_t>> batch_values(const std::vector<element>& batches) {
  std::vector<std::vector<int64_t>> out;
  for (auto& b : batches)
    out.push_back(values_of(b));
  return out;
}

using batches_t = std::vector<std::vector<int64_t>>;

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "a demand of count exact batches is served like count dequeue_many, "
                 "every batch ready at once in one answer",
                 "[demand][Q-32][Q-33]") {
  probe p{sys, int_fifo(sys, 100)};
  p.enqueue_many(i64s({1, 2, 3, 4, 5}));
  CHECK(p.next().count() == 5);
  p.send(pull_atom::value, make_demand(2, 4, batch_cut::dequeue_many));
  auto first = next_pulled(p);
  CHECK_FALSE(first.err);
  CHECK(batch_values(first.xs) == batches_t{{1, 2}, {3, 4}});
  // Row 5 is held for the third batch, which waits for a sixth row.
  CHECK(p.pending());
  CHECK(p.size() == 0);
  p.enqueue_many(i64s({6, 7, 8}));
  CHECK(p.next().count() == 3);
  auto second = next_pulled(p);
  CHECK_FALSE(second.err);
  CHECK(batch_values(second.xs) == batches_t{{5, 6}, {7, 8}});
  // The demand is served: a ninth row stays in the queue.
  p.enqueue(i64(9));
  CHECK(p.next().count() == 1);
  CHECK(p.size() == 1);
}

TEST_CASE_METHOD(system_fixture,
                 "a demand cut exact ends at the end of data and leaves the rows of a "
                 "partial batch in the queue, in order",
                 "[demand][Q-33]") {
  probe p{sys, int_fifo(sys, 100)};
  auto name = p.name();
  p.send(pull_atom::value, make_demand(3, 5, batch_cut::dequeue_many));
  p.enqueue_many(i64s({1, 2, 3, 4}));
  CHECK(p.next().count() == 4);
  auto a = next_pulled(p);
  CHECK(batch_values(a.xs) == batches_t{{1, 2, 3}});
  p.close();
  CHECK(p.next().flag());
  auto end = next_pulled(p);
  CHECK(end.xs.empty());
  CHECK(is(end.err, error_code::out_of_range));
  CHECK(message_of(end.err) == "FIFOQueue '" + name +
                                   "' is closed and has insufficient elements "
                                   "(requested 2, current size 0)");
  CHECK(dequeue_values(p, 1) == std::vector<int64_t>{4});
}

TEST_CASE_METHOD(system_fixture,
                 "a demand cut up to returns the rest as a smaller final batch",
                 "[demand][Q-33]") {
  probe p{sys, int_fifo(sys, 100)};
  p.enqueue_many(i64s({1, 2, 3, 4, 5}));
  CHECK(p.next().count() == 5);
  p.close();
  CHECK(p.next().flag());
  p.send(pull_atom::value, make_demand(2, 5, batch_cut::dequeue_up_to));
  auto a = next_pulled(p);
  CHECK(batch_values(a.xs) == batches_t{{1, 2}, {3, 4}, {5}});
  // Served three batches; the fourth finds nothing and ends the demand.
  CHECK(is(a.err, error_code::out_of_range));
}

TEST_CASE_METHOD(system_fixture,
                 "a demand cut any hands out 1..n rows per batch as soon as there are "
                 "any",
                 "[demand][Q-30]") {
  probe p{sys, int_fifo(sys, 100)};
  p.send(pull_atom::value, make_demand(3, 3, batch_cut::any_size));
  CHECK(p.pending());
  p.enqueue(i64(1));
  CHECK(p.next().count() == 1);
  CHECK(batch_values(next_pulled(p).xs) == batches_t{{1}});
  p.enqueue_many(i64s({2, 3, 4, 5}));
  CHECK(p.next().count() == 4);
  // Two batches left: 3 rows, then the last one.
  CHECK(batch_values(next_pulled(p).xs) == batches_t{{2, 3, 4}, {5}});
  p.enqueue(i64(6));
  CHECK(p.next().count() == 1);
  CHECK(p.size() == 1);
}

TEST_CASE_METHOD(system_fixture,
                 "a demand as rows hands out the rows without a batch dimension",
                 "[demand][Q-30]") {
  // Rows need no shapes.
  auto q = spawn_fifo_queue(sys, 10, {dtype::int64});
  probe p{sys, q};
  p.enqueue(i64(1));
  p.enqueue(i64(2));
  CHECK(p.next().count() == 1);
  CHECK(p.next().count() == 1);
  p.send(pull_atom::value, make_demand(5, 1, batch_cut::any_size, true));
  auto a = next_pulled(p);
  CHECK_FALSE(a.err);
  REQUIRE(a.xs.size() == 2);
  CHECK(a.xs[0][0].shape() == tensor_shape{});
  CHECK(values_of(a.xs) == std::vector<int64_t>{1, 2});
}

TEST_CASE_METHOD(system_fixture,
                 "a PriorityQueue serves a demand's batches whole, smallest first",
                 "[demand][Q-73]") {
  auto q = spawn_priority_queue(sys, 10, {dtype::int64}, {tensor_shape{}}, "prio_demand");
  probe p{sys, q};
  for (int64_t prio : {5, 1, 4})
    p.enqueue(element{tensor::scalar(prio), tensor::scalar(prio * 10)});
  for (int i = 0; i < 3; ++i)
    CHECK(p.next().count() == 1);
  p.send(pull_atom::value, make_demand(2, 2, batch_cut::dequeue_many));
  auto a = next_pulled(p);
  REQUIRE(a.xs.size() == 1);
  CHECK(a.xs[0][1].to_vector<int64_t>() == std::vector<int64_t>{10, 40});
  // not incremental: the last row stays until a second one is there.
  CHECK(p.size() == 1);
  p.enqueue(element{tensor::scalar(int64_t{2}), tensor::scalar(int64_t{20})});
  CHECK(p.next().count() == 1);
  auto b = next_pulled(p);
  REQUIRE(b.xs.size() == 1);
  CHECK(b.xs[0][1].to_vector<int64_t>() == std::vector<int64_t>{20, 50});
}

TEST_CASE_METHOD(system_fixture,
                 "a demand that cannot be served is refused with invalid_argument naming "
                 "the problem, and the queue goes on",
                 "[demand][validation]") {
  probe p{sys, int_fifo(sys, 10)};
  auto refused = [&](demand d, const std::string& text) {
    p.send(pull_atom::value, d);
    auto a = next_pulled(p);
    CHECK(a.xs.empty());
    CHECK(is(a.err, error_code::invalid_argument));
    CHECK(message_of(a.err) == text);
  };
  refused(make_demand(0, 1, batch_cut::any_size),
          "pull needs a positive batch size and batch count, got 0 and 1");
  refused(make_demand(2, -1, batch_cut::dequeue_many),
          "pull needs a positive batch size and batch count, got 2 and -1");
  refused(make_demand(2, 1, static_cast<batch_cut>(7)), "pull names no batch cut: 7");
  refused(make_demand(2, 2, batch_cut::any_size, true),
          "a pull of rows asks for one batch, got 2");
  probe unshaped{sys, spawn_fifo_queue(sys, 10, {dtype::int64})};
  unshaped.send(pull_atom::value, make_demand(2, 1, batch_cut::any_size));
  auto a = next_pulled(unshaped);
  CHECK(message_of(a.err) ==
        "FIFOQueue's batch pulls require the components to have specified shapes.");
  probe prio{sys, spawn_priority_queue(sys, 10, {dtype::int64})};
  prio.send(pull_atom::value, make_demand(2, 1, batch_cut::dequeue_up_to));
  auto b = next_pulled(prio);
  CHECK(message_of(b.err) ==
        "PriorityQueue's DequeueMany requires the components to have specified shapes.");
  // The queue still serves.
  p.enqueue(i64(1));
  CHECK(p.next().count() == 1);
  CHECK(dequeue_values(p, 1) == std::vector<int64_t>{1});
}

TEST_CASE_METHOD(system_fixture,
                 "a strict_queue_actor holds any queue and speaks TensorFlow's "
                 "operations",
                 "[demand][interface]") {
  strict_queue_actor strict = int_fifo(sys, 10);
  caf::scoped_actor self{sys};
  int32_t stored = 0;
  self->request(strict, caf::infinite, enqueue_many_atom::value, i64s({1, 2, 3}),
                wait_forever)
      .receive([&](int32_t n) { stored = n; },
               [&](caf::error& e) { FAIL("enqueue_many failed: " << render(e)); });
  CHECK(stored == 3);
  std::vector<int64_t> got;
  self->request(strict, caf::infinite, dequeue_many_atom::value, int32_t{3}, wait_forever)
      .receive([&](element& batch) { got = values_of(batch); },
               [&](caf::error& e) { FAIL("dequeue_many failed: " << render(e)); });
  CHECK(got == std::vector<int64_t>{1, 2, 3});
}

TEST_CASE("a credit_ledger settles the oldest message first and forgets on loss",
          "[demand][stream]") {
  detail::credit_ledger l;
  CHECK(l.empty());
  CHECK(l.oldest() == 0);
  l.sent(4);
  l.sent(3);
  CHECK(l.messages() == 2);
  CHECK(l.units() == 7);
  l.answered(2, false); // part of the oldest: it still owes 2
  CHECK(l.messages() == 2);
  CHECK(l.oldest() == 2);
  CHECK(l.units() == 5);
  l.answered(0, true); // ended early (an error): its rest is no longer owed
  CHECK(l.messages() == 1);
  CHECK(l.units() == 3);
  l.answered(5, false); // more than owed counts as all of it
  CHECK(l.empty());
  CHECK(l.units() == 0);
  l.answered(1, true); // nothing out: ignored
  CHECK(l.empty());
  l.sent(6);
  CHECK(l.forget() == 6);
  CHECK(l.empty());
}
