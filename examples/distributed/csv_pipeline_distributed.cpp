// The flagship pipeline (examples/reading/csv_pipeline.cpp) split over
// processes on one machine, as TensorFlow 1.x users split it over a
// parameter server and workers (docs/distributed.md):
//
//   host     owns the queues: 'filenames' (string_input_producer, num_epochs)
//            and 'examples' (a RandomShuffleQueue), and 'done', where the
//            others leave a token when they finish (TF's done-queue idiom);
//            it writes the CSV files, and closes 'examples' once every
//            reader left its token
//   trainer  owns the coordinator and the summary writer, and serves both;
//            trains by SGD on batches of 'examples' until they run out:
//            "Done training -- epoch limit reached"
//   reader   (--readers of them) text_line_reader + decode_csv on the files
//            named by 'filenames', batches pushed into 'examples'; its queue
//            runner registers with the trainer's coordinator, and it logs
//            how many examples it read into the trainer's run
//
//   csv_pipeline_distributed                     (--role=all, the default)
//       this process is the host and starts the trainer and the readers as
//       processes of this same program, on 127.0.0.1 with ports the
//       operating system chooses; exit status 0 when every process ended
//       well and the trainer trained on every example that made a batch.
//
//   csv_pipeline_distributed --role=host --listen=127.0.0.1:7000
//   csv_pipeline_distributed --role=trainer --host=127.0.0.1:7000 --listen=127.0.0.1:7001
//   csv_pipeline_distributed --role=reader --host=127.0.0.1:7000 --trainer=127.0.0.1:7001
//   --id=1 csv_pipeline_distributed --role=reader --host=127.0.0.1:7000
//   --trainer=127.0.0.1:7001 --id=2
//       the same, one process per terminal.
//
// With --checkpoint-every N the trainer checkpoints every N steps into
// <logdir>/ckpt (docs/resume.md, "Across processes"): the host's and every
// reader's pipeline are checkpoint members of the trainer's pipeline, so one
// file holds the host's queues and producer, the readers' files in progress
// and the trainer's model and step. --stop-after-steps N stops the job there;
// --restore (every role) goes on from the newest checkpoint, with any
// number of readers: on fewer, each takes over the files in progress of
// readers the run no longer has.
//
// The readers (and the host, when it knows the trainer: always with
// --role=all) are checkpoint members of the trainer's pipeline whether it
// checkpoints or not, so the trainer's telemetry, written into its run every
// --telemetry-every seconds, holds their stages too: runner/reader-1/reader-1/busy,
// pipeline/graph with every process's stages (docs/input.md, "Stages of other
// processes").
//
// With --hand-over (given to the host and every reader; --role=all passes it
// on) a reader that is lost (its process ended, or the host has not heard it
// for --lost-after seconds) leaves its unfinished files to the readers left,
// which go on from the rows the host's queue holds (hand_over.hpp); without
// it, a lost reader ends the job.
//
// A process that loses another (its connection drops, or the peer is
// silent for 5 s) ends with status 14, TensorFlow's code for Unavailable;
// any other error ends it with status 1, a bad command line with 2.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <quern/blocking_queue.hpp>
#include <quern/coordinator.hpp>
#include <quern/input/batching.hpp>
#include <quern/input/csv_source.hpp>
#include <quern/input/producers.hpp>
#include <quern/input/summaries.hpp>
#include <quern/pipeline.hpp>
#include <quern/queue.hpp>
#include <quern/queue_runner.hpp>
#include <quern/remote.hpp>
#include <quern/state_bytes.hpp>
#include <quern/summary/summary_writer.hpp>

#include "../reading/csv_data.hpp"
#include "command_line.hpp"
#include "files.hpp"
#include "hand_over.hpp"

extern char** environ;

namespace {

namespace po = boost::program_options;
using namespace quern;

struct settings {
  std::string role = "all";
  std::string listen = "127.0.0.1:0";
  std::string host;
  std::string trainer;
  int id = 1;
  int files = 4;
  int64_t rows = 1000;
  int64_t epochs = 5;
  int32_t batch_size = 32;
  int readers = 2;
  int32_t min_after_dequeue = 200;
  double learning_rate = 0.1;
  int64_t seed = 1;
  std::string logdir = "runs/csv_pipeline_distributed";
  std::string address_file; // where a server writes its address (--role=all)
  int64_t expect = 0;       // trainer: examples it must see (0: not checked)
  int64_t checkpoint_every = 0;
  int64_t stop_after = 0;
  bool restore = false;
  bool hand_over = false;       // a lost reader's units go on with the others
  double lost_after = 10;       // --hand-over: seconds a silent reader is lost after
  double telemetry_every = 1.0; // trainer: seconds between telemetry readings
  /// Every process takes part in the trainer's checkpoints.
  bool checkpointing() const { return checkpoint_every > 0 || restore; }
  std::string checkpoint_dir() const { return logdir + "/ckpt"; }
};

/// The checkpoint members of a job: the host and each reader.
std::vector<std::string> member_names(const settings& s) {
  std::vector<std::string> names{"host"};
  for (int r = 1; r <= s.readers; ++r)
    names.push_back("reader-" + std::to_string(r));
  return names;
}

// The number of a reader's member name (`reader-<n>`), 0 for another name.
int reader_number(const std::string& member) {
  const std::string prefix = "reader-";
  if (member.rfind(prefix, 0) != 0 || member.size() == prefix.size() ||
      member.size() > prefix.size() + 6 ||
      member.find_first_not_of("0123456789", prefix.size()) != std::string::npos)
    return 0;
  return std::stoi(member.substr(prefix.size()));
}

// Restored on fewer readers than the checkpointed run had, reader k of n
// takes over the readers n + k, 2n + k, ... of the checkpoint (their files
// in progress go on here; docs/resume.md, "Across processes").
int taken_over_by(int old_reader, int readers) {
  return old_reader > readers ? (old_reader - 1) % readers + 1 : old_reader;
}

std::chrono::milliseconds lost_after_of(const settings& s) {
  return std::chrono::milliseconds{static_cast<int64_t>(s.lost_after * 1000)};
}

pipeline_options checkpoint_options(const settings& s) {
  pipeline_options po;
  po.checkpoint_dir = s.checkpoint_dir();
  po.restore = s.restore;
  return po;
}

const std::vector<tensor> record_defaults{tensor::vector<float>({0.0f}),
                                          tensor::vector<float>({0.0f}),
                                          tensor::vector<float>({0.0f})};

// `host:port` into `path` (--address-file), for --role=all to poll.
void write_address(const std::string& path, const std::string& address) {
  if (path.empty())
    return;
  if (auto why = cli::write_file_whole(path, address + "\n"); !why.empty())
    throw std::runtime_error(why);
}

server serve_on(actor_system& sys, const std::string& listen, serve_options opts) {
  auto [host, port] = detail::parse_address(listen, true); // port 0: any
  opts.host = host;
  opts.port = port;
  return serve(sys, std::move(opts));
}

// -- the trainer --------------------------------------------------------------------

int trainer(actor_system& sys, const settings& s) {
  auto host = connect(sys, s.host);
  coordinator coord{sys}; // owned: its end ends the coordinator actor
  summary_writer writer{sys, s.logdir};
  // The trainer's pipeline checkpoints the job: its model and step, and its
  // members' sections (the host's queues, the readers' files in progress).
  auto po = checkpoint_options(s);
  po.starvation_timeout = caf::timespan::max(); // the readers feed 'examples'
  pipeline pipe{sys, po};
  examples::linear_model model; // y = w1 x1 + w2 x2 + b, by SGD
  pipe.add_checkpoint_part(
      "model", [&model] { return model.save(); },
      [&model](const std::string& bytes) { model.restore(bytes); });
  int64_t step = 0;
  // The other processes' pipelines are its members: they pause with its
  // checkpoints, and its telemetry holds their stages (reader-1/reader-1,
  // host/input_producer) beside its own.
  pipe.checkpoint_members_of(coord.actor());
  if (s.checkpointing()) {
    if (s.restore && pipe.restore_latest()) {
      step = pipe.restored_step();
      writer.restarted_at(step);
      // Every process of the checkpoint goes on: the host, and each reader
      // as itself or taken over by one of this run's (taken_over_by).
      int old_readers = 0;
      for (auto& m : pipe.restored_members()) {
        if (m == "host")
          continue;
        if (reader_number(m) == 0)
          throw invalid_argument_error("the checkpoint's process '" + m +
                                       "' is not one of this job's (host, reader-<n>)");
        ++old_readers;
      }
      std::cout << "trainer: restored from " << s.checkpoint_dir() << " at step " << step;
      if (old_readers != s.readers)
        std::cout << ", " << old_readers << " readers' work going on in " << s.readers;
      std::cout << std::endl;
    }
  }
  // Served once the checkpoint read: a job restored otherwise ends before
  // anyone joins it.
  auto srv = serve_on(sys, s.listen,
                      {{}, 0, false, {}, coord.actor(), {{"train", writer.actor()}}});
  std::cout << "trainer: serving the coordinator and summary writer 'train' on "
            << srv.address() << std::endl;
  write_address(s.address_file, srv.address());
  // Every process takes part in every checkpoint: none is taken before all
  // joined (each restored its own sections first).
  if (s.checkpointing())
    pipe.await_checkpoint_members(member_names(s), std::chrono::minutes{2});
  auto in = pipe.make_consumer(host.queue("examples"));
  // Where the job's time goes, written into the run with the loss, at most
  // every --telemetry-every seconds (docs/input.md, "Where the pipeline waits").
  input_summaries summaries{sys};
  summaries.add_telemetry(pipe, std::chrono::duration_cast<caf::timespan>(
                                    std::chrono::duration<double>(s.telemetry_every)));
  double loss = 0;
  bool stopped = false;
  try {
    while (!coord.should_stop()) {
      if (s.stop_after > 0 && step >= s.stop_after) {
        std::cout << "trainer: stopped after step " << step << " (--stop-after-steps)"
                  << std::endl;
        stopped = true;
        break;
      }
      auto batch = in.dequeue_many(s.batch_size); // out_of_range at the end
      loss = model.step(batch, s.learning_rate);
      writer.scalar("loss", loss, step);
      summaries.write(writer, step);
      if (step % 100 == 0)
        std::cout << "trainer: step " << std::setw(5) << step << "  loss " << loss
                  << std::endl;
      ++step;
      if (s.checkpoint_every > 0 && step % s.checkpoint_every == 0)
        pipe.checkpoint(step); // `step` batches trained
    }
  } catch (const out_of_range_error&) {
    std::cout << "Done training -- epoch limit reached" << std::endl;
  } catch (const std::exception& e) {
    coord.request_stop(e);
  }
  coord.request_stop();
  coord.join(); // the readers' runners, in their processes; rethrows their error
  writer.scalar("weights/w1", model.w1, step);
  writer.scalar("weights/w2", model.w2, step);
  writer.scalar("weights/b", model.b, step);
  writer.close();
  blocking_queue{sys, host.queue("done")}.enqueue(element{tensor::scalar("trainer")});
  auto trained = step * s.batch_size;
  std::cout << std::fixed << std::setprecision(3) << "trainer: trained " << step
            << " steps of " << s.batch_size << ", last loss " << loss
            << "; learned w1 = " << model.w1 << ", w2 = " << model.w2
            << ", b = " << model.b
            << "   (true: 3, -2, 1)\nscalars of every process logged to " << s.logdir
            << std::endl;
  if (!stopped && s.expect > 0 && trained != s.expect - s.expect % s.batch_size) {
    std::cerr << "trainer: trained on " << trained << " examples, expected "
              << s.expect - s.expect % s.batch_size << " (" << s.expect
              << " made, the last partial batch left)\n";
    return 1;
  }
  return 0;
}

// -- a reader -------------------------------------------------------------------------

int reader(actor_system& sys, const settings& s) {
  auto host = connect(sys, s.host);
  auto chief = connect(sys, s.trainer);
  auto name = "reader-" + std::to_string(s.id);
  // Shared with the reader's op, which may still run when this function
  // has thrown (its worker ends on its own once stopped).
  auto writer = std::make_shared<summary_writer>(sys, chief.writer("train"));
  if (s.hand_over) {
    // Units handed out by the host (hand_over.hpp); not registered with the
    // trainer's coordinator, whose job goes on when this process is lost.
    int64_t batches = 0;
    auto sent = examples::read_units(
        sys, s.host, s.id, s.batch_size, record_defaults, lost_after_of(s),
        [&](int64_t total) {
          writer->scalar(name + "/examples_read", static_cast<double>(total), batches++);
        });
    writer->flush();
    blocking_queue{sys, host.queue("done")}.enqueue(element{tensor::scalar(name)});
    std::cout << name << ": read " << sent << " examples" << std::endl;
    return 0;
  }
  csv_source_options ro;
  ro.skip_header_lines = 1;
  ro.read_batch = s.batch_size;
  auto source = csv_source(sys, host.queue("filenames"), record_defaults, ro);
  // Each batch read is counted, and the count logged into the trainer's run.
  auto read = std::make_shared<std::atomic<int64_t>>(0);
  auto batches = std::make_shared<std::atomic<int64_t>>(0);
  example_fn counted = [fn = source.function(), read, batches, writer, name] {
    auto batch = fn();
    auto total = *read += batch[0].dim0();
    writer->scalar(name + "/examples_read", static_cast<double>(total), (*batches)++);
    return batch;
  };
  auto examples = host.queue("examples");
  pipeline pipe{sys, checkpoint_options(s)};
  // Streamed through the op's own queue_writer; a checkpoint waits until
  // what it sent reached the host (docs/resume.md, "Across processes").
  auto op = direct_batch_op(sys, examples, counted, {}, 4 * size_t(s.batch_size), name);
  queue_runner_options qo;
  qo.name = name;
  qo.close_op = std::nullopt; // the host closes 'examples' when every reader is done
  pipe.add_queue_runner(queue_runner{examples, {op}, qo});
  if (s.checkpointing()) {
    // Its files in progress, and its counts, in the trainer's checkpoints.
    auto& state = source.state();
    pipe.add_checkpoint_part(state->name, state->save, state->restore, state->combine);
    auto encode = [](int64_t n, int64_t b) {
      state_writer w;
      w.write_i64(n).write_i64(b);
      return w.take();
    };
    auto decode = [](const std::string& bytes) {
      state_reader r{bytes, "the reader's counts"};
      auto n = r.read_i64();
      auto b = r.read_i64();
      r.expect_end();
      return std::make_pair(n, b);
    };
    pipe.add_checkpoint_part(
        "counts", [read, batches, encode] { return encode(*read, *batches); },
        [read, batches, decode](const std::string& bytes) {
          std::tie(*read, *batches) = decode(bytes);
        },
        [encode, decode](const std::vector<std::string>& states) { // taken over
          int64_t n = 0, b = 0;
          for (auto& bytes : states) {
            auto [sn, sb] = decode(bytes);
            n += sn;
            b += sb;
          }
          return encode(n, b);
        });
  }
  // A member of the trainer's checkpoints (restored first; with fewer
  // readers than checkpointed, taking over the others' files), and its stage
  // in the trainer's telemetry (reader-<id>/reader-<id>).
  auto id = s.id, readers = s.readers;
  pipe.checkpoint_as_member(chief.coordinator(), name,
                            [id, readers](const std::string& member) {
                              auto n = reader_number(member);
                              return n > readers && taken_over_by(n, readers) == id;
                            }); // restores first
  for (auto& m : pipe.taken_over_members())
    std::cout << name << ": goes on with the files of " << m << std::endl;
  coordinator coord{sys, chief.coordinator()};
  auto threads = pipe.start_queue_runners(coord);
  std::cout << name << ": reading, registered with the trainer's coordinator"
            << std::endl;
  coord.join(threads);
  writer->flush();
  blocking_queue{sys, host.queue("done")}.enqueue(element{tensor::scalar(name)});
  std::cout << name << ": read " << read->load() << " examples" << std::endl;
  return 0;
}

// -- the host ---------------------------------------------------------------------------

struct host_node {
  host_node(actor_system& sys, pipeline_options po) : pipe(sys, po) {}
  pipeline pipe;
  queue_actor examples;
  queue_actor done;
  // --hand-over: each reader's work queue, 'finished', and who hands out.
  std::vector<queue_actor> work;
  queue_actor finished;
  std::unique_ptr<examples::unit_dispatcher> dispatcher;
  std::optional<server> srv;
  std::optional<remote_node> trainer; // with checkpoints: its coordinator
};

std::unique_ptr<host_node> start_host(actor_system& sys, const settings& s) {
  std::filesystem::create_directories(s.logdir + "/data");
  auto paths = examples::write_csv_files(s.logdir + "/data", s.files, s.rows,
                                         static_cast<uint64_t>(s.seed == 0 ? 1 : s.seed));
  std::cout << "host: wrote " << s.files << " CSV files of " << s.rows << " rows to "
            << s.logdir << "/data" << std::endl;
  auto capacity = int64_t{s.min_after_dequeue} + (int64_t{s.readers} + 2) * s.batch_size;
  if (capacity > std::numeric_limits<int32_t>::max())
    throw invalid_argument_error("--min-after-dequeue + (--readers + 2) * --batch-size "
                                 "must be at most 2147483647");
  auto h = std::make_unique<host_node>(sys, checkpoint_options(s));
  auto& pipe = h->pipe;
  producer_options po;
  po.num_epochs = s.epochs;
  po.seed = s.seed;
  auto filenames = string_input_producer(pipe, paths, po);
  h->examples =
      spawn_random_shuffle_queue(sys, static_cast<int32_t>(capacity), s.min_after_dequeue,
                                 {dtype::float32, dtype::float32, dtype::float32},
                                 {{}, {}, {}}, s.seed, 0, "examples");
  h->done = spawn_fifo_queue(sys, s.readers + 1, {dtype::string}, {{}}, "done");
  std::map<std::string, queue_actor> served{
      {"filenames", filenames}, {"examples", h->examples}, {"done", h->done}};
  if (s.hand_over) {
    for (int r = 1; r <= s.readers; ++r) {
      auto name = "work-" + std::to_string(r);
      h->work.push_back(spawn_fifo_queue(sys, 1, {dtype::string}, {{}}, name));
      served.emplace(name, h->work.back());
    }
    h->finished =
        spawn_fifo_queue(sys, s.files * s.readers + 1, {dtype::string}, {{}}, "finished");
    served.emplace("finished", h->finished);
    auto alive = spawn_fifo_queue(sys, 4 * s.readers + 16, {dtype::int32}, {{}}, "alive");
    served.emplace("alive", alive);
    h->dispatcher = std::make_unique<examples::unit_dispatcher>(
        sys, filenames, h->examples, h->finished, alive, h->work, lost_after_of(s));
  }
  h->srv = serve_on(sys, s.listen, {{}, 0, false, served});
  std::cout << "host: serving 'filenames', 'examples' and 'done'"
            << (s.hand_over ? ", 'finished', 'alive' and each reader's 'work-<id>'" : "")
            << " on " << h->srv->address() << std::endl;
  // The filename producer stops by itself after --epochs; no coordinator
  // (none of the others' errors concern it). With checkpoints it starts once
  // the host joined the trainer's checkpoints (join_trainer).
  if (s.checkpointing())
    pipe.add_checkpoint_queue(h->examples); // 'done' starts empty every run
  return h;
}

// When the host knows the trainer (always with --role=all; with --role=host
// given --trainer, which checkpoints need): the host's pipeline (its
// producer, 'filenames' and 'examples') becomes the trainer's checkpoint
// member "host", restoring them first with --restore, and only then does its
// producer run; the trainer's telemetry holds its producer. The trainer may
// start after the host (--role=host): it is asked again for a minute.
void join_trainer(actor_system& sys, host_node& h, const std::string& trainer_address) {
  auto until = std::chrono::steady_clock::now() + std::chrono::minutes{1};
  while (!h.trainer) {
    try {
      h.trainer.emplace(connect(sys, trainer_address));
    } catch (const unavailable_error& e) {
      if (std::chrono::steady_clock::now() >= until)
        throw unavailable_error("host: the trainer at " + trainer_address +
                                " did not answer within a minute: " + e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds{200});
    }
  }
  h.pipe.checkpoint_as_member(h.trainer->coordinator(), "host");
  h.pipe.start_queue_runners();
  std::cout << "host: in the trainer's checkpoints" << std::endl;
}

// Waits for a token of every reader and of the trainer, and closes
// 'examples' once every reader's came (the trainer's may come first: after
// --stop-after-steps it need not wait for the readers' tokens). Throws
// cancelled_error when 'done' is closed first.
void await_tokens(actor_system& sys, host_node& h, int readers) {
  blocking_queue done{sys, h.done};
  int readers_done = 0;
  bool trainer_done = false;
  while (readers_done < readers || !trainer_done) {
    auto who = done.dequeue()[0].values<std::string>()[0];
    std::cout << "host: " << who << " is done" << std::endl;
    if (who == "trainer") {
      trainer_done = true;
      continue;
    }
    if (++readers_done == readers) {
      try {
        blocking_queue{sys, h.examples}.close();
      } catch (const cancelled_error&) {
        // Closed already: a stop (--stop-after-steps) cancelled the
        // readers' runners, which close their queue.
      }
      std::cout << "host: every reader is done; 'examples' closed" << std::endl;
    }
  }
}

int check_stored_once(actor_system& sys, host_node& h, const settings& s);

int host(actor_system& sys, const settings& s) {
  auto h = start_host(sys, s);
  if (!s.trainer.empty())
    join_trainer(sys, *h, s.trainer);
  else
    h->pipe.start_queue_runners();
  std::cout << "host: waiting for " << s.readers << " readers and the trainer (Ctrl-C "
            << "ends it)" << std::endl;
  if (!h->dispatcher) {
    await_tokens(sys, *h, s.readers);
    return 0;
  }
  // The last reader lost ends the wait (await_tokens then throws).
  h->dispatcher->on_no_reader_left([&sys, done = h->done] {
    blocking_queue{sys, done}.close(true);
  });
  h->dispatcher->start(); // it closes 'examples' once every unit is read
  await_tokens(sys, *h, 0);
  return check_stored_once(sys, *h, s);
}

// --hand-over: 'examples' stored each row made once, whichever readers were
// lost (its count of rows stored, against the rows of every file's epochs).
int check_stored_once(actor_system& sys, host_node& h, const settings& s) {
  auto stored = blocking_queue{sys, h.examples}.stats().enqueued_rows;
  auto made = int64_t{s.files} * s.rows * s.epochs;
  std::cout << "host: 'examples' stored " << stored << " rows of the " << made
            << " made; units handed over from lost readers: "
            << h.dispatcher->handed_over() << std::endl;
  if (stored == made)
    return 0;
  std::cerr << "host: 'examples' stored " << stored << " rows, not the " << made
            << " made: " << (stored > made ? "some twice" : "some lost") << "\n";
  return 1;
}

// -- --role=all
// ---------------------------------------------------------------------------

pid_t start_process(std::vector<std::string> args) {
  const char* self = "/proc/self/exe";
  args.insert(args.begin(), "csv_pipeline_distributed");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, self, nullptr, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot start a process of this program");
  return pid;
}

// The address a child server wrote to `path`, waiting at most a minute while
// the child lives.
std::string await_address(const std::string& path, pid_t child, const char* who) {
  auto until = std::chrono::steady_clock::now() + std::chrono::minutes{1};
  while (std::chrono::steady_clock::now() < until) {
    if (std::ifstream in{path}; in) {
      std::string address;
      if (in >> address)
        return address;
    }
    if (::waitpid(child, nullptr, WNOHANG) == child)
      throw std::runtime_error(std::string("the ") + who + " ended before it served");
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  throw deadline_exceeded_error(std::string("the ") + who +
                                " did not serve within a minute");
}

int all(actor_system& sys, settings s) {
  auto h = start_host(sys, s);
  auto common =
      std::vector<std::string>{"--host=" + h->srv->address(),
                               "--batch-size=" + std::to_string(s.batch_size),
                               "--logdir=" + s.logdir,
                               "--learning-rate=" + std::to_string(s.learning_rate),
                               "--readers=" + std::to_string(s.readers),
                               "--checkpoint-every=" + std::to_string(s.checkpoint_every),
                               "--stop-after-steps=" + std::to_string(s.stop_after)};
  if (s.restore)
    common.push_back("--restore");
  auto address_file = s.logdir + "/trainer.address";
  std::filesystem::remove(address_file);
  auto args = common;
  args.insert(args.end(), {"--role=trainer", "--address-file=" + address_file,
                           "--expect=" + std::to_string(s.files * s.rows * s.epochs),
                           "--telemetry-every=" + std::to_string(s.telemetry_every)});
  std::map<pid_t, std::string> children; // under children_mtx once readers run
  std::mutex children_mtx;
  children[start_process(args)] = "trainer";
  auto trainer_address = await_address(address_file, children.begin()->first, "trainer");
  join_trainer(sys, *h, trainer_address);
  for (int r = 1; r <= s.readers; ++r) {
    args = common;
    args.insert(args.end(), {"--role=reader", "--trainer=" + trainer_address,
                             "--id=" + std::to_string(r)});
    if (s.hand_over)
      args.insert(args.end(),
                  {"--hand-over", "--lost-after=" + quern::cli::shown(s.lost_after)});
    auto pid = start_process(args);
    children[pid] = "reader-" + std::to_string(r);
    std::cout << "host: started reader-" << r << " (pid " << pid << ")" << std::endl;
  }
  if (h->dispatcher) {
    // A reader not heard for --lost-after is lost too (frozen, or its
    // machine cut off); the last one lost ends the job.
    h->dispatcher->on_no_reader_left([&] {
      std::lock_guard<std::mutex> guard{children_mtx};
      for (auto& [pid, name] : children)
        ::kill(pid, SIGKILL); // a frozen process does not take SIGTERM
      blocking_queue{sys, h->done}.close(true);
    });
    h->dispatcher->start(); // it closes 'examples' once every unit is read
  }
  // The host's part runs beside the children; a child that fails ends the
  // others and closes 'done', which ends the wait for tokens.
  std::thread tokens{[&] {
    try {
      await_tokens(sys, *h, h->dispatcher ? 0 : s.readers);
    } catch (const op_error& e) {
      std::cerr << "host: " << error_code_name(e.code()) << ": " << e.what() << "\n";
    }
  }};
  int status = 0;
  for (;;) {
    {
      std::lock_guard<std::mutex> guard{children_mtx};
      if (children.empty())
        break;
    }
    int st = 0;
    auto pid = ::waitpid(-1, &st, 0);
    if (pid < 0)
      break;
    std::string who;
    {
      std::lock_guard<std::mutex> guard{children_mtx};
      who = children[pid];
      children.erase(pid);
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
      continue;
    auto code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    // --hand-over: a reader lost is not the job lost, while another reader
    // is left to take over its units.
    if (h->dispatcher && who.rfind("reader-", 0) == 0 && status == 0 &&
        h->dispatcher->lost(reader_number(who), "status " + std::to_string(code)))
      continue;
    std::cerr << "host: the " << who << " process failed (status " << code
              << "); ending the others\n";
    status = 1;
    {
      std::lock_guard<std::mutex> guard{children_mtx};
      for (auto& [other, name] : children)
        ::kill(other, SIGTERM);
    }
    blocking_queue{sys, h->done}.close(true);
  }
  tokens.join();
  if (h->dispatcher && status == 0)
    status = check_stored_once(sys, *h, s);
  std::cout << (status == 0 ? "host: every process ended well" : "host: failed")
            << std::endl;
  return status;
}

} // namespace

int main(int argc, char** argv) {
  settings s;
  po::options_description desc{
      "csv_pipeline_distributed: the flagship pipeline over processes on 127.0.0.1 "
      "(host: queues; readers: CSV -> decode_csv -> shuffle queue; trainer: SGD, the "
      "coordinator and the summary writer)\nOptions"};
  desc.add_options()("help,h", "show this help")(
      "role", po::value(&s.role)->default_value(s.role),
      "all (the host here, the others started from it), host, trainer or reader")(
      "listen", po::value(&s.listen)->default_value(s.listen),
      "host, trainer: the address to serve on (port 0: the system chooses)")(
      "host", po::value(&s.host), "trainer, reader: the host's address")(
      "trainer", po::value(&s.trainer),
      "reader, host: the trainer's address (the host then joins its checkpoints and "
      "telemetry)")("id", po::value(&s.id)->default_value(s.id), "reader: its number")(
      "files", po::value(&s.files)->default_value(s.files),
      "CSV files to write and read")("rows", po::value(&s.rows)->default_value(s.rows),
                                     "rows per file")(
      "epochs", po::value(&s.epochs)->default_value(s.epochs),
      "num_epochs of string_input_producer")(
      "batch-size", po::value(&s.batch_size)->default_value(s.batch_size),
      "examples per read and per training step")(
      "readers", po::value(&s.readers)->default_value(s.readers), "reader processes")(
      "min-after-dequeue",
      po::value(&s.min_after_dequeue)->default_value(s.min_after_dequeue),
      "shuffle buffer of the RandomShuffleQueue")(
      "learning-rate",
      po::value(&s.learning_rate)
          ->default_value(s.learning_rate, quern::cli::shown(s.learning_rate)),
      "SGD step size")("logdir", po::value(&s.logdir)->default_value(s.logdir),
                       "run directory: CSV files in <logdir>/data, the event file here")(
      "seed", po::value(&s.seed)->default_value(s.seed),
      "seed of the data, the file order and the shuffle queue")(
      "address-file", po::value(&s.address_file),
      "trainer: write the address it serves on here (used by --role=all)")(
      "expect", po::value(&s.expect)->default_value(s.expect),
      "trainer: examples made, checked against those trained (0: no check)")(
      "checkpoint-every", po::value(&s.checkpoint_every)->default_value(0),
      "trainer: checkpoint the whole job every N steps into <logdir>/ckpt (0: never)")(
      "stop-after-steps", po::value(&s.stop_after)->default_value(0),
      "trainer: stop the job after N steps (0: at the epoch limit)")(
      "restore", po::bool_switch(&s.restore),
      "every role: go on from the newest checkpoint of <logdir>/ckpt")(
      "lost-after",
      po::value(&s.lost_after)
          ->default_value(s.lost_after, quern::cli::shown(s.lost_after)),
      "--hand-over: seconds after which the host takes a reader it has not heard from "
      "for "
      "lost (a reader says it lives every fifth of them)")(
      "hand-over", po::bool_switch(&s.hand_over),
      "host and every reader (--role=all passes it on): a reader that is lost (its "
      "process ended, or not heard for --lost-after) leaves its unfinished files to the "
      "other readers, which go on from the rows the host's queue holds (without it, a "
      "lost reader ends the job)")(
      "telemetry-every",
      po::value(&s.telemetry_every)
          ->default_value(s.telemetry_every, quern::cli::shown(s.telemetry_every)),
      "trainer: seconds between the telemetry written into the run, every process's "
      "stages (0: every step)");
  po::variables_map vm;
  if (auto status =
          quern::cli::parse_options("csv_pipeline_distributed", argc, argv, desc, vm))
    return *status;
  auto bad = [](const std::string& why) {
    std::cerr << "csv_pipeline_distributed: " << why << "\n";
    return 2;
  };
  if (s.files <= 0 || s.rows <= 0 || s.epochs <= 0 || s.batch_size <= 0 ||
      s.readers <= 0 || s.min_after_dequeue < 0 || !(s.learning_rate > 0))
    return bad("--files, --rows, --epochs, --batch-size, --readers and --learning-rate "
               "must be positive, --min-after-dequeue non-negative");
  if (s.logdir.empty())
    return bad("--logdir must not be empty");
  if ((s.role == "trainer" || s.role == "reader") && s.host.empty())
    return bad("--role=" + s.role + " needs --host=host:port");
  if (s.role == "reader" && s.trainer.empty())
    return bad("--role=reader needs --trainer=host:port");
  if (s.checkpoint_every < 0 || s.stop_after < 0 || !(s.telemetry_every >= 0))
    return bad("--checkpoint-every, --stop-after-steps and --telemetry-every must be "
               "non-negative");
  if (s.role == "host" && s.checkpointing() && s.trainer.empty())
    return bad(
        "--role=host with --checkpoint-every or --restore needs --trainer=host:port");
  if (s.hand_over && s.checkpointing())
    return bad("--hand-over does not combine with --checkpoint-every or --restore: a "
               "checkpoint pauses every reader, and a lost one would fail it");
  if (!(s.lost_after > 0))
    return bad("--lost-after must be positive");
  if (s.role != "all" && s.role != "host" && s.role != "trainer" && s.role != "reader")
    return bad("unknown --role '" + s.role + "' (all, host, trainer or reader)");
  remote_config cfg; // CAF's middleman with quern's settings
  try {
    actor_system sys{cfg};
    if (s.role == "all")
      return all(sys, s);
    if (s.role == "host")
      return host(sys, s);
    if (s.role == "trainer")
      return trainer(sys, s);
    return reader(sys, s);
  } catch (const op_error& e) {
    std::cerr << "csv_pipeline_distributed (" << s.role
              << "): " << error_code_name(e.code()) << ": " << e.what() << "\n";
    return e.code() == error_code::unavailable ? 14 : 1;
  } catch (const std::exception& e) {
    std::cerr << "csv_pipeline_distributed (" << s.role << "): " << e.what() << "\n";
    return 1;
  }
}
