#pragma once
// quern-node's --queue and --writer values (tools/quern_node/main.cpp):
//
//   --queue NAME:KIND:CAPACITY:COMPONENTS[:OPTION=VALUE,...]
//       KIND        fifo, random_shuffle (shuffle), padding_fifo (padding) or
//                   priority
//       CAPACITY    a number; -1 (or "unbounded") for no bound
//       COMPONENTS  dtype[dims] separated by ',', e.g. float32[3],int64[];
//                   `[]` a scalar, `[-1]` an unknown dimension
//                   (padding_fifo); without brackets anywhere the shapes
//                   are unspecified
//       OPTION      min_after_dequeue=N, seed=N, seed2=N (random_shuffle)
//   --writer NAME=LOGDIR
//
// What the queue itself refuses (TensorFlow's rules, Q-1..) is checked when
// it is made; this only reads the text.

#include <string>

#include "quern/queue_spec.hpp"

namespace quern::node_tool {

struct queue_flag {
  std::string name;
  queue_kind kind = queue_kind::fifo;
  queue_options options;
};

/// Throws invalid_argument_error naming the value and what is wrong with it.
queue_flag parse_queue_flag(const std::string& text);

struct writer_flag {
  std::string name;
  std::string logdir;
};

/// Throws invalid_argument_error naming the value and what is wrong with it.
writer_flag parse_writer_flag(const std::string& text);

/// `FIFOQueue, capacity 1000, float32[3], int64[]`.
std::string describe(const queue_flag& q);

} // namespace quern::node_tool
