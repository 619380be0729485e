#include "quern/input/producers.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

#include "quern/error.hpp"
#include "quern/input/summaries.hpp"
#include "quern/queue.hpp"
#include "quern/queue_runner.hpp"

namespace quern {

void check_num_epochs(const std::optional<int64_t>& num_epochs) {
  if (num_epochs && *num_epochs <= 0)
    throw argument_error("num_epochs must be > 0 not " + std::to_string(*num_epochs) +
                         ".");
}

namespace {

/// The generator of one producer: seeded (reproducible) or random.
std::shared_ptr<std::mt19937_64> make_generator(int64_t seed) {
  if (seed != 0)
    return std::make_shared<std::mt19937_64>(static_cast<uint64_t>(seed));
  std::random_device rd;
  std::seed_seq seq{rd(), rd(), rd(), rd()};
  return std::make_shared<std::mt19937_64>(seq);
}

/// The queue, its runner and its summary; `rows_of(tensors)` components.
queue_actor make_producer(pipeline& pipe, std::vector<tensor> tensors,
                          const producer_options& opts, const std::string& default_scope,
                          const std::string& summary_name) {
  check_num_epochs(opts.num_epochs);
  auto base = opts.name.empty() ? default_scope : opts.name;
  auto scope = opts.summaries ? opts.summaries->unique_scope(base) : base;
  int64_t n = tensors.at(0).dim0();
  std::vector<dtype> dtypes;
  std::vector<tensor_shape> shapes;
  for (auto& t : tensors) {
    dtypes.push_back(t.type());
    shapes.push_back(t.shape().without_leading());
  }
  queue_options qo;
  qo.capacity = opts.capacity;
  qo.dtypes = dtypes;
  qo.shapes = shapes;
  qo.name = scope;
  qo.shared_name = opts.shared_name;
  auto q = spawn_queue(pipe.system(), queue_kind::fifo, qo);
  auto gen = opts.shuffle ? make_generator(opts.seed) : nullptr;
  auto epochs = opts.num_epochs;
  // limit_epochs' counter: it belongs to the op, not to one worker, so that
  // runs by hand (queue_runner::run_enqueue_op) and by the runner count
  // together, as TensorFlow's local variable does.
  auto epochs_done = std::make_shared<std::atomic<int64_t>>(0);
  auto op = async_op(
      [tensors = std::move(tensors), n, gen, epochs, epochs_done](async_run& run) {
        if (epochs && epochs_done->fetch_add(1) >= *epochs) {
          // limit_epochs (IN-1): the op raises OutOfRange, which the runner
          // takes as the end of this worker's input (QR-6).
          run.fail(make_error(error_code::out_of_range,
                              "Reached limit of " + std::to_string(*epochs)));
          return;
        }
        std::vector<int64_t> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), int64_t{0});
        if (gen)
          std::shuffle(order.begin(), order.end(), *gen);
        std::vector<element> rows;
        rows.reserve(order.size());
        for (auto i : order) {
          element row;
          row.components.reserve(tensors.size());
          for (auto& t : tensors)
            row.components.push_back(t.row(i));
          rows.push_back(std::move(row));
        }
        run.emit(std::move(rows));
        run.done();
      },
      "enqueue_many");
  queue_runner_options ro;
  ro.name = scope;
  pipe.add_queue_runner(queue_runner{q, {std::move(op)}, ro});
  if (epochs)
    pipe.add_setting(scope + "/num_epochs", static_cast<double>(*epochs));
  pipe.add_setting(scope + "/capacity", static_cast<double>(opts.capacity));
  pipe.add_setting(scope + "/shuffle", opts.shuffle);
  if (opts.shuffle)
    pipe.add_setting(scope + "/seed", static_cast<double>(opts.seed));
  // A checkpoint keeps the epochs started and the generator that permutes
  // the next one; the rows of the epochs started are in the queue's state.
  pipe.add_checkpoint_part(
      scope + "/epochs",
      [gen, epochs_done] {
        std::ostringstream os;
        os << epochs_done->load() << '\n';
        if (gen)
          os << *gen;
        return os.str();
      },
      [gen, epochs_done, scope](const std::string& saved) {
        std::istringstream is{saved};
        int64_t done = -1;
        is >> done;
        std::mt19937_64 g;
        if (gen)
          is >> g;
        if (!is || done < 0)
          throw data_loss_error("the checkpoint of producer '" + scope +
                                "' is damaged: expected its epoch count" +
                                (gen ? " and its generator" : ""));
        epochs_done->store(done);
        if (gen)
          *gen = g;
      });
  if (opts.summaries && !summary_name.empty())
    opts.summaries->add_fraction_full(q, scope, opts.capacity, summary_name);
  return q;
}

std::string fraction_name(int32_t capacity) {
  return "fraction_of_" + std::to_string(capacity) + "_full";
}

} // namespace

queue_actor input_producer(pipeline& pipe, tensor input, producer_options opts,
                           std::string summary_name) {
  if (input.shape().rank() == 0)
    throw argument_error("input_producer requires a tensor with a leading "
                         "dimension, got a scalar");
  return make_producer(pipe, {std::move(input)}, opts, "input_producer", summary_name);
}

queue_actor string_input_producer(pipeline& pipe, std::vector<std::string> strings,
                                  producer_options opts) {
  if (strings.empty())
    throw argument_error("string_input_producer requires a non-null input tensor");
  auto cap = opts.capacity;
  return input_producer(pipe, tensor::vector<std::string>(std::move(strings)),
                        std::move(opts), fraction_name(cap));
}

queue_actor range_input_producer(pipeline& pipe, int32_t limit, producer_options opts) {
  if (limit <= 0)
    throw argument_error("range_input_producer requires limit > 0, got " +
                         std::to_string(limit));
  std::vector<int32_t> values(static_cast<size_t>(limit));
  std::iota(values.begin(), values.end(), 0);
  auto cap = opts.capacity;
  return input_producer(pipe, tensor::vector<int32_t>(std::move(values)), std::move(opts),
                        fraction_name(cap));
}

queue_actor slice_input_producer(pipeline& pipe, std::vector<tensor> tensors,
                                 producer_options opts) {
  if (tensors.empty())
    throw argument_error("Expected at least one tensor in slice_input_producer().");
  for (auto& t : tensors)
    if (t.shape().rank() == 0)
      throw argument_error(
          "slice_input_producer requires tensors with a leading dimension");
  // TF: range_input_producer inside the `input_producer` scope, so the
  // summary is input_producer/input_producer/fraction_of_<c>_full.
  auto outer = opts.name.empty() ? std::string{"input_producer"} : opts.name;
  if (opts.summaries)
    outer = opts.summaries->unique_scope(outer);
  opts.name = outer + "/input_producer";
  auto cap = opts.capacity;
  return make_producer(pipe, std::move(tensors), opts, "input_producer",
                       fraction_name(cap));
}

} // namespace quern
