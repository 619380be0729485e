#include "quern/input/batching.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>

#include "quern/blocking_queue.hpp"
#include "quern/error.hpp"
#include "quern/input/summaries.hpp"
#include "quern/queue.hpp"

namespace quern {

example_source::example_source(example_fn fn) : kind_(std::move(fn)) {
  if (!std::get<example_fn>(kind_))
    throw argument_error("example_source: empty example function");
}

example_source::example_source(enqueue_op op) : kind_(std::move(op)) {
  if (!std::get<enqueue_op>(kind_).runnable())
    throw argument_error("example_source: empty enqueue op");
}

example_source example_source::dequeue_from(queue_actor upstream,
                                            int32_t upstream_batch) {
  if (!upstream)
    throw argument_error("example_source: invalid upstream queue");
  if (upstream_batch <= 0)
    throw argument_error("example_source: upstream_batch must be > 0");
  return example_source{upstream_queue{std::move(upstream), upstream_batch}};
}

const example_fn& example_source::function() const noexcept {
  static const example_fn none;
  auto fn = std::get_if<example_fn>(&kind_);
  return fn ? *fn : none;
}

example_source& example_source::with_signature(example_signature sig) {
  if (sig.dtypes.empty())
    throw argument_error("example_source: a signature needs at least one dtype");
  if (!sig.shapes.empty() && sig.shapes.size() != sig.dtypes.size())
    throw argument_error("example_source: " + std::to_string(sig.shapes.size()) +
                         " shapes for " + std::to_string(sig.dtypes.size()) + " dtypes");
  signature_ = std::move(sig);
  return *this;
}

example_source& example_source::with_state(std::shared_ptr<const source_state> state) {
  if (!state || state->name.empty() || !state->save || !state->restore)
    throw argument_error("example_source::with_state needs a name, a save and a restore "
                         "function");
  state_ = std::move(state);
  return *this;
}

example_source& example_source::stateless() {
  stateless_ = true;
  return *this;
}

example_source&
example_source::with_take_back(std::function<std::function<void()>()> undo_last) {
  undo_last_ = std::move(undo_last);
  return *this;
}

namespace {

std::string dtypes_text(const std::vector<dtype>& dtypes) {
  std::string out = "(";
  for (size_t i = 0; i < dtypes.size(); ++i)
    out += (i ? ", " : "") + std::string(dtype_name(dtypes[i]));
  return out + ")";
}

/// Fills in what `opts` leaves out from the sources' signatures, and checks
/// that what it gives agrees with them.
void apply_signatures(const std::vector<example_source>& sources, batch_options& opts,
                      const std::string& helper) {
  const example_signature* first = nullptr;
  for (size_t i = 0; i < sources.size(); ++i) {
    auto& sig = sources[i].signature();
    if (!sig)
      continue;
    if (!first) {
      first = &*sig;
    } else if (sig->dtypes != first->dtypes || sig->shapes != first->shapes ||
               sig->enqueue_many != first->enqueue_many) {
      throw argument_error(helper + ": source " + std::to_string(i) + " gives " +
                           dtypes_text(sig->dtypes) + " where source 0 gives " +
                           dtypes_text(first->dtypes) +
                           ": every source must give the same tensors");
    }
  }
  if (!first)
    return;
  if (opts.dtypes.empty()) {
    opts.dtypes = first->dtypes;
    if (opts.shapes.empty())
      opts.shapes = first->shapes;
  } else if (opts.dtypes != first->dtypes) {
    throw argument_error(helper + ": batch_options::dtypes " + dtypes_text(opts.dtypes) +
                         " do not match the sources' " + dtypes_text(first->dtypes));
  }
  if (first->enqueue_many)
    opts.enqueue_many = true;
}

/// Emits `e` (or its rows, with enqueue_many) that `keep` accepts.
template <class Run>
void emit_kept(Run& run, const element& e, bool enqueue_many, const keep_fn& keep) {
  if (!enqueue_many) {
    if (!keep || keep(e))
      run.emit(e);
    return;
  }
  if (!keep) {
    run.emit_many(e);
    return;
  }
  auto n = e.batch_size();
  std::vector<element> rows;
  rows.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto row = e.row(i);
    if (keep(row))
      rows.push_back(std::move(row));
  }
  run.emit(std::move(rows));
}

} // namespace

enqueue_op example_source::make_op(bool enqueue_many, const keep_fn& keep,
                                   std::string name) const {
  if (auto source = std::get_if<example_fn>(&kind_)) {
    auto fn = *source;
    auto undo_last = undo_last_;
    return blocking_op(
        [fn, undo_last, enqueue_many, keep](blocking_run& run) {
          auto e = fn();
          if (undo_last)
            if (auto undo = undo_last())
              run.if_refused(std::move(undo));
          emit_kept(run, e, enqueue_many, keep);
        },
        std::move(name));
  }
  if (auto source = std::get_if<upstream_queue>(&kind_)) {
    auto q = source->queue;
    auto n = source->batch;
    return async_op(
        [q, n, enqueue_many, keep](async_run& run) {
          auto on_element = [&run, enqueue_many, keep](element& e) {
            emit_kept(run, e, enqueue_many, keep);
            run.done();
          };
          if (enqueue_many)
            run.dequeue_up_to(q, n, on_element);
          else
            run.dequeue(q, on_element);
        },
        std::move(name));
  }
  if (keep)
    throw argument_error("keep_input needs an example function or an upstream "
                         "queue as the source, not an enqueue op");
  auto op = std::get<enqueue_op>(kind_);
  if (op.name.empty())
    op.name = std::move(name);
  return op;
}

enqueue_op direct_batch_op(caf::actor_system& sys, queue_actor target, example_fn fn,
                           keep_fn keep, size_t window, std::string name) {
  struct state {
    std::unique_ptr<queue_writer> writer;
  };
  auto st = std::make_shared<state>();
  auto* system = &sys;
  return blocking_op(
      [st, system, target, fn, keep, window](blocking_run& run) {
        if (!st->writer) { // created in the worker's own thread, used only there
          st->writer = std::make_unique<queue_writer>(*system, target, window);
          // A checkpoint pauses the runner between runs: a push waiting for
          // room the paused pipeline will not make goes out at once.
          run.on_pause([weak = std::weak_ptr<state>(st)] {
            if (auto s = weak.lock())
              s->writer->hurry();
          });
          // Paused, what it sent reaches the queue before the checkpoint
          // takes it (a queue of another process too, RS-14). Bounded as the
          // checkpoint's wait is, for a queue that does not answer: the
          // worker then runs on when the checkpoint fails (its node's loss
          // ends the wait sooner). The run lives as long as the worker.
          run.before_pause([weak = std::weak_ptr<state>(st), r = &run] {
            auto s = weak.lock();
            return !s || s->writer->settle(r->pause_limit());
          });
        }
        element batch;
        try {
          batch = fn();
        } catch (const op_error& e) {
          if (e.code() == error_code::out_of_range)
            st->writer->flush(); // every row stored before the runner closes
          throw;
        }
        if (keep) {
          std::vector<element> rows;
          auto n = batch.batch_size();
          for (int64_t i = 0; i < n; ++i) {
            auto row = batch.row(i);
            if (keep(row))
              rows.push_back(std::move(row));
          }
          if (rows.empty())
            return;
          batch = stack_elements(rows);
        }
        if (batch.batch_size() > 0)
          st->writer->push_batch(std::move(batch));
      },
      std::move(name));
}

element batched::next(consumer& in) const {
  return allow_smaller_final_batch ? in.dequeue_up_to(batch_size)
                                   : in.dequeue_many(batch_size);
}

element batched::next(blocking_queue& in) const {
  return allow_smaller_final_batch ? in.dequeue_up_to(batch_size)
                                   : in.dequeue_many(batch_size);
}

namespace {

/// The checkpoint parts of a helper's function sources: each state once,
/// and for a function with neither state nor stateless() a part that makes
/// a checkpoint fail, naming it.
void add_source_states(pipeline& pipe, const std::vector<example_source>& sources,
                       const std::string& scope) {
  std::vector<const source_state*> added;
  for (size_t i = 0; i < sources.size(); ++i) {
    auto& src = sources[i];
    if (!src.function() || src.is_stateless())
      continue;
    if (auto& st = src.state()) {
      if (std::find(added.begin(), added.end(), st.get()) != added.end())
        continue;
      added.push_back(st.get());
      pipe.add_checkpoint_part(st->name, st->save, st->restore, st->combine);
      continue;
    }
    auto why = "cannot checkpoint source " + std::to_string(i) + " of '" + scope +
               "': it is an example function whose state quern cannot save (declare "
               "it with example_source::stateless() if it keeps none between calls, "
               "or give it with_state)";
    pipe.add_checkpoint_part(
        scope + "/source" + std::to_string(i),
        [why]() -> std::string { throw failed_precondition_error(why); },
        [why](const std::string&) { throw failed_precondition_error(why); });
  }
}

batched make_batch(pipeline& pipe, std::vector<example_source> sources, bool replicate,
                   bool shuffle, const keep_fn& keep, batch_options opts,
                   const std::string& helper) {
  apply_signatures(sources, opts, helper);
  if (opts.dtypes.empty())
    throw argument_error("Expected at least one tensor in " + helper + "().");
  if (sources.empty())
    throw argument_error("Expected at least one set of tensors");
  if (opts.batch_size <= 0)
    throw argument_error("batch_size must be > 0, got " +
                         std::to_string(opts.batch_size));
  if (replicate && opts.num_threads <= 0)
    throw argument_error("num_threads must be > 0, got " +
                         std::to_string(opts.num_threads));
  if (shuffle && opts.capacity <= opts.min_after_dequeue)
    throw argument_error("capacity " + std::to_string(opts.capacity) +
                         " must be bigger than min_after_dequeue " +
                         std::to_string(opts.min_after_dequeue) + ".");
  if (!opts.shapes.empty() && opts.shapes.size() != opts.dtypes.size())
    throw argument_error(helper + ": " + std::to_string(opts.shapes.size()) +
                         " shapes for " + std::to_string(opts.dtypes.size()) +
                         " components");
  if (opts.dynamic_pad) {
    if (opts.shapes.empty())
      throw argument_error("Cannot infer Tensor's rank: shapes are needed with "
                           "dynamic_pad");
    for (auto& s : opts.shapes)
      if (!s.known_rank())
        throw argument_error("Cannot infer Tensor's rank: " + s.to_string());
  } else {
    if (opts.shapes.empty())
      throw argument_error(
          "All shapes must be fully defined: give batch_options::shapes");
    for (auto& s : opts.shapes)
      if (!s.fully_defined())
        throw argument_error("All shapes must be fully defined: " + s.to_string());
  }
  if (opts.deterministic &&
      (replicate ? static_cast<size_t>(opts.num_threads) : sources.size()) != 1)
    throw argument_error(
        helper + ": deterministic batching needs one source worker (num_threads 1, "
                 "or one source), e.g. an ordered_csv_source that reads ahead "
                 "with threads of its own");
  // RS-9: each pick among exactly min_after_dequeue + 1 rows, whenever it happens.
  if (opts.deterministic && shuffle)
    opts.capacity = opts.min_after_dequeue + 1;
  auto base = opts.name.empty() ? helper : opts.name;
  auto scope = opts.summaries ? opts.summaries->unique_scope(base) : base;
  queue_options qo;
  qo.capacity = opts.capacity;
  qo.dtypes = opts.dtypes;
  qo.shapes = opts.shapes;
  qo.name = scope;
  qo.shared_name = opts.shared_name;
  queue_kind kind = queue_kind::fifo;
  if (shuffle) {
    kind = queue_kind::random_shuffle;
    qo.min_after_dequeue = opts.min_after_dequeue;
    qo.seed = opts.seed;
  } else if (opts.dynamic_pad) {
    kind = queue_kind::padding_fifo;
  }
  // Build every op before spawning, so that a bad source spawns nothing.
  std::vector<enqueue_op> ops;
  if (replicate) {
    // Threads of one source share its reader: one thread's read cannot be
    // undone alone, so their refused rows are counted, not taken back.
    auto shared = sources.front();
    if (opts.num_threads > 1)
      shared.with_take_back(nullptr);
    for (int32_t i = 0; i < opts.num_threads; ++i)
      ops.push_back(
          shared.make_op(opts.enqueue_many, keep, "enqueue" + std::to_string(i)));
  } else {
    for (size_t i = 0; i < sources.size(); ++i)
      ops.push_back(
          sources[i].make_op(opts.enqueue_many, keep, "enqueue" + std::to_string(i)));
  }
  auto q = spawn_queue(pipe.system(), kind, qo);
  queue_runner_options ro;
  ro.name = scope;
  pipe.add_queue_runner(queue_runner{q, std::move(ops), ro});
  add_source_states(pipe, sources, scope);
  pipe.add_setting(scope + "/batch_size", static_cast<double>(opts.batch_size));
  pipe.add_setting(scope + "/capacity", static_cast<double>(opts.capacity));
  pipe.add_setting(scope + "/num_threads",
                   static_cast<double>(replicate ? opts.num_threads : sources.size()));
  if (shuffle) {
    pipe.add_setting(scope + "/min_after_dequeue",
                     static_cast<double>(opts.min_after_dequeue));
    pipe.add_setting(scope + "/seed", static_cast<double>(opts.seed));
  }
  batched result;
  result.queue = q;
  result.batch_size = opts.batch_size;
  result.allow_smaller_final_batch = opts.allow_smaller_final_batch;
  result.scope = scope;
  if (opts.summaries)
    result.summary_tag = shuffle
                             ? opts.summaries->add_fraction_over(q, scope, opts.capacity,
                                                                 opts.min_after_dequeue)
                             : opts.summaries->add_fraction_full(q, scope, opts.capacity);
  return result;
}

} // namespace

batched batch(pipeline& pipe, example_source source, batch_options opts) {
  return make_batch(pipe, {std::move(source)}, true, false, {}, std::move(opts), "batch");
}

batched batch_join(pipeline& pipe, std::vector<example_source> sources,
                   batch_options opts) {
  return make_batch(pipe, std::move(sources), false, false, {}, std::move(opts),
                    "batch_join");
}

batched shuffle_batch(pipeline& pipe, example_source source, batch_options opts) {
  return make_batch(pipe, {std::move(source)}, true, true, {}, std::move(opts),
                    "shuffle_batch");
}

batched shuffle_batch_join(pipeline& pipe, std::vector<example_source> sources,
                           batch_options opts) {
  return make_batch(pipe, std::move(sources), false, true, {}, std::move(opts),
                    "shuffle_batch_join");
}

batched maybe_batch(pipeline& pipe, example_source source, keep_fn keep_input,
                    batch_options opts) {
  return make_batch(pipe, {std::move(source)}, true, false, keep_input, std::move(opts),
                    "batch");
}

batched maybe_batch_join(pipeline& pipe, std::vector<example_source> sources,
                         keep_fn keep_input, batch_options opts) {
  return make_batch(pipe, std::move(sources), false, false, keep_input, std::move(opts),
                    "batch_join");
}

batched maybe_shuffle_batch(pipeline& pipe, example_source source, keep_fn keep_input,
                            batch_options opts) {
  return make_batch(pipe, {std::move(source)}, true, true, keep_input, std::move(opts),
                    "shuffle_batch");
}

batched maybe_shuffle_batch_join(pipeline& pipe, std::vector<example_source> sources,
                                 keep_fn keep_input, batch_options opts) {
  return make_batch(pipe, std::move(sources), false, true, keep_input, std::move(opts),
                    "shuffle_batch_join");
}

} // namespace quern
