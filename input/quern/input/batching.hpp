#pragma once
// tf.train's batching helpers (docs/semantics.md IN-10..IN-15).
//
// In TensorFlow the "tensors" to batch are the outputs of upstream ops that
// every run of the enqueue op evaluates afresh. In quern the input is an
// example_source: what one run of an enqueue op produces --
//  - a blocking function returning one example (or, with enqueue_many, a
//    batch of examples with a leading dimension); it may read files or
//    dequeue from upstream queues and throws out_of_range_error when its
//    input is exhausted. It runs in its own thread (a blocking_op worker);
//  - an upstream queue: each run dequeues one element (enqueue_many: up to
//    `upstream_batch` rows) asynchronously, without a thread;
//  - any enqueue_op, used as it is (no keep_input then).
// batch/shuffle_batch run num_threads copies of the source; the *_join
// variants one worker per source. The helpers build the queue and its queue
// runner, add the runner to the pipeline, and return a `batched` handle; the
// consumer side is `b.next(consumer)` with a consumer from
// pipeline::make_consumer(b.queue): dequeue_many(batch_size), or
// dequeue_up_to(batch_size) with allow_smaller_final_batch (IN-10: then the
// final smaller batch comes out before out_of_range; without it, the rows
// of the final partial batch stay in the queue and out_of_range is thrown).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "quern/element.hpp"
#include "quern/interfaces.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue_runner.hpp"

namespace quern {

class input_summaries;

/// One example (or a batch of them with enqueue_many) per call; blocking.
using example_fn = std::function<element()>;
/// maybe_batch's keep_input, applied to each example (each row with
/// enqueue_many, TF's vector keep_input).
using keep_fn = std::function<bool(const element&)>;

/// What one result of an example_source is: the dtypes and per-example shapes
/// of its components, and whether a result is a batch of examples with a
/// leading dimension (enqueue_many). TensorFlow reads this off the tensors
/// given to tf.train.batch; in quern a source may carry it (csv_source does,
/// from its record_defaults) so that batch_options need not repeat it.
struct example_signature {
  std::vector<dtype> dtypes;
  std::vector<tensor_shape> shapes;
  bool enqueue_many = false;
};

/// What a checkpoint saves of an example function that keeps state between
/// calls (docs/resume.md): a reader's place in its files, a generator. The
/// batching helper adds it to the pipeline as a checkpoint part named
/// `name` (once, however many sources share it); `save` runs while the
/// pipeline's runners are paused, `restore` before they start.
struct source_state {
  std::string name;
  std::function<std::string()> save;
  std::function<void(const std::string&)> restore;
  /// Optional: several saved states made one, for a checkpoint member that
  /// takes over others' (pipeline::checkpoint_as_member, RS-13).
  std::function<std::string(const std::vector<std::string>&)> combine = {};
};

class example_source {
public:
  /// A blocking function (runs in its own worker thread).
  example_source(example_fn fn);
  /// An enqueue op used as it is.
  example_source(enqueue_op op);
  /// Dequeues from `upstream`: one element per run, or (with enqueue_many)
  /// dequeue_up_to(upstream_batch) per run. Asynchronous, no thread.
  static example_source dequeue_from(queue_actor upstream, int32_t upstream_batch = 128);

  /// The enqueue op that runs this source (enqueue_many: the source's
  /// results are batches; keep: maybe_batch's filter).
  enqueue_op make_op(bool enqueue_many, const keep_fn& keep, std::string name) const;

  /// The blocking function of this source (empty for the other kinds).
  const example_fn& function() const noexcept;

  /// Declares what this source's results are (see example_signature).
  example_source& with_signature(example_signature sig);

  /// Checkpoints (docs/resume.md). A checkpoint of a pipeline must know
  /// what an example function keeps between calls: with_state gives it
  /// (csv_source does), stateless() says there is nothing (the function
  /// takes all it needs from queues). A function source with neither makes
  /// pipeline::snapshot fail with failed_precondition_error naming it,
  /// rather than save a pipeline it could not restore exactly. Queue and
  /// enqueue-op sources need neither.
  example_source& with_state(std::shared_ptr<const source_state> state);
  example_source& stateless();
  /// What a stop keeps (docs/queues.md): `undo_last` is called in the
  /// function's thread right after each call and returns what undoes that
  /// call (or nothing). If a stop refuses the call's rows whole, that undo
  /// runs (blocking_run::if_refused) and the rows count as never read,
  /// not as dropped. csv_source steps its reader back this way.
  example_source& with_take_back(std::function<std::function<void()>()> undo_last);
  const std::shared_ptr<const source_state>& state() const noexcept { return state_; }
  bool is_stateless() const noexcept { return stateless_; }
  const std::optional<example_signature>& signature() const noexcept {
    return signature_;
  }

private:
  /// dequeue_from's queue and batch size.
  struct upstream_queue {
    queue_actor queue;
    int32_t batch = 0;
  };
  explicit example_source(upstream_queue q) : kind_(std::move(q)) {}
  std::variant<example_fn, enqueue_op, upstream_queue> kind_;
  std::optional<example_signature> signature_;
  std::shared_ptr<const source_state> state_;
  bool stateless_ = false;
  std::function<std::function<void()>()> undo_last_;
};

struct batch_options {
  int32_t batch_size = 0;
  /// batch / shuffle_batch: copies of the source (ignored by *_join).
  int32_t num_threads = 1;
  int32_t capacity = 32;
  /// The source produces batches (leading dimension) rather than examples.
  bool enqueue_many = false;
  /// The example's signature. Empty dtypes: taken from the sources'
  /// example_signature when they carry one (as TF infers it from the
  /// tensors; csv_source does), else invalid_argument_error `Expected at
  /// least one tensor in batch().` Given dtypes must match a source's
  /// signature. A source whose results are batches sets enqueue_many.
  std::vector<dtype> dtypes;
  /// Per-example shapes. Without dynamic_pad they must be fully defined
  /// (given or not: empty means "not known", refused); with dynamic_pad only
  /// ranks must be known (unknown dims -1 are padded).
  std::vector<tensor_shape> shapes;
  bool dynamic_pad = false;
  bool allow_smaller_final_batch = false;
  std::string shared_name;
  /// Name scope; empty: the helper's name (`batch`, `shuffle_batch`, ...).
  std::string name;
  /// Shuffle variants: RandomShuffleQueue's min_after_dequeue and seed.
  int32_t min_after_dequeue = 0;
  int64_t seed = 0;
  /// Where the fill-fraction summary is registered (optional).
  input_summaries* summaries = nullptr;
  /// The deterministic mode (docs/resume.md, RS-9): batches that depend only
  /// on the source's order and the seeds, not on timing. It needs one source
  /// worker (num_threads 1, or one source of a *_join; argument_error
  /// otherwise), e.g. an ordered_csv_source; a shuffling helper then picks
  /// each row when exactly min_after_dequeue + 1 rows are stored (its queue's
  /// capacity is min_after_dequeue + 1), as tf.data's shuffle buffer does.
  bool deterministic = false;
};

/// The fast path of batching helpers for blocking sources with
/// enqueue_many: each result is pushed to `target` as one batch
/// (queue_writer::push_batch, a window of `window` rows in flight) instead
/// of being split into rows by the worker; the worker's runs emit nothing.
/// At the end of the input (out_of_range_error from `fn`) the pushes are
/// flushed before the worker ends, so the runner closes the queue after
/// every row is stored.
enqueue_op direct_batch_op(caf::actor_system& sys, queue_actor target, example_fn fn,
                           keep_fn keep, size_t window, std::string name);

/// What a batching helper returns.
struct batched {
  queue_actor queue;
  int32_t batch_size = 0;
  bool allow_smaller_final_batch = false;
  /// The scope the helper used (`batch`, `batch_1`, ...) and its summary tag
  /// (empty without a registry).
  std::string scope;
  std::string summary_tag;

  /// The next batch: dequeue_many(batch_size), or dequeue_up_to(batch_size)
  /// with allow_smaller_final_batch. Throws out_of_range_error at the end.
  element next(consumer& in) const;
  element next(blocking_queue& in) const;

  /// The same batches streamed: `pipe.make_batch_reader(b.queue,
  /// b.batch_size, b.cut())` keeps demand for several batches granted at the
  /// queue, so the consumer rarely waits for a round trip (the fast path;
  /// next() is TF's call-per-batch), and the pipeline's checkpoints save the
  /// batches it holds. No starvation diagnosis on this path.
  batch_cut cut() const {
    return allow_smaller_final_batch ? batch_cut::dequeue_up_to : batch_cut::dequeue_many;
  }
};

/// IN-10.
batched batch(pipeline& pipe, example_source source, batch_options opts);
/// IN-11: one worker per source.
batched batch_join(pipeline& pipe, std::vector<example_source> sources,
                   batch_options opts);
/// IN-12: `capacity <= min_after_dequeue` throws invalid_argument_error
/// `capacity <c> must be bigger than min_after_dequeue <m>.`
batched shuffle_batch(pipeline& pipe, example_source source, batch_options opts);
/// IN-13.
batched shuffle_batch_join(pipeline& pipe, std::vector<example_source> sources,
                           batch_options opts);
/// IN-14: examples (rows, with enqueue_many) for which keep_input is false
/// are not enqueued; the worker keeps running.
batched maybe_batch(pipeline& pipe, example_source source, keep_fn keep_input,
                    batch_options opts);
batched maybe_batch_join(pipeline& pipe, std::vector<example_source> sources,
                         keep_fn keep_input, batch_options opts);
batched maybe_shuffle_batch(pipeline& pipe, example_source source, keep_fn keep_input,
                            batch_options opts);
batched maybe_shuffle_batch_join(pipeline& pipe, std::vector<example_source> sources,
                                 keep_fn keep_input, batch_options opts);

} // namespace quern
