#pragma once

// The pipeline of the resume tests (resume_test.cpp) and of their child
// process that is killed after a checkpoint (resume_child.cpp).

#include <optional>
#include <string>
#include <vector>

#include "quern/input/batching.hpp"
#include "quern/input/producers.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"

namespace quern::test {

using values = std::vector<int32_t>;

enum class shape { fifo_batch, shuffle_batch, batch_join, padded_batch };

struct setup {
  shape kind = shape::fifo_batch;
  int32_t examples = 60;
  int64_t epochs = 3;
  int32_t threads = 1;
};

/// A pipeline of range_input_producer -> a batching helper fed from the
/// producer's queue by `threads` async workers, with its consumer.
struct built {
  pipeline pipe;
  batched b;

  built(caf::actor_system& sys, const setup& s, pipeline_options po_ = {})
      : pipe{sys, std::move(po_)} {
    producer_options po;
    po.num_epochs = s.epochs;
    po.seed = 11;
    po.capacity = 16;
    auto indices = range_input_producer(pipe, s.examples, po);
    batch_options o;
    o.batch_size = 4;
    o.dtypes = {dtype::int32};
    o.shapes = {tensor_shape{}};
    o.allow_smaller_final_batch = true;
    o.num_threads = s.threads;
    switch (s.kind) {
    case shape::fifo_batch:
      o.capacity = 8;
      b = batch(pipe, example_source::dequeue_from(indices, 3), o);
      break;
    case shape::padded_batch: // a PaddingFIFOQueue
      o.capacity = 8;
      o.dynamic_pad = true;
      b = batch(pipe, example_source::dequeue_from(indices, 3), o);
      break;
    case shape::shuffle_batch:
      o.min_after_dequeue = 10;
      o.capacity = 30;
      o.seed = 5;
      b = shuffle_batch(pipe, example_source::dequeue_from(indices, 3), o);
      break;
    case shape::batch_join: {
      o.capacity = 10;
      std::vector<example_source> sources;
      for (int32_t i = 0; i < s.threads; ++i)
        sources.push_back(example_source::dequeue_from(indices, 2));
      b = batch_join(pipe, std::move(sources), o);
      break;
    }
    }
  }
};

/// Appends the values of up to `steps` batches (all of them when none);
/// returns false at the end of the data.
inline bool consume(consumer& in, const batched& b, std::optional<int> steps,
                    values& out) {
  for (int i = 0; !steps || i < *steps; ++i) {
    try {
      for (auto x : b.next(in)[0].to_vector<int32_t>())
        out.push_back(x);
    } catch (const out_of_range_error&) {
      return false;
    }
  }
  return true;
}

/// The same from a batch reader (pipeline::make_batch_reader).
inline bool consume(batch_reader& in, std::optional<int> steps, values& out) {
  for (int i = 0; !steps || i < *steps; ++i) {
    auto batch = in.try_pull();
    if (!batch)
      return false;
    for (auto x : (*batch)[0].to_vector<int32_t>())
      out.push_back(x);
  }
  return true;
}

} // namespace quern::test
