// quern-board html and serve at scale: RUNS runs x TAGS tags x POINTS points
// (default 8 x 4 x 100,000 = 3.2M scalars). Prints
//   - the time to write the page (quern-board html, best of 3) and its size;
//   - in chromium-headless-shell: the page's own time to the first chart and
//     to all charts, and to redraw after a smoothing change and a run filter
//     (performance.now(), read back from the page's #selftest block), and
//     the browser's wall time to load the page and dump it;
//   - serve: the time until it answers (the log directory read), and the
//     same browser figures over http://127.0.0.1.
//   bench_board [--runs N] [--tags N] [--points N] [--dir DIR]
//               [--chromium PATH]   (--help lists them)
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <regex>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>

#include "command_line.hpp"
#include "quern/summary/event_file.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

[[noreturn]] void fail(const std::string& why) {
  std::cerr << "bench_board: " << why << "\n";
  std::exit(1);
}

std::string run_output(const std::string& cmd, int* status = nullptr) {
  std::string out;
  auto* p = ::popen(cmd.c_str(), "r");
  if (!p)
    fail("cannot run " + cmd);
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int st = ::pclose(p);
  if (status)
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

void write_logdir(const std::string& dir, int runs, int tags, int points) {
  for (int r = 0; r < runs; ++r) {
    double t0 = 1700000000.0 + r;
    quern::event_file_writer w;
    auto run = dir + "/run" + std::to_string(r);
    std::filesystem::create_directories(run);
    if (auto err = w.create_at(run + "/events.out.tfevents.1700000000.bench", t0, false))
      fail("cannot write " + run);
    uint64_t s = static_cast<uint64_t>(r) + 1;
    for (int p = 0; p < points; ++p)
      for (int t = 0; t < tags; ++t) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double noise = static_cast<double>(s >> 11) / 9007199254740992.0;
        w.append(quern::scalar_event{
            t0 + 1 + p * 0.01, p, "group/tag" + std::to_string(t),
            static_cast<float>((1 + t) * std::exp(-p / (points / 4.0)) + 0.1 * noise)});
      }
    if (w.close(false))
      fail("cannot write " + run);
  }
}

struct page_figures {
  double browser_s = 0;
  double first_chart_ms = 0, all_charts_ms = 0, smoothing_ms = 0, filter_ms = 0;
};

double field(const std::string& json, const std::string& name) {
  std::smatch m;
  std::regex re("\"" + name + "\":([0-9.]+)");
  if (!std::regex_search(json, m, re))
    fail("the page did not report " + name);
  return std::stod(m[1].str());
}

page_figures browse(const std::string& chromium, const std::string& url) {
  auto t0 = clock_type::now();
  int status = 0;
  auto dom = run_output("timeout 300 " + chromium +
                            " --no-sandbox --disable-gpu --window-size=1300,900 "
                            "--dump-dom '" +
                            url + "#selftest&bench' 2>/dev/null",
                        &status);
  page_figures f;
  f.browser_s = seconds_since(t0);
  auto at = dom.find("<pre id=\"quern-selftest\">");
  if (status != 0 || at == std::string::npos)
    fail("the browser did not render " + url + " (status " + std::to_string(status) +
         ")");
  auto json = dom.substr(at, 4000);
  f.first_chart_ms = field(json, "firstChartMs");
  f.all_charts_ms = field(json, "allChartsMs");
  f.smoothing_ms = field(json, "smoothingChangeMs");
  f.filter_ms = field(json, "runFilterMs");
  return f;
}

void print(const char* what, const page_figures& f) {
  std::printf("  %-6s browser: first chart %.0f ms, all charts %.0f ms (page clock); "
              "redraw after a smoothing change %.0f ms, after a run filter %.0f ms; "
              "load and dump %.1f s\n",
              what, f.first_chart_ms, f.all_charts_ms, f.smoothing_ms, f.filter_ms,
              f.browser_s);
}

} // namespace

int main(int argc, char** argv) {
  int runs = 8, tags = 4, points = 100000;
  std::string dir = std::filesystem::temp_directory_path().string();
  std::string chromium = "chromium-headless-shell";
  namespace po = boost::program_options;
  po::options_description desc{
      "bench_board: quern-board html and serve at scale; options"};
  desc.add_options()("help", "show this help")(
      "runs", po::value(&runs)->default_value(runs), "runs in the log directory")(
      "tags", po::value(&tags)->default_value(tags), "scalar tags per run")(
      "points", po::value(&points)->default_value(points), "points per tag")(
      "dir", po::value(&dir)->default_value(dir),
      "where the scratch folder quern_bench_board goes (removed at the end)")(
      "chromium", po::value(&chromium)->default_value(chromium), "the browser to time");
  po::variables_map vm;
  if (auto status = quern::cli::parse_options("bench_board", argc, argv, desc, vm))
    return *status;
  if (runs <= 0 || tags <= 0 || points <= 0)
    fail("--runs, --tags and --points must be positive");
  if (run_output("command -v " + chromium).empty())
    fail(chromium + " not found: apt-get install chromium-headless-shell");
  // Only our own folder is ever removed, whatever --dir names.
  dir = (std::filesystem::path(dir) / "quern_bench_board").string();
  std::filesystem::remove_all(dir);
  auto logdir = dir + "/logs";
  auto t0 = clock_type::now();
  write_logdir(logdir, runs, tags, points);
  std::printf(
      "bench_board: %d runs x %d tags x %d points = %lld scalars (written in %.2f "
      "s)\n",
      runs, tags, points, static_cast<long long>(runs) * tags * points,
      seconds_since(t0));

  auto page = dir + "/index.html";
  double best = 1e9;
  for (int round = 0; round < 3; ++round) {
    auto t = clock_type::now();
    int status = 0;
    run_output(std::string(QUERN_BOARD_PATH) + " html " + logdir + " -o " + page,
               &status);
    if (status != 0)
      fail("quern-board html failed");
    best = std::min(best, seconds_since(t));
  }
  std::printf("  html   page written in %.2f s (best of 3), %.1f MB\n", best,
              static_cast<double>(std::filesystem::file_size(page)) / 1e6);
  print("html", browse(chromium, "file://" + std::filesystem::absolute(page).string()));

  // serve: started on a free port; its first line names the address.
  int out[2];
  if (::pipe(out) != 0)
    fail("pipe");
  auto ts = clock_type::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::execl(QUERN_BOARD_PATH, QUERN_BOARD_PATH, "serve", logdir.c_str(), "--port", "0",
            static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::close(out[1]);
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n')
    line += c;
  double ready = seconds_since(ts);
  std::smatch m;
  if (!std::regex_search(line, m, std::regex("http://127\\.0\\.0\\.1:[0-9]+/")))
    fail("serve did not start: " + line);
  std::printf("  serve  answering after %.2f s (log directory read, data encoded)\n",
              ready);
  print("serve", browse(chromium, m[0].str()));
  ::kill(pid, SIGTERM);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ::close(out[0]);
  std::filesystem::remove_all(dir);
  return 0;
}
