// The code of the docs that is not a whole program, each piece inside the
// context it needs (the variables it uses). The build compiles this file (an
// object library of tests/docs/sources.cmake), so a fragment that stops
// compiling breaks `make`; docs.snippets checks that each doc block marked
//   <!-- snippet: tests/docs/fragments.cpp#NAME -->
// is the text between `// docs-snippet-begin: NAME` and `// docs-snippet-end`
// here. Whole programs live in examples/ and are run by the tests.

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>

#include <caf/all.hpp>

#include "quern/blocking_queue.hpp"
#include "quern/checkpoint_file.hpp"
#include "quern/command_line.hpp"
#include "quern/coordinator.hpp"
#include "quern/input/batching.hpp"
#include "quern/input/csv_source.hpp"
#include "quern/input/decode_csv.hpp"
#include "quern/input/producers.hpp"
#include "quern/input/readers.hpp"
#include "quern/input/summaries.hpp"
#include "quern/input/tf_record.hpp"
#include "quern/messages.hpp"
#include "quern/pipeline.hpp"
#include "quern/queue.hpp"
#include "quern/queue_runner.hpp"
#include "quern/remote.hpp"
#include "quern/state_bytes.hpp"
#include "quern/stop_on_signals.hpp"
#include "quern/summary/summary_writer.hpp"

// Fragments show values that the reader's own code goes on to use.
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wunused-parameter"
// Options structs are shown with their defaults left out ({"runs/a"}).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

// clang-format off
namespace quern::doc_fragments {

void guide_system() {
// docs-snippet-begin: guide-system
quern::config cfg;             // quern's message types and errors
quern::actor_system sys{cfg};  // the threads that run quern's actors
// docs-snippet-end
}

void coordination_runner() {
// docs-snippet-begin: coordination-runner
quern::config cfg;
quern::actor_system sys{cfg};
auto q = quern::spawn_fifo_queue(sys, 100, {quern::dtype::int64});
quern::pipeline pipe{sys};
pipe.add_queue_runner(quern::queue_runner{q, {quern::async_op([](quern::async_run& run) {
  run.emit(quern::element{quern::tensor::scalar(int64_t{42})});
  run.done();
})}});
quern::coordinator coord{sys};
auto threads = pipe.start_queue_runners(coord);
auto in = pipe.make_consumer(q);
try {
  while (!coord.should_stop()) { auto e = in.dequeue(); /* train */ }
} catch (const quern::out_of_range_error&) { /* epoch limit reached */ }
catch (const std::exception& e) { coord.request_stop(e); }
coord.request_stop();
coord.join(threads);     // throws the first error with its original message
// docs-snippet-end
}

void queues_if_refused() {
// docs-snippet-begin: queues-if-refused
// Makes 0, 1, 2, ...: a run the queue refused at a stop is undone, as if
// never made, so `next` is the first number no queue holds.
auto next = std::make_shared<int64_t>(0);
auto op = quern::blocking_op([next](quern::blocking_run& run) {
  auto made = (*next)++;
  run.emit(quern::element{quern::tensor::scalar(made)});
  run.if_refused([next, made] { *next = made; });  // newest refused run first
});
// docs-snippet-end
(void)op;
}

int coordination_signals(caf::actor_system& sys, std::vector<caf::actor> threads) {
// docs-snippet-begin: coordination-signals
quern::coordinator coord{sys};
quern::stop_on_signals interrupt{coord};  // SIGINT and SIGTERM, until it goes out of scope
while (!coord.should_stop()) { /* train */ }
coord.join(threads);                      // returns normally: a clean stop
return interrupt.received() ? 128 + interrupt.received() : 0;
// docs-snippet-end
}

void input_readers(caf::actor_system& sys, const std::vector<tensor>& defaults) {
// docs-snippet-begin: input-readers
quern::blocking_queue filenames{sys, spawn_fifo_queue(sys, 32, {dtype::string}, {tensor_shape{}})};
quern::text_line_reader reader{/*skip_header_lines=*/1};
for (;;) {
  auto [key, value] = reader.read(filenames);  // "data.csv:2", "1,2,3"
  auto columns = quern::decode_csv(value, defaults);
}                                              // out_of_range_error at the end
// docs-snippet-end
}

void input_compressed(caf::actor_system& sys, const std::vector<std::string>& examples) {
// docs-snippet-begin: input-compressed
// writer = tf.io.TFRecordWriter("train.tfrecord.gz", options="GZIP")
quern::tf_record_writer writer{"train.tfrecord.gz", "GZIP"};
for (auto& e : examples)
  writer.write(e);
writer.close();  // ends the gzip stream; throws what a write failed with

quern::tf_record_options options;  // tf.io.TFRecordOptions
options.compression_type = "GZIP";
options.input_buffer_size = 1 << 20;  // compressed bytes read at a time
quern::tf_record_reader reader{options};
quern::blocking_queue filenames{sys, spawn_fifo_queue(sys, 32, {dtype::string}, {tensor_shape{}})};
auto [key, value] = reader.read(filenames);  // "train.tfrecord.gz:0", the first example
std::cout << key << ": " << value.size() << " bytes\n";
// docs-snippet-end
}

void input_decode_csv(const tensor& records) {
// docs-snippet-begin: input-decode-csv
auto cols = quern::decode_csv(records /* string tensor, any shape */,
                              {tensor::vector<int32_t>({0}), tensor::vector<float>({}),
                               tensor::vector<std::string>({"?"})},
                              ",", /*use_quote_delim=*/true, /*na_value=*/"NA",
                              /*select_cols=*/{});
// docs-snippet-end
}

void logging_handle(float loss) {
// docs-snippet-begin: logging-handle
quern::config cfg;
quern::actor_system sys{cfg};
quern::summary_writer writer{sys, "runs/a"};   // throws op_error if runs/a cannot be made
for (int step = 0; step < 100; ++step)
  writer.scalar("loss", loss, step);
// close() is optional: ~summary_writer closes and stops the actor
// docs-snippet-end
}

void logging_hparams(quern::summary_writer& writer, int batch_size, double learning_rate) {
// docs-snippet-begin: logging-hparams
writer.hparams({{"batch_size", batch_size}, {"optimizer", "adam"},
                {"learning_rate", learning_rate}, {"shuffle", true}},
               {"loss"});                              // the metrics to compare runs by
// ... training, writer.scalar("loss", loss, step) ...
writer.hparams_end(quern::hparams_status::success);    // optional: the run's end
// docs-snippet-end
}

void logging_restart(caf::actor_system& sys, int64_t restored_step, int64_t steps,
                     double loss) {
// docs-snippet-begin: logging-restart
quern::summary_writer writer{sys, "runs/a"};    // the same run folder as before the restart
writer.restarted_at(restored_step);              // SessionLog START at the restored step
for (int64_t step = restored_step; step < steps; ++step)
  writer.scalar("loss", loss, step);
// docs-snippet-end
}

void logging_actor(caf::actor_system& sys, caf::event_based_actor* self, int64_t step) {
// docs-snippet-begin: logging-actor
auto writer = quern::spawn_summary_writer(sys, {"runs/a"});   // summary_writer_options
self->send(writer, quern::add_scalars_atom::value,
           std::vector<quern::scalar_event>{quern::make_scalar_event("loss", 0.5, step)});
self->request(writer, caf::infinite, quern::writer_flush_atom::value)
  .then([](const quern::writer_status& st) { /* st.path, st.events */ },
        [](caf::error& e) { /* quern::message_of(e) */ });
// docs-snippet-end
}

void queues_demand(caf::event_based_actor* self, quern::queue_actor q) {
// docs-snippet-begin: queues-demand
quern::strict_queue_actor strict = q;      // TensorFlow's operations only
self->request(strict, caf::infinite, quern::dequeue_many_atom::value, int32_t{32},
              quern::wait_forever)       // the demand {32, 1, dequeue_many}
  .then([](quern::element& batch) { /* 32 rows */ },
        [](caf::error& e) { /* out_of_range once closed and short */ });
quern::demand d;                           // streaming: 8 batches of 32 rows
d.n = 32;
d.count = 8;
d.cut = quern::batch_cut::dequeue_up_to;
self->send(q, quern::pull_atom::value, d); // answered by pulled(batches, error)
// docs-snippet-end
}

void queues_writer_shared(caf::actor_system& sys, quern::queue_actor q) {
// docs-snippet-begin: queues-writer-shared
quern::queue_writer writer{sys, q};     // one writer, shared by two threads
quern::blocking_queue queue{sys, q};
auto push = [&](int64_t from) {
  for (int64_t i = from; i < from + 100; ++i)
    writer.push(quern::element{quern::tensor::scalar(i)});  // each thread's rows in order
};
std::thread a{push, 0};
std::thread b{push, 100};
a.join();
b.join();
auto rows = queue.dequeue_many(200);  // no flush() needed: nothing waits in the writer for good
writer.flush();                       // waits until all is stored, throws the first error
// docs-snippet-end
}

void input_reader_state(quern::actor_system& sys, quern::queue_actor filename_queue) {
// docs-snippet-begin: input-reader-state
// TF: state = reader.serialize_state()  (TensorFlow: WholeFileReader only)
quern::blocking_queue filenames{sys, filename_queue};
quern::text_line_reader reader{/*skip_header_lines=*/1};
auto first = reader.read(filenames);           // "data.csv:2"
std::string state = reader.serialize_state();  // kind, options, counts, file, offset

quern::text_line_reader resumed{1};            // later, or in another process
resumed.restore_state(state);                  // reopens data.csv at line 3
auto second = resumed.read(filenames);         // "data.csv:3", as `reader` would read it

// A unit in progress handed to another reader (a lost reader's file):
quern::text_line_reader other{1};
if (auto at = resumed.current_work())          // data.csv, its offset, 2 records
  other.continue_work(*at);                    // other reads "data.csv:4" next
// docs-snippet-end
}

void input_values(quern::actor_system& sys, quern::queue_actor filename_queue) {
// docs-snippet-begin: input-values
// reader = tf.TextLineReader(skip_header_lines=1)
// _, lines = reader.read_up_to(filename_queue, 1024)
// x1, x2, y = tf.decode_csv(lines, record_defaults=[[0.], [0.], [0.]])
quern::text_line_reader reader{1};
auto read_batch = [&] {  // threads may share the reader: its calls take turns
  quern::blocking_queue filenames{sys, filename_queue};
  auto lines = reader.read_values_up_to(filenames, 1024);
  return quern::decode_csv(lines, {quern::tensor::vector<float>({0.0f}),
                                   quern::tensor::vector<float>({0.0f}),
                                   quern::tensor::vector<float>({0.0f})});
};
std::thread other{read_batch};
auto columns = read_batch();  // x1, x2, y: float tensors of up to 1,024 rows
other.join();
// docs-snippet-end
}

void distributed_host() {
// docs-snippet-begin: distributed-host
// the process that owns the queue
quern::remote_config cfg;   // quern::config + CAF's middleman with quern's settings
quern::actor_system sys{cfg};
auto q = quern::spawn_fifo_queue(sys, 1000, {quern::dtype::float32}, {quern::tensor_shape{3}});
auto coord = quern::spawn_coordinator(sys);  // optional: export it too
quern::summary_writer chief{sys, "runs/chief"};  // and a summary writer
auto srv = quern::serve(sys, {"127.0.0.1", 7000, false, {{"examples", q}}, coord,
                              {{"train", chief.actor()}}});
// ... srv.stop() or ~server ends the service (destroy it before sys)
// docs-snippet-end
}

void distributed_client() {
// docs-snippet-begin: distributed-client
// any other process
quern::remote_config cfg;
quern::actor_system sys{cfg};
auto node = quern::connect(sys, "127.0.0.1:7000");      // deadline 5 s by default
quern::queue_writer writer{sys, node.queue("examples")}; // a queue_actor like any other
quern::coordinator coord{sys, node.coordinator()};       // the host's coordinator
quern::summary_writer scalars{sys, node.writer("train")}; // into the host's run
scalars.scalar("worker1/loss", 0.25, 10);
// docs-snippet-end
}

void distributed_worker_without_chief(quern::actor_system& sys,
                                      const quern::enqueue_op& read_op) {
// docs-snippet-begin: distributed-exit-on-loss
// a worker that cannot go on without its chief
quern::connect_options opts;
opts.exit_status_on_loss = 14;  // TensorFlow's code for Unavailable
auto chief = quern::connect(sys, "127.0.0.1:7001", opts);
quern::queue_runner runner{chief.queue("examples"), {read_op}};
runner.start(sys, chief.coordinator());  // stopped, like every runner, when the chief goes
// docs-snippet-end
}

void distributed_producer(quern::actor_system& sys,
                          const std::vector<quern::element>& batches) {
// docs-snippet-begin: distributed-producer
// a producer that may lose its connection, or be killed and started again
quern::remote_producer producer{sys, "127.0.0.1:7000", "examples", "reader-1"};
// An earlier run of "reader-1" may have stored some batches: go on after them.
for (auto i = producer.resumed_after(); i < batches.size(); ++i)
  producer.enqueue_many(batches[i]);  // stored once, however often it is sent
// docs-snippet-end
}

void distributed_producer_pushed(quern::actor_system& sys,
                                 const std::vector<quern::element>& batches) {
// docs-snippet-begin: distributed-producer-pushed
quern::remote_producer_options opts;
opts.window = 8;  // batches sent and not yet answered, at most
quern::remote_producer producer{sys, "127.0.0.1:7000", "examples", "reader-1", opts};
for (auto i = producer.resumed_after(); i < batches.size(); ++i)
  producer.push_batch(batches[i]);  // returns once sent; each stored once
producer.flush();  // every batch answered; throws the first error
// docs-snippet-end
}

void distributed_writer_lost(quern::queue_writer& writer) {
// docs-snippet-begin: distributed-writer-lost
try {
  writer.flush();  // one writer, any number of threads pushing through it
} catch (const quern::unavailable_error& e) {  // the queue's node was lost
  // Every row pushed by any thread is counted once: stored, refused, or
  // sent and never answered (the lost queue may or may not hold it).
  std::cerr << e.what() << "\n"
            << writer.stored() << " stored, " << writer.refused() << " refused, "
            << writer.unconfirmed() << " unconfirmed\n";
}
// docs-snippet-end
}

void distributed_tls_host() {
// docs-snippet-begin: distributed-tls-host
// the host: its certificate, its key (encrypted here) and the deployment's own CA
quern::remote_config cfg{quern::tls_options{
    "/etc/quern/host.pem", "/etc/quern/host.key", "its passphrase", "/etc/quern/ca.pem"}};
quern::actor_system sys{cfg};  // the files were checked when cfg was made
auto q = quern::spawn_fifo_queue(sys, 1000, {quern::dtype::float32}, {quern::tensor_shape{3}});
auto srv = quern::serve(sys, {"0.0.0.0", 7000, false, {{"examples", q}}});  // any address, with TLS
// docs-snippet-end
}

int distributed_tls_client(int argc, char** argv) {
// docs-snippet-begin: distributed-tls-client
// a client with a config of its own, its TLS files from the command line
struct worker_config : quern::config {
  worker_config() {
    quern::enable_remoting(*this);  // the middleman first, then TLS on it
    quern::enable_tls(*this, {});   // files from --openssl.* (or caf-application.ini)
  }
};
worker_config cfg;
// --openssl.certificate=worker-3.pem --openssl.key=worker-3.key --openssl.cafile=ca.pem
if (auto status = quern::parse_command_line(cfg, argc, argv))
  return *status;
quern::actor_system sys{cfg};
auto node = quern::connect(sys, "queues.example.net:7000");  // checks the files, then TLS
quern::batch_reader reader{sys, node.queue("examples"), 64};
// docs-snippet-end
return 0;
}

void resume_checkpoint_file(int64_t step, int64_t examples_seen, std::string current_file) {
// docs-snippet-begin: resume-checkpoint-file
quern::state_writer state;  // the state codec: integers, strings, tensors, elements
state.write_i64(examples_seen).write_string(current_file);
quern::checkpoint_contents c;
c.step = step;
c.sections["my/progress"] = state.take();
quern::write_checkpoint("ckpt", c, /*keep_last=*/3);  // ckpt/ckpt-<step>.quern

std::vector<std::string> refused;  // newer files that did not read, and why
if (auto latest = quern::read_latest_checkpoint("ckpt", &refused)) {
  for (auto& why : refused)
    std::cerr << "passed over " << why << "\n";
  quern::state_reader r{latest->sections.at("my/progress"), "my progress"};
  examples_seen = r.read_i64();  // data_loss_error if the bytes do not read
  current_file = r.read_string();
  r.expect_end();
}
// docs-snippet-end
}

// The number of a member named "reader-<i>", 0 for another name.
int reader_number(const std::string& member) {
  return member.rfind("reader-", 0) == 0 ? std::atoi(member.c_str() + 7) : 0;
}

quern::enqueue_op resume_writer_op(quern::actor_system& sys, quern::queue_actor rows,
                                   std::function<quern::element()> make_batch) {
// docs-snippet-begin: resume-writer-settle
// One writer for the op's workers, whose threads share it.
auto writer = std::make_shared<quern::queue_writer>(sys, rows, 256);
auto op = quern::blocking_op([writer, make_batch](quern::blocking_run& run) {
  if (run.index() == 0) {  // each worker's first run: kept for its life
    // A checkpoint's pause: a push waiting for room returns ...
    run.on_pause([w = std::weak_ptr<quern::queue_writer>(writer)] {
      if (auto p = w.lock())
        p->hurry();
    });
    // ... and before the worker says it paused, what it sent reached the queue,
    // waiting no longer than the checkpoint waits for the worker.
    run.before_pause([writer, r = &run] { return writer->settle(r->pause_limit()); });
  }
  writer->push_batch(make_batch());
});
// docs-snippet-end
return op;
}

void queue_stats_of(quern::actor_system& sys, quern::queue_actor rows) {
// docs-snippet-begin: input-queue-stats
quern::blocking_queue q{sys, rows};  // one handle, any number of threads
auto s = q.stats();                  // one round trip: size, capacity, counters
std::cout << s.enqueued_rows << " rows stored, " << s.dequeued_rows << " handed out; "
          << s.dequeue_wait_ns * 1e-9 / std::max<int64_t>(s.dequeue_attempts, 1)
          << " s mean wait of a dequeue\n";
// docs-snippet-end
}

void resume_take_over(quern::pipeline& pipe, quern::remote_node& chief, int k, int n) {
// docs-snippet-begin: resume-take-over
// Reader k of n also goes on with the files of the checkpointed run's
// readers n + k, 2n + k, ... (reader_number parses "reader-<i>"; 0 for others).
pipe.checkpoint_as_member(chief.coordinator(), "reader-" + std::to_string(k),
                          [k, n](const std::string& member) {
                            auto i = reader_number(member);
                            return i > n && (i - 1) % n + 1 == k;
                          });
for (auto& m : pipe.taken_over_members())
  std::cout << "goes on with the files of " << m << "\n";
// docs-snippet-end
}

void resume_members(quern::actor_system& sys, quern::remote_node& chief,
                    quern::coordinator& coord, quern::queue_runner reader_runner,
                    int64_t step) {
{
// docs-snippet-begin: resume-member
// In each other process: its pipeline (its runners, queues and parts as usual)
// is a member of the checkpoints of the chief's coordinator.
quern::pipeline_options po;
po.checkpoint_dir = "runs/a/ckpt";  // where the chief writes them
po.restore = true;                  // take this member's sections back first
quern::pipeline pipe{sys, po};
pipe.add_queue_runner(reader_runner);
pipe.checkpoint_as_member(chief.coordinator(), "reader-1");
pipe.start_queue_runners(chief.coordinator());
// docs-snippet-end
}
{
// docs-snippet-begin: resume-chief
// In the chief's process: its checkpoints pause the members and keep their sections.
quern::pipeline_options po;
po.checkpoint_dir = "runs/a/ckpt";
po.restore = true;
quern::pipeline pipe{sys, po};
pipe.checkpoint_members_of(coord.actor());
pipe.await_checkpoint_members({"host", "reader-1", "reader-2"}, std::chrono::minutes(1));
pipe.checkpoint(step);  // ckpt-<step>.quern: its own sections and member/<name>/...
// docs-snippet-end
}
}

void resume_pipeline(quern::actor_system& sys, quern::coordinator& coord,
                     quern::producer_options po_epochs, quern::batch_options bo,
                     const std::function<void(const quern::element&)>& train) {
// docs-snippet-begin: resume-pipeline
quern::pipeline_options po;
po.checkpoint_dir = "runs/a/ckpt";
po.restore = true;  // start_queue_runners first restores the newest checkpoint there
quern::pipeline pipe{sys, po};
// the input helpers as usual (string_input_producer, csv_source, shuffle_batch_join ...)
auto indices = quern::range_input_producer(pipe, 1000, po_epochs);
auto batch = quern::batch(pipe, quern::example_source::dequeue_from(indices), bo);
auto threads = pipe.start_queue_runners(coord);
auto in = pipe.make_consumer(batch.queue);
int64_t step = pipe.restored_step();  // 0 on a fresh start
try {
  for (;;) {
    train(batch.next(in));  // out_of_range_error at the end of the last epoch
    if (++step % 1000 == 0)
      pipe.checkpoint(step);  // ckpt-<step>.quern: `step` batches were trained
  }
} catch (const quern::out_of_range_error&) {
}
// docs-snippet-end
}

void resume_batch_reader(quern::pipeline& pipe, const quern::batched& batch,
                         const std::function<void(const quern::element&)>& train) {
// docs-snippet-begin: resume-batch-reader
// Demand for 64 batches kept granted; what it holds is in each checkpoint.
auto reader = pipe.make_batch_reader(batch.queue, batch.batch_size, batch.cut());
int64_t step = pipe.restored_step();
while (auto b = reader.try_pull()) {  // nullopt at the end of the last epoch
  train(*b);
  if (++step % 1000 == 0)
    pipe.checkpoint(step);
}
// docs-snippet-end
}

void resume_batch_reader_shared(quern::batch_reader& reader,
                                const std::function<void(const quern::element&)>& train) {
// docs-snippet-begin: resume-batch-reader-shared
// Threads may share the reader: each batch goes to one pull().
std::thread helper{[&] {
  while (auto b = reader.try_pull())
    train(*b);
}};
while (auto b = reader.try_pull())
  train(*b);
helper.join();
// docs-snippet-end
}

void resume_shared(quern::pipeline& pipe, int64_t step_a, int64_t step_b) {
// docs-snippet-begin: resume-shared
// Threads may share one pipeline: their checkpoints take turns, each file whole.
std::thread saver{[&] { pipe.checkpoint(step_a); }};
pipe.checkpoint(step_b);
saver.join();
// docs-snippet-end
}

void resume_sync_every(quern::actor_system& sys) {
// docs-snippet-begin: resume-sync-every
quern::pipeline_options po;
po.checkpoint_dir = "runs/a/ckpt";
po.sync_checkpoints_every = 10;  // one file in ten waits for the disk
quern::pipeline pipe{sys, po};
// docs-snippet-end
}

void resume_deterministic(quern::actor_system& sys, quern::pipeline& pipe,
                          quern::queue_actor filename_queue,
                          std::vector<quern::tensor> record_defaults) {
// docs-snippet-begin: resume-deterministic
quern::csv_source_options ro;
ro.skip_header_lines = 1;
auto reader = quern::ordered_csv_source(sys, filename_queue, record_defaults, ro,
                                        /*decode_threads=*/4);
quern::batch_options bo;
bo.batch_size = 32;
bo.capacity = 1000;  // a deterministic shuffle keeps min_after_dequeue + 1
bo.min_after_dequeue = 500;
bo.seed = 7;
bo.deterministic = true;
auto batch = quern::shuffle_batch(pipe, reader, bo);
// docs-snippet-end
}

void input_telemetry(quern::actor_system& sys, quern::pipeline& pipe,
                     const quern::batched& examples_batch) {
// docs-snippet-begin: input-telemetry
quern::input_summaries summaries{sys};   // the helpers' fill fractions (po.summaries, bo.summaries)
summaries.add_telemetry(pipe);           // and where the pipeline waits: at most every 10 s
quern::summary_writer writer{sys, "runs/train"};
auto in = pipe.make_consumer(examples_batch.queue);
for (int64_t step = 0; step < 1000; ++step) {
  auto batch = examples_batch.next(in);  // its wait is the exposed wait
  // ... train on batch ...
  summaries.write(writer, step);         // consumer/..., runner/..., queue/..., pipeline/verdict
}
std::cout << pipe.telemetry().verdict << "\n";
// docs-snippet-end
}

} // namespace quern::doc_fragments
// clang-format on
