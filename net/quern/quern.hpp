#pragma once

// Everything of quern in one include, for programs that want all of it (link
// quern::quern), as a TensorFlow program starts with `import tensorflow as tf`:
//   #include <quern/quern.hpp>
//   quern::config cfg;  quern::actor_system sys{cfg};
//   auto q = quern::spawn_fifo_queue(sys, 100, {quern::dtype::int64});
// It lives in net/, the top layer, because it includes every layer down to
// the vocabulary. Programs that want one layer include its headers instead.

// The vocabulary and the runtime.
#include "quern/dtype.hpp"
#include "quern/element.hpp"
#include "quern/error.hpp"
#include "quern/interfaces.hpp"
#include "quern/messages.hpp"
#include "quern/queue_state.hpp"
#include "quern/queue_spec.hpp"
#include "quern/state_bytes.hpp"
#include "quern/tensor.hpp"
#include "quern/tensor_shape.hpp"

#include "quern/actor_system.hpp"
#include "quern/checkpoint_file.hpp"
#include "quern/command_line.hpp"

// Queues and their handles.
#include "quern/blocking_queue.hpp"
#include "quern/queue.hpp"

// Runners, the coordinator, the looper, the pipeline.
#include "quern/coordinator.hpp"
#include "quern/looper.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue_runner.hpp"
#include "quern/stop_on_signals.hpp"

// Summaries and event files.
#include "quern/summary/event_file.hpp"
#include "quern/summary/reader.hpp"
#include "quern/summary/summary_writer.hpp"
#include "quern/summary/values.hpp"

// Reading data: readers, decode_csv, the tf.train input helpers.
#include "quern/input/batching.hpp"
#include "quern/input/csv_source.hpp"
#include "quern/input/decode_csv.hpp"
#include "quern/input/producers.hpp"
#include "quern/input/readers.hpp"
#include "quern/input/summaries.hpp"

// Across processes.
#include "quern/remote.hpp"
