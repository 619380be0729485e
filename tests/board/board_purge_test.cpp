// quern-board purges the points a restart orphaned, as TensorBoard's event
// accumulator does (TB-2): read with the board's own sources, no browser.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "logdir.hpp"
#include "quern/format/record.hpp"
#include "quern/summary/event.hpp"
#include "quern/summary/event_file.hpp"
#include "quern/summary/values.hpp"

using namespace quern;
using namespace quern::board;
namespace fs = std::filesystem;

namespace {

/// A fresh directory for one test.
std::string scratch(const std::string& name) {
  auto dir = fs::temp_directory_path() /
             ("quern-board-purge-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

summary_event start_at(int64_t step, double wall) {
  return session_log_event(session_status::start, {}, {}, step, wall);
}

summary_event values_at(int64_t step, double wall, std::vector<summary_value> values) {
  summary_event ev;
  ev.step = step;
  ev.wall_time = wall;
  ev.what = summary_event::summary{std::move(values)};
  return ev;
}

/// The value of `loss` at `step` in the run's first life (written again, with
/// other values, by the second).
float first_life(int64_t step) {
  return 100.0f - static_cast<float>(step) * 0.25f;
}
float second_life(int64_t step) {
  return 1.0f + static_cast<float>(step) * 0.5f;
}

/// Writes `loss` at steps [from, to) to `w`, values of life 1 or 2.
void losses(event_file_writer& w, int64_t from, int64_t to, int life) {
  for (int64_t s = from; s < to; ++s)
    w.append(scalar_event{1700000000.0 + static_cast<double>(s) + (life == 2 ? 0.5 : 0),
                          s, "loss", life == 1 ? first_life(s) : second_life(s)});
}

/// Events framed as records, after a file_version of `version` (none when
/// empty): an old TensorFlow file.
void write_raw(const std::string& path, const std::string& version,
               const std::vector<summary_event>& events) {
  std::string buf;
  if (!version.empty()) {
    summary_event fv;
    fv.wall_time = 1600000000.0;
    fv.what = summary_event::file_version{version};
    append_record(buf, encode_event(fv));
  }
  for (auto& ev : events)
    append_record(buf, encode_event(ev));
  std::ofstream out(path, std::ios::binary);
  out << buf;
  REQUIRE(out.good());
}

run_files one_run(const std::string& dir) {
  auto found = find_runs(dir);
  REQUIRE(found);
  REQUIRE(found->size() == 1);
  return found->front();
}

/// The run's `loss` as the page has it (after settle) and as export prints it.
struct series_view {
  std::vector<int64_t> steps;
  std::vector<float> values;
};

series_view exported(const run_files& run, bool purge) {
  selection sel;
  sel.purge_orphaned = purge;
  series_view out;
  for_each_scalar(
      {run}, sel,
      [&](const std::string&, const std::string& tag, int64_t step, double, float value) {
        if (tag == "loss") {
          out.steps.push_back(step);
          out.values.push_back(value);
        }
        return true;
      });
  return out;
}

/// Steps 0 .. restart-1 of life 1, then restart .. end-1 of life 2.
void check_resumed(const std::vector<int64_t>& steps, const std::vector<float>& values,
                   int64_t restart, int64_t end) {
  REQUIRE(steps.size() == static_cast<size_t>(end));
  REQUIRE(values.size() == steps.size());
  for (int64_t s = 0; s < end; ++s) {
    CHECK(steps[static_cast<size_t>(s)] == s);
    CHECK(values[static_cast<size_t>(s)] ==
          (s < restart ? first_life(s) : second_life(s)));
  }
}

} // namespace

TEST_CASE("TB-2 SW-46 a restart in the same file purges the points at and after its step",
          "[board][TB-2][SW-46]") {
  auto dir = scratch("same");
  {
    event_file_writer w;
    REQUIRE(
        !w.create_at(dir + "/events.out.tfevents.1700000000.host", 1700000000, false));
    w.append(start_at(0, 1700000000.0)); // the first start: purges nothing
    losses(w, 0, 150, 1);
    // Other kinds are purged too: a histogram and a text before the restart
    // at a step it orphans, and one it keeps.
    w.append(values_at(120, 1700000120.0, {histogram_value("weights", {1, 2, 3})}));
    w.append(values_at(120, 1700000120.0, {text_value("note", "orphaned")}));
    w.append(values_at(50, 1700000050.0, {text_value("note", "kept")}));
    w.append(start_at(100, 1700000200.0)); // restored from the checkpoint at step 100
    losses(w, 100, 200, 2);
    REQUIRE(!w.close(false));
  }
  auto run = one_run(dir);
  auto rep = read_run(run, {}, true);
  auto& loss = rep.scalars.at("loss");
  check_resumed(loss.steps, loss.values, 100, 200);
  CHECK(rep.tags.at("loss").count == 200);
  CHECK(rep.tags.at("loss").out_of_order == 0);
  CHECK(rep.tags.at("loss").last_value == second_life(199));
  CHECK(rep.histograms.count("weights") == 0); // its only point purged
  CHECK(rep.tags.count("weights") == 0);
  REQUIRE(rep.texts.count("note") == 1);
  CHECK(rep.texts.at("note").total() == 1);
  CHECK(rep.texts.at("note").items().front()->value == "kept");
  REQUIRE(rep.purge.restarts.size() == 2);
  CHECK(rep.purge.restarts[0].points == 0);
  CHECK(rep.purge.restarts[1].points == 52); // 50 losses, a histogram, a text
  CHECK(purge_lines(rep) ==
        std::vector<std::string>{"purged 52 points: restarted at step 100"});
  // export: the same rows, written as they are read.
  auto ex = exported(run, true);
  check_resumed(ex.steps, ex.values, 100, 200);

  SECTION("--purge-orphaned=false keeps every point") {
    selection keep;
    keep.purge_orphaned = false;
    auto all = read_run(run, keep, true);
    CHECK(all.scalars.at("loss").steps.size() == 250);
    CHECK(all.tags.at("loss").out_of_order == 1);
    CHECK(all.histograms.count("weights") == 1);
    CHECK(purge_lines(all).empty());
    CHECK(exported(run, false).steps.size() == 250);
  }
  fs::remove_all(dir);
}

TEST_CASE("TB-2 a restart in a second event file purges points of the first",
          "[board][TB-2]") {
  auto dir = scratch("second");
  {
    event_file_writer w;
    REQUIRE(
        !w.create_at(dir + "/events.out.tfevents.1700000000.host", 1700000000, false));
    losses(w, 0, 150, 1);
    REQUIRE(!w.close(false));
    event_file_writer again; // the restored job's writer: a new file
    REQUIRE(!again.create_at(dir + "/events.out.tfevents.1700000300.host", 1700000300,
                             false));
    again.append(start_at(100, 1700000300.0));
    losses(again, 100, 180, 2);
    REQUIRE(!again.close(false));
  }
  auto run = one_run(dir);
  REQUIRE(run.files.size() == 2);
  auto rep = read_run(run, {}, true);
  check_resumed(rep.scalars.at("loss").steps, rep.scalars.at("loss").values, 100, 180);
  CHECK(purge_lines(rep) ==
        std::vector<std::string>{"purged 50 points: restarted at step 100"});
  auto ex = exported(run, true);
  check_resumed(ex.steps, ex.values, 100, 180);
  // Only the tag asked for: the same purge.
  selection only;
  only.tags = {"loss"};
  auto stats = read_run(run, only, false);
  CHECK(stats.tags.at("loss").count == 180);
  CHECK(stats.tags.at("loss").max_step == 179);
  CHECK(stats.tags.at("loss").min_value == second_life(100));
  fs::remove_all(dir);
}

TEST_CASE("TB-2 in a file of version below 2 a tag's steps going back purge its points",
          "[board][TB-2]") {
  auto dir = scratch("old");
  // Steps 0..9 of loss and acc, then loss again from step 5 (a restart that
  // wrote no START, as TensorFlow before version 2), and a START, which old
  // files do not act on.
  std::vector<summary_event> events;
  for (int64_t s = 0; s < 10; ++s) {
    events.push_back(
        values_at(s, 1600000000.0 + s, {scalar_value("loss", first_life(s))}));
    events.push_back(values_at(s, 1600000000.0 + s, {scalar_value("acc", 0.5f)}));
  }
  events.push_back(start_at(0, 1600000100.0));
  for (int64_t s = 5; s < 12; ++s)
    events.push_back(
        values_at(s, 1600000100.0 + s, {scalar_value("loss", second_life(s))}));
  for (std::string version : {"brain.Event:1", ""}) {
    CAPTURE(version);
    write_raw(dir + "/events.out.tfevents.1600000000.host", version, events);
    auto run = one_run(dir);
    auto rep = read_run(run, {}, true);
    check_resumed(rep.scalars.at("loss").steps, rep.scalars.at("loss").values, 5, 12);
    CHECK(rep.scalars.at("acc").steps.size() == 10); // another tag: kept
    CHECK(rep.purge.restarts.empty());
    CHECK(rep.purge.went_back_events == 1);
    CHECK(purge_lines(rep) ==
          std::vector<std::string>{
              "purged 5 points: steps went back 1 time (a file without version 2)"});
    auto ex = exported(run, true);
    check_resumed(ex.steps, ex.values, 5, 12);
    selection keep;
    keep.purge_orphaned = false;
    CHECK(read_run(run, keep, true).scalars.at("loss").steps.size() == 17);
  }
  // Version 2: steps going back purge nothing; the START does.
  write_raw(dir + "/events.out.tfevents.1600000000.host", "brain.Event:2", events);
  auto rep = read_run(one_run(dir), {}, true);
  CHECK(rep.scalars.at("loss").steps.size() == 7); // the START at step 0 purged the rest
  CHECK(rep.scalars.count("acc") == 0);
  CHECK(purge_lines(rep) ==
        std::vector<std::string>{"purged 20 points: restarted at step 0"});
  fs::remove_all(dir);
}

TEST_CASE("TB-2 a thinned series loses exactly the purged points", "[board][TB-2]") {
  // 150,000 points, restored at 100,000 and 120 more: the series is kept as
  // buckets, and must equal the series of a run that never wrote the
  // orphaned points.
  auto dir = scratch("long");
  auto clean = scratch("long-clean");
  {
    event_file_writer w, c;
    REQUIRE(
        !w.create_at(dir + "/events.out.tfevents.1700000000.host", 1700000000, false));
    REQUIRE(
        !c.create_at(clean + "/events.out.tfevents.1700000000.host", 1700000000, false));
    losses(w, 0, 150000, 1);
    losses(c, 0, 100000, 1);
    w.append(start_at(100000, 1700200000.0));
    losses(w, 100000, 100120, 2);
    losses(c, 100000, 100120, 2);
    REQUIRE(!w.close(false));
    REQUIRE(!c.close(false));
  }
  auto rep = read_run(one_run(dir), {}, true);
  auto want = read_run(one_run(clean), {}, true);
  auto& got = rep.scalars.at("loss");
  auto& exact = want.scalars.at("loss");
  REQUIRE(got.thinned());
  CHECK(got.total() == 100120);
  CHECK(got.steps == exact.steps);
  CHECK(got.walls == exact.walls);
  CHECK(got.values == exact.values);
  CHECK(got.steps.back() == 100119);
  CHECK(purge_lines(rep) ==
        std::vector<std::string>{"purged 50000 points: restarted at step 100000"});
  CHECK(rep.tags.at("loss").count == 100120);
  fs::remove_all(dir);
  fs::remove_all(clean);
}

TEST_CASE("TB-2 a START read on after the rest asks for the run to be read again",
          "[board][TB-2]") {
  // What serve does when a file grows: read on from its end; a START that
  // purges points read before makes read_more refuse, and the run is read
  // again (its series then lose them).
  auto dir = scratch("grow");
  auto path = dir + "/events.out.tfevents.1700000000.host";
  event_file_writer w;
  REQUIRE(!w.create_at(path, 1700000000, false));
  w.append(start_at(0, 1700000000.0));
  losses(w, 0, 60, 1);
  REQUIRE(!w.flush(false));
  auto run = one_run(dir);
  {
    // Bytes written between the plan's pass and the values' pass are left
    // for the next read, and the file then looks changed (its size is what
    // was read).
    run_report early;
    caf::error damage;
    auto end = early.purge.scan(0, path, 0, damage);
    REQUIRE(!damage);
    losses(w, 60, 61, 1);
    REQUIRE(!w.flush(false));
    file_report f;
    f.path = path;
    read_into(early, f, {}, true, end);
    CHECK(early.scalars.at("loss").steps.size() == 60);
    CHECK(early.files.back().end == end);
    CHECK(early.files.back().size == static_cast<int64_t>(end));
    CHECK(static_cast<uint64_t>(fs::file_size(path)) > end);
  }
  auto rep = read_run(run, {}, true);
  REQUIRE(rep.scalars.at("loss").steps.size() == 61);
  // More points, no restart: read on.
  losses(w, 61, 80, 1);
  REQUIRE(!w.flush(false));
  REQUIRE(read_more(rep, run, rep.files.size() - 1, {}, true, true));
  CHECK(rep.scalars.at("loss").steps.size() == 80);
  // A START at a step the run has passed: not read on.
  w.append(start_at(50, 1700000100.0));
  losses(w, 50, 90, 2);
  REQUIRE(!w.close(false));
  auto on = rep;
  CHECK(!read_more(on, run, on.files.size() - 1, {}, true, true));
  auto again = read_run(run, {}, true);
  check_resumed(again.scalars.at("loss").steps, again.scalars.at("loss").values, 50, 90);
  CHECK(purge_lines(again) ==
        std::vector<std::string>{"purged 30 points: restarted at step 50"});
  fs::remove_all(dir);
}
