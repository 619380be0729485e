// quern_soak: rounds of a three-queue pipeline under random timeouts, random
// worker failures, random stops and restarts, with exact accounting of every
// element at the end of each round (`make soak`; not part of `make test`).
//
// Each round: stage 1 (async workers) makes numbered rows into q1; stage 2
// (async workers) pulls 1..4 rows at a time from q1 and emits them into q2;
// consumer threads take batches from q2 with random timeouts. Workers fail
// at random (stage 2 after it pulled its rows), a random moment brings a
// stop, and some rounds restart the runners once or twice on the same
// queues before the round ends. Then q1 and q2 are drained and every number
// made must be found exactly once: consumed, left in q1 or q2, or counted
// by a runner's rows_dropped() (docs/queues.md, "What a stop keeps").

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/program_options.hpp>

#include "command_line.hpp"

#include "quern/blocking_queue.hpp"
#include "quern/coordinator.hpp"
#include "quern/messages.hpp"
#include "quern/queue.hpp"
#include "quern/queue_runner.hpp"

using namespace std::chrono_literals;
using namespace quern;

namespace {

struct injected_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

element row(int64_t x) {
  return element{tensor::scalar(x)};
}

struct round_stats {
  int64_t made = 0;
  int64_t consumed = 0;
  int64_t left = 0;
  int64_t dropped = 0;
  int64_t duplicates = 0;
  int64_t missing = 0;
  int starts = 0;
  int failures = 0;
  int timeouts = 0;
  int unexpected = 0;
};

class soak_round {
public:
  soak_round(caf::actor_system& sys, uint64_t seed) : sys_(sys), rng_(seed) {}

  round_stats run() {
    auto cap1 = pick(1, 16);
    auto cap2 = pick(1, 16);
    q1_ = spawn_fifo_queue(sys_, cap1, {dtype::int64}, {tensor_shape{}});
    q2_ = spawn_fifo_queue(sys_, cap2, {dtype::int64}, {tensor_shape{}});
    int starts = pick(1, 3); // stop and restart on the same queues
    // Queues stay open at a stop when the round restarts; the last start
    // cancels them as TensorFlow's defaults do, or not, at random.
    for (int s = 0; s < starts; ++s)
      run_start(s + 1 == starts, s + 1 == starts && pick(0, 1) == 1);
    drain(q1_);
    drain(q2_);
    return account();
  }

private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>{lo, hi}(rng_); }

  void run_start(bool last, bool cancel) {
    ++stats_.starts;
    auto made = made_;
    auto limit = static_cast<int64_t>(pick(50, 5000)); // rows a start may make
    auto fail_per_mille = pick(0, 5);
    auto seed = static_cast<uint32_t>(rng_());
    auto fail_draw = [seed](uint64_t index, uint64_t salt) {
      std::mt19937 r{static_cast<uint32_t>(seed ^ (index * 2654435761u) ^ salt)};
      return static_cast<int>(r() % 1000);
    };
    auto first = made->load();
    auto make = async_op([made, limit, first, fail_per_mille, fail_draw](async_run& run) {
      if (fail_draw(run.index(), 1) < fail_per_mille) {
        throw injected_failure{"injected failure in stage 1"}; // reaches join as itself
      }
      auto x = made->fetch_add(1);
      if (x - first >= limit) {
        made->fetch_sub(1); // not made after all
        run.end();
        return;
      }
      run.emit(row(x));
      run.done();
    });
    auto q1 = q1_;
    auto n = pick(1, 4);
    auto forward = async_op([q1, n, fail_per_mille, fail_draw](async_run& run) {
      bool fail = fail_draw(run.index(), 2) < fail_per_mille;
      run.pull(q1, n, [&run, fail](std::vector<element>& rows) {
        if (fail) { // after the pull: its rows must go back
          throw injected_failure{"injected failure in stage 2"};
        }
        run.emit(std::move(rows));
        run.done();
      });
    });
    queue_runner_options o1, o2;
    o1.name = "stage1";
    o2.name = "stage2";
    o2.queue_closed_codes = {error_code::out_of_range, error_code::cancelled};
    if (!cancel) {
      o1.cancel_op = std::nullopt;
      o2.cancel_op = std::nullopt;
    }
    if (!last) { // the queues must stay open for the next start
      o1.close_op = std::nullopt;
      o2.close_op = std::nullopt;
    }
    queue_runner r1{q1_, {make, make}, o1};
    queue_runner r2{q2_, {forward, forward, forward}, o2};
    coordinator coord{sys_};
    auto threads = r1.start(sys_, coord.actor());
    auto more = r2.start(sys_, coord.actor());
    threads.insert(threads.end(), more.begin(), more.end());

    // Consumers with random timeouts until the stop.
    auto stop_after = std::chrono::milliseconds(pick(5, 400));
    std::vector<std::thread> consumers;
    std::atomic<int> timeouts{0};
    for (int c = 0; c < 2; ++c)
      consumers.emplace_back([&, c] {
        blocking_queue in{sys_, q2_};
        std::mt19937 r{static_cast<uint32_t>(seed + c)};
        while (!coord.should_stop()) {
          try {
            auto t = std::chrono::microseconds(r() % 2000);
            auto batch = in.dequeue_up_to(static_cast<int32_t>(1 + r() % 8), t);
            std::lock_guard<std::mutex> guard{mtx_};
            for (auto x : batch[0].to_vector<int64_t>())
              ++seen_[x], ++stats_.consumed;
          } catch (const deadline_exceeded_error&) {
            ++timeouts;
          } catch (const op_error&) {
            break; // closed and drained, or cancelled
          }
        }
      });
    std::this_thread::sleep_for(stop_after);
    coord.request_stop();
    for (auto& t : consumers)
      t.join();
    try {
      coord.join(threads);
    } catch (const injected_failure&) {
      ++stats_.failures;
    } catch (const std::exception& e) {
      std::cout << "unexpected error from join: " << e.what() << "\n";
      ++stats_.unexpected;
    }
    stats_.timeouts += timeouts;
    // rows_dropped() is final once the workers are down; join waited.
    stats_.dropped += r1.rows_dropped() + r2.rows_dropped();
  }

  void drain(const queue_actor& q) {
    blocking_queue b{sys_, q};
    if (!b.is_closed())
      b.close();
    try {
      for (;;)
        for (auto x : b.dequeue_up_to(64)[0].to_vector<int64_t>())
          ++seen_[x], ++stats_.left;
    } catch (const out_of_range_error&) {
    }
  }

  round_stats account() {
    stats_.made = made_->load();
    for (auto& kv : seen_)
      if (kv.second > 1)
        stats_.duplicates += kv.second - 1;
    stats_.missing = stats_.made - static_cast<int64_t>(seen_.size()) - stats_.dropped;
    return stats_;
  }

  caf::actor_system& sys_;
  std::mt19937_64 rng_;
  queue_actor q1_, q2_;
  std::shared_ptr<std::atomic<int64_t>> made_ = std::make_shared<std::atomic<int64_t>>(0);
  std::mutex mtx_;
  std::unordered_map<int64_t, int> seen_;
  round_stats stats_;
};

} // namespace

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  int seconds = 120;
  uint64_t seed = 1;
  po::options_description desc{"quern_soak: a pipeline under random failures and stops"};
  desc.add_options()("help", "this text")(
      "seconds", po::value<int>(&seconds)->default_value(120),
      "run rounds for this long")("seed", po::value<uint64_t>(&seed)->default_value(1),
                                  "the first round's seed (round k uses seed + k)");
  po::variables_map vm;
  if (auto status = quern::cli::parse_options("quern_soak", argc, argv, desc, vm))
    return *status;
  if (seconds <= 0) {
    std::cerr << "quern_soak: --seconds must be positive, got " << seconds << "\n";
    return 1;
  }
  quern::config cfg;
  quern::actor_system sys{cfg};
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  round_stats total;
  int rounds = 0;
  int bad = 0;
  while (std::chrono::steady_clock::now() < until) {
    auto s = soak_round{sys, seed + rounds}.run();
    ++rounds;
    bool ok = s.duplicates == 0 && s.missing == 0 && s.unexpected == 0;
    if (!ok) {
      ++bad;
      std::cout << "round " << rounds << " (seed " << seed + rounds - 1 << "): made "
                << s.made << ", consumed " << s.consumed << ", left " << s.left
                << ", dropped " << s.dropped << ", duplicates " << s.duplicates
                << ", missing " << s.missing << "  MISMATCH\n";
    }
    total.made += s.made;
    total.consumed += s.consumed;
    total.left += s.left;
    total.dropped += s.dropped;
    total.starts += s.starts;
    total.failures += s.failures;
    total.timeouts += s.timeouts;
  }
  std::cout << "quern_soak: " << rounds << " rounds, " << total.starts << " starts, "
            << total.failures << " injected failures reported, " << total.timeouts
            << " timeouts; " << total.made << " elements made: " << total.consumed
            << " consumed, " << total.left << " left in queues, " << total.dropped
            << " counted as dropped; " << bad << " round(s) with a mismatch\n";
  return bad == 0 ? 0 : 1;
}
