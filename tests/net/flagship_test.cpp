// The flagship over processes (examples/distributed/csv_pipeline_distributed.cpp)
// with a process killed midway: those that lose it end with status 14
// (Unavailable), none hangs.
#include <csignal>
#include <regex>

#include <catch2/catch.hpp>

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
