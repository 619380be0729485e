// Restoring checkpoint members on another number of processes (docs/resume.md,
// "Across processes"; docs/semantics.md RS-13): a member takes over the
// sections of members that are not started again, each part's states
// combined, and refuses what it cannot take over. The members here are
// pipelines of this process; across processes they are the same actors.

#include "helpers.hpp"

#include <memory>

#include "quern/state_bytes.hpp"
#include "temp_dir.hpp"

using namespace std::chrono_literals;
using namespace quern;
using namespace quern::test;

namespace {

using numbers = std::vector<int64_t>;

std::string encode(const numbers& v) {
  state_writer w;
  w.write_u64(v.size());
  for (auto x : v)
    w.write_i64(x);
  return w.take();
}

numbers decode(const std::string& bytes) {
  state_reader r{bytes, "numbers"};
  numbers v(r.read_u64());
  for (auto& x : v)
    x = r.read_i64();
  r.expect_end();
  return v;
}

/// A member pipeline whose part "work" holds `mine` (restored into
/// `restored`); with `combinable` its states combine by concatenation.
struct member {
  member(caf::actor_system& sys, const pipeline_options& po, numbers mine,
         bool combinable = true)
      : pipe{sys, po}, values{std::make_shared<numbers>(std::move(mine))} {
    std::function<std::string(const std::vector<std::string>&)> combine;
    if (combinable)
      combine = [](const std::vector<std::string>& states) {
        numbers all;
        for (auto& s : states)
          for (auto x : decode(s))
            all.push_back(x);
        return encode(all);
      };
    pipe.add_checkpoint_part(
        "work", [v = values] { return encode(*v); },
        [v = values](const std::string& bytes) { *v = decode(bytes); }, combine);
  }
  pipeline pipe;
  std::shared_ptr<numbers> values;
};

} // namespace

TEST_CASE("RS-13 a member takes over the sections of members not started again") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  pipeline_options po;
  po.checkpoint_dir = dir.path();
  po.write_checkpoints_in_background = false;
  {
    // The checkpointed run: members a, b, c and d; d serves a queue that
    // holds two rows.
    coordinator coord{sys};
    pipeline chief{sys, po};
    chief.checkpoint_members_of(coord.actor());
    member a{sys, po, {1, 2}}, b{sys, po, {3}}, c{sys, po, {4, 5, 6}}, d{sys, po, {7}};
    auto rows = spawn_fifo_queue(sys, 10, {dtype::int64}, {{}}, "d-rows");
    blocking_queue{sys, rows}.enqueue(int_element(8));
    blocking_queue{sys, rows}.enqueue(int_element(9));
    d.pipe.add_checkpoint_queue(rows);
    a.pipe.checkpoint_as_member(coord.actor(), "a");
    b.pipe.checkpoint_as_member(coord.actor(), "b");
    c.pipe.checkpoint_as_member(coord.actor(), "c");
    d.pipe.checkpoint_as_member(coord.actor(), "d");
    chief.await_checkpoint_members({"a", "b", "c", "d"}, 10s);
    chief.checkpoint(5);
  }
  // Restored on fewer processes: a goes on with c's work too, b with its own.
  po.restore = true;
  coordinator coord{sys};
  member a{sys, po, {}}, b{sys, po, {}};
  a.pipe.checkpoint_as_member(coord.actor(), "a",
                              [](const std::string& m) { return m == "c"; });
  b.pipe.checkpoint_as_member(coord.actor(), "b");
  CHECK(*a.values == numbers{1, 2, 4, 5, 6});
  CHECK(a.pipe.taken_over_members() == std::vector<std::string>{"c"});
  CHECK(a.pipe.restored_step() == 5);
  CHECK(*b.values == numbers{3});
  CHECK(b.pipe.taken_over_members().empty());

  // A new member, not in the checkpoint, may take over one that is.
  member e{sys, po, {}};
  e.pipe.checkpoint_as_member(coord.actor(), "e",
                              [](const std::string& m) { return m == "c"; });
  CHECK(*e.values == numbers{4, 5, 6});

  // A part without a combine function refuses to take over another's
  // states, naming the part; the pipeline is no member then.
  member f{sys, po, {}, false};
  CHECK_THROWS_WITH(
      f.pipe.checkpoint_as_member(
          coord.actor(), "f", [](const std::string& m) { return m == "a" || m == "b"; }),
      Catch::Contains("checkpoint member 'f' cannot take over member(s) 'a', 'b': part "
                      "'work' cannot combine the states of several members"));
  CHECK(f.values->empty());
  // A member's queue that held rows is not taken over: they would be lost.
  member g{sys, po, {}};
  CHECK_THROWS_WITH(
      g.pipe.checkpoint_as_member(coord.actor(), "g",
                                  [](const std::string& m) { return m == "d"; }),
      Catch::Contains("checkpoint member 'g' cannot take over member(s) 'd': its "
                      "queue/d-rows held 2 row(s)"));
  CHECK(g.values->empty());
}

TEST_CASE(
    "RS-17 a checkpoint member with a batch reader fails the checkpoint, naming it") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  coordinator coord{sys};
  pipeline chief{sys};
  chief.checkpoint_members_of(coord.actor());
  member a{sys, {}, {1}};
  auto rows = spawn_fifo_queue(sys, 10, {dtype::int64}, {{}}, "a-rows");
  auto reader = a.pipe.make_batch_reader(rows, 2);
  a.pipe.checkpoint_as_member(coord.actor(), "a");
  chief.await_checkpoint_members({"a"}, 10s);
  CHECK_THROWS_WITH(chief.snapshot(1),
                    Catch::Contains("checkpoint member 'a'") &&
                        Catch::Contains("the batch reader of queue 'a-rows'") &&
                        Catch::Contains("take batches with make_consumer there"));
  // Nothing stays paused: the member's pipeline checkpoints on its own.
  CHECK(a.pipe.snapshot(1).queues.count("a-rows") == 1);
}
