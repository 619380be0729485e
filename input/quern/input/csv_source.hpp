#pragma once
// The reading-data guide's reader stage in one call. In TensorFlow:
//
//   reader = tf.TextLineReader(skip_header_lines=1)
//   _, lines = reader.read_up_to(filename_queue, 1024)
//   x1, x2, y = tf.decode_csv(lines, record_defaults=[[0.], [0.], [0.]])
//   batch = tf.train.shuffle_batch_join([[x1, x2, y]] * 2, batch_size,
//                                       capacity, min_after_dequeue,
//                                       enqueue_many=True)
//
// In quern:
//
//   csv_source_options ro;
//   ro.skip_header_lines = 1;
//   std::vector<example_source> readers;
//   for (int i = 0; i < 2; ++i)
//     readers.push_back(csv_source(sys, filename_queue, {tensor::vector<float>({0.f}),
//                                  tensor::vector<float>({0.f}),
//                                  tensor::vector<float>({0.f})}, ro));
//   auto batch = shuffle_batch_join(pipe, std::move(readers), bo);
//
// The source's dtypes and shapes come from record_defaults (each column a
// scalar per example, one batch of examples per read), so batch_options need
// only the batch's sizes, as in TensorFlow.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "quern/input/batching.hpp"
#include "quern/interfaces.hpp"
#include "quern/tensor.hpp"

namespace quern {

struct csv_source_options {
  /// tf.TextLineReader(skip_header_lines): lines skipped at the start of
  /// each file (a CSV header).
  int64_t skip_header_lines = 0;
  /// reader.read_up_to(filename_queue, read_batch): at most this many lines
  /// per call, never crossing into the next file once a line was read (RD-2).
  int64_t read_batch = 1024;
  /// tf.decode_csv's other arguments.
  std::string field_delim = ",";
  bool use_quote_delim = true;
  std::string na_value;
  std::vector<int64_t> select_cols;
};

/// A blocking example_source (one worker thread per copy of it in a batching
/// helper): each call reads up to `read_batch` lines from the files named by
/// `filenames` (a queue of one string component, e.g. string_input_producer's)
/// and returns them decoded as one batch of examples, column i with the dtype
/// of record_defaults[i]. Ends the input with the queue's out_of_range_error
/// when the filename queue is closed and drained. A file that cannot be read
/// or a malformed line throws that error, which stops the pipeline through its
/// coordinator (TF's behaviour).
///
/// Checked here, before anything runs: record_defaults, field_delim and
/// select_cols (invalid_argument_error with decode_csv's texts),
/// `skip_header_lines must be >= 0 not <n>` (the reader's), and argument_error
/// `csv_source: read_batch must be > 0, got <n>` / `csv_source: invalid
/// filename queue`.
/// Copies of the source (shuffle_batch's num_threads) share one reader, whose
/// calls are serialised as TF's reader ops are.
example_source csv_source(caf::actor_system& sys, queue_actor filenames,
                          std::vector<tensor> record_defaults,
                          csv_source_options opts = {});

/// The deterministic mode of reading (docs/resume.md, RS-9): one
/// example_source whose batches come in a fixed order, whatever the number of
/// threads and the timing: the files in the filename queue's order, each
/// file's lines in order, `read_batch` lines a batch. One reader reads; up to
/// `decode_threads` threads of the source's own decode the batches ahead, and
/// the source returns them in the order they were read. Give it to a batching
/// helper as its one source with batch_options::deterministic (one worker).
/// A checkpoint saves the reader's place and the lines read and not yet
/// returned, so that a restored run, with any number of decode threads, goes
/// on with the very same batches. Arguments are checked as csv_source's;
/// decode_threads must be >= 1 (argument_error).
example_source ordered_csv_source(caf::actor_system& sys, queue_actor filenames,
                                  std::vector<tensor> record_defaults,
                                  csv_source_options opts = {}, int decode_threads = 2);

} // namespace quern
