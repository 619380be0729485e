// The flagship over processes (examples/distributed/csv_pipeline_distributed.cpp)
// with a process killed midway: those that lose it end with status 14
// (Unavailable), none hangs.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <regex>
#include <set>

#include <catch2/catch.hpp>

#include <quern/summary/reader.hpp>

#include "harness.hpp"

using namespace std::chrono_literals;
using namespace quern::test;

namespace {

const std::string flagship_binary = QUERN_FLAGSHIP_BINARY;
constexpr int unavailable = 14;

std::unique_ptr<child> start_role(const scratch_dir& dir, const std::string& name,
                                  std::vector<std::string> args) {
  args.insert(args.begin(), flagship_binary);
  args.push_back("--logdir=" + dir.file("run"));
  return std::make_unique<child>(name, args, dir);
}

// The address a process printed after "on " (bounded by start_limit).
std::string printed_address(child& c) {
  std::string address;
  bool found = eventually(start_limit, [&] {
    std::smatch m;
    auto out = c.out();
    if (std::regex_search(out, m, std::regex{"on (127\\.0\\.0\\.1:[0-9]+)"}))
      address = m[1];
    return !address.empty() || c.wait(0ms).has_value();
  });
  INFO(c.report());
  REQUIRE(found);
  REQUIRE_FALSE(address.empty());
  return address;
}

// A host, a trainer and one reader, training long enough to be killed midway
// (many epochs of small files); returns once the trainer trains.
struct running_flagship {
  std::unique_ptr<child> host, trainer, reader;

  explicit running_flagship(const scratch_dir& dir) {
    host = start_role(dir, "host",
                      {"--role=host", "--listen=127.0.0.1:0", "--readers=1", "--files=2",
                       "--rows=200", "--epochs=100000"});
    auto host_address = printed_address(*host);
    trainer =
        start_role(dir, "trainer",
                   {"--role=trainer", "--host=" + host_address, "--listen=127.0.0.1:0"});
    auto trainer_address = printed_address(*trainer);
    reader = start_role(dir, "reader",
                        {"--role=reader", "--host=" + host_address,
                         "--trainer=" + trainer_address, "--id=1"});
    bool training = eventually(start_limit, [&] {
      return contains(trainer->out(), "step   100") || trainer->wait(0ms).has_value();
    });
    INFO(trainer->report() << "\n" << reader->report());
    REQUIRE(training);
  }
};

} // namespace

TEST_CASE("distributed NET-8 flagship: the trainer killed, the reader exits with "
          "Unavailable") {
  scratch_dir dir;
  running_flagship f{dir};
  f.trainer->signal(SIGKILL);
  require_exit(*f.trainer, 128 + SIGKILL);
  require_exit(*f.reader, unavailable);
  CHECK(contains(f.reader->err(), "Unavailable"));
  f.host->signal(SIGTERM); // it waits for tokens that will not come
  require_exit(*f.host, 128 + SIGTERM);
}

TEST_CASE("distributed NET-8 flagship: the queue host killed, trainer and reader exit "
          "with Unavailable") {
  scratch_dir dir;
  running_flagship f{dir};
  f.host->signal(SIGKILL);
  require_exit(*f.host, 128 + SIGKILL);
  require_exit(*f.trainer, unavailable);
  require_exit(*f.reader, unavailable);
  CHECK(contains(f.trainer->err(), "Unavailable"));
  CHECK(contains(f.reader->err(), "Unavailable"));
}

namespace {

/// The steps of the scalars tagged `tag` in the event files of `dir`.
std::set<int64_t> steps_of(const std::string& dir, const std::string& tag) {
  std::set<int64_t> out;
  for (auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().find("tfevents") == std::string::npos)
      continue;
    for (auto& ev : quern::read_event_file(entry.path().string()).events)
      if (auto s = caf::get_if<quern::summary_event::summary>(&ev.what))
        for (auto& v : s->values)
          if (v.tag == tag)
            out.insert(ev.step);
  }
  return out;
}

} // namespace

TEST_CASE("distributed RS-12 RS-13 flagship: stopped after a checkpoint and run again "
          "with --restore on 2, 3 and 1 readers, every example of a full batch is "
          "trained once") {
  scratch_dir dir;
  auto run_dir = dir.file("run");
  std::vector<std::string> args{flagship_binary, "--files=2", "--rows=500", "--epochs=3",
                                "--logdir=" + run_dir};
  // Stopped at step 25: the job's last checkpoint is at step 20.
  auto first_args = args;
  first_args.insert(first_args.end(), {"--checkpoint-every=10", "--stop-after-steps=25"});
  child first{"first", first_args, dir};
  require_exit(first, 0);
  CHECK(contains(first.out(), "trainer: stopped after step 25"));
  // Every process restored: the host's queues and producer, each reader's
  // files in progress, the trainer's model and step; on as many readers as
  // the checkpointed run had (2), on more (3: the third starts with new
  // files) and on fewer (1: it takes over reader-2's files, RS-13).
  for (auto readers : {2, 3, 1}) {
    auto again = args;
    again.insert(again.end(), {"--restore", "--readers=" + std::to_string(readers)});
    child second{"restored on " + std::to_string(readers), again, dir};
    require_exit(second, 0); // the trainer checks what it trained (--expect)
    INFO(second.report());
    CHECK(
        contains(second.out(), "trainer: restored from " + run_dir + "/ckpt at step 20"));
    CHECK(contains(second.out(), "Done training -- epoch limit reached"));
    // 3,000 examples: 93 full batches over the two runs, none twice, none lost.
    CHECK(contains(second.out(), "trainer: trained 93 steps of 32"));
    CHECK(contains(second.out(), "reader-1: goes on with the files of reader-2") ==
          (readers == 1));
    std::set<int64_t> all;
    for (int64_t i = 0; i < 93; ++i)
      all.insert(i);
    CHECK(steps_of(run_dir, "loss") == all);
  }
}

namespace {

/// Every scalar tag, and every text of `text_tag`, in the event files of `dir`.
struct run_contents {
  std::set<std::string> scalars;
  std::vector<std::string> texts;
};

run_contents contents_of(const std::string& dir, const std::string& text_tag) {
  run_contents out;
  for (auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().find("tfevents") == std::string::npos)
      continue;
    for (auto& ev : quern::read_event_file(entry.path().string()).events)
      if (auto s = caf::get_if<quern::summary_event::summary>(&ev.what))
        for (auto& v : s->values) {
          if (caf::get_if<float>(&v.value))
            out.scalars.insert(v.tag);
          else if (v.tag == text_tag)
            if (auto t = caf::get_if<quern::text_tensor>(&v.value))
              out.texts.insert(out.texts.end(), t->strings.begin(), t->strings.end());
        }
  }
  return out;
}

} // namespace

TEST_CASE("distributed TL-10 flagship: the trainer's run holds the telemetry of every "
          "process's stages") {
  scratch_dir dir;
  auto run_dir = dir.file("run");
  child job{"job",
            {flagship_binary, "--files=2", "--rows=500", "--epochs=3",
             "--telemetry-every=0", "--logdir=" + run_dir},
            dir};
  require_exit(job, 0);
  INFO(job.report());
  auto run = contents_of(run_dir, "pipeline/graph");
  for (auto tag : {"runner/reader-1/reader-1/busy", "runner/reader-2/reader-2/busy",
                   "worker/reader-1/reader-1/reader-1/busy",
                   "consumer/host/examples/wait_fraction", "queue/host/examples/fill"}) {
    INFO(tag);
    CHECK(run.scalars.count(tag) == 1);
  }
  // The host's producer, a stage of the member "host".
  CHECK(std::any_of(run.scalars.begin(), run.scalars.end(), [](const std::string& t) {
    return t.rfind("runner/host/", 0) == 0 && t.size() > 5 &&
           t.compare(t.size() - 5, 5, "/busy") == 0;
  }));
  // The structure names the readers' stages, feeding the host's queue.
  REQUIRE_FALSE(run.texts.empty());
  CHECK(std::any_of(run.texts.begin(), run.texts.end(), [](const std::string& g) {
    return contains(g, "\"name\":\"reader-1/reader-1\"") &&
           contains(g, "\"queue\":\"host/examples\"");
  }));
}

namespace {

// Starts the flagship (--role=all) with `args` and kills its reader `id`
// with SIGKILL once the trainer printed step 300.
std::unique_ptr<child> kill_reader_midway(const scratch_dir& dir,
                                          std::vector<std::string> args, int id) {
  args.insert(args.begin(), flagship_binary);
  auto job = std::make_unique<child>("job", args, dir);
  pid_t victim = 0;
  std::regex started{"started reader-" + std::to_string(id) + " \\(pid ([0-9]+)\\)"};
  bool training = eventually(start_limit, [&] {
    std::smatch m;
    auto out = job->out();
    if (std::regex_search(out, m, started))
      victim = static_cast<pid_t>(std::stol(m[1]));
    return (victim != 0 && contains(out, "trainer: step   300")) ||
           job->wait(0ms).has_value();
  });
  INFO(job->report());
  REQUIRE(training);
  REQUIRE(victim != 0);
  REQUIRE(::kill(victim, SIGKILL) == 0);
  return job;
}

} // namespace

TEST_CASE("distributed RS-16 flagship --hand-over: a reader process killed in the middle "
          "of a file leaves its files to the other readers, and every example is stored "
          "and trained once") {
  scratch_dir dir;
  auto run_dir = dir.file("run");
  // 4 files of 20,000 rows, one epoch: 2,500 steps, long enough to kill a
  // reader while every reader is in the middle of its file.
  auto job = kill_reader_midway(dir,
                                {"--hand-over", "--files=4", "--rows=20000", "--epochs=1",
                                 "--readers=3", "--logdir=" + run_dir},
                                2);
  require_exit(*job, 0); // the trainer checks what it trained (--expect)
  auto out = job->out();
  CHECK(contains(out, "host: reader-2 lost (status 137)"));
  CHECK(contains(out, "goes on with another reader"));
  // Another reader went on with reader-2's file after the rows the host's
  // queue held of it.
  CHECK(
      std::regex_search(out, std::regex{"reader-[13]: goes on with .*data_[0-9]+\\.csv#1 "
                                        "after its [1-9][0-9]* rows the queue holds"}));
  CHECK(contains(out, "host: 'examples' stored 80000 rows of the 80000 made"));
  CHECK(contains(out, "trainer: trained 2500 steps of 32"));
  std::set<int64_t> all;
  for (int64_t i = 0; i < 2500; ++i)
    all.insert(i);
  CHECK(steps_of(run_dir, "loss") == all);
}

TEST_CASE("distributed RS-16 flagship --hand-over: the last reader lost ends the job, "
          "and a bad --lost-after or --checkpoint-every with it is refused") {
  scratch_dir dir;
  auto job = kill_reader_midway(dir,
                                {"--hand-over", "--files=4", "--rows=20000", "--epochs=1",
                                 "--readers=1", "--logdir=" + dir.file("run")},
                                1);
  require_exit(*job, 1);
  CHECK(contains(job->out(),
                 "host: reader-1 lost (status 137); no reader is left to go on with its "
                 "units"));
  CHECK(contains(job->err(),
                 "the reader-1 process failed (status 137); ending the others"));
  for (auto [extra, why] : {std::pair<std::string, std::string>{
                                "--lost-after=0", "--lost-after must be positive"},
                            {"--checkpoint-every=5",
                             "--hand-over does not combine with --checkpoint-every"}}) {
    child refused{"refused", {flagship_binary, "--hand-over", extra}, dir};
    require_exit(refused, 2);
    CHECK(contains(refused.err(), why));
  }
}

TEST_CASE("distributed RS-16 flagship --hand-over by hand: a reader process of its own "
          "killed is found lost once not heard for --lost-after, and the job goes on") {
  scratch_dir dir;
  std::vector<std::string> job{"--hand-over", "--files=4",   "--rows=20000",
                               "--epochs=1",  "--readers=2", "--lost-after=3"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), job.begin(), job.end());
    return args;
  };
  auto host = start_role(dir, "host", with({"--role=host", "--listen=127.0.0.1:0"}));
  auto host_address = printed_address(*host);
  auto trainer = start_role(dir, "trainer",
                            {"--role=trainer", "--host=" + host_address,
                             "--listen=127.0.0.1:0", "--expect=80000"});
  auto trainer_address = printed_address(*trainer);
  std::vector<std::unique_ptr<child>> readers;
  for (auto id : {"1", "2"})
    readers.push_back(
        start_role(dir, std::string("reader-") + id,
                   with({"--role=reader", "--host=" + host_address,
                         "--trainer=" + trainer_address, std::string("--id=") + id})));
  bool training = eventually(start_limit, [&] {
    return contains(trainer->out(), "step   300") || trainer->wait(0ms).has_value();
  });
  INFO(trainer->report());
  REQUIRE(training);
  readers[1]->signal(SIGKILL);
  require_exit(*readers[1], 128 + SIGKILL);
  require_exit(*trainer, 0); // it trained every example made (--expect)
  require_exit(*readers[0], 0);
  require_exit(*host, 0);
  INFO(host->report());
  CHECK(contains(host->out(), "host: reader-2 lost (not heard for 3000 ms); unit "));
  CHECK(contains(readers[0]->out(), "reader-1: goes on with "));
  CHECK(contains(host->out(), "host: 'examples' stored 80000 rows of the 80000 made"));
  CHECK(contains(trainer->out(), "trainer: trained 2500 steps of 32"));
}
