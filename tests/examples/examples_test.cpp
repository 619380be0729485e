// The example programs run as processes with small arguments; their event
// files are read back and must hold the expected tags and steps. The
// binaries are built with this suite (tests/input/sources.cmake) and found in
// QUERN_EXAMPLES_DIR; a missing one fails the test.

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "input_test_util.hpp"
#include "quern/summary/reader.hpp"

namespace fs = std::filesystem;

namespace {

std::string example_binary(const std::string& name) {
  auto bin = (fs::path{QUERN_EXAMPLES_DIR} / name).string();
  INFO("example binary " << bin);
  REQUIRE(fs::exists(bin));
  return bin;
}

struct run_result {
  int status = -1;
  std::string output;
};

run_result run(const std::string& cmd) {
  run_result r;
  auto* p = ::popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
    r.output.append(buf.data(), n);
  auto st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

/// tag -> steps of every scalar in the event files directly in `dir`.
std::map<std::string, std::set<int64_t>> scalars_in(const std::string& dir) {
  std::map<std::string, std::set<int64_t>> out;
  for (auto& entry : fs::directory_iterator(dir)) {
    auto name = entry.path().filename().string();
    if (name.find("tfevents") == std::string::npos)
      continue;
    auto contents = quern::read_event_file(entry.path().string());
    CHECK_FALSE(contents.error);
    for (auto& ev : contents.events)
      if (auto s = caf::get_if<quern::summary_event::summary>(&ev.what))
        for (auto& v : s->values)
          out[v.tag].insert(ev.step);
  }
  return out;
}

std::set<int64_t> range(int64_t n) {
  std::set<int64_t> s;
  for (int64_t i = 0; i < n; ++i)
    s.insert(i);
  return s;
}

} // namespace

TEST_CASE("IN-3 IN-12 IN-16 example csv_pipeline: trains to the epoch limit and logs",
          "[IN-3][IN-12][IN-16][examples]") {
  auto bin = example_binary("csv_pipeline");
  quern::test::temp_dir dir;
  // 2 files x 100 rows x 3 epochs = 600 examples = 37 full batches of 16.
  auto r = run(bin +
               " --files 2 --rows 100 --epochs 3 --batch-size 16 --readers 2 "
               "--min-after-dequeue 20 --seed 3 --logdir " +
               dir.path());
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("Done training -- epoch limit reached") != std::string::npos);
  CHECK(r.output.find("trained 37 steps") != std::string::npos);
  auto tags = scalars_in(dir.path());
  CHECK(tags["loss"] == range(37));
  CHECK(tags["input_producer/fraction_of_32_full"] == range(37));
  // capacity = 20 + (2 + 2) * 16 = 84: over 20 of 64.
  CHECK(tags["shuffle_batch_join/fraction_over_20_of_64_full"] == range(37));
  CHECK(tags.count("weights/w1") == 1);
}

TEST_CASE("TL-6 example csv_pipeline: logs where its input pipeline waits",
          "[TL-6][TL-5][examples]") {
  auto bin = example_binary("csv_pipeline");
  quern::test::temp_dir dir;
  auto r = run(bin +
               " --files 2 --rows 100 --epochs 3 --batch-size 16 --readers 2 "
               "--min-after-dequeue 20 --seed 3 --telemetry-every 0 --logdir " +
               dir.path());
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("input pipeline: ") != std::string::npos);
  auto tags = scalars_in(dir.path());
  // With --telemetry-every 0, at every step: the consumer's exposed wait,
  // both stages' shares and both queues' fill.
  for (auto tag :
       {"consumer/shuffle_batch_join/wait_fraction", "runner/shuffle_batch_join/busy",
        "runner/shuffle_batch_join/waiting_for_input",
        "runner/shuffle_batch_join/waiting_for_room", "runner/input_producer/busy",
        "queue/shuffle_batch_join/fill", "queue/input_producer/fill"}) {
    INFO(tag);
    CHECK(tags[tag] == range(37));
  }
}

TEST_CASE("RS-7 example csv_pipeline: stopped after a checkpoint and run again with "
          "--restore, it trains what the unbroken run trains",
          "[RS-7][RS-8][examples]") {
  auto bin = example_binary("csv_pipeline");
  quern::test::temp_dir dir;
  auto args = " --files 2 --rows 100 --epochs 3 --batch-size 16 --min-after-dequeue 20 "
              "--seed 3 --checkpoint-every 10 --logdir " +
              dir.path();
  // Preempted at step 25: its last checkpoint is at step 20.
  auto first = run(bin + args + " --readers 2 --stop-after-steps 25");
  INFO(first.output);
  REQUIRE(first.status == 0);
  CHECK(first.output.find("stopped after step 25") != std::string::npos);
  // Restored with another number of readers.
  auto second = run(bin + args + " --readers 3 --restore");
  INFO(second.output);
  REQUIRE(second.status == 0);
  CHECK(second.output.find("at step 20") != std::string::npos);
  CHECK(second.output.find("Done training -- epoch limit reached") != std::string::npos);
  CHECK(second.output.find("trained 37 steps") != std::string::npos);
  // Both runs' points are in the run's files, and the restored one says where
  // it restarted (SessionLog START at step 20).
  auto tags = scalars_in(dir.path());
  CHECK(tags["loss"] == range(37));
  bool start_at_20 = false;
  for (auto& entry : fs::directory_iterator(dir.path()))
    if (entry.path().filename().string().find("tfevents") != std::string::npos)
      for (auto& ev : quern::read_event_file(entry.path().string()).events)
        if (auto log = caf::get_if<quern::summary_event::session_log>(&ev.what))
          start_at_20 = start_at_20 || (log->status == 1 && ev.step == 20);
  CHECK(start_at_20);
}

TEST_CASE("examples: every one answers --help and names a bad option or a stray argument",
          "[examples]") {
  for (auto name : {"csv_pipeline", "five_groups", "queue_runner_training", "incrementer",
                    "hello_queue", "shared_handles", "guide_tensors",
                    "guide_queue_runner", "guide_input_pipeline"}) {
    INFO(name);
    auto bin = example_binary(name);
    auto help = run(bin + " --help");
    CHECK(help.status == 0);
    CHECK(help.output.find("--help") != std::string::npos);
    // Defaults print as a person writes them: 0.1, not 0.10000000000000001.
    CHECK(help.output.find("0000000") == std::string::npos);
    CHECK(help.output.find("9999999") == std::string::npos);
    auto bad = run(bin + " --no-such-option");
    CHECK(bad.status == 2);
    CHECK(bad.output.find(std::string(name) + ": ") != std::string::npos);
    CHECK(bad.output.find("'--no-such-option'") != std::string::npos);
    auto stray = run(bin + " stray.csv");
    CHECK(stray.status == 2);
    CHECK(stray.output.find(std::string(name) + ": unexpected argument 'stray.csv'") !=
          std::string::npos);
  }
}

TEST_CASE("examples: --help and bad arguments", "[examples]") {
  for (auto name : {"csv_pipeline", "five_groups", "queue_runner_training"}) {
    auto bin = example_binary(name);
    auto help = run(bin + " --help");
    CHECK(help.status == 0);
    CHECK(help.output.find("--logdir") != std::string::npos);
    auto bad = run(bin + " --no-such-option");
    CHECK(bad.status != 0);
    CHECK(bad.output.find(name) != std::string::npos);
  }
  // An empty run directory is refused before anything is written (the CSV
  // files would otherwise go to /data at the filesystem root).
  auto bin = example_binary("csv_pipeline");
  auto empty = run(bin + " --logdir ''");
  CHECK(empty.status != 0);
  CHECK(empty.output.find("csv_pipeline: --logdir must not be empty") !=
        std::string::npos);
  // Sizes that would overflow the shuffle queue's capacity are refused by
  // name, before anything is allocated or written.
  for (auto args : {"--min-after-dequeue 2147483647", "--batch-size 2147483647"}) {
    auto big = run(bin + " " + args + " --logdir /nonexistent/never-written");
    CHECK(big.status == 2);
    CHECK(big.output.find(
              "is the shuffle queue's capacity and must be at most 2147483647") !=
          std::string::npos);
  }
  auto incrementer = example_binary("incrementer");
  auto big = run(incrementer + " --capacity 2147483647");
  CHECK(big.status == 2);
  CHECK(big.output.find("--capacity must be at most 10000000, got 2147483647") !=
        std::string::npos);
}

TEST_CASE("example five_groups: per-group losses and the mean per step",
          "[examples][seed]") {
  auto bin = example_binary("five_groups");
  quern::test::temp_dir dir;
  auto r = run(bin + " --steps 12 --seed 5 --logdir " + dir.path());
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("loss: ") != std::string::npos);
  CHECK(r.output.find(", mean loss: ") != std::string::npos);
  auto tags = scalars_in(dir.path());
  for (int i = 0; i < 5; ++i)
    CHECK(tags["thread_" + std::to_string(i) + "/loss"] == range(12));
  CHECK(tags["mean_loss"] == range(12));
  CHECK(tags["loss"] == range(12));
}

TEST_CASE("example queue_runner_training: the loop and its error path",
          "[examples][seed]") {
  auto bin = example_binary("queue_runner_training");
  quern::test::temp_dir dir;
  auto r = run(bin + " --steps 20 --logdir " + dir.path() + "/ok");
  INFO(r.output);
  REQUIRE(r.status == 0);
  auto tags = scalars_in(dir.path() + "/ok");
  CHECK(tags["loss"] == range(20));
  CHECK(tags["accuracy"] == range(20));
  CHECK(tags["queue/size"] == range(20));
  // A worker's error reaches the coordinator: the loop stops and join throws it.
  auto failed =
      run(bin + " --steps 100000 --fail-at 10 --logdir " + dir.path() + "/fail");
  INFO(failed.output);
  CHECK(failed.status == 1);
  CHECK(failed.output.find("worker 0 failed on purpose") != std::string::npos);
}
