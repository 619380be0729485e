// Checkpoints across processes (docs/resume.md, "Across processes"): a
// queue of another process snapshotted and restored through its node, a
// pipeline that refuses to checkpoint one, and pipelines of other processes
// that take part in a pipeline's checkpoints as its members.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include <quern/blocking_queue.hpp>
#include <quern/coordinator.hpp>
#include <quern/input/batching.hpp>
#include <quern/pipeline.hpp>
#include <quern/queue.hpp>
#include <quern/queue_runner.hpp>
#include <quern/remote.hpp>
#include <quern/state_bytes.hpp>

#include "harness.hpp"

using namespace std::chrono_literals;
using namespace quern::test;

namespace {

std::vector<int64_t> values_of(const std::vector<quern::element>& batches) {
  std::vector<int64_t> out;
  for (auto& b : batches)
    for (auto v : b[0].values<int64_t>())
      out.push_back(v);
  return out;
}

// A member checkpoint: the host's 'rows' as its member "host" holds them,
// and the member "feeder"'s next value.
struct member_view {
  std::vector<int64_t> rows;
  int64_t next = -1;
};

member_view view_of(const quern::pipeline_snapshot& s) {
  member_view v;
  auto host = s.members.find("host");
  auto feeder = s.members.find("feeder");
  REQUIRE(host != s.members.end());
  REQUIRE(feeder != s.members.end());
  v.rows =
      values_of(quern::decode_queue_state(host->second.at("queue/rows"), "rows").stored);
  quern::state_reader r{feeder->second.at("part/feeder/next"), "next"};
  v.next = r.read_i64();
  return v;
}

std::vector<int64_t> iota_to(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(i);
  return out;
}

// The two processes of a member checkpoint: the host, whose 'rows' is
// member "host", and the feeder, member "feeder", which stores 0, 1, 2, ...
// into it (node.cpp's member-feed).
struct member_processes {
  host_process host;
  std::unique_ptr<child> feeder;

  // Once the feeder's runner was asked to stop: both processes end well.
  void require_clean_exit() {
    require_exit(*feeder, 0);
    host.proc->close_stdin();
    require_exit(*host.proc, 0);
  }
};

// Starts them; `host_args` and `feeder_args` add to their roles
// (--node.capacity, --node.pace-ms, --node.out, a restore).
member_processes start_members(const scratch_dir& dir, std::vector<std::string> host_args,
                               std::vector<std::string> feeder_args) {
  host_args.insert(host_args.begin(), "--node.member=host");
  feeder_args.insert(feeder_args.begin(), "--node.role=member-feed");
  member_processes m;
  m.host = start_host(dir, host_args);
  m.feeder = start_client(dir, "feeder", m.host.address, feeder_args);
  return m;
}

// This test process as the chief of those members: connected to the host,
// its pipeline checkpointing with the members of the host's coordinator,
// once "host" and "feeder" both registered.
struct member_chief {
  explicit member_chief(const std::string& address, quern::pipeline_options po = {})
      : peer(address), chief(peer.sys, po) {
    chief.checkpoint_members_of(peer.node.coordinator());
    chief.await_checkpoint_members({"host", "feeder"}, run_limit);
  }
  quern::actor_system& sys() { return peer.sys; }
  quern::remote_node& node() { return peer.node; }

  test_peer peer;
  quern::pipeline chief;
};

} // namespace

TEST_CASE("distributed RS-10 a queue of another process is snapshotted and restored "
          "through its node") {
  scratch_dir dir;
  auto host = start_host(dir, {"--node.capacity=4"});
  {
    quern::remote_config cfg;
    quern::actor_system sys{cfg};
    auto node = quern::connect(sys, host.address);
    quern::blocking_queue rows{sys, node.queue("rows")};
    for (int64_t i = 0; i < 4; ++i)
      rows.enqueue(quern::element{quern::tensor::scalar(i)});
    // A fifth enqueue waits for room at the full queue.
    std::thread waiting{
        [&] { rows.enqueue(quern::element{quern::tensor::scalar(int64_t{4})}); }};
    quern::queue_state s;
    bool seen = eventually(run_limit, [&] {
      s = rows.snapshot();
      return s.waiting_rows() == 1;
    });
    REQUIRE(seen);
    CHECK(values_of(s.stored) == std::vector<int64_t>{0, 1, 2, 3});
    CHECK(values_of(s.waiting) == std::vector<int64_t>{4});
    CHECK_FALSE(s.closed);
    CHECK(rows.size() == 4); // a snapshot takes nothing away

    // Into the host's other queue, never used: the rows come back in order,
    // the waiting one after the stored ones, then the close that waited.
    quern::blocking_queue moved{sys, node.queue("moved")};
    s.close_waiting = true;
    moved.restore(s);
    auto back = moved.dequeue_many(5);
    CHECK(values_of({back}) == std::vector<int64_t>{0, 1, 2, 3, 4});
    CHECK_THROWS_AS(moved.dequeue(), quern::out_of_range_error);

    // A used queue refuses, and the refusal crosses with its name.
    try {
      moved.restore(s);
      FAIL("a used queue took a restore");
    } catch (const quern::failed_precondition_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("cannot restore queue '"));
      CHECK_THAT(e.what(), Catch::Contains("moved' from a checkpoint"));
      CHECK_THAT(e.what(), Catch::Contains("used already"));
    }
    for (int i = 0; i < 5; ++i)
      rows.dequeue();
    waiting.join();
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE(
    "distributed RS-11 a pipeline refuses to checkpoint a queue of another process") {
  scratch_dir dir;
  auto host = start_host(dir);
  {
    quern::remote_config cfg;
    quern::actor_system sys{cfg};
    auto node = quern::connect(sys, host.address);
    quern::blocking_queue rows{sys, node.queue("rows")};
    rows.enqueue(quern::element{quern::tensor::scalar(int64_t{7})});
    quern::pipeline pipe{sys};
    auto in = pipe.make_consumer(node.queue("rows"));
    auto refused = [](auto&& call) {
      try {
        call();
      } catch (const quern::failed_precondition_error& e) {
        return std::string(e.what());
      }
      return std::string("not refused");
    };
    auto why = refused([&] { pipe.snapshot(3); });
    CHECK_THAT(why, Catch::Contains("queue 'rows' of this pipeline is a queue of another "
                                    "process"));
    quern::pipeline_snapshot s;
    s.step = 3;
    s.queues["rows"] = quern::queue_state{};
    why = refused([&] { pipe.restore(s); });
    CHECK_THAT(why, Catch::Contains("queue 'rows' of this pipeline is a queue of another "
                                    "process"));
    // Nothing was taken or put back: the row is still there.
    CHECK(rows.size() == 1);
    CHECK(rows.dequeue()[0].values<int64_t>()[0] == 7);
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE(
    "distributed RS-12 the pipelines of other processes pause for a checkpoint as its "
    "members, and each restores its own sections") {
  scratch_dir dir;
  auto ckpt = dir.file("ckpt");
  auto feeder_out = dir.file("feeder.out");
  // The host's 'rows' is member "host"; the feeder process stores 0, 1, 2,
  // ... into it, its next value member "feeder"'s part.
  auto start = [&](std::vector<std::string> restore) {
    std::vector<std::string> host_args{"--node.capacity=1000000"};
    host_args.insert(host_args.end(), restore.begin(), restore.end());
    std::vector<std::string> feeder_args{"--node.pace-ms=2", "--node.out=" + feeder_out};
    feeder_args.insert(feeder_args.end(), restore.begin(), restore.end());
    return start_members(dir, host_args, feeder_args);
  };
  int64_t saved = 0;
  {
    auto [host, feeder] = start({});
    quern::pipeline_options po;
    po.checkpoint_dir = ckpt;
    po.write_checkpoints_in_background = false;
    member_chief c{host.address, po};
    auto& chief = c.chief;
    auto& node = c.node();
    quern::blocking_queue rows{c.sys(), node.queue("rows")};
    REQUIRE(eventually(run_limit, [&] { return rows.size() >= 20; }));
    // Each snapshot is one moment of both processes: the host holds every
    // value the feeder stored before it, and no other.
    int64_t before = 0;
    for (int i = 0; i < 3; ++i) {
      auto v = view_of(chief.snapshot(i));
      CHECK(v.next >= before);
      CHECK(v.rows == iota_to(v.next));
      before = v.next;
      // The feeder runs again after each.
      REQUIRE(eventually(run_limit, [&] { return rows.size() > before; }));
    }
    auto path = chief.checkpoint(10);
    auto written =
        view_of(quern::pipeline::from_checkpoint(quern::read_checkpoint(path)));
    CHECK(written.rows == iota_to(written.next));
    saved = written.next;
    CHECK(saved >= before);

    // A member's name is its own: taken, or with '/', it is refused.
    quern::pipeline other{c.sys()};
    CHECK_THROWS_WITH(other.checkpoint_as_member(node.coordinator(), "feeder"),
                      Catch::Contains("a checkpoint member named 'feeder' is already "
                                      "registered"));
    CHECK_THROWS_WITH(other.checkpoint_as_member(node.coordinator(), "a/b"),
                      Catch::Contains("without '/', not 'a/b'"));
    // Both processes are lost after the checkpoint.
    feeder->signal(SIGKILL);
    host.proc->signal(SIGKILL);
    feeder->wait(run_limit);
    host.proc->wait(run_limit);
  }
  // Started again from the checkpoint: the host's 'rows' holds what it held
  // then, and the feeder goes on from its next value then, so the host holds
  // 0, 1, 2, ... without a gap or a value twice.
  std::filesystem::remove(feeder_out);
  std::filesystem::remove(dir.file("host.port"));
  auto again = start({"--node.checkpoint-dir=" + ckpt});
  {
    member_chief c{again.host.address};
    REQUIRE(
        eventually(run_limit, [&] { return contains(read_file(feeder_out), "ready"); }));
    CHECK(contains(read_file(feeder_out), "ready from " + std::to_string(saved)));
    quern::blocking_queue rows{c.sys(), c.node().queue("rows")};
    REQUIRE(eventually(run_limit, [&] { return rows.size() >= saved + 20; }));
    auto v = view_of(c.chief.snapshot(11));
    CHECK(v.next >= saved + 20);
    CHECK(v.rows == iota_to(v.next));
    c.peer.coordinator().request_stop();
  }
  again.require_clean_exit();
}

TEST_CASE("distributed RS-14 a member whose op streams through its own queue_writer "
          "is checkpointed exactly") {
  scratch_dir dir;
  // direct_batch_op: batches of 8 values, up to 64 rows sent and not yet
  // answered, more waiting in the writer.
  auto members = start_members(
      dir, {"--node.capacity=1000000"},
      {"--node.api=writer", "--node.pace-ms=1", "--node.out=" + dir.file("feeder.out")});
  {
    member_chief c{members.host.address};
    auto& chief = c.chief;
    quern::blocking_queue rows{c.sys(), c.node().queue("rows")};
    // Each snapshot holds in the host every value the feeder made before
    // it, none on the wire or left in the writer.
    int64_t before = 0;
    for (int i = 0; i < 10; ++i) {
      REQUIRE(eventually(run_limit, [&] { return rows.size() > before; }));
      auto v = view_of(chief.snapshot(i));
      CHECK(v.next > before);
      CHECK(v.rows == iota_to(v.next));
      before = v.next;
    }
    c.peer.coordinator().request_stop();
  }
  members.require_clean_exit();
}

TEST_CASE("distributed RS-14 RS-15 a checkpoint whose worker's streamed rows do not "
          "reach a frozen queue within the pause limit fails naming the worker, saves "
          "nothing, and every row reaches the queue once") {
  scratch_dir dir;
  auto ckpt = dir.file("ckpt");
  // The queue: the host's 'rows', in a process that SIGSTOP freezes. The
  // freeze stays far below the connection timeout (5 s), so the host is not
  // lost: it only does not answer.
  auto host = start_host(dir, {"--node.capacity=1000000"});
  {
    test_peer peer{host.address};
    auto coord = quern::spawn_coordinator(peer.sys);
    // Member "writer" of this process: a direct_batch_op streaming 0, 1, 2,
    // ... in batches of 8 into 'rows' through its own queue_writer, until
    // `end`.
    auto next = std::make_shared<std::atomic<int64_t>>(0);
    auto end =
        std::make_shared<std::atomic<int64_t>>(std::numeric_limits<int64_t>::max());
    auto op = quern::direct_batch_op(
        peer.sys, peer.node.queue("rows"),
        [next, end] {
          std::this_thread::sleep_for(1ms);
          if (next->load() >= end->load())
            throw quern::out_of_range_error("the feed ended");
          std::vector<int64_t> values(8);
          for (auto& v : values)
            v = (*next)++;
          return quern::element{quern::tensor::vector<int64_t>(std::move(values))};
        },
        {}, 64, "feed");
    quern::pipeline member{peer.sys};
    quern::queue_runner_options ro;
    ro.name = "frozen-feeder";
    ro.close_op = std::nullopt;
    quern::queue_runner runner{peer.node.queue("rows"), {op}, ro};
    member.add_queue_runner(runner);
    member.checkpoint_as_member(coord, "writer");
    member.start_queue_runners(coord);
    quern::pipeline_options po;
    po.checkpoint_dir = ckpt;
    po.write_checkpoints_in_background = false;
    po.checkpoint_pause_limit = 300ms;
    quern::pipeline chief{peer.sys, po};
    chief.checkpoint_members_of(coord);
    chief.await_checkpoint_members({"writer"}, run_limit);
    quern::blocking_queue rows{peer.sys, peer.node.queue("rows")};
    REQUIRE(eventually(run_limit, [&] { return rows.size() >= 64; }));
    // While the queue answers, the same checkpoint is taken.
    CHECK(chief.snapshot(1).members.count("writer") == 1);

    // Frozen, the queue sends the writer's barrier back only once it runs
    // again: the worker does not say it paused. Rows must be on their way
    // (with none, the worker pauses at once and the checkpoint is taken): a
    // batch made after the freeze was pushed before the worker sees the
    // pause, and an op that makes none waits for room its rows hold.
    host.proc->signal(SIGSTOP);
    auto before_freeze = next->load();
    (void)eventually(500ms, [&] { return next->load() >= before_freeze + 8; });
    std::string why = "not refused";
    try {
      chief.checkpoint(2);
    } catch (const quern::deadline_exceeded_error& e) {
      why = e.what();
    }
    host.proc->signal(SIGCONT);
    CHECK_THAT(why, Catch::Contains("checkpoint at step 2 not taken"));
    CHECK_THAT(why,
               Catch::Contains("of checkpoint member 'writer' did not pause within"));
    CHECK_THAT(why, Catch::Contains("frozen-feeder"));
    CHECK_THAT(why, Catch::Contains("nothing was saved"));
    CHECK((!std::filesystem::exists(ckpt) || std::filesystem::is_empty(ckpt)));

    // The pipeline runs on: more rows arrive, and the next checkpoint is taken.
    auto at = rows.size();
    REQUIRE(eventually(run_limit, [&] { return rows.size() > at; }));
    auto path = chief.checkpoint(3);
    CHECK(std::filesystem::exists(path));
    // The feed ends (its writer flushed) a few batches later: 'rows' holds
    // every value it made, in order, once.
    *end = next->load() + 80;
    REQUIRE(eventually(run_limit, [&] { return !runner.running(); }));
    auto made = next->load();
    REQUIRE(rows.size() == made);
    CHECK(values_of({rows.dequeue_many(static_cast<int32_t>(made))}) == iota_to(made));
    CHECK(rows.size() == 0);
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE("distributed RS-12 a member that does not pause, or runs again before the "
          "checkpoint is complete, fails it, naming the member") {
  quern::config cfg;
  quern::actor_system sys{cfg};
  auto coord = quern::spawn_coordinator(sys);
  auto fed = quern::spawn_fifo_queue(sys, 1000000, {quern::dtype::int64},
                                     {quern::tensor_shape{}}, "fed");
  // Inside its run while `stuck`: it cannot pause then.
  auto stuck = std::make_shared<std::atomic<bool>>(true);
  auto inside = std::make_shared<std::atomic<bool>>(false);
  auto op = quern::blocking_op([stuck, inside](quern::blocking_run& run) {
    *inside = true;
    while (*stuck)
      std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(1ms);
    run.emit(quern::element{quern::tensor::scalar(int64_t{1})});
  });
  quern::pipeline member{sys};
  quern::queue_runner_options ro;
  ro.name = "stuck-feeder";
  member.add_queue_runner(quern::queue_runner{fed, {op}, ro});
  member.checkpoint_as_member(coord, "m");
  member.start_queue_runners(coord);
  quern::pipeline_options po;
  po.checkpoint_pause_limit = 100ms;
  quern::pipeline chief{sys, po};
  chief.checkpoint_members_of(coord);
  chief.await_checkpoint_members({"m"}, run_limit);
  auto refused = [](auto&& call) {
    try {
      call();
    } catch (const quern::deadline_exceeded_error& e) {
      return std::string(e.what());
    }
    return std::string("not refused");
  };
  // Its worker is inside its first run: a snapshot asked before that
  // would find it between runs, and pause it.
  REQUIRE(eventually(run_limit, [&] { return inside->load(); }));
  auto why = refused([&] { chief.snapshot(1); });
  CHECK_THAT(why, Catch::Contains("checkpoint at step 1 not taken"));
  CHECK_THAT(why, Catch::Contains("of checkpoint member 'm' did not pause within"));
  CHECK_THAT(why, Catch::Contains("stuck-feeder"));
  // It runs on, and pauses once its run ends.
  *stuck = false;
  auto s = chief.snapshot(2);
  REQUIRE(s.members.count("m") == 1);
  CHECK(s.members.at("m").count("queue/fed") == 1);
  // A member holds its pause 3 limits and 5 s at most: a checkpoint that
  // takes longer is not taken.
  chief.add_checkpoint_part(
      "slow",
      [] {
        std::this_thread::sleep_for(6s);
        return std::string{};
      },
      [](const std::string&) {});
  why = refused([&] { chief.snapshot(3); });
  CHECK_THAT(why, Catch::Contains("member(s) 'm' ran again on their own"));
  CHECK(quern::blocking_queue{sys, fed}.size() > 0);
}

TEST_CASE("distributed RS-12 a member whose push waits for room at another process's "
          "queue pauses: its rows are the queue's waiting rows") {
  scratch_dir dir;
  auto members = start_members(dir, {"--node.capacity=4"},
                               {"--node.pace-ms=1", "--node.out=" + dir.file("out")});
  {
    quern::pipeline_options po;
    po.checkpoint_pause_limit = 5s;
    member_chief c{members.host.address, po};
    auto& chief = c.chief;
    // 'rows' is full and the feeder's next push waits at it (RS-10 shows it).
    quern::blocking_queue rows{c.sys(), c.node().queue("rows")};
    REQUIRE(eventually(run_limit, [&] { return rows.snapshot().waiting_rows() >= 1; }));
    // The feeder pauses once its pushes reached the queue: those that wait
    // for room are in the queue's section as its waiting rows, and the
    // feeder's next value follows them.
    for (int i = 0; i < 3; ++i) {
      auto s = chief.snapshot(i);
      auto state =
          quern::decode_queue_state(s.members.at("host").at("queue/rows"), "rows");
      auto held = values_of(state.stored);
      auto waiting = values_of(state.waiting);
      held.insert(held.end(), waiting.begin(), waiting.end());
      quern::state_reader r{s.members.at("feeder").at("part/feeder/next"), "next"};
      auto next = r.read_i64();
      CHECK(state.stored_rows() == 4);
      CHECK(held == iota_to(next));
    }
    // Everything runs on, in order.
    for (int64_t i = 0; i < 10; ++i)
      CHECK(rows.dequeue()[0].values<int64_t>()[0] == i);
    c.peer.coordinator().request_stop();
  }
  members.require_clean_exit();
}

TEST_CASE("distributed TL-10 a checkpoint member's stage in another process is in the "
          "chief's telemetry with its queue named by its owner and a killed member is "
          "named") {
  scratch_dir dir;
  // The member "feeder" stores a row every 20 ms: the slow stage.
  auto [host, feeder] =
      start_members(dir, {"--node.capacity=64"},
                    {"--node.pace-ms=20", "--node.out=" + dir.file("out")});
  {
    member_chief c{host.address};
    auto& chief = c.chief;
    auto in = chief.make_consumer(c.node().queue("rows"));
    for (int i = 0; i < 5; ++i)
      in.dequeue();
    chief.telemetry();
    for (int i = 0; i < 30; ++i)
      in.dequeue();
    auto t = chief.telemetry();
    INFO(t.verdict);
    const quern::runner_telemetry* fed = nullptr;
    for (auto& r : t.runners)
      if (r.name == "feeder/member-feeder")
        fed = &r;
    REQUIRE(fed);
    REQUIRE(fed->workers.size() == 1);
    CHECK(fed->workers[0].name.rfind("feeder/member-feeder/", 0) == 0);
    // 'rows' is the host's: `host/rows` for the feeder's runner and the
    // chief's consumer alike, and one queue.
    CHECK(fed->queue == "host/rows");
    REQUIRE(t.consumers.size() == 1);
    CHECK(t.consumers[0].queue == "host/rows");
    CHECK(std::count_if(t.queues.begin(), t.queues.end(),
                        [](auto& q) { return q.name == "host/rows"; }) == 1);
    CHECK(t.limiting_stage == "feeder/member-feeder");
    CHECK(contains(t.verdict, "stage `feeder/member-feeder`"));
    // The feeder's process is lost: the next reading does not wait for it
    // beyond its bound, and names it.
    feeder->signal(SIGKILL);
    feeder->wait(run_limit);
    auto after = chief.telemetry();
    INFO(after.verdict);
    CHECK(contains(after.verdict, "no figures from member `feeder`"));
  }
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE("distributed RS-17 a checkpoint with members refuses a batch reader of a queue "
          "of another process, before it pauses anything") {
  scratch_dir dir;
  auto m = start_members(dir, {"--node.capacity=1000000"},
                         {"--node.pace-ms=2", "--node.out=" + dir.file("out")});
  {
    member_chief c{m.host.address};
    // The host's 'rows' is its own member's: the chief's reader of it holds
    // batches a checkpoint of the chief's process could not take back.
    auto reader = c.chief.make_batch_reader(c.node().queue("rows"), 1,
                                            quern::batch_cut::any_size, 4);
    CHECK_THROWS_AS(c.chief.snapshot(1), quern::failed_precondition_error);
    CHECK_THROWS_WITH(c.chief.snapshot(1),
                      Catch::Contains("the batch reader of queue 'rows' reads a queue of "
                                      "another process"));
    // Nothing paused: the feeder goes on storing.
    quern::blocking_queue rows{c.sys(), c.node().queue("rows")};
    auto before = rows.size();
    CHECK(eventually(run_limit, [&] { return rows.size() > before; }));
    c.peer.coordinator().request_stop();
  }
  m.require_clean_exit();
}
