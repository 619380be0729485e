// Shared queues (docs/semantics.md ).

#include "probe.hpp"

using namespace quern;
using namespace quern::test;

namespace {

using ivec = std::vector<int64_t>;

queue_options shared(int32_t capacity, std::vector<dtype> dtypes,
                     std::vector<tensor_shape> shapes, std::string shared_name = "sq") {
  queue_options o;
  o.capacity = capacity;
  o.dtypes = std::move(dtypes);
  o.shapes = std::move(shapes);
  o.shared_name = std::move(shared_name);
  return o;
}

/// The invalid_argument_error text of a spawn that must fail.
std::string spawn_error(caf::actor_system& sys, queue_kind kind, queue_options o) {
  try {
    spawn_queue(sys, kind, std::move(o));
  } catch (const invalid_argument_error& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("wrong exception class: " << e.what());
  }
  FAIL("spawn_queue succeeded");
  return {};
}

} // namespace

TEST_CASE_METHOD(system_fixture, "Q-90 same shared_name and options: one queue",
                 "[Q-90]") {
  auto opts = shared(5, {dtype::int64}, {tensor_shape{}});
  auto a = spawn_queue(sys, queue_kind::fifo, opts);
  opts.name = "another_node"; // the node name plays no part
  auto b = spawn_queue(sys, queue_kind::fifo, opts);
  CHECK(a == b);
  probe pa{sys, a};
  probe pb{sys, b};
  CHECK(pa.name() == "sq");
  pa.enqueue(i64(7));
  CHECK(pa.next().count() == 1);
  CHECK(dequeue_values(pb, 1) == ivec{7});
  // Unbounded spelled as -1 both times.
  auto c = spawn_queue(sys, queue_kind::fifo, shared(-1, {dtype::int64}, {}, "u"));
  CHECK(c == spawn_queue(sys, queue_kind::fifo, shared(-1, {dtype::int64}, {}, "u")));
  CHECK(c != a);
}

TEST_CASE_METHOD(system_fixture, "Q-90 without shared_name every queue is private",
                 "[Q-90]") {
  auto a = int_fifo(sys, 5, "same_node");
  auto b = int_fifo(sys, 5, "same_node");
  CHECK(a != b);
  probe pa{sys, a};
  probe pb{sys, b};
  CHECK(pa.name() != pb.name());
  pa.enqueue(i64(1));
  CHECK(pa.next().count() == 1);
  CHECK(pb.size() == 0);
}

TEST_CASE_METHOD(system_fixture, "Q-90 a second creator must match exactly", "[Q-90]") {
  auto q = spawn_queue(sys, queue_kind::fifo,
                       shared(5, {dtype::int64, dtype::string}, {tensor_shape{}, {2}}));
  CHECK(spawn_error(sys, queue_kind::fifo,
                    shared(6, {dtype::int64, dtype::string}, {tensor_shape{}, {2}})) ==
        "Shared queue 'sq' has capacity 5 but requested capacity was 6");
  CHECK(spawn_error(sys, queue_kind::fifo,
                    shared(-1, {dtype::int64, dtype::string}, {tensor_shape{}, {2}})) ==
        "Shared queue 'sq' has capacity 5 but requested capacity was 2147483647");
  CHECK(spawn_error(sys, queue_kind::fifo,
                    shared(5, {dtype::int64, dtype::int32}, {tensor_shape{}, {2}})) ==
        "Shared queue 'sq' has component types int64, string but requested component "
        "types were int64, int32");
  CHECK(spawn_error(sys, queue_kind::fifo,
                    shared(5, {dtype::int64, dtype::string}, {tensor_shape{}, {3}})) ==
        "Shared queue 'sq' has component shapes [[], [2]] but requested component "
        "shapes were [[], [3]]");
  CHECK(
      spawn_error(sys, queue_kind::fifo, shared(5, {dtype::int64, dtype::string}, {})) ==
      "Shared queue 'sq' has component shapes [[], [2]] but requested component "
      "shapes were []");
  // The existing queue checks the requesting op: "Expected <its kind>, found
  // <requested op>" (TF: FIFOQueue::MatchesNodeDef).
  queue_options rs = shared(5, {dtype::int64, dtype::string}, {tensor_shape{}, {2}});
  CHECK(spawn_error(sys, queue_kind::random_shuffle, rs) ==
        "Expected FIFOQueue, found RandomShuffleQueue");
  CHECK(spawn_error(sys, queue_kind::padding_fifo, rs) ==
        "Expected FIFOQueue, found PaddingFIFOQueue");
  // (Keep a handle: a shared queue lives while somebody holds it.)
  auto prio =
      spawn_queue(sys, queue_kind::priority, shared(5, {dtype::string}, {}, "prio"));
  CHECK(spawn_error(sys, queue_kind::fifo,
                    shared(5, {dtype::int64, dtype::string}, {}, "prio")) ==
        "Expected PriorityQueue, found FIFOQueue");
  // The priority queue's implicit int64 component is part of its types.
  CHECK(spawn_error(sys, queue_kind::priority, shared(5, {dtype::int32}, {}, "prio")) ==
        "Shared queue 'prio' has component types int64, string but requested "
        "component types were int64, int32");
  // The first queue is untouched by the failed attempts.
  probe p{sys, q};
  CHECK(p.spec().capacity == 5);
  CHECK(probe(sys, prio).spec().kind == queue_kind::priority);
}

TEST_CASE_METHOD(system_fixture,
                 "Q-54 shared RandomShuffleQueues agree on min_after_dequeue and seeds",
                 "[Q-54]") {
  auto opts = shared(10, {dtype::int64}, {tensor_shape{}});
  opts.min_after_dequeue = 2;
  opts.seed = 3;
  opts.seed2 = 4;
  auto q = spawn_queue(sys, queue_kind::random_shuffle, opts);
  CHECK(q == spawn_queue(sys, queue_kind::random_shuffle, opts));
  auto other = opts;
  other.min_after_dequeue = 1;
  CHECK(spawn_error(sys, queue_kind::random_shuffle, other) ==
        "Shared queue 'sq' has min_after_dequeue 2 but requested min_after_dequeue "
        "was 1.");
  other = opts;
  other.seed2 = 5;
  CHECK(spawn_error(sys, queue_kind::random_shuffle, other) ==
        "Shared queue 'sq' has random seeds (3, 4) but requested seeds are (3, 5).");
  // A requester without seeds accepts the existing ones.
  other = opts;
  other.seed = 0;
  other.seed2 = 0;
  CHECK(q == spawn_queue(sys, queue_kind::random_shuffle, other));
  // And the FIFO kind check speaks as the existing queue.
  CHECK(spawn_error(sys, queue_kind::fifo, opts) ==
        "Expected RandomShuffleQueue, found FIFOQueue");
}

TEST_CASE_METHOD(system_fixture,
                 "Q-65 shared PaddingFIFOQueues compare shapes by compatibility",
                 "[Q-65]") {
  auto q = spawn_queue(sys, queue_kind::padding_fifo,
                       shared(5, {dtype::int64}, {tensor_shape{unk, 2}}));
  CHECK(q == spawn_queue(sys, queue_kind::padding_fifo,
                         shared(5, {dtype::int64}, {tensor_shape{unk, 2}})));
  CHECK(q == spawn_queue(sys, queue_kind::padding_fifo,
                         shared(5, {dtype::int64}, {tensor_shape{3, 2}})));
  CHECK(q == spawn_queue(sys, queue_kind::padding_fifo,
                         shared(5, {dtype::int64}, {tensor_shape{unk, unk}})));
  CHECK(spawn_error(sys, queue_kind::padding_fifo,
                    shared(5, {dtype::int64}, {tensor_shape{unk, 3}})) ==
        "Shared queue 'sq' has component shapes [[?,2]] but requested component "
        "shapes were [[?,3]]");
  CHECK(spawn_error(sys, queue_kind::padding_fifo,
                    shared(5, {dtype::int64}, {tensor_shape{unk}})) ==
        "Shared queue 'sq' has component shapes [[?,2]] but requested component "
        "shapes were [[?]]");
}
