#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include <sys/resource.h>

#include <caf/actor_system.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "quern/error.hpp"
// The summary vocabulary must not collide with the other parts' atoms when a
// program includes them all.
#include "quern/atoms.hpp"
#if __has_include("quern/coordination.hpp")
#include "quern/coordination.hpp"
#endif
#include "quern/format/record.hpp"
#include "quern/messages.hpp"
#include "quern/summary/event.hpp"
#include "quern/summary/event_file.hpp"
#include "quern/summary/reader.hpp"
#include "quern/summary/summary_writer.hpp"
#include "test_util.hpp"

using namespace quern;
using quern::test::event_files;
using quern::test::temp_dir;

namespace fs = std::filesystem;

namespace {

/// The only event file in `dir`, read; fails the test when there is not
/// exactly one or when it is damaged.
event_file_contents only_file(const std::string& dir) {
  auto files = event_files(dir);
  REQUIRE(files.size() == 1);
  auto c = read_event_file(files[0]);
  INFO(message_of(c.error));
  REQUIRE(!c.error);
  return c;
}

/// scalar events (tag, step) in file order, file_version record skipped.
std::vector<std::pair<std::string, int64_t>> scalars_of(const event_file_contents& c) {
  std::vector<std::pair<std::string, int64_t>> result;
  for (auto& ev : c.events)
    if (auto s = caf::get_if<summary_event::summary>(&ev.what))
      for (auto& v : s->values)
        if (v.kind() == summary_kind::scalar)
          result.emplace_back(v.tag, ev.step);
  return result;
}

summary_writer_options quiet(const std::string& logdir) {
  summary_writer_options opts;
  opts.logdir = logdir;
  opts.sync = false; // keep tests fast: no fsync
  return opts;
}

caf::error request_error(caf::scoped_actor& self, const summary_writer_actor& w,
                         std::vector<scalar_event> batch) {
  caf::error err;
  self->request(w, caf::infinite, add_scalars_atom::value, std::move(batch))
      .receive([] {}, [&](caf::error& e) { err = std::move(e); });
  return err;
}

writer_status status_of(caf::scoped_actor& self, const summary_writer_actor& w) {
  writer_status st;
  self->request(w, caf::infinite, writer_status_atom::value)
      .receive([&](writer_status& s) { st = s; },
               [&](caf::error& e) { FAIL(to_string(e)); });
  return st;
}

/// One of many producers: batches of varying size and a few single events
/// through add_events, all one-way, then a flush request; tells `parent` k
/// when the flush succeeded.
void producer(caf::event_based_actor* a, int k, int per_writer, summary_writer_actor w,
              caf::actor parent) {
  auto tag = "w" + std::to_string(k);
  int step = 0;
  while (step < per_writer) {
    if (step % 50 == 49) {
      summary_event ev;
      ev.step = step;
      test::values_of(ev).push_back(scalar_value(tag, step));
      a->send(w, add_events_atom::value, std::vector<summary_event>{ev});
      ++step;
      continue;
    }
    std::vector<scalar_event> batch;
    for (int n = 0; n < 1 + step % 13 && step < per_writer && step % 50 != 49; ++n)
      batch.push_back(scalar_event{1.0, step++, tag, 1.0f});
    a->send(w, add_scalars_atom::value, std::move(batch));
  }
  a->request(w, caf::infinite, writer_flush_atom::value)
      .then([=](const writer_status&) { a->send(parent, k); },
            [=](caf::error& e) { a->send(parent, -1 - k, to_string(e)); });
}

} // namespace

TEST_CASE("SW-10 SW-12 file name and first record", "[SW-10][SW-12][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  auto logdir = dir / "runs/a"; // SW-1: created recursively
  auto before = static_cast<int64_t>(std::time(nullptr));
  {
    summary_writer w{sys, quiet(logdir)};
    w.scalar("loss", 1.5, 3);
    auto st = w.flush();
    auto after = static_cast<int64_t>(std::time(nullptr));
    auto name = fs::path(st.path).filename().string();
    INFO(name);
    REQUIRE(name.rfind("events.out.tfevents.", 0) == 0);
    auto secs = std::stoll(name.substr(20, 10));
    CHECK(secs >= before);
    CHECK(secs <= after);
    CHECK(name == event_file_name(secs, host_name(), ""));
    CHECK(fs::path(st.path).parent_path() == fs::path(logdir));
    auto c = read_event_file(st.path);
    REQUIRE(c.events.size() == 2);
    // First record: Event{wall_time = T of the name, file_version}.
    auto bytes = test::read_file(st.path);
    std::string first;
    append_record(first, encode_event(file_version_event(static_cast<double>(secs))));
    CHECK(test::to_hex(bytes.substr(0, first.size())) == test::to_hex(first));
    CHECK(c.events[1].step == 3);
    CHECK(test::values_of(c.events[1]).at(0).tag == "loss");
    CHECK(caf::get<float>(test::values_of(c.events[1]).at(0).value) == 1.5f);
    CHECK(c.events[1].wall_time >= static_cast<double>(before));
  }
}

TEST_CASE("SW-11 no event and no suffix: no file, a suffix creates the file at once",
          "[SW-11][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  {
    summary_writer w{sys, quiet(dir / "none")};
    w.flush();
    w.close();
  }
  CHECK(fs::is_directory(dir / "none"));
  CHECK(event_files(dir / "none").empty());
  auto opts = quiet(dir / "suffixed");
  opts.filename_suffix = ".v2";
  summary_writer w{sys, opts};
  auto st = w.status();
  CHECK(st.files == 1);
  auto files = event_files(dir / "suffixed");
  REQUIRE(files.size() == 1);
  CHECK(files[0].size() > 3);
  CHECK(files[0].substr(files[0].size() - 3) == ".v2");
  CHECK(read_event_file(files[0]).events.size() == 1); // the file_version record
}

TEST_CASE("SW-6 SW-7 every value kind round-trips writer to reader", "[SW-7][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  std::string png = test::from_hex("89504e470d0a1a0a0000000d4948445200000002000000030802"
                                   "000000"
                                   "deadbeef");
  {
    summary_writer w{sys, quiet(dir.path())};
    w.scalar("s", 0.5, 1);
    w.histogram("h", {1.0, 2.0, 2.0}, 2);
    w.text("t", "hello", 3);
    w.image("i", png, 4);
    // SW-7: metadata kept only the first time a tag is seen with it.
    auto with_md = scalar_value("m", 1.0);
    with_md.display_name = "M";
    w.add_summary({with_md, scalar_value("n", 2.0)}, 5);
    w.add_summary({with_md}, 6);
    summary_event log;
    log.what = summary_event::log_message{40, "bad"};
    log.wall_time = 123.0;
    log.step = 7;
    w.add_event(log); // as is
    summary_event ses;
    ses.what = summary_event::session_log{1, "", ""};
    w.add_event(ses);
    w.scalar("s", -0.5, 8);
    w.close();
  }
  auto c = only_file(dir.path());
  REQUIRE(c.events.size() == 10);
  CHECK(caf::holds_alternative<summary_event::file_version>(c.events[0].what));
  auto& s = c.events[1];
  CHECK(caf::get<float>(test::values_of(s).at(0).value) == 0.5f);
  auto& h = test::values_of(c.events[2]).at(0);
  CHECK(h.kind() == summary_kind::histogram);
  CHECK(caf::get<histogram_data>(h.value).num == 3);
  CHECK(caf::get<histogram_data>(h.value).sum == 5);
  CHECK(caf::get<histogram_data>(h.value).bucket_limit ==
        make_histogram({1.0, 2.0, 2.0}).bucket_limit);
  auto& t = test::values_of(c.events[3]).at(0);
  CHECK(t.kind() == summary_kind::tensor);
  CHECK(caf::get<text_tensor>(t.value).strings == std::vector<std::string>{"hello"});
  CHECK(t.plugin_name == "text");
  CHECK(t.plugin_content == "{}");
  auto& i = test::values_of(c.events[4]).at(0);
  CHECK(i.kind() == summary_kind::image);
  auto& img = caf::get<image_data>(i.value);
  CHECK(img.width == 2);
  CHECK(img.height == 3);
  CHECK(img.colorspace == 3);
  CHECK(img.encoded == png);
  CHECK(test::values_of(c.events[5]).size() == 2);
  CHECK(test::values_of(c.events[5])[0].display_name == "M");
  CHECK(test::values_of(c.events[6]).at(0).display_name.empty()); // metadata dropped
  CHECK(c.events[6].step == 6);
  CHECK(caf::holds_alternative<summary_event::log_message>(c.events[7].what));
  CHECK(c.events[7].wall_time == 123.0);
  CHECK(test::what_of<summary_event::log_message>(c.events[7]).message == "bad");
  CHECK(caf::holds_alternative<summary_event::session_log>(c.events[8].what));
  CHECK(test::what_of<summary_event::session_log>(c.events[8]).status == 1);
  CHECK(caf::get<float>(test::values_of(c.events[9]).at(0).value) == -0.5f);
  CHECK(c.events[8].wall_time == 0.0); // add_event: as is, no stamp
  for (size_t k = 1; k < c.events.size(); ++k)
    if (k != 7 && k != 8)
      CHECK(c.events[k].wall_time > 1.6e9); // stamped when added (SW-6)
}

TEST_CASE("SW-2 many actors write one file at once, every event exactly once",
          "[SW-2][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  constexpr int writers = 8;
  constexpr int per_writer = 600;
  {
    auto opts = quiet(dir.path());
    opts.max_queue = 7;
    auto w = spawn_summary_writer(sys, opts);
    caf::scoped_actor self{sys};
    auto parent = caf::actor{self};
    for (int k = 0; k < writers; ++k) {
      // With arguments: CAF 0.17 trips UBSan when an actor is spawned
      // without any (tests/ubsan.supp).
      sys.spawn(producer, k, per_writer, w, parent);
    }
    // Meanwhile, four threads with blocking handles on the same writer.
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k)
      threads.emplace_back([&sys, w, k] {
        summary_writer h{sys, w}; // not owning
        for (int step = 0; step < per_writer; ++step)
          h.scalar("h" + std::to_string(k), step, step);
        h.flush();
      });
    int done = 0;
    for (int k = 0; k < writers; ++k)
      self->receive([&](int) { ++done; },
                    [&](int, const std::string& e) { FAIL("flush failed: " << e); });
    for (auto& t : threads)
      t.join();
    CHECK(done == writers);
    self->request(w, caf::infinite, close_atom::value)
        .receive([] {}, [](caf::error& e) { FAIL(to_string(e)); });
    self->send_exit(w, caf::exit_reason::user_shutdown);
  }
  auto c = only_file(dir.path());
  auto scalars = scalars_of(c);
  CHECK(scalars.size() == (writers + 4) * per_writer);
  std::map<std::string, std::vector<int64_t>> by_tag;
  for (auto& [tag, step] : scalars)
    by_tag[tag].push_back(step);
  CHECK(by_tag.size() == writers + 4);
  for (auto& [tag, steps] : by_tag) {
    INFO(tag);
    REQUIRE(steps.size() == per_writer);
    // Each writer's events are in its order, each exactly once.
    for (int i = 0; i < per_writer; ++i)
      CHECK(steps[i] == i);
  }
}

TEST_CASE("SW-3 flush policy: max_queue and flush_secs", "[SW-3][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto one = [](int step) { return std::vector<scalar_event>{{1.0, step, "x", 1.0f}}; };
  SECTION("max_queue bounds the events held back; a long flush_secs holds the rest") {
    temp_dir dir;
    auto opts = quiet(dir.path());
    opts.max_queue = 3;
    opts.flush_secs = 1e6;
    auto w = spawn_summary_writer(sys, opts);
    REQUIRE(!request_error(self, w, one(1)));
    auto path = status_of(self, w).path;
    auto size1 = fs::file_size(path); // the first event is flushed at once
    CHECK(read_event_file(path).events.size() == 2);
    REQUIRE(!request_error(self, w, one(2)));
    REQUIRE(!request_error(self, w, one(3)));
    CHECK(fs::file_size(path) == size1); // 2 events held back (< max_queue)
    CHECK(status_of(self, w).events == 3);
    REQUIRE(!request_error(self, w, one(4))); // the third held event: written
    CHECK(fs::file_size(path) > size1);
    CHECK(read_event_file(path).events.size() == 5);
    auto size4 = fs::file_size(path);
    REQUIRE(!request_error(self, w, one(5)));
    CHECK(fs::file_size(path) == size4);
    writer_status st;
    self->request(w, caf::infinite, writer_flush_atom::value)
        .receive([&](writer_status& s) { st = s; },
                 [](caf::error& e) { FAIL(to_string(e)); });
    CHECK(fs::file_size(path) > size4); // flush() writes everything (SW-4)
    CHECK(st.bytes_written == fs::file_size(path));
    CHECK(read_event_file(path).events.size() == 6);
    self->send_exit(w, caf::exit_reason::user_shutdown);
  }
  SECTION("flush_secs 0 flushes after every event") {
    temp_dir dir;
    auto opts = quiet(dir.path());
    opts.max_queue = 1000;
    opts.flush_secs = 0;
    auto w = spawn_summary_writer(sys, opts);
    for (int step = 1; step <= 5; ++step) {
      REQUIRE(!request_error(self, w, one(step)));
      auto path = status_of(self, w).path;
      CHECK(read_event_file(path).events.size() == static_cast<size_t>(step + 1));
    }
    self->send_exit(w, caf::exit_reason::user_shutdown);
  }
  SECTION("max_queue <= 0: nothing held back is written before flush or close") {
    temp_dir dir;
    auto opts = quiet(dir.path());
    opts.max_queue = 0;
    opts.flush_secs = 1e6;
    auto w = spawn_summary_writer(sys, opts);
    REQUIRE(!request_error(self, w, one(1)));
    auto path = status_of(self, w).path;
    for (int step = 2; step < 100; ++step)
      self->send(w, add_scalars_atom::value, one(step));
    CHECK(status_of(self, w).events == 99);
    CHECK(read_event_file(path).events.size() == 2);
    self->request(w, caf::infinite, close_atom::value)
        .receive([] {}, [](caf::error& e) { FAIL(to_string(e)); });
    CHECK(read_event_file(path).events.size() == 100);
    self->send_exit(w, caf::exit_reason::user_shutdown);
  }
}

TEST_CASE("SW-4 SW-5 close, adds after close dropped, reopen starts a new file",
          "[SW-4][SW-5][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  summary_writer w{sys, quiet(dir.path())};
  w.scalar("a", 1, 1);
  w.close();
  w.close();                                // harmless
  w.scalar("a", 2, 2);                      // dropped
  w.add_summary({scalar_value("a", 3)}, 3); // dropped
  CHECK(w.status().closed);
  auto first = w.status().path;
  w.reopen();
  w.reopen(); // on an open writer: nothing
  CHECK(!w.status().closed);
  w.scalar("b", 4, 4);
  auto st = w.flush();
  CHECK(st.files == 2);
  CHECK(st.path != first);
  w.close();
  auto files = event_files(dir.path());
  REQUIRE(files.size() == 2); // same second: the collision fix names the second
  auto a = read_event_file(first);
  auto b = read_event_file(st.path);
  CHECK(scalars_of(a) == std::vector<std::pair<std::string, int64_t>>{{"a", 1}});
  CHECK(scalars_of(b) == std::vector<std::pair<std::string, int64_t>>{{"b", 4}});
  CHECK(test::what_of<summary_event::file_version>(b.events.at(0)).version ==
        "brain.Event:2"); // new file_version record
}

TEST_CASE("SW-5 two writers on one directory in the same second do not collide",
          "[SW-5][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  // Occupy the plain names of the next seconds, so that the writers below
  // certainly hit an existing name whenever they open their files.
  auto now = static_cast<int64_t>(std::time(nullptr));
  std::set<std::string> squatters;
  for (int64_t s = now; s < now + 30; ++s) {
    auto path = dir / event_file_name(s, host_name(), "");
    test::write_file(path, "squatter");
    squatters.insert(path);
  }
  {
    summary_writer a{sys, quiet(dir.path())};
    summary_writer b{sys, quiet(dir.path())};
    a.scalar("a", 1, 1);
    b.scalar("b", 2, 2);
    auto pa = a.flush().path;
    auto pb = b.flush().path;
    CHECK(pa != pb);
    CHECK(squatters.count(pa) == 0);
    CHECK(squatters.count(pb) == 0);
    // `<plain name>.<n>`: TensorBoard still sees "tfevents" in the name.
    CHECK(is_event_file_name(fs::path(pa).filename().string()));
    CHECK(squatters.count(pa.substr(0, pa.rfind('.'))) == 1);
  }
  for (auto& s : squatters)
    CHECK(test::read_file(s) == "squatter"); // never truncated
  auto files = event_files(dir.path());
  CHECK(files.size() == squatters.size() + 2);
  std::multiset<std::string> tags;
  for (auto& f : files) {
    if (squatters.count(f))
      continue;
    auto c = read_event_file(f);
    CHECK(!c.error);
    for (auto& [tag, step] : scalars_of(c))
      tags.insert(tag);
  }
  CHECK(tags == std::multiset<std::string>{"a", "b"});
  // Without squatters: two writers opened back to back, each its own file.
  temp_dir dir2;
  {
    summary_writer a{sys, quiet(dir2.path())};
    summary_writer b{sys, quiet(dir2.path())};
    a.scalar("a", 1, 1);
    b.scalar("b", 1, 1);
    CHECK(a.flush().path != b.flush().path);
  }
  CHECK(event_files(dir2.path()).size() == 2);
}

TEST_CASE("SW-1 an unwritable log directory is an error naming it and the reason",
          "[SW-1][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  test::write_file(dir / "plainfile", "x");
  auto bad = dir / "plainfile/sub";
  // The blocking handle throws from its constructor.
  try {
    summary_writer w{sys, quiet(bad)};
    FAIL("no error");
  } catch (const failed_precondition_error& e) {
    CHECK(std::string(e.what()) ==
          "cannot create log directory '" + bad + "': Not a directory");
  }
  // The actor answers every request with the error, and exits when told.
  auto w = spawn_summary_writer(sys, quiet(bad));
  caf::scoped_actor self{sys};
  auto err = request_error(self, w, {{1.0, 1, "x", 1.0f}});
  CHECK(is(err, error_code::failed_precondition));
  CHECK(message_of(err) == "cannot create log directory '" + bad + "': Not a directory");
  self->request(w, caf::infinite, writer_flush_atom::value)
      .receive([](writer_status&) { FAIL("flush succeeded"); },
               [&](caf::error& e) { CHECK(message_of(e) == message_of(err)); });
  self->send_exit(w, caf::exit_reason::user_shutdown);
  // Under /proc nothing can be created, not even by root.
  try {
    summary_writer p{sys, quiet("/proc/quern-test/logs")};
    FAIL("no error");
  } catch (const op_error& e) {
    CHECK(std::string(e.what()).rfind(
              "cannot create log directory '/proc/quern-test/logs': ", 0) == 0);
  }
}

TEST_CASE("SW-13 a write that fails mid-run is reported, not swallowed",
          "[SW-13][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  // Files of this process may not grow beyond 2000 bytes: writes past it
  // fail with EFBIG (SIGXFSZ ignored), even for root.
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old_limit;
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  rlimit limit = old_limit;
  limit.rlim_cur = 2000;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &limit) == 0);
  std::string what;
  error_code code = error_code::unknown;
  {
    summary_writer w{sys, quiet(dir.path())};
    try {
      for (int step = 0; step < 500; ++step)
        w.scalar("a_rather_long_tag_name", step, step);
      w.flush();
    } catch (const op_error& e) {
      what = e.what();
      code = e.code();
    }
    // The writer still answers; close reports nothing new and stops it.
  }
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  CHECK(code == error_code::resource_exhausted);
  CHECK(what.rfind("cannot write to event file '" + dir.path() + "/events.out.tfevents.",
                   0) == 0);
  CHECK(what.find(": File too large") != std::string::npos);
  // What was written before the failure is readable, and the partly written
  // batch was cut off: the file ends at a record boundary.
  auto files = event_files(dir.path());
  REQUIRE(files.size() == 1);
  auto c = read_event_file(files[0]);
  CHECK(!c.error);
  CHECK(c.events.size() >= 1);
  CHECK(fs::file_size(files[0]) <= 2000);
}

TEST_CASE("a program that forgets close() neither hangs nor loses events", "[writer]") {
  temp_dir dir;
  {
    config cfg;
    caf::actor_system sys{cfg};
    summary_writer w{sys, quiet(dir / "handle")};
    for (int step = 0; step < 10; ++step)
      w.scalar("loss", step, step);
    // no close(): ~summary_writer closes, ~actor_system must not wait forever
  }
  CHECK(scalars_of(only_file(dir / "handle")).size() == 10);
  {
    config cfg;
    caf::actor_system sys{cfg};
    auto opts = quiet(dir / "actor");
    opts.max_queue = 1000;
    auto w = spawn_summary_writer(sys, opts);
    // The first event is flushed at once (SW-3), the other nine are held.
    caf::anon_send(w, add_scalars_atom::value,
                   std::vector<scalar_event>{{1.0, 0, "loss", 1.0f}});
    std::vector<scalar_event> batch;
    for (int step = 1; step < 10; ++step)
      batch.push_back({1.0, step, "loss", 1.0f});
    caf::anon_send(w, add_scalars_atom::value, std::move(batch));
    // The last handle goes away: the actor stops, flushing its file.
  }
  CHECK(scalars_of(only_file(dir / "actor")).size() == 10);
}

TEST_CASE("the summary vocabulary crosses CAF's serializer", "[writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  summary_event ev;
  ev.wall_time = 2.5;
  ev.step = 9;
  test::values_of(ev).push_back(histogram_value("h", {1, 2}));
  test::values_of(ev).push_back(text_value("t", "x"));
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto copy = ev;
  REQUIRE(!sink(copy));
  summary_event back;
  caf::binary_deserializer source{sys, buf};
  REQUIRE(!source(back));
  CHECK(encode_event(back) == encode_event(ev));
  // Every type that travels in a writer message is registered.
  for (auto name : {"quern::scalar_event", "std::vector<quern::scalar_event>",
                    "quern::summary_event", "std::vector<quern::summary_event>",
                    "std::vector<quern::summary_value>", "quern::writer_status"})
    CHECK(sys.types().make_value(name) != nullptr);
}

TEST_CASE("SW-13 a one-way add keeps its write error for the next request",
          "[SW-13][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  caf::scoped_actor self{sys};
  // Unwritable log directory: one-way adds put nothing into the sender's
  // mailbox; the error comes with the next request.
  test::write_file(dir / "file", "x");
  auto bad = spawn_summary_writer(sys, quiet(dir / "file/sub"));
  self->send(bad, add_scalars_atom::value,
             std::vector<scalar_event>{{1.0, 1, "x", 1.0f}});
  self->send(bad, add_summary_atom::value,
             std::vector<summary_value>{scalar_value("y", 1)}, int64_t{2});
  CHECK(status_of(self, bad).events == 0);
  CHECK(self->mailbox().size() == 0);
  self->request(bad, caf::infinite, close_atom::value)
      .receive([] { FAIL("close reported no error"); },
               [](caf::error& e) { CHECK(is(e, error_code::failed_precondition)); });
  self->send_exit(bad, caf::exit_reason::user_shutdown);
  // A write failing mid-run (file size limit): sent one-way, reported by the
  // next flush, once.
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old_limit;
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  rlimit limit = old_limit;
  limit.rlim_cur = 1000;
  auto opts = quiet(dir / "logs");
  opts.max_queue = 1;
  auto w = spawn_summary_writer(sys, opts);
  REQUIRE(!request_error(self, w, {{1.0, 1, "x", 1.0f}})); // file created
  REQUIRE(setrlimit(RLIMIT_FSIZE, &limit) == 0);
  std::vector<scalar_event> big;
  for (int step = 0; step < 100; ++step)
    big.push_back({1.0, step, "a_rather_long_tag_name", 1.0f});
  self->send(w, add_scalars_atom::value, big);
  caf::error first;
  self->request(w, caf::infinite, writer_flush_atom::value)
      .receive([](writer_status&) {}, [&](caf::error& e) { first = std::move(e); });
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  CHECK(is(first, error_code::resource_exhausted));
  CHECK(message_of(first).find("File too large") != std::string::npos);
  CHECK(self->mailbox().size() == 0);
  // Reported once: the writer goes on, after the last complete record (the
  // partly written batch was cut off, its events are lost).
  REQUIRE(!request_error(self, w, {{1.0, 200, "x", 1.0f}}));
  self->request(w, caf::infinite, close_atom::value)
      .receive([] {}, [](caf::error& e) { FAIL(to_string(e)); });
  self->send_exit(w, caf::exit_reason::user_shutdown);
  auto c = only_file(dir / "logs");
  CHECK(scalars_of(c) ==
        std::vector<std::pair<std::string, int64_t>>{{"x", 1}, {"x", 200}});
}

TEST_CASE("SW-5 SW-11 reopen with a suffix creates the new file at once",
          "[SW-5][SW-11][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  auto opts = quiet(dir.path());
  opts.filename_suffix = ".s";
  summary_writer w{sys, opts};
  w.close();
  CHECK(event_files(dir.path()).size() == 1);
  w.reopen();
  CHECK(event_files(dir.path()).size() == 2);
  CHECK(w.status().files == 2);
  for (auto& f : event_files(dir.path())) {
    auto c = read_event_file(f);
    REQUIRE(c.events.size() == 1);
    CHECK(test::what_of<summary_event::file_version>(c.events[0]).version ==
          "brain.Event:2");
  }
}

TEST_CASE("SW-13 a deleted event file is reported and a new file started",
          "[SW-13][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  summary_writer w{sys, quiet(dir.path())};
  w.scalar("a", 1, 1);
  auto first = w.flush().path;
  fs::remove(first);
  w.scalar("a", 2, 2);
  try {
    w.flush();
    FAIL("no error");
  } catch (const unknown_error& e) {
    CHECK(std::string(e.what()) ==
          "The events file " + first +
              " has disappeared (0 events not yet written are lost).");
  }
  auto st = w.flush();  // reported once; the writer goes on in a new file
  CHECK(st.files == 2); // (it may get the same name: the old one is free)
  CHECK(fs::exists(st.path));
  w.close();
  auto c = only_file(dir.path());
  CHECK(test::what_of<summary_event::file_version>(c.events.at(0)).version ==
        "brain.Event:2");
  CHECK(scalars_of(c) == std::vector<std::pair<std::string, int64_t>>{{"a", 2}});
  // Deleted between an event and flush(): flush reports it too.
  w.reopen();
  w.scalar("b", 3, 3);
  auto second = w.flush().path;
  fs::remove(second);
  CHECK_THROWS_AS(w.flush(), unknown_error);
}

TEST_CASE("SW-2 one summary_writer handle shared by many threads",
          "[SW-2][writer][shared]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  constexpr int threads = 4;
  constexpr int64_t per_thread = 20000; // each over the handle's batch of 16384
  {
    summary_writer w{sys, quiet(dir.path())};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&w, t] {
        auto tag = "thread" + std::to_string(t);
        for (int64_t step = 0; step < per_thread; ++step) {
          w.scalar(tag, static_cast<double>(step), step);
          if (step % 1000 == 999)
            w.text(tag + "/note", "at " + std::to_string(step), step);
          if (step % 2500 == 0)
            w.flush();
        }
      });
    for (auto& t : ts)
      t.join();
    w.close();
  }
  // Every event exactly once, and each thread's in its own order.
  std::map<std::string, std::vector<int64_t>> steps;
  for (auto& [tag, step] : scalars_of(only_file(dir.path())))
    steps[tag].push_back(step);
  REQUIRE(steps.size() == threads);
  for (auto& [tag, got] : steps) {
    INFO(tag);
    REQUIRE(got.size() == static_cast<size_t>(per_thread));
    for (int64_t i = 0; i < per_thread; ++i)
      REQUIRE(got[static_cast<size_t>(i)] == i);
  }
}

TEST_CASE("summary_writer_options::clock makes byte-identical files",
          "[SW-10][SW-12][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  auto write_run = [&](const std::string& logdir) {
    auto opts = quiet(logdir);
    // Called by this thread only: the handle stamps every event at the call
    // and the file takes the time of its first event.
    double t = 1700000000.25;
    opts.clock = [&t] { return t += 0.5; };
    summary_writer w{sys, opts};
    for (int64_t step = 0; step < 100; ++step)
      w.scalar("loss", 1.0 / static_cast<double>(step + 1), step);
    w.histogram("weights", {1.0, 2.0, 2.5}, 100);
    w.add_session_log(session_status::checkpoint, "/ckpt/model-100", 100);
    w.close();
  };
  write_run(dir / "a");
  write_run(dir / "b");
  auto a = event_files(dir / "a");
  auto b = event_files(dir / "b");
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  // The name carries the first event's seconds (SW-10), the first record
  // them as its time (SW-12).
  CHECK(fs::path(a[0]).filename().string().rfind("events.out.tfevents.1700000000.", 0) ==
        0);
  auto read_all = [](const std::string& path) {
    std::ifstream in{path, std::ios::binary};
    return std::string{std::istreambuf_iterator<char>{in}, {}};
  };
  CHECK(read_all(a[0]) == read_all(b[0]));
  auto c = only_file(dir / "a");
  REQUIRE(c.events.size() == 103);
  CHECK(c.events[0].wall_time == 1700000000.0); // file_version
  CHECK(c.events[1].wall_time == 1700000000.75);
  auto& log = c.events.back();
  CHECK(caf::holds_alternative<summary_event::session_log>(log.what));
  CHECK(test::what_of<summary_event::session_log>(log).status ==
        static_cast<int32_t>(session_status::checkpoint));
  CHECK(test::what_of<summary_event::session_log>(log).checkpoint_path ==
        "/ckpt/model-100");
  CHECK(log.step == 100);
}

TEST_CASE("SW-7 add_session_log writes START and STOP", "[SW-7][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  {
    summary_writer w{sys, quiet(dir.path())};
    w.add_session_log(session_status::start);
    w.scalar("x", 1, 1);
    w.add_session_log(session_status::stop, {}, 2, "done");
  }
  auto c = only_file(dir.path());
  REQUIRE(c.events.size() == 4);
  CHECK(caf::holds_alternative<summary_event::session_log>(c.events[1].what));
  CHECK(test::what_of<summary_event::session_log>(c.events[1]).status == 1);
  CHECK(test::what_of<summary_event::session_log>(c.events[3]).status == 2);
  CHECK(test::what_of<summary_event::session_log>(c.events[3]).msg == "done");
  CHECK(c.events[3].step == 2);
}

TEST_CASE("SW-46 restarted_at writes SessionLog START at the restored step",
          "[SW-46][writer]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  {
    summary_writer w{sys, quiet(dir.path())};
    w.restarted_at(1200);
    w.scalar("loss", 0.5, 1200);
  }
  auto c = only_file(dir.path());
  REQUIRE(c.events.size() == 3); // file_version, START, loss
  REQUIRE(caf::holds_alternative<summary_event::session_log>(c.events[1].what));
  auto& log = test::what_of<summary_event::session_log>(c.events[1]);
  CHECK(log.status == static_cast<int32_t>(session_status::start));
  CHECK(log.checkpoint_path.empty());
  CHECK(log.msg.empty());
  CHECK(c.events[1].step == 1200);
  CHECK(c.events[2].step == 1200);
}

TEST_CASE("a program that crashes after logging loses no scalar it logged 1.5 s before",
          "[writer][crash]") {
  temp_dir dir;
  for (std::string how : {"abort", "exception"}) {
    auto logdir = dir / how;
    auto cmd = std::string(QUERN_CRASH_WRITER_PATH) + " " + logdir + " 1000 " + how +
               " 2>/dev/null";
    int status = std::system(cmd.c_str());
    INFO(how << ": status " << status);
    CHECK(status != 0); // it died
    auto c = only_file(logdir);
    CHECK(scalars_of(c).size() == 1000);
  }
}

TEST_CASE(
    "a tag that is not UTF-8 is refused at the call and every other event stays readable",
    "[SW-32][writer][utf8]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  {
    summary_writer w{sys, quiet(dir.path())};
    w.scalar("good", 1, 1);
    CHECK_THROWS_MATCHES(
        w.scalar("bad\xff", 2, 2), invalid_argument_error,
        Catch::Matchers::Message(
            "summary tag 'bad\\xff' is not valid UTF-8 (byte 3): event "
            "files need UTF-8 there, and readers would stop at the event"));
    CHECK_THROWS_AS(w.text("caf\xc3", "x", 3), invalid_argument_error);      // truncated
    CHECK_THROWS_AS(w.scalar("\xed\xa0\x80", 4, 4), invalid_argument_error); // surrogate
    CHECK_THROWS_AS(w.scalar("\xc0\xaf", 4, 4), invalid_argument_error);     // overlong
    CHECK_THROWS_AS(w.add_session_log(session_status::checkpoint, "/ckpt/\xfe", 5),
                    invalid_argument_error);
    w.scalar("caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80", 6, 6); // é € 😀: valid
    w.scalar("good", 7, 7);
  }
  auto steps = scalars_of(only_file(dir.path()));
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].second == 1);
  CHECK(steps[1].second == 6);
  CHECK(steps[2].second == 7);
}

TEST_CASE("the writer actor refuses events a reader could not parse and writes the rest",
          "[writer][utf8]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  auto w = spawn_summary_writer(sys, quiet(dir.path()));
  caf::scoped_actor self{sys};
  std::vector<scalar_event> batch{scalar_event{1.0, 1, "a", 1.0f},
                                  scalar_event{1.0, 2, "b\x80", 2.0f},
                                  scalar_event{1.0, 3, "c", 3.0f}};
  caf::error err;
  self->request(w, caf::infinite, add_scalars_atom::value, batch)
      .receive([] {}, [&](caf::error& e) { err = e; });
  CHECK(code_of(err) == error_code::invalid_argument);
  CHECK(message_of(err).find("summary tag 'b\\x80' is not valid UTF-8 (byte 1)") == 0);
  self->request(w, caf::infinite, close_atom::value).receive([] {}, [](caf::error&) {});
  self->send_exit(w, caf::exit_reason::user_shutdown);
  auto steps = scalars_of(only_file(dir.path()));
  REQUIRE(steps.size() == 2);
  CHECK(steps[1].second == 3);
}

TEST_CASE("an event over max_event_bytes is refused and the others are written",
          "[writer][limits]") {
  config cfg;
  caf::actor_system sys{cfg};
  temp_dir dir;
  auto opts = quiet(dir.path());
  opts.max_event_bytes = 4096; // the default is 1 GiB; libprotobuf aborts at 2 GiB
  {
    summary_writer w{sys, opts};
    w.scalar("before", 1, 1);
    CHECK_THROWS_AS(w.text("huge", std::string(8192, 'x'), 2), invalid_argument_error);
    CHECK_THROWS_WITH(
        w.text("huge", std::string(8192, 'x'), 2),
        Catch::Matchers::Contains("bytes exceeds the writer's max_event_bytes (4096)"));
    // A scalar whose tag alone is too large, sent in a batch, is refused too;
    // the handle learns of it by its next request.
    w.scalar(std::string(5000, 't'), 3, 3);
    CHECK_THROWS_AS(w.flush(), invalid_argument_error);
    w.scalar("after", 4, 4);
  }
  auto steps = scalars_of(only_file(dir.path()));
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].first == "before");
  CHECK(steps[1].first == "after");
}
