// quern-board's own arithmetic, without a browser: TensorBoard's histogram
// compression, the exact number forms of export, base64, run order.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "files.hpp"
#include "logdir.hpp"
#include "quern/summary/event_file.hpp"
#include "text.hpp"

using namespace quern;
using namespace quern::board;

TEST_CASE("compress_histogram gives TensorBoard's distribution points", "[board]") {
  // Two buckets (0, 5] and (5, 10], one value each: the basis points
  // 0, 6.68, ..., 100 % interpolate linearly inside the buckets
  // (compress_histogram_proto: lerp between bucket edges clipped to min/max).
  histogram_data h;
  h.min = 0;
  h.max = 10;
  h.num = 2;
  h.bucket_limit = {5, 10};
  h.bucket = {1, 1};
  auto b = compress_histogram(h);
  std::vector<double> want = {0, 0.668, 1.587, 3.085, 5, 6.915, 8.413, 9.332, 10};
  REQUIRE(b.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i)
    CHECK(b[i] == Approx(want[i]).margin(1e-12));
  // An empty histogram is all zeros, as in TensorBoard.
  histogram_data empty;
  CHECK(compress_histogram(empty) == std::vector<double>(9, 0.0));
  // One bucket: everything between min and max.
  histogram_data one;
  one.min = 2;
  one.max = 4;
  one.num = 3;
  one.bucket_limit = {1e300};
  one.bucket = {3};
  auto o = compress_histogram(one);
  CHECK(o.front() == 2);
  CHECK(o[4] == Approx(3));
  CHECK(o.back() == 4);
}

TEST_CASE("export's number forms are exact", "[board]") {
  CHECK(format_wall_time(1700000000.0) == "1700000000");
  CHECK(format_wall_time(1700000001.25) == "1700000001.25");
  CHECK(format_wall_time(0.1) == "0.1");
  CHECK(format_wall_time(1e23) == "99999999999999991611392");
  CHECK(format_wall_time(-0.0) == "-0");
  CHECK(format_wall_time(std::numeric_limits<double>::quiet_NaN()) == "nan");
  CHECK(format_wall_time(-std::numeric_limits<double>::infinity()) == "-inf");
  for (double x : {1700000000.123456789, 1e-300, 123.456, 5e-324})
    CHECK(std::strtod(format_wall_time(x).c_str(), nullptr) == x);
  CHECK(format_value(0.1f) == "0.100000001");
  CHECK(format_value(1048576.125f) == "1048576.12"); // a tie, rounded to even
  CHECK(format_value(1e9f) == "1e+09");
  CHECK(format_value(std::numeric_limits<float>::infinity()) == "inf");
  CHECK(json_number(std::numeric_limits<double>::quiet_NaN()) == "null");
  CHECK(json_string("a</script>\"\n") == "\"a\\u003c/script>\\\"\\n\"");
  CHECK(csv_field("a,\"b\"") == "\"a,\"\"b\"\"\"");
  CHECK(html_escape("<a href=\"x\">&</a>") ==
        "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
}

TEST_CASE("base64 encodes every tail length", "[board]") {
  CHECK(base64("") == "");
  CHECK(base64("f") == "Zg==");
  CHECK(base64("fo") == "Zm8=");
  CHECK(base64("foo") == "Zm9v");
  CHECK(base64("foobar") == "Zm9vYmFy");
  CHECK(base64(std::string("\xff\x00\xfe", 3)) == "/wD+");
}

TEST_CASE("runs are ordered as TensorBoard lists them", "[board]") {
  std::vector<run_report> runs(4);
  runs[0].run = "b";
  runs[0].start_time = 2;
  runs[1].run = "none";
  runs[1].start_time = std::numeric_limits<double>::infinity();
  runs[2].run = "c";
  runs[2].start_time = 1;
  runs[3].run = "a";
  runs[3].start_time = 2;
  sort_by_start_time(runs);
  std::vector<std::string> names;
  for (auto& r : runs)
    names.push_back(r.run);
  CHECK(names == std::vector<std::string>{"c", "a", "b", "none"});
}

TEST_CASE("write_file_whole never writes through a link planted beside the file",
          "[board]") {
  // quern-node's --port-file X was written through X.tmp: anyone who may
  // write beside X could point X.tmp at a file of the user's.
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("quern-files-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  std::ofstream(dir / "victim") << "precious\n";
  fs::create_symlink(dir / "victim", dir / "port.tmp");
  auto port = (dir / "port").string();
  CHECK(cli::write_file_whole(port, "6006\n").empty());
  CHECK(slurp(dir / "victim") == "precious\n");
  CHECK(slurp(dir / "port") == "6006\n");
  // Written again: replaced whole, nothing left beside it.
  CHECK(cli::write_file_whole(port, "7000\n").empty());
  CHECK(slurp(dir / "port") == "7000\n");
  size_t files = 0;
  for (auto& e : fs::directory_iterator(dir))
    files += e.path().filename().string().find("port.tmp.") == 0;
  CHECK(files == 0);
  // A directory that is not there is named.
  auto why = cli::write_file_whole((dir / "no/port").string(), "1\n");
  CHECK(why ==
        "cannot write '" + (dir / "no/port").string() + "': No such file or directory");
  fs::remove_all(dir);
}

TEST_CASE("a long scalar series is thinned in memory, every extreme kept", "[board]") {
  scalar_series s;
  const size_t n = 1000000;
  // A slow wave with one spike down and one up far from the ends.
  for (size_t i = 0; i < n; ++i) {
    float v = static_cast<float>(std::sin(static_cast<double>(i) / 5000.0));
    if (i == 123457)
      v = -50;
    if (i == 876543)
      v = 70;
    s.add(static_cast<int64_t>(i), 1e9 + static_cast<double>(i), v);
  }
  s.settle();
  CHECK(s.total() == n);
  CHECK(s.thinned());
  // Bounded: at most four points per bucket.
  CHECK(s.steps.size() <= 4 * scalar_series::bucket_limit);
  CHECK(s.steps.size() > scalar_series::bucket_limit);
  REQUIRE(s.walls.size() == s.steps.size());
  REQUIRE(s.values.size() == s.steps.size());
  CHECK(s.steps.front() == 0);
  CHECK(s.steps.back() == static_cast<int64_t>(n - 1));
  for (size_t i = 1; i < s.steps.size(); ++i)
    REQUIRE(s.steps[i] > s.steps[i - 1]); // file order
  auto has = [&](int64_t step, float v) {
    for (size_t i = 0; i < s.steps.size(); ++i)
      if (s.steps[i] == step)
        return s.values[i] == v && s.walls[i] == 1e9 + static_cast<double>(step);
    return false;
  };
  CHECK(has(123457, -50));
  CHECK(has(876543, 70));
  // A short series keeps every point.
  scalar_series few;
  for (int i = 0; i < 500; ++i)
    few.add(i, i, static_cast<float>(i));
  few.settle();
  CHECK_FALSE(few.thinned());
  CHECK(few.steps.size() == 500);
}

TEST_CASE("TB-1 a run's hparams are read as TensorBoard's hparams plugin reads them",
          "[board][TB-1]") {
  namespace fs = std::filesystem;
  auto dir =
      fs::temp_directory_path() / ("quern-board-hparams-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto write = [&](const std::string& run, const std::vector<summary_event>& events) {
    fs::create_directories(dir / run);
    event_file_writer w;
    REQUIRE(!w.create_at((dir / run / "events.out.tfevents.1700000000.h").string(),
                         1700000000.0, false));
    for (auto& ev : events)
      w.append(ev);
    REQUIRE(!w.close(false));
  };
  auto at = [](int64_t step, std::vector<summary_value> values) {
    summary_event ev;
    ev.wall_time = 1700000000.0 + static_cast<double>(step);
    ev.step = step;
    ev.what = summary_event::summary{std::move(values)};
    return ev;
  };
  write("a",
        {at(0, hparams_values({{"lr", 0.1}, {"opt", "adam"}}, {"loss"}, 1700000000.0)),
         at(1, {scalar_value("loss", 0.5)}), at(2, {scalar_value("loss", 0.25)}),
         at(3, {scalar_value("loss", 0.375)}),
         at(4, {hparams_end_value(hparams_status::failure, 1700000004.0)})});
  write("b", {at(0, hparams_values({{"lr", 0.01}, {"deep", true}}, {}, 1700000000.0)),
              at(1, {scalar_value("loss", 2)}), at(1, {scalar_value("acc", 0.5)})});
  write("c", {at(1, {scalar_value("loss", 3)})});
  auto found = find_board_runs(dir.string());
  REQUIRE(found);
  auto runs = read_runs(*found, {}, true);
  REQUIRE(runs.size() == 3);
  std::map<std::string, const run_report*> by;
  for (auto& r : runs)
    by[r.run] = &r;
  auto& a = *by.at("a");
  CHECK(a.has_hparams);
  CHECK(a.hparams == hparam_list{{"lr", 0.1}, {"opt", "adam"}});
  CHECK(a.hparam_metrics == std::vector<std::string>{"loss"});
  CHECK(a.hparams_end == "failure");
  // The plugin's summaries are not tags (no text card, no inspect line).
  CHECK(a.tags.size() == 1);
  CHECK(a.texts.empty());
  CHECK(a.tags.at("loss").last_value == 0.375);
  CHECK(a.tags.at("loss").min_value == 0.25);
  auto& b = *by.at("b");
  CHECK(b.hparams == hparam_list{{"deep", true}, {"lr", 0.01}});
  CHECK(b.hparams_end.empty());
  CHECK(!by.at("c")->has_hparams);
  CHECK(hparams_names(runs) == std::vector<std::string>{"deep", "lr", "opt"});
  // Declared metrics win; with none declared, every scalar tag of the runs
  // with hparams, as TensorBoard infers them (run c has none: not counted).
  CHECK(hparams_metrics(runs) == std::vector<std::string>{"loss"});
  std::vector<run_report> undeclared{b};
  CHECK(hparams_metrics(undeclared) == std::vector<std::string>{"acc", "loss"});
  // A tag filter does not hide the hparams.
  selection only_acc;
  only_acc.tags = {"acc"};
  auto filtered = read_runs(*found, only_acc, false);
  for (auto& r : filtered)
    if (r.run == "a")
      CHECK(r.hparams == hparam_list{{"lr", 0.1}, {"opt", "adam"}});
  fs::remove_all(dir);
}
