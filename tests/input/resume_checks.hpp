#pragma once

// The run with a break of the resume tests (resume_test.cpp,
// stream_resume_test.cpp), in the style of TensorFlow's
// checkpoint_test_base.verify_run_with_breaks, taking batches with the
// pipeline's consumer or with its batch reader.

#include <functional>
#include <map>
#include <memory>
#include <optional>

#include <catch2/catch.hpp>

#include "quern/actor_system.hpp"

#include "resume_pipeline.hpp"

namespace quern::test {

/// Takes up to `steps` batches (all of them: nullopt) into `out`.
using take_steps = std::function<void(std::optional<int> steps, values& out)>;
/// Makes what takes a built pipeline's batches.
using taker = std::function<take_steps(built&)>;

/// The pipeline's consumer, one call per batch (batched::next).
inline take_steps by_consumer(built& p) {
  auto in = std::make_shared<consumer>(p.pipe.make_consumer(p.b.queue));
  return
      [in, &p](std::optional<int> steps, values& out) { consume(*in, p.b, steps, out); };
}

/// The pipeline's batch reader (make_batch_reader), a window of 8 batches.
inline take_steps by_batch_reader(built& p) {
  auto in = std::make_shared<batch_reader>(
      p.pipe.make_batch_reader(p.b.queue, p.b.batch_size, p.b.cut(), 8));
  return [in](std::optional<int> steps, values& out) { consume(*in, steps, out); };
}

inline values unbroken(const setup& s, const taker& take = by_consumer) {
  quern::config cfg;
  caf::actor_system sys{cfg};
  built p{sys, s};
  p.pipe.start_queue_runners();
  values out;
  take(p)(std::nullopt, out);
  return out;
}

/// Takes `at` steps, a snapshot (into `snap` if given), `lost` more steps
/// (lost with the pipeline), then restores a pipeline with
/// `restored_threads` threads from the snapshot's checkpoint bytes and takes
/// the rest.
inline values with_break(setup s, int at, int lost, int32_t restored_threads,
                         const taker& take = by_consumer,
                         pipeline_snapshot* snap = nullptr) {
  quern::config cfg;
  caf::actor_system sys{cfg};
  values out;
  pipeline_snapshot taken;
  {
    built p{sys, s};
    p.pipe.start_queue_runners();
    auto steps = take(p);
    steps(at, out);
    taken = p.pipe.snapshot(at);
    values wasted;
    steps(lost, wasted);
  } // the pipeline is gone, as in a crash after the checkpoint
  s.threads = restored_threads;
  built p{sys, s};
  p.pipe.restore(pipeline::from_checkpoint(pipeline::to_checkpoint(taken)));
  CHECK(p.pipe.restored_step() == at);
  p.pipe.start_queue_runners();
  take(p)(std::nullopt, out);
  if (snap)
    *snap = std::move(taken);
  return out;
}

inline void check_each_epochs_times(const values& v, const setup& s) {
  std::map<int32_t, int> c;
  for (auto x : v)
    ++c[x];
  CHECK(c.size() == static_cast<size_t>(s.examples));
  for (auto& [x, n] : c) {
    INFO("example " << x);
    CHECK(n == s.epochs);
  }
}

} // namespace quern::test
