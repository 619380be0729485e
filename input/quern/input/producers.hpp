#pragma once
// tf.train's input producers (docs/semantics.md IN-1..IN-5): each builds a FIFO
// queue and one queue runner with one asynchronous enqueue op, whose run is
// one epoch (all rows, freshly permuted per epoch when shuffle is on), adds
// the runner to a pipeline and returns the queue. After num_epochs runs the
// op ends the input, so the runner closes the queue and consumers drain it
// and then get out_of_range (IN-2).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "quern/interfaces.hpp"
#include "quern/pipeline.hpp"
#include "quern/tensor.hpp"

namespace quern {

class input_summaries;

struct producer_options {
  /// None: produce forever. <= 0: invalid_argument_error
  /// `num_epochs must be > 0 not <n>.` (IN-1).
  std::optional<int64_t> num_epochs;
  /// Permute the rows anew for every epoch.
  bool shuffle = true;
  /// 0: nondeterministic; otherwise the permutations are reproducible.
  int64_t seed = 0;
  int32_t capacity = 32;
  std::string shared_name;
  /// Name scope; empty: `input_producer`. The queue is named after the
  /// (unique, when summaries are registered) scope.
  std::string name;
  /// Where the fraction-of-capacity summary is registered (optional).
  input_summaries* summaries = nullptr;
};

/// IN-1's check: throws invalid_argument_error `num_epochs must be > 0 not <n>.`
void check_num_epochs(const std::optional<int64_t>& num_epochs);

/// IN-2: a queue of the rows of `input` (leading dimension = rows). A
/// summary named `summary_name` (if not empty) is registered under the scope.
queue_actor input_producer(pipeline& pipe, tensor input, producer_options opts = {},
                           std::string summary_name = {});

/// IN-3: a queue of scalar strings; summary `input_producer/fraction_of_<c>_full`.
/// An empty list: invalid_argument_error
/// `string_input_producer requires a non-null input tensor`.
queue_actor string_input_producer(pipeline& pipe, std::vector<std::string> strings,
                                  producer_options opts = {});

/// IN-4: int32 0..limit-1 per epoch.
queue_actor range_input_producer(pipeline& pipe, int32_t limit,
                                 producer_options opts = {});

/// IN-5: row i of every tensor of `tensors`, aligned. Unlike TensorFlow
/// (which queues indices and gathers the rows on each dequeue), the queue
/// holds the rows themselves, one component per tensor (views, no copy); the
/// stream of rows is the same. An empty list: invalid_argument_error
/// `Expected at least one tensor in slice_input_producer().`; as in TF the
/// first dimensions are not checked against each other beyond the first
/// tensor's (a shorter tensor fails the run). Summary tag
/// `input_producer/input_producer/fraction_of_<c>_full`.
queue_actor slice_input_producer(pipeline& pipe, std::vector<tensor> tensors,
                                 producer_options opts = {});

} // namespace quern
