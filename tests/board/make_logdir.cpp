// Writes the log directories the quern-board browser tests and bench_board
// look at, with quern's own event-file writer (no checked-in binaries).
//
//   quern_test_board_logdir full DIR
//       runs train, b/c, eval and damaged: scalars (awkward values too), a
//       histogram, text, an image, out-of-order steps and a truncated file
//   quern_test_board_logdir append FILE STEP COUNT
//       appends COUNT `loss` scalars from STEP on to an existing event file
//   quern_test_board_logdir restart FILE STEP COUNT
//       appends a SessionLog START at STEP (a job restored from its
//       checkpoint at STEP) and COUNT `loss` scalars from STEP on
//   quern_test_board_logdir big DIR RUNS TAGS POINTS
//       RUNS runs of TAGS tags of POINTS points each
//   quern_test_board_logdir markdown DIR
//       one run at DIR's root (no sub-folder): a scalar, and a text summary
//       of markdown (bold, a table) with HTML that must not run in a page
//   quern_test_board_logdir hparams DIR
//       three runs of different hparams (adam, sgd, and one whose name and
//       value are HTML that must not run in a page), each with a `loss`
//       series; the first two declare `loss` as their metric
//   quern_test_board_logdir numbers DIR COUNT
//       one run of COUNT scalars whose values and wall times are random bit
//       patterns (every kind of float and double), and so are most steps
//   quern_test_board_logdir pipeline DIR
//       run `train`: a `loss` every step 0..199 and, every 20 steps, the
//       telemetry input_summaries writes (its scalars, `pipeline/verdict`,
//       and `pipeline/graph` at step 0): produce -> raw -> decode (two
//       workers) -> decoded -> batch -> batches -> the trainer; decode is
//       the limiting stage at steps 0..120, batch at 140..180. Run `plain`:
//       a `loss` and no telemetry.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "quern/error.hpp"
#include "quern/format/record.hpp"
#include "quern/input/summaries.hpp"
#include "quern/pipeline_telemetry.hpp"
#include "quern/summary/event.hpp"
#include "quern/summary/event_file.hpp"
#include "quern/summary/reader.hpp"
#include "quern/summary/values.hpp"

using namespace quern;

namespace {

[[noreturn]] void fail(const std::string& why) {
  std::cerr << "quern_test_board_logdir: " << why << "\n";
  std::exit(1);
}

void check(const caf::error& err, const std::string& what) {
  if (err)
    fail(what + ": " + message_of(err));
}

// A small deterministic noise source (no <random> distributions: their
// output differs between standard libraries).
struct lcg {
  uint64_t s;
  double next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  }
};

uint32_t crc32(const std::string& data) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : data) {
    c ^= b;
    for (int k = 0; k < 8; ++k)
      c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

void put32(std::string& out, uint32_t v) {
  for (int i = 3; i >= 0; --i)
    out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// An RGB PNG of w x h pixels (a colour gradient) with stored (uncompressed)
// deflate blocks: enough for an image summary, no zlib needed.
std::string make_png(int w, int h) {
  std::string raw;
  for (int y = 0; y < h; ++y) {
    raw += '\0';
    for (int x = 0; x < w; ++x) {
      raw += static_cast<char>(x * 255 / std::max(1, w - 1));
      raw += static_cast<char>(y * 255 / std::max(1, h - 1));
      raw += static_cast<char>(128);
    }
  }
  std::string z = "\x78\x01";
  for (size_t pos = 0; pos < raw.size() || pos == 0; pos += 65535) {
    size_t len = std::min<size_t>(65535, raw.size() - pos);
    bool last = pos + len >= raw.size();
    z += static_cast<char>(last ? 1 : 0);
    z += static_cast<char>(len & 0xff);
    z += static_cast<char>(len >> 8);
    z += static_cast<char>(~len & 0xff);
    z += static_cast<char>((~len >> 8) & 0xff);
    z += raw.substr(pos, len);
    if (last)
      break;
  }
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  put32(z, (b << 16) | a);
  auto chunk = [](const std::string& type, const std::string& body) {
    std::string out;
    put32(out, static_cast<uint32_t>(body.size()));
    out += type + body;
    put32(out, crc32(type + body));
    return out;
  };
  std::string ihdr;
  put32(ihdr, static_cast<uint32_t>(w));
  put32(ihdr, static_cast<uint32_t>(h));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", z) +
         chunk("IEND", "");
}

std::string file_in(const std::string& dir, double start) {
  std::filesystem::create_directories(dir);
  char name[64];
  std::snprintf(name, sizeof(name), "events.out.tfevents.%010lld.testhost",
                static_cast<long long>(start));
  return dir + "/" + name;
}

summary_event summary_at(int64_t step, double wall, summary_value v) {
  summary_event ev;
  ev.step = step;
  ev.wall_time = wall;
  ev.what = summary_event::summary{{std::move(v)}};
  return ev;
}

void full(const std::string& dir) {
  lcg rng{42};
  // train: the run with everything.
  {
    double t0 = 1700000000.0;
    event_file_writer w;
    check(w.create_at(file_in(dir + "/train", t0), t0, false), "train");
    for (int step = 0; step < 300; ++step) {
      double wall = t0 + 0.5 + step * 0.137;
      double loss = 2.0 * std::exp(-step / 80.0) + 0.2 * rng.next();
      w.append(scalar_event{wall, step, "loss", static_cast<float>(loss)});
      if (step % 10 == 0)
        w.append(scalar_event{wall, step, "metrics/accuracy",
                              static_cast<float>(1.0 - loss / 3.0)});
      if (step % 50 == 0) {
        std::vector<double> values;
        for (int i = 0; i < 200; ++i)
          values.push_back((rng.next() - 0.5) * (1.0 + step / 100.0));
        w.append(summary_at(step, wall, histogram_value("weights/dense", values)));
      }
    }
    // A spike: the outlier rule keeps it out of the y range.
    w.append(scalar_event{t0 + 60, 300, "loss", 1000.0f});
    w.append(summary_at(0, t0 + 0.25,
                        text_value("notes", "first **note**, with <html> & commas,")));
    w.append(summary_at(150, t0 + 30, text_value("notes", "second note\non two lines")));
    w.append(
        summary_at(100, t0 + 20, png_image_value("samples/gradient", make_png(16, 12))));
    w.append(
        summary_at(200, t0 + 40, png_image_value("samples/gradient", make_png(24, 8))));
    check(w.close(false), "train");
  }
  // b/c: started after train; awkward values and wall times.
  {
    double t0 = 1700000001.0;
    event_file_writer w;
    check(w.create_at(file_in(dir + "/b/c", t0), t0, false), "b/c");
    const float awkward[] = {1048576.125f, 1e-5f,  123456789.0f,  -0.0f,
                             0.1f,         2.5f,   3.4028235e38f, 1.17549435e-38f,
                             1e-45f,       -7.25f, 0.3f,          0.3f,
                             1e9f,         -1e-7f, 16777217.0f};
    int step = 0;
    for (float v : awkward) {
      double wall = t0 + 0.1 * step + 1e-7 * step;
      w.append(scalar_event{wall, step, "values/awkward", v});
      ++step;
    }
    w.append(scalar_event{t0 + 2, step++, "values/awkward",
                          std::numeric_limits<float>::quiet_NaN()});
    w.append(scalar_event{t0 + 2.5, step++, "values/awkward",
                          std::numeric_limits<float>::infinity()});
    for (int s = 0; s < 100; ++s)
      w.append(
          scalar_event{t0 + 3 + s * 0.29, s * 3, "loss",
                       static_cast<float>(1.8 * std::exp(-s / 30.0) + 0.1 * rng.next())});
    check(w.close(false), "b/c");
  }
  // eval: steps go back (a restart), as inspect reports.
  {
    double t0 = 1700000005.0;
    event_file_writer w;
    check(w.create_at(file_in(dir + "/eval", t0), t0, false), "eval");
    for (int step = 0; step < 30; ++step)
      w.append(scalar_event{t0 + step, step * 10, "loss",
                            static_cast<float>(1.5 - step * 0.03)});
    for (int step = 20; step < 40; ++step)
      w.append(scalar_event{t0 + 30 + step, step * 10, "loss",
                            static_cast<float>(1.0 - step * 0.01)});
    for (int step = 0; step < 40; ++step)
      w.append(scalar_event{t0 + step, step * 10, "metrics/accuracy",
                            static_cast<float>(0.5 + step * 0.01)});
    check(w.close(false), "eval");
  }
  // damaged: the last record cut short.
  {
    double t0 = 1700000010.0;
    event_file_writer w;
    auto path = file_in(dir + "/damaged", t0);
    check(w.create_at(path, t0, false), "damaged");
    for (int step = 0; step < 50; ++step)
      w.append(
          scalar_event{t0 + step, step, "loss", static_cast<float>(3.0 - step * 0.05)});
    check(w.close(false), "damaged");
    auto size = std::filesystem::file_size(path);
    std::filesystem::resize_file(path, size - 7);
  }
}

void append(const std::string& path, int64_t step, int64_t count) {
  if (!std::filesystem::is_regular_file(path))
    fail("no event file '" + path + "'");
  std::string buf;
  event_encoder enc;
  for (int64_t i = 0; i < count; ++i)
    enc.append_scalar(buf, 1700001000.0 + static_cast<double>(step + i), step + i, "loss",
                      static_cast<float>(0.5 + 0.001 * static_cast<double>(i)));
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << buf;
  out.close();
  if (!out)
    fail("cannot append to '" + path + "'");
}

void restart(const std::string& path, int64_t step, int64_t count) {
  if (!std::filesystem::is_regular_file(path))
    fail("no event file '" + path + "'");
  std::string buf;
  append_record(buf, encode_event(session_log_event(session_status::start, {}, {}, step,
                                                    1700002000.0)));
  event_encoder enc;
  for (int64_t i = 0; i < count; ++i)
    enc.append_scalar(buf, 1700002000.5 + static_cast<double>(i), step + i, "loss",
                      static_cast<float>(0.25 + 0.002 * static_cast<double>(i)));
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << buf;
  out.close();
  if (!out)
    fail("cannot append to '" + path + "'");
}

void big(const std::string& dir, int runs, int tags, int points) {
  for (int r = 0; r < runs; ++r) {
    lcg rng{static_cast<uint64_t>(r + 1)};
    double t0 = 1700000000.0 + r;
    event_file_writer w;
    auto run = dir + "/run" + std::to_string(r);
    check(w.create_at(file_in(run, t0), t0, false), run);
    for (int p = 0; p < points; ++p)
      for (int t = 0; t < tags; ++t)
        w.append(scalar_event{
            t0 + 1 + p * 0.01, p, "group/tag" + std::to_string(t),
            // Runs apart by half their size: each line stays visible.
            static_cast<float>((1 + 0.5 * r) * (1 + t) *
                               (std::exp(-p / (points / 4.0)) + 0.1 * rng.next()))});
    check(w.close(false), run);
  }
}

void markdown(const std::string& dir) {
  double t0 = 1700000000.0;
  event_file_writer w;
  check(w.create_at(file_in(dir, t0), t0, false), dir);
  for (int step = 0; step < 5; ++step)
    w.append(
        scalar_event{t0 + 1 + step, step, "loss", static_cast<float>(1.0 / (1 + step))});
  w.append(summary_at(0, t0 + 1,
                      text_value("notes",
                                 "**lr** is *0.1*\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                                 "<img src=x onerror=\"window.__pwned=1\">"
                                 "<script>window.__pwned=2</script>")));
  check(w.close(false), dir);
}

void hparams(const std::string& dir) {
  struct run {
    const char* name;
    hparam_list hp;
    std::vector<std::string> metrics;
    std::vector<float> loss;
  };
  const std::string hostile = "<img src=x onerror=\"window.__pwned=3\">";
  std::vector<run> runs = {
      {"adam",
       {{"optimizer", "adam"},
        {"learning_rate", 0.1},
        {"batch_size", 32},
        {"shuffle", true}},
       {"loss"},
       {0.9f, 0.4f, 0.5f}},
      {"sgd",
       {{"optimizer", "sgd"},
        {"learning_rate", 0.01},
        {"batch_size", 64},
        {"shuffle", false}},
       {"loss"},
       {0.8f, 0.3f, 0.25f}},
      {"odd",
       {{"optimizer", hostile},
        {"learning_rate", 0.001},
        {"batch_size", 128},
        {"<b onmouseover=\"window.__pwned=4\">name</b>", "x"}},
       {},
       {1.5f, 1.25f, 1.0f}},
  };
  double t0 = 1700000000.0;
  for (auto& r : runs) {
    auto sub = dir + "/" + r.name;
    event_file_writer w;
    check(w.create_at(file_in(sub, t0), t0, false), sub);
    summary_event start;
    start.wall_time = t0;
    start.what = summary_event::summary{hparams_values(r.hp, r.metrics, t0)};
    w.append(start);
    for (size_t i = 0; i < r.loss.size(); ++i)
      w.append(scalar_event{t0 + 1 + static_cast<double>(i), static_cast<int64_t>(i),
                            "loss", r.loss[i]});
    w.append(summary_at(0, t0 + 10, hparams_end_value(hparams_status::success, t0 + 10)));
    check(w.close(false), sub);
    t0 += 100;
  }
}

template <class T, class U>
T from_bits(U bits) {
  T x;
  static_assert(sizeof x == sizeof bits);
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

void numbers(const std::string& dir, int count) {
  lcg rng{7};
  auto bits64 = [&] {
    uint64_t hi = static_cast<uint64_t>(rng.next() * 4294967296.0);
    uint64_t lo = static_cast<uint64_t>(rng.next() * 4294967296.0);
    return (hi << 32) | lo;
  };
  event_file_writer w;
  check(w.create_at(file_in(dir + "/numbers", 1), 1, false), "numbers");
  for (int i = 0; i < count; ++i) {
    auto vb = static_cast<uint32_t>(bits64());
    // Every fourth value near 1 and every fourth time near now: the common
    // cases, besides the whole range of bit patterns.
    float value = i % 4 == 0 ? static_cast<float>(rng.next()) : from_bits<float>(vb);
    double wall =
        i % 4 == 1 ? 1700000000.0 + rng.next() * 1e6 : from_bits<double>(bits64());
    auto step = i % 4 == 2 ? static_cast<int64_t>(i) : static_cast<int64_t>(bits64());
    w.append(scalar_event{wall, step, "x", value});
  }
  check(w.close(false), "numbers");
}

// One telemetry reading of the three-stage pipeline: `decode_limits` says
// which stage is slow (decode, else batch); the other shares follow from it.
pipeline_telemetry reading(bool decode_limits, double x) {
  pipeline_telemetry t;
  t.span_seconds = 10;
  auto stage = [](std::string name, std::string in, std::string out, double busy,
                  double input, double room, int workers) {
    runner_telemetry r;
    r.name = name;
    r.input_queue = std::move(in);
    r.queue = std::move(out);
    r.busy = busy;
    r.waiting_for_input = input;
    r.waiting_for_room = room;
    r.rows_per_second = 1000 * busy;
    for (int i = 0; i < workers; ++i) {
      worker_telemetry w;
      w.name = name + "/op" + std::to_string(i);
      w.busy = busy;
      w.waiting_for_input = input;
      w.waiting_for_room = room;
      r.workers.push_back(w);
    }
    return r;
  };
  if (decode_limits) {
    t.runners = {stage("produce", "", "raw", 0.1, 0, 0.85 + x, 1),
                 stage("decode", "raw", "decoded", 0.95 - x, 0.01, 0, 2),
                 stage("batch", "decoded", "batches", 0.05, 0.9, 0, 1)};
    t.limiting_stage = "decode";
  } else {
    t.runners = {stage("produce", "", "raw", 0.1, 0, 0.85, 1),
                 stage("decode", "raw", "decoded", 0.2, 0, 0.75 + x, 2),
                 stage("batch", "decoded", "batches", 0.9 - x, 0.02, 0, 1)};
    t.limiting_stage = "batch";
  }
  auto queue = [](std::string name, int32_t capacity, double fill, double enqueue_wait,
                  double dequeue_wait) {
    queue_telemetry q;
    q.name = std::move(name);
    q.capacity = capacity;
    q.fill = fill;
    q.size = static_cast<int32_t>(fill * capacity);
    q.enqueue_wait_seconds = enqueue_wait;
    q.dequeue_wait_seconds = dequeue_wait;
    return q;
  };
  // A full queue's writers wait at it, an empty one's readers (TL-11).
  t.queues = {queue("raw", 16, decode_limits ? 1.0 : 0.75, decode_limits ? 0.02 : 0.001, 0),
              queue("decoded", 32, decode_limits ? 0.0 : 1.0, 0, 0.004),
              queue("batches", 4, 0.0, 0, 0.01)};
  consumer_telemetry c;
  c.queue = "batches";
  c.dequeues = 20;
  c.wait_fraction = decode_limits ? 0.4 + x : 0.3 + x;
  t.consumers = {c};
  t.verdict = "the pipeline fed the trainer 60 % of the time; when it did not, stage `" +
              t.limiting_stage + "` was busy 95 % of its time";
  return t;
}

void pipeline_run(const std::string& dir) {
  double t0 = 1700000000.0;
  {
    event_file_writer w;
    check(w.create_at(file_in(dir + "/train", t0), t0, false), "train");
    for (int step = 0; step < 200; ++step) {
      double wall = t0 + 1 + step * 0.5;
      w.append(scalar_event{wall, step, "loss",
                            static_cast<float>(2.0 * std::exp(-step / 50.0) + 0.1)});
      if (step % 20 != 0)
        continue;
      // What input_summaries::write writes for one reading (TL-6, TL-8, TL-9).
      auto t = reading(step < 140, 0.001 * (step / 20));
      for (auto& [tag, value] : input_summaries::telemetry_values(t))
        w.append(scalar_event{wall, step, tag, value});
      w.append(summary_at(step, wall, text_value("pipeline/verdict", t.verdict)));
      if (step == 0)
        w.append(summary_at(
            step, wall,
            text_value("pipeline/graph", input_summaries::telemetry_graph(t))));
    }
    check(w.close(false), "train");
  }
  event_file_writer w;
  check(w.create_at(file_in(dir + "/plain", t0 + 1), t0 + 1, false), "plain");
  for (int step = 0; step < 50; ++step)
    w.append(
        scalar_event{t0 + 2 + step, step, "loss", static_cast<float>(1.0 / (1 + step))});
  check(w.close(false), "plain");
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "full") {
    full(args[1]);
  } else if (args.size() == 4 && args[0] == "append") {
    append(args[1], std::stoll(args[2]), std::stoll(args[3]));
  } else if (args.size() == 4 && args[0] == "restart") {
    restart(args[1], std::stoll(args[2]), std::stoll(args[3]));
  } else if (args.size() == 2 && args[0] == "markdown") {
    markdown(args[1]);
  } else if (args.size() == 2 && args[0] == "hparams") {
    hparams(args[1]);
  } else if (args.size() == 2 && args[0] == "pipeline") {
    pipeline_run(args[1]);
  } else if (args.size() == 3 && args[0] == "numbers") {
    numbers(args[1], std::stoi(args[2]));
  } else if (args.size() == 5 && args[0] == "big") {
    big(args[1], std::stoi(args[2]), std::stoi(args[3]), std::stoi(args[4]));
  } else {
    std::cerr << "usage: quern_test_board_logdir full DIR | append FILE STEP COUNT | "
                 "restart FILE "
                 "STEP COUNT | big DIR "
                 "RUNS TAGS POINTS | markdown DIR | hparams DIR | numbers DIR COUNT | "
                 "pipeline DIR\n";
    return 1;
  }
  return 0;
}
