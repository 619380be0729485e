// Writes N scalar events (default 1,000,000) twice in one process and prints
// events/s for both and their ratio:
//   actor  quern::summary_writer (blocking handle) -> summary-writer actor ->
//          event file; timed until close() has returned (file complete)
//   plain  a plain function: the same event_encoder appending framed records
//          to a 1 MiB buffer written to a file with write(2), then fsync
// Both stamp wall_time per event and fsync the file once at the end (the
// actor also syncs after its first events, SW-3). Best of three rounds each,
// interleaved. Target: >= 5M events/s through the actor, ratio >= 1 (the actor hides the
// encoding behind the caller).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <caf/actor_system.hpp>

#include "command_line.hpp"
#include "peak_rss.hpp"

#include "quern/format/record.hpp"
#include "quern/messages.hpp"
#include "quern/summary/event.hpp"
#include "quern/summary/event_file.hpp"
#include "quern/summary/summary_writer.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

constexpr int groups = 5; // the seed program's five asynchronous groups

const std::vector<std::string>& tags() {
  static const std::vector<std::string> t = [] {
    std::vector<std::string> v;
    for (int g = 0; g < groups; ++g)
      v.push_back("thread_" + std::to_string(g) + "/loss");
    return v;
  }();
  return t;
}

double wall_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// The baseline: one plain function, no actor.
double run_plain(const std::string& dir, long n) {
  auto t0 = clock_type::now();
  auto path = dir + "/" + quern::event_file_name(std::time(nullptr), "plain", "");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(path.c_str());
    std::exit(1);
  }
  quern::event_encoder enc;
  std::string buf;
  buf.reserve(size_t{1} << 20);
  auto drain = [&] {
    for (size_t off = 0; off < buf.size();) {
      auto k = ::write(fd, buf.data() + off, buf.size() - off);
      if (k < 0) {
        std::perror("write");
        std::exit(1);
      }
      off += static_cast<size_t>(k);
    }
    buf.clear();
  };
  enc.append_event(buf,
                   quern::file_version_event(static_cast<double>(std::time(nullptr))));
  auto& t = tags();
  for (long i = 0; i < n; ++i) {
    enc.append_scalar(buf, wall_now(), i / groups, t[i % groups],
                      1000.0f - static_cast<float>(i) * 1e-3f);
    if (buf.size() >= (size_t{1} << 20))
      drain();
  }
  drain();
  ::fsync(fd);
  ::close(fd);
  return seconds_since(t0);
}

/// Through the actor, as a user's main() writes: writer.scalar(tag, value, step).
double run_actor(caf::actor_system& sys, const std::string& dir, long n) {
  auto t0 = clock_type::now();
  quern::summary_writer_options opts;
  opts.logdir = dir;
  quern::summary_writer writer{sys, opts};
  auto& t = tags();
  for (long i = 0; i < n; ++i)
    writer.scalar(t[i % groups], 1000.0f - static_cast<float>(i) * 1e-3f, i / groups);
  writer.close();
  return seconds_since(t0);
}

size_t count_events(const std::string& dir) {
  size_t total = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    auto c = quern::read_record_file(e.path().string()); // both CRCs checked
    if (c.error) {
      std::fprintf(stderr, "damaged output %s\n", e.path().c_str());
      std::exit(1);
    }
    total += c.records.size();
  }
  return total;
}

} // namespace

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  long n = 1000000;
  po::options_description desc{"bench_summary_writer: scalar events through the summary "
                               "writer actor against a plain buffered-file encoder, same "
                               "process\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "events,n", po::value<long>(&n)->default_value(n), "scalar events per run");
  po::variables_map vm;
  if (auto status =
          quern::cli::parse_options("bench_summary_writer", argc, argv, desc, vm))
    return *status;
  if (n <= 0) {
    std::fprintf(stderr, "bench_summary_writer: --events must be positive, got %ld\n", n);
    return 2;
  }
  quern::config cfg;
  caf::actor_system sys{cfg};
  auto base = std::filesystem::temp_directory_path() /
              ("quern-bench-" + std::to_string(::getpid()));
  double best_plain = 1e9;
  double best_actor = 1e9;
  for (int round = 0; round < 3; ++round) {
    auto pdir = (base / ("plain" + std::to_string(round))).string();
    auto adir = (base / ("actor" + std::to_string(round))).string();
    std::filesystem::create_directories(pdir);
    auto tp = run_plain(pdir, n);
    auto ta = run_actor(sys, adir, n);
    if (count_events(pdir) != static_cast<size_t>(n) + 1 ||
        count_events(adir) != static_cast<size_t>(n) + 1) {
      std::fprintf(stderr, "wrong event count\n");
      return 1;
    }
    std::printf("round %d: plain %.3f s, actor %.3f s\n", round + 1, tp, ta);
    best_plain = std::min(best_plain, tp);
    best_actor = std::min(best_actor, ta);
    std::filesystem::remove_all(pdir);
    std::filesystem::remove_all(adir);
  }
  std::filesystem::remove_all(base);
  double plain_rate = static_cast<double>(n) / best_plain;
  double actor_rate = static_cast<double>(n) / best_actor;
  double ratio = actor_rate / plain_rate;
  std::printf("summary_writer: %ld scalar events, best of 3\n", n);
  std::printf("  plain function (encoder + buffered file): %8.3f M events/s\n",
              plain_rate / 1e6);
  std::printf("  summary-writer actor (blocking handle):   %8.3f M events/s\n",
              actor_rate / 1e6);
  std::printf("  ratio actor/plain: %.2f (targets: actor >= 5 M events/s, ratio >= 1)\n",
              ratio);
  quern::bench::print_peak_rss();
  return 0;
}
