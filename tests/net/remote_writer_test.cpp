// Summary writers fed from other processes (docs/distributed.md): node.cpp's
// host exports a writer 'train', its `log` role feeds it.
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include <catch2/catch.hpp>

#include <quern/error.hpp>
#include <quern/summary/reader.hpp>

#include "harness.hpp"
#include "log_values.hpp"

using namespace std::chrono_literals;
using namespace quern::test;

namespace {

// Every scalar of every event file under `logdir`, by tag, as (step, value)
// in file order.
std::map<std::string, std::vector<std::pair<int64_t, float>>>
scalars_in(const std::string& logdir) {
  std::map<std::string, std::vector<std::pair<int64_t, float>>> out;
  auto runs = quern::find_runs(logdir);
  REQUIRE(runs);
  for (auto& run : *runs)
    for (auto& file : run.files) {
      auto contents = quern::read_event_file(file);
      INFO(file);
      REQUIRE_FALSE(contents.error);
      for (auto& ev : contents.events)
        if (auto* s = caf::get_if<quern::summary_event::summary>(&ev.what))
          for (auto& v : s->values)
            out[v.tag].emplace_back(ev.step, caf::get<float>(v.value));
    }
  return out;
}

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

} // namespace

TEST_CASE("distributed NET-19 a summary writer takes the scalars of other processes, "
          "infinities and NaN included") {
  // Two worker processes feed the host's writer, each from two threads
  // sharing one handle; more scalars each than a handle's batch, so several
  // batches cross.
  scratch_dir dir;
  auto logdir = dir.file("run");
  auto host = start_host(dir, {"--node.logdir=" + logdir});
  constexpr int64_t count = 20000;
  std::vector<std::unique_ptr<child>> workers;
  for (int id : {1, 2})
    workers.push_back(start_client(dir, "worker-" + std::to_string(id), host.address,
                                   {"--node.role=log", "--node.id=" + std::to_string(id),
                                    "--node.count=" + std::to_string(count)}));
  for (auto& w : workers)
    require_exit(*w, 0);
  host.proc->close_stdin();
  require_exit(*host.proc, 0);

  auto scalars = scalars_in(logdir);
  REQUIRE(scalars.size() == 4);
  for (auto tag : {"worker1/v", "worker1/u", "worker2/v", "worker2/u"}) {
    auto& xs = scalars[tag];
    INFO(tag);
    REQUIRE(xs.size() == static_cast<size_t>(count));
    size_t wrong = 0;
    for (int64_t step = 0; step < count; ++step) {
      auto want = log_value(step);
      auto [got_step, got] = xs[static_cast<size_t>(step)];
      bool same = got_step == step &&
                  (std::isnan(want) ? std::isnan(got) : bits_of(got) == bits_of(want));
      wrong += same ? 0 : 1;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("distributed NET-8 a summary writer's node lost: the next flush is "
          "unavailable, naming the writer") {
  scratch_dir dir;
  auto host = start_host(dir, {"--node.logdir=" + dir.file("run")});
  auto out = dir.file("worker.out");
  auto go = dir.file("go");
  auto worker = start_client(dir, "worker", host.address,
                             {"--node.role=log", "--node.id=1", "--node.count=100",
                              "--node.out=" + out, "--node.start-file=" + go});
  require_ready(*worker, out);
  host.proc->signal(SIGKILL);
  require_exit(*host.proc, 128 + SIGKILL);
  { std::ofstream{go}; }
  require_exit(*worker, static_cast<int>(quern::error_code::unavailable));
  CHECK(contains(worker->err(), "summary writer 'train' on " + host.address));
  CHECK(contains(worker->err(), "unreachable"));
}

TEST_CASE("distributed NET-2 a summary writer that is not exported is "
          "failed_precondition") {
  scratch_dir dir;
  auto host = start_host(dir);
  auto worker = start_client(dir, "worker", host.address,
                             {"--node.role=log", "--node.id=1", "--node.count=1"});
  require_exit(*worker, static_cast<int>(quern::error_code::failed_precondition));
  CHECK(contains(worker->err(),
                 "no summary writer named 'train' is exported (exported: none)"));
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE("distributed NET-18 a process that asked to end with its node exits with that "
          "status when the node is lost") {
  // connect_options::exit_status_on_loss: the worker sleeps in no quern
  // call, its runner feeds the host's queue; the host is killed.
  scratch_dir dir;
  auto host = start_host(dir);
  auto out = dir.file("worker.out");
  auto logdir = dir.file("worker-run");
  auto worker = start_client(
      dir, "worker", host.address,
      {"--node.role=exit-on-loss", "--node.out=" + out, "--node.logdir=" + logdir});
  require_ready(*worker, out);
  host.proc->signal(SIGKILL);
  require_exit(*host.proc, 128 + SIGKILL);
  require_exit(*worker, 14);
  auto err = worker->err();
  INFO(err);
  CHECK(contains(err, "quern: the quern node at " + host.address + " was lost"));
  CHECK(contains(err, "this process ends with status 14"));
  // Its writer closed its file, readable, with the scalars it was sent.
  auto scalars = scalars_in(logdir);
  REQUIRE(scalars.count("worker/x") == 1);
  auto& xs = scalars["worker/x"];
  CHECK(xs.size() == 20);
  for (size_t i = 0; i < xs.size(); ++i)
    CHECK(xs[i] == std::make_pair(static_cast<int64_t>(i), static_cast<float>(i)));
}
