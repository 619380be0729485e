// quern_test_distributed_node: one process of the distributed tests
// (distributed_test.cpp starts several). Roles:
//   host     serves FIFO queues 'rows' (int64 scalars, --node.capacity) and
//            'moved' (the same, capacity 8) and a coordinator on 127.0.0.1,
//            port chosen by the OS and written to --node.port-file; runs
//            until its stdin closes (the test's pipe, so it never outlives it)
//   produce  connects, stores --node.count rows id*1e6+seq (--node.api:
//            enqueue = blocking_queue::enqueue, writer = queue_writer::push,
//            batch = blocking_queue::enqueue_many of 50, runner = a
//            queue_runner of two async ops)
//   consume  connects, takes rows of --node.queue (default 'rows') until it
//            is closed and empty
//            (--node.api: dequeue = blocking_queue, reader = queue_reader,
//            batch = batch_reader dequeue_up_to 32) and appends each value
//            to --node.out as it is taken (one write per row, so a kill -9
//            keeps what was taken); "ready" first, once connected
//   produce-keyed  a quern::remote_producer named producer-<id> stores
//            --node.count rows id*1e6+seq in batches of 5, going on after the
//            batches the queue says an earlier run stored (printing "resumed
//            after N batches"); appends each row of a batch the queue
//            acknowledged to --node.out, prints "retrying: <why>" to stderr
//            at each retry and "reconnections N" at the end; connect timeout
//            --node.timeout-ms. With --node.api=push it sends with
//            push_batch (a window of 4 batches) and appends the rows after
//            its final flush()
//   move     a queue runner of one async op moves rows from 'rows' to
//            'moved', pulling up to 8 per run, until 'rows' is closed and
//            drained ('moved' stays open); "ready" in --node.out once started
//   close    connects and closes the queue (--node.queue)
//   exit-on-loss  connects with connect_options::exit_status_on_loss 14, feeds
//            'rows' from a queue runner registered with the host's
//            coordinator, logs 20 scalars 'worker/x' into a summary writer of
//            its own (--node.logdir), waits 1 s for its handle to pass them
//            on, writes "ready" to --node.out and then
//            sleeps, in no quern call, until quern ends it (exit 3 if it
//            is still alive after 2 minutes)
//   declare  makes a queue runner of 'rows' (starvation_timeout 200 ms)
//            and never starts it; "ready" in --node.out once the host's
//            queue has its declaration, then sleeps until it is killed
//            (exit 3 after 2 minutes)
//   wait-stop  connects and waits in the host's coordinator's
//            wait_for_stop() (no timeout)
//   feed-until-stop  a queue runner registered with the host's
//            coordinator feeds 'rows' until stop is requested
//   feed-and-join  a queue runner of one blocking op registered with the
//            host's coordinator stores --node.count rows (a pause of
//            --node.pace-ms before each), its queue left open; "ready" in
//            --node.out once started, then join(threads) on the coordinator:
//            exit 3 if join returned while the runner still ran
//   connect  connects within --node.timeout-ms, asks queue 'rows' its size
//            and prints "connected"
//   lookups  --node.count times: connects (a remote_node each, all kept),
//            looks up queue 'rows' and the coordinator and stores row
//            id*1e6+i through that queue; then "ready" in --node.out, waits
//            for --node.start-file and exits
//   anon-connect  CAF's openssl module without certificates (anonymous TLS,
//            which quern never uses) connects through CAF directly and
//            prints CAF's answer; exit 16 when refused
//   log      feeds the host's summary writer 'train' (host --node.logdir):
//            --node.count scalars 'worker<id>/v' and, from a second thread
//            sharing the handle, 'worker<id>/u', at steps 0.. (value
//            log_value(step): finite, inf, -inf, NaN in turn), then flush();
//            with --node.start-file it then writes "ready" to --node.out,
//            waits for that file, and logs and flushes one more
//   rogue    connects through CAF directly, asks the facade of 'rows' for
//            answers (size, spec, a push of --node.id), registers itself
//            with the coordinator's facade and requests stop (printing
//            whether the stop it is pushed comes anonymously), then sends
//            exit_reason::kill to the facade and every sender of an answer,
//            and to the node a kill, an anonymous exit and a link that ends
//            with a kill, then asks the node for a hello
// --node.tls: CAF's openssl module with the --openssl.* files (enable_tls).
// produce: --node.start-file makes it wait, once connected, until that file
// exists ("ready" in --node.out before); --node.close-after closes the queue
// when done.
// A failure prints "<role>: <TF error name>: <message>" to stderr and exits
// with the error's TensorFlow code (14 = unavailable, ...).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/scoped_actor.hpp>

#include <quern/blocking_queue.hpp>
#include <quern/command_line.hpp>
#include <quern/coordinator.hpp>
#include <quern/input/batching.hpp>
#include <quern/pipeline.hpp>
#include <quern/queue.hpp>
#include <quern/queue_runner.hpp>
#include <quern/remote.hpp>
#include <quern/state_bytes.hpp>
#include <quern/summary/summary_writer.hpp>

#include "log_values.hpp"

namespace {

struct node_config : quern::remote_config {
  std::string role;
  std::string address;
  std::string api = "dequeue";
  std::string out;
  std::string port_file;
  int64_t id = 0;
  int64_t count = 0;
  int32_t capacity = 64;
  int32_t pace_ms = 0;
  bool tls = false;
  std::string listen = "127.0.0.1";
  int32_t timeout_ms = 5000;
  std::string start_file;
  bool close_after = false;
  int64_t fail_after = -1;
  std::string logdir;
  std::string queue = "rows";
  std::string member;
  std::string checkpoint_dir;

  node_config() {
    caf::config_option_adder{custom_options_, "node"}
        .add(
            role, "role",
            "host, produce, consume, close, wait-stop, feed-until-stop, member-feed, ...")
        .add(address, "address", "host:port of the host (not for host)")
        .add(api, "api",
             "which client: enqueue/writer/batch or dequeue/fresh-dequeue/reader/batch")
        .add(out, "out",
             "consume: the file taken values are appended to; produce (enqueue): "
             "each row the queue acknowledged")
        .add(port_file, "port-file", "host: where the port is written")
        .add(id, "id", "produce: the producer's number")
        .add(count, "count", "produce: rows to store")
        .add(capacity, "capacity", "host: the queue's capacity")
        .add(pace_ms, "pace-ms", "consume, produce (enqueue): a pause after each row")
        .add(tls, "tls", "TLS with the --openssl.* files")
        .add(listen, "listen", "host: the address to listen on")
        .add(timeout_ms, "timeout-ms", "connect: the connect timeout")
        .add(start_file, "start-file", "produce: wait for this file once connected")
        .add(close_after, "close-after", "produce: close the queue when done")
        .add(fail_after, "fail-after",
             "feed-until-stop: the runner's op throws after this many rows")
        .add(logdir, "logdir",
             "host: export a summary writer 'train' of this log directory")
        .add(queue, "queue", "consume, close: the host's queue ('rows' or 'moved')")
        .add(member, "member",
             "host: its pipeline (holding 'rows') is the checkpoint member of this name "
             "of its coordinator")
        .add(checkpoint_dir, "checkpoint-dir",
             "host with --node.member, member-feed: restore the member's sections of "
             "the newest checkpoint here");
  }
};

quern::element row(int64_t v) {
  return quern::element{quern::tensor::scalar(v)};
}

void write_all(int fd, const std::string& s) {
  auto* p = s.data();
  auto left = s.size();
  while (left > 0) {
    auto n = ::write(fd, p, left);
    if (n <= 0)
      throw std::runtime_error("cannot write the output file");
    p += n;
    left -= static_cast<size_t>(n);
  }
}

int host(quern::actor_system& sys, node_config& cfg) {
  auto q = quern::spawn_fifo_queue(sys, cfg.capacity, {quern::dtype::int64},
                                   {quern::tensor_shape{}}, "rows");
  auto coord = quern::spawn_coordinator(sys);
  std::optional<quern::summary_writer> writer;
  std::map<std::string, quern::summary_writer_actor> writers;
  if (!cfg.logdir.empty()) {
    writer.emplace(sys, cfg.logdir);
    writers.emplace("train", writer->actor());
  }
  auto moved = quern::spawn_fifo_queue(sys, 8, {quern::dtype::int64},
                                       {quern::tensor_shape{}}, "moved");
  // --node.member: 'rows' is in the checkpoints of a pipeline of another
  // process, restored from --node.checkpoint-dir before anything is served.
  quern::pipeline_options po;
  po.checkpoint_dir = cfg.checkpoint_dir;
  po.restore = !cfg.checkpoint_dir.empty();
  quern::pipeline pipe{sys, po};
  if (!cfg.member.empty()) {
    pipe.add_checkpoint_queue(q);
    pipe.checkpoint_as_member(coord, cfg.member);
  }
  auto srv = quern::serve(
      sys, {cfg.listen, 0, false, {{"rows", q}, {"moved", moved}}, coord, writers});
  // Written whole, then renamed: the test never reads half a port.
  auto tmp = cfg.port_file + ".tmp";
  {
    auto fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
      throw std::runtime_error("cannot write " + tmp);
    write_all(fd, std::to_string(srv.port()) + "\n");
    ::close(fd);
  }
  std::rename(tmp.c_str(), cfg.port_file.c_str());
  char buf[64];
  while (::read(0, buf, sizeof buf) > 0) {
  }
  return 0;
}

void append_line(const std::string& path, const std::string& line) {
  auto fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    throw std::runtime_error("cannot open " + path);
  write_all(fd, line + "\n");
  ::close(fd);
}

// --node.start-file: "ready" in --node.out, then wait (bounded) for the file.
void wait_for_start(node_config& cfg) {
  if (cfg.start_file.empty())
    return;
  append_line(cfg.out, "ready");
  auto until = std::chrono::steady_clock::now() + std::chrono::minutes{2};
  while (::access(cfg.start_file.c_str(), F_OK) != 0) {
    if (std::chrono::steady_clock::now() >= until)
      throw std::runtime_error(cfg.start_file + " did not appear within 2 minutes");
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
}

int produce(quern::actor_system& sys, node_config& cfg) {
  auto node = quern::connect(sys, cfg.address);
  auto q = node.queue("rows");
  auto base = cfg.id * 1000000;
  wait_for_start(cfg);
  if (cfg.api == "runner") {
    // A queue runner of two async ops in this process feeds the remote
    // queue; it leaves the shared queue open when its input ends.
    auto next = std::make_shared<std::atomic<int64_t>>(0);
    auto op = quern::async_op([next, base, count = cfg.count](quern::async_run& run) {
      auto i = (*next)++;
      if (i >= count) {
        run.end();
        return;
      }
      run.emit(row(base + i));
      run.done();
    });
    quern::queue_runner_options opts;
    opts.name = "remote-feeder";
    opts.close_op = std::nullopt;
    quern::queue_runner runner{q, {op, op}, opts};
    runner.start(sys);
    auto until = std::chrono::steady_clock::now() + std::chrono::minutes{2};
    while (runner.running() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    if (runner.running())
      throw std::runtime_error("the queue runner did not finish within 2 minutes");
    for (auto& e : runner.exceptions_raised())
      throw std::runtime_error("queue runner: " + quern::render(e));
  } else if (cfg.api == "writer") {
    quern::queue_writer writer{sys, q, 64};
    for (int64_t i = 0; i < cfg.count; ++i)
      writer.push(row(base + i));
    writer.flush();
  } else if (cfg.api == "batch") {
    quern::blocking_queue queue{sys, q};
    for (int64_t i = 0; i < cfg.count; i += 50) {
      std::vector<int64_t> vs;
      for (int64_t j = i; j < std::min(cfg.count, i + 50); ++j)
        vs.push_back(base + j);
      auto n = static_cast<int64_t>(vs.size());
      queue.enqueue_many(quern::element{
          quern::tensor::from_values(quern::tensor_shape{n}, std::move(vs))});
    }
  } else {
    // --node.out: each row the queue acknowledged, once it did (one write per
    // row, so a kill -9 leaves those that were acknowledged, but perhaps the last).
    auto fd = cfg.out.empty()
                  ? -1
                  : ::open(cfg.out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    quern::blocking_queue queue{sys, q};
    for (int64_t i = 0; i < cfg.count; ++i) {
      queue.enqueue(row(base + i));
      if (fd >= 0)
        write_all(fd, std::to_string(base + i) + "\n");
      if (cfg.pace_ms > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds{cfg.pace_ms});
    }
    if (fd >= 0)
      ::close(fd);
  }
  if (cfg.close_after)
    quern::blocking_queue{sys, q}.close();
  return 0;
}

int produce_keyed(quern::actor_system& sys, node_config& cfg) {
  constexpr int64_t batch_rows = 5;
  quern::remote_producer_options opts;
  opts.connect.timeout = std::chrono::milliseconds{cfg.timeout_ms};
  opts.on_retry = [](const std::string& why) {
    std::cerr << "retrying: " << why << "\n";
  };
  bool pushed = cfg.api == "push";
  if (pushed)
    opts.window = 4;
  std::string unconfirmed; // rows pushed, acknowledged by flush()
  quern::remote_producer producer{sys, cfg.address, "rows",
                                  "producer-" + std::to_string(cfg.id), opts};
  std::cout << "resumed after " << producer.resumed_after() << " batches" << std::endl;
  auto base = cfg.id * 1000000;
  auto first = static_cast<int64_t>(producer.resumed_after()) * batch_rows;
  for (int64_t i = first; i < cfg.count; i += batch_rows) {
    std::vector<int64_t> vs;
    for (int64_t j = i; j < std::min(cfg.count, i + batch_rows); ++j)
      vs.push_back(base + j);
    auto n = static_cast<int64_t>(vs.size());
    quern::element batch{quern::tensor::from_values(quern::tensor_shape{n}, vs)};
    std::string acked;
    for (auto v : vs)
      acked += std::to_string(v) + "\n";
    if (pushed) {
      producer.push_batch(std::move(batch));
      unconfirmed += acked;
      continue;
    }
    producer.enqueue_many(batch);
    append_line(cfg.out, acked.substr(0, acked.size() - 1));
  }
  if (pushed) {
    producer.flush();
    if (!unconfirmed.empty())
      append_line(cfg.out, unconfirmed.substr(0, unconfirmed.size() - 1));
  }
  std::cout << "reconnections " << producer.reconnections() << std::endl;
  if (cfg.close_after) {
    auto node = quern::connect(sys, cfg.address);
    quern::blocking_queue{sys, node.queue("rows")}.close();
  }
  return 0;
}

int consume(quern::actor_system& sys, node_config& cfg) {
  auto fd = ::open(cfg.out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    throw std::runtime_error("cannot open " + cfg.out);
  auto node = quern::connect(sys, cfg.address);
  auto q = node.queue(cfg.queue);
  write_all(fd, "ready\n");
  auto took = [&](int64_t v) {
    write_all(fd, std::to_string(v) + "\n");
    if (cfg.pace_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds{cfg.pace_ms});
  };
  if (cfg.api == "reader") {
    quern::queue_reader reader{sys, q, 16};
    while (auto e = reader.try_pull())
      took((*e)[0].scalar_value<int64_t>());
  } else if (cfg.api == "batch") {
    quern::batch_reader reader{sys, q, 32, quern::batch_cut::dequeue_up_to, 4};
    while (auto b = reader.try_pull())
      for (auto v : (*b)[0].values<int64_t>())
        took(v);
  } else if (cfg.api == "fresh-dequeue") {
    // A handle made for each row: its caller ends right after its answer.
    try {
      for (;;)
        took(quern::blocking_queue{sys, q}.dequeue()[0].scalar_value<int64_t>());
    } catch (const quern::out_of_range_error&) {
    }
  } else {
    quern::blocking_queue queue{sys, q};
    try {
      for (;;)
        took(queue.dequeue()[0].scalar_value<int64_t>());
    } catch (const quern::out_of_range_error&) {
    }
  }
  ::close(fd);
  return 0;
}

// Waits, without a timeout, until stop is requested at the host's
// coordinator; "ready" in --node.out once connected.
int wait_stop(quern::actor_system& sys, node_config& cfg) {
  auto fd = ::open(cfg.out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    throw std::runtime_error("cannot open " + cfg.out);
  auto node = quern::connect(sys, cfg.address);
  quern::coordinator coord{sys, node.coordinator()};
  write_all(fd, "ready\n");
  coord.wait_for_stop();
  write_all(fd, "stopped\n");
  ::close(fd);
  return 0;
}

// A queue runner in this process, registered with the host's coordinator,
// feeds the host's queue until a stop requested anywhere ends it (or its op
// fails, --node.fail-after); "ready" in --node.out once it runs.
int feed_until_stop(quern::actor_system& sys, node_config& cfg) {
  auto fd = ::open(cfg.out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    throw std::runtime_error("cannot open " + cfg.out);
  auto node = quern::connect(sys, cfg.address);
  auto next = std::make_shared<std::atomic<int64_t>>(0);
  auto op = quern::async_op([next, fail_after = cfg.fail_after](quern::async_run& run) {
    auto i = (*next)++;
    if (fail_after >= 0 && i >= fail_after)
      throw std::runtime_error("the feeder's input broke at row " + std::to_string(i));
    run.emit(row(i));
    run.done();
  });
  quern::queue_runner_options opts;
  opts.name = "remote-feeder";
  quern::queue_runner runner{node.queue("rows"), {op}, opts};
  runner.start(sys, node.coordinator());
  write_all(fd, "ready\n");
  auto until = std::chrono::steady_clock::now() + std::chrono::minutes{2};
  while (runner.running() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  if (runner.running())
    throw std::runtime_error("the queue runner was not stopped within 2 minutes");
  write_all(fd, "stopped\n");
  ::close(fd);
  return 0;
}

// A checkpoint member "feeder" of the host's coordinator: a runner that
// stores 0, 1, 2, ... in the host's 'rows' (one row a run, --node.pace-ms
// apart; with --node.api=writer a direct_batch_op streaming batches of 8
// through its own queue_writer), the next value its checkpoint part;
// restored from --node.checkpoint-dir. "ready" in --node.out once it runs;
// ends when its runner is stopped.
int member_feed(quern::actor_system& sys, node_config& cfg) {
  auto node = quern::connect(sys, cfg.address);
  quern::pipeline_options po;
  po.checkpoint_dir = cfg.checkpoint_dir;
  po.restore = !cfg.checkpoint_dir.empty();
  quern::pipeline pipe{sys, po};
  auto next = std::make_shared<std::atomic<int64_t>>(0);
  auto op = quern::blocking_op([next, pace = cfg.pace_ms](quern::blocking_run& run) {
    std::this_thread::sleep_for(std::chrono::milliseconds{pace});
    run.emit(row(next->load()));
    ++*next;
  });
  if (cfg.api == "writer")
    op = quern::direct_batch_op(
        sys, node.queue("rows"),
        [next, pace = cfg.pace_ms] {
          std::this_thread::sleep_for(std::chrono::milliseconds{pace});
          std::vector<int64_t> values(8);
          for (auto& v : values)
            v = (*next)++;
          return quern::element{quern::tensor::vector<int64_t>(std::move(values))};
        },
        {}, 64, "feed");
  pipe.add_checkpoint_part(
      "feeder/next",
      [next] {
        quern::state_writer w;
        w.write_i64(next->load());
        return w.take();
      },
      [next](const std::string& bytes) {
        quern::state_reader r{bytes, "the feeder's next value"};
        *next = r.read_i64();
        r.expect_end();
      });
  quern::queue_runner_options opts;
  opts.name = "member-feeder";
  opts.close_op = std::nullopt;
  quern::queue_runner runner{node.queue("rows"), {op}, opts};
  pipe.add_queue_runner(runner);
  pipe.checkpoint_as_member(node.coordinator(), "feeder");
  // Where it goes on from (restored by checkpoint_as_member), read before
  // its runner starts and moves it on.
  auto from = next->load();
  pipe.start_queue_runners(node.coordinator());
  append_line(cfg.out, "ready from " + std::to_string(from));
  auto until = std::chrono::steady_clock::now() + std::chrono::minutes{2};
  while (runner.running() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  if (runner.running())
    throw std::runtime_error("the queue runner was not stopped within 2 minutes");
  return 0;
}

int feed_and_join(quern::actor_system& sys, node_config& cfg) {
  auto node = quern::connect(sys, cfg.address);
  auto next = std::make_shared<std::atomic<int64_t>>(0);
  auto op = quern::blocking_op([next, count = cfg.count, pace = cfg.pace_ms,
                                base = cfg.id * 1000000](quern::blocking_run& run) {
    auto i = (*next)++;
    if (i >= count) {
      run.end();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{pace});
    run.emit(row(base + i));
  });
  quern::queue_runner_options opts;
  opts.name = "feeder-" + std::to_string(cfg.id);
  opts.close_op = std::nullopt;
  quern::queue_runner runner{node.queue("rows"), {op}, opts};
  quern::coordinator coord{sys, node.coordinator()};
  auto threads = runner.start(sys, coord.actor());
  append_line(cfg.out, "ready");
  coord.join(threads);
  if (runner.running()) {
    std::cerr << "feed-and-join: join returned while the runner ran (" << *next << " of "
              << cfg.count << " rows)\n";
    return 3;
  }
  std::cout << "joined after " << std::min(next->load(), cfg.count) << " rows"
            << std::endl;
  return 0;
}

// A runner of the host's queue that is never started: while this process
// lives, a dequeue of 'rows' that waited 200 ms is told so (CC-2).
int declare_only(quern::actor_system& sys, node_config& cfg) {
  auto node = quern::connect(sys, cfg.address);
  auto rows = node.queue("rows");
  auto op = quern::async_op([](quern::async_run& run) { run.end(); });
  quern::queue_runner_options opts;
  opts.name = "never-started";
  opts.starvation_timeout = std::chrono::milliseconds{200};
  quern::queue_runner runner{rows, {op}, opts};
  // Through the same endpoint, so after the declaration: the queue has it.
  quern::blocking_queue{sys, rows}.size();
  append_line(cfg.out, "ready");
  std::this_thread::sleep_for(std::chrono::minutes{2});
  return 3;
}

int close_queue(quern::actor_system& sys, node_config& cfg) {
  auto node = quern::connect(sys, cfg.address);
  quern::blocking_queue{sys, node.queue(cfg.queue)}.close();
  return 0;
}

int exit_on_loss(quern::actor_system& sys, node_config& cfg) {
  quern::connect_options opts;
  opts.exit_status_on_loss = 14;
  auto node = quern::connect(sys, cfg.address, opts);
  auto next = std::make_shared<std::atomic<int64_t>>(0);
  auto op = quern::async_op([next](quern::async_run& run) {
    run.emit(row((*next)++));
    run.done();
  });
  quern::queue_runner_options ro;
  ro.name = "feeder";
  quern::queue_runner runner{node.queue("rows"), {op}, ro};
  runner.start(sys, node.coordinator());
  quern::summary_writer w{sys, cfg.logdir};
  for (int64_t step = 0; step < 20; ++step)
    w.scalar("worker/x", static_cast<double>(step), step);
  // The handle passes its scalars on within 0.25 s; what it still held
  // would be lost with the process.
  std::this_thread::sleep_for(std::chrono::seconds{1});
  append_line(cfg.out, "ready");
  std::this_thread::sleep_for(std::chrono::minutes{2});
  return 3;
}

// Moves rows from 'rows' to 'moved' in runs of up to 8 pulled rows: with
// 'moved' full, the runs whose pushes wait there hold rows pulled and not
// stored. Ends when 'rows' is closed and drained.
int move_rows(quern::actor_system& sys, node_config& cfg) {
  auto fd = ::open(cfg.out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    throw std::runtime_error("cannot open " + cfg.out);
  auto node = quern::connect(sys, cfg.address);
  auto from = node.queue("rows");
  auto op = quern::async_op([from](quern::async_run& run) {
    run.pull(from, 8, [&run](std::vector<quern::element>& rows) {
      run.emit(std::move(rows));
      run.done();
    });
  });
  quern::queue_runner_options opts;
  opts.name = "mover";
  opts.close_op = std::nullopt;
  quern::queue_runner runner{node.queue("moved"), {op}, opts};
  runner.start(sys);
  write_all(fd, "ready\n");
  ::close(fd);
  auto until = std::chrono::steady_clock::now() + std::chrono::minutes{2};
  while (runner.running() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  if (runner.running())
    throw std::runtime_error("the mover did not finish within 2 minutes");
  for (auto& e : runner.exceptions_raised())
    throw std::runtime_error("queue runner: " + quern::render(e));
  return 0;
}

int connect_only(quern::actor_system& sys, node_config& cfg) {
  auto node =
      quern::connect(sys, cfg.address, {std::chrono::milliseconds{cfg.timeout_ms}});
  auto size = quern::blocking_queue{sys, node.queue("rows")}.size();
  std::cout << "connected to " << node.description() << ", size " << size << std::endl;
  return 0;
}

int many_lookups(quern::actor_system& sys, node_config& cfg) {
  std::vector<quern::remote_node> nodes;
  for (int64_t i = 0; i < cfg.count; ++i) {
    nodes.push_back(
        quern::connect(sys, cfg.address, {std::chrono::milliseconds{cfg.timeout_ms}}));
    quern::blocking_queue q{sys, nodes.back().queue("rows")};
    q.enqueue(row(cfg.id * 1000000 + i));
    nodes.back().coordinator();
  }
  wait_for_start(cfg);
  return 0;
}

// CAF's connect through `mm` (plain or openssl), bounded; null when refused,
// with CAF's error in `err`.
caf::strong_actor_ptr caf_connect(caf::actor_system& sys,
                                  const caf::io::middleman_actor& mm,
                                  const std::string& address, caf::error& err) {
  auto [host, port] = quern::detail::parse_address(address);
  caf::scoped_actor self{sys};
  caf::strong_actor_ptr published;
  self->request(mm, std::chrono::seconds{30}, caf::connect_atom_v, host, port)
      .receive([&](caf::node_id&, caf::strong_actor_ptr& p,
                   std::set<std::string>&) { published = std::move(p); },
               [&](caf::error& e) { err = std::move(e); });
  return published;
}

int anon_connect(quern::actor_system& sys, node_config& cfg) {
  caf::error err;
  auto published =
      caf_connect(sys, sys.openssl_manager().actor_handle(), cfg.address, err);
  if (!published) {
    std::cerr << "anon-connect: refused: " << sys.render(err) << "\n";
    return 16;
  }
  std::cout << "anon-connect: admitted\n";
  return 0;
}

// A peer that kills everything it can reach: the facade of 'rows' it was
// handed and every actor an answer came from (waits, bounded, until each
// is down, so every kill arrived), then the node it connected to, every way
// a peer can: the node must answer a hello after them.
int rogue(quern::actor_system& sys, node_config& cfg) {
  caf::error err;
  auto published = caf_connect(sys, sys.middleman().actor_handle(), cfg.address, err);
  if (!published)
    throw std::runtime_error("cannot connect: " + sys.render(err));
  auto node = caf::actor_cast<quern::node_actor>(published);
  caf::scoped_actor self{sys};
  auto limit = std::chrono::seconds{30};
  auto fail = [&](caf::error& e) { throw std::runtime_error(sys.render(e)); };
  quern::queue_actor facade;
  self->request(node, limit, quern::lookup_queue_atom::value, std::string{"rows"})
      .receive([&](quern::queue_actor& q) { facade = std::move(q); }, fail);
  std::set<caf::actor_addr> senders;
  auto record = [&] {
    senders.emplace(caf::actor_cast<caf::actor_addr>(self->current_sender()));
  };
  self->request(facade, limit, quern::size_atom::value)
      .receive([&](int32_t) { record(); }, fail);
  self->request(facade, limit, quern::spec_atom::value)
      .receive([&](quern::queue_spec&) { record(); }, fail);
  self->send(facade, quern::push_atom::value, std::vector<quern::element>{row(cfg.id)});
  self->receive([&](quern::pushed_atom, int32_t, caf::error&) { record(); },
                caf::after(limit) >>
                    [] { throw std::runtime_error("no pushed answer"); });
  // The coordinator: register this actor as a runner would, request stop,
  // and see who sends the stop it pushes.
  quern::coordinator_actor coord;
  self->request(node, limit, quern::lookup_coordinator_atom::value)
      .receive([&](quern::coordinator_actor& c) { coord = std::move(c); }, fail);
  std::vector<quern::registration> regs{{caf::actor{self}, "rogue", true, false}};
  self->request(coord, limit, quern::register_atom::value, regs)
      .receive([&](int32_t) { record(); }, fail);
  self->request(coord, limit, quern::request_stop_atom::value, caf::error{})
      .receive([&](bool) { record(); }, fail);
  caf::actor_addr stop_sender;
  self->receive(
      [&](quern::stop_atom) {
        stop_sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
      },
      caf::after(limit) >> [] { throw std::runtime_error("no stop came"); });
  std::cout << "rogue: the coordinator's stop came "
            << (stop_sender ? "from an actor" : "anonymously") << std::endl;
  if (stop_sender)
    senders.emplace(stop_sender);
  std::set<caf::actor_addr> targets = senders;
  targets.emplace(facade.address());
  targets.emplace(coord.address());
  // Every handle first, then the kills: a relay ends with its facade, and
  // once its end reached this process its address would no longer give a
  // handle.
  std::vector<caf::actor> handles;
  for (auto& t : targets) {
    auto a = caf::actor_cast<caf::actor>(t);
    if (!a)
      throw std::runtime_error("an answer came from an invalid sender");
    handles.push_back(std::move(a));
  }
  for (auto& a : handles) {
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::kill);
  }
  for (size_t i = 0; i < targets.size(); ++i)
    self->receive([](caf::down_msg&) {},
                  caf::after(limit) >>
                      [] { throw std::runtime_error("a target lived on"); });
  std::cout << "rogue: killed " << targets.size() << " actors, " << senders.size()
            << " of them senders of answers" << std::endl;
  // The node: an untrappable kill, an anonymous exit (whose source is the
  // node's own address), and a link from an actor of this process that then
  // ends with a kill. A hello sent after them is handled after them.
  self->send_exit(node, caf::exit_reason::kill);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  auto linked = sys.spawn([node](caf::event_based_actor* a) -> caf::behavior {
    a->link_to(node);
    return {[](int32_t) {}};
  });
  self->monitor(linked);
  self->send_exit(linked, caf::exit_reason::kill);
  // Its exit to its links left this process before its down message came.
  self->receive([](caf::down_msg&) {},
                caf::after(limit) >>
                    [] { throw std::runtime_error("the linked actor lived on"); });
  bool answered = false;
  self->request(node, limit, quern::hello_atom::value, quern::wire_version)
      .receive([&](uint32_t, std::string&) { answered = true; },
               [&](caf::error& e) {
                 std::cout << "rogue: the node is gone: " << sys.render(e) << std::endl;
               });
  if (answered)
    std::cout << "rogue: the node answered after its kill" << std::endl;
  return 0;
}

int log_scalars(quern::actor_system& sys, node_config& cfg) {
  auto node = quern::connect(sys, cfg.address);
  quern::summary_writer w{sys, node.writer("train")};
  auto tag = "worker" + std::to_string(cfg.id) + "/v";
  // A second thread shares the handle, logging the same values under /u.
  std::thread other{[&] {
    for (int64_t step = 0; step < cfg.count; ++step)
      w.scalar("worker" + std::to_string(cfg.id) + "/u", quern::test::log_value(step),
               step);
  }};
  for (int64_t step = 0; step < cfg.count; ++step)
    w.scalar(tag, quern::test::log_value(step), step);
  other.join();
  w.flush();
  if (cfg.start_file.empty())
    return 0;
  wait_for_start(cfg);
  w.scalar(tag, 1.0, cfg.count);
  w.flush();
  return 0;
}

// Runs --node.role in `sys`.
int run(quern::actor_system& sys, node_config& cfg) {
  if (cfg.role == "host")
    return host(sys, cfg);
  if (cfg.role == "produce")
    return produce(sys, cfg);
  if (cfg.role == "produce-keyed")
    return produce_keyed(sys, cfg);
  if (cfg.role == "consume")
    return consume(sys, cfg);
  if (cfg.role == "close")
    return close_queue(sys, cfg);
  if (cfg.role == "move")
    return move_rows(sys, cfg);
  if (cfg.role == "exit-on-loss")
    return exit_on_loss(sys, cfg);
  if (cfg.role == "declare")
    return declare_only(sys, cfg);
  if (cfg.role == "wait-stop")
    return wait_stop(sys, cfg);
  if (cfg.role == "feed-until-stop")
    return feed_until_stop(sys, cfg);
  if (cfg.role == "feed-and-join")
    return feed_and_join(sys, cfg);
  if (cfg.role == "member-feed")
    return member_feed(sys, cfg);
  if (cfg.role == "connect")
    return connect_only(sys, cfg);
  if (cfg.role == "anon-connect")
    return anon_connect(sys, cfg);
  if (cfg.role == "lookups")
    return many_lookups(sys, cfg);
  if (cfg.role == "rogue")
    return rogue(sys, cfg);
  if (cfg.role == "log")
    return log_scalars(sys, cfg);
  std::cerr << "quern_test_distributed_node: unknown --node.role '" << cfg.role << "'\n";
  return 2;
}

} // namespace

// LeakSanitizer (the ASan build) does not check this program at exit. Under
// load, CAF 0.17.6 can end its I/O loop before a client connection's BASP
// broker has let go of its stream: the broker, its connection state and the
// messages it still holds stay in a reference cycle (about 4 KB, all CAF's
// own objects; seen about once in ten runs on 2 busy cores). This program is
// the tests' fixture; quern's code in it is leak-checked by the in-process
// tests, and the test process that starts it keeps its leak check.
extern "C" int __lsan_is_turned_off() {
  return 1;
}

int main(int argc, char** argv) {
  node_config cfg;
  if (auto status = quern::parse_command_line(cfg, argc, argv))
    return *status;
  try {
    // After the command line: its --openssl.* values are the TLS files.
    if (cfg.tls)
      quern::enable_tls(cfg, {cfg.openssl_certificate, cfg.openssl_key,
                              cfg.openssl_passphrase, cfg.openssl_cafile});
    else if (cfg.role == "anon-connect")
      quern::enable_tls(cfg, {});
    quern::actor_system sys{cfg};
    return run(sys, cfg);
  } catch (const quern::op_error& e) {
    std::cerr << cfg.role << ": " << quern::error_code_name(e.code()) << ": " << e.what()
              << "\n";
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << cfg.role << ": " << e.what() << "\n";
    return 1;
  }
}
