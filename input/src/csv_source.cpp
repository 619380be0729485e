#include "quern/input/csv_source.hpp"

#include <memory>
#include <utility>

#include "quern/blocking_queue.hpp"
#include "quern/error.hpp"
#include "quern/input/decode_csv.hpp"
#include "quern/input/readers.hpp"

namespace quern {

example_source csv_source(caf::actor_system& sys, queue_actor filenames,
                          std::vector<tensor> record_defaults, csv_source_options opts) {
  if (!filenames)
    throw argument_error("csv_source: invalid filename queue");
  if (opts.read_batch <= 0)
    throw argument_error("csv_source: read_batch must be > 0, got " +
                         std::to_string(opts.read_batch));
  // decode_csv of no records checks the defaults and options now, with its own
  // texts, rather than in a worker thread after the pipeline started.
  auto columns =
      decode_csv(tensor::vector<std::string>({}), record_defaults, opts.field_delim,
                 opts.use_quote_delim, opts.na_value, opts.select_cols);
  example_signature sig;
  for (auto& c : columns) {
    sig.dtypes.push_back(c.type());
    sig.shapes.push_back(tensor_shape{});
  }
  sig.enqueue_many = true;

  struct state {
    state(caf::actor_system& sys, queue_actor q, int64_t skip)
        : reader{skip}, files{sys, std::move(q)} {}
    text_line_reader reader;
    blocking_queue files; // shared by the copies' threads, as its calls allow
    std::vector<tensor> defaults;
    csv_source_options opts;
  };
  auto st = std::make_shared<state>(sys, std::move(filenames), opts.skip_header_lines);
  st->defaults = std::move(record_defaults);
  st->opts = std::move(opts);
  example_source source{example_fn{[st]() -> element {
    auto lines = st->reader.read_values_up_to(st->files, st->opts.read_batch);
    return element{decode_csv(lines, st->defaults, st->opts.field_delim,
                              st->opts.use_quote_delim, st->opts.na_value,
                              st->opts.select_cols)};
  }}};
  source.with_signature(std::move(sig));
  return source;
}

} // namespace quern
