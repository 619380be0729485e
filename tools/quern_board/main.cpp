// quern-board: a viewer of TensorBoard event files.
//
//   quern-board inspect LOGDIR   runs, files, tags, counts, step ranges, first
//                                and last values, damaged records
//   quern-board export LOGDIR    the scalars as a table (csv or json)
//   quern-board html LOGDIR      one self-contained HTML page of charts
//   quern-board serve LOGDIR     the same page on 127.0.0.1, kept up to date
//
// Exit status: 0 success; 1 bad usage or an unreadable / empty log
// directory; 2 a damaged event file (everything readable is still used);
// 3 out of memory (a limit reached).

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "command_line.hpp"
#include "files.hpp"
#include "logdir.hpp"
#include "page.hpp"
#include "quern/error.hpp"
#include "serve.hpp"
#include "tables.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace quern::board;

namespace {

constexpr int exit_usage = 1;
constexpr int exit_damaged = 2;
constexpr int exit_memory = 3;

const char* usage_text =
    "Usage: quern-board COMMAND LOGDIR [options]\n"
    "\n"
    "  inspect  runs (sub-folders with event files), tags, event counts, step\n"
    "           ranges, first and last values, and any damaged record\n"
    "  export   the scalars as a table (run, tag, step, wall_time, value)\n"
    "  html     one self-contained HTML page of charts (no server, no network)\n"
    "  serve    the same page on http://127.0.0.1:PORT/, updated as files grow\n"
    "\n"
    "quern-board COMMAND --help shows a command's options.\n"
    "Exit status: 0 ok, 1 bad input, 2 a damaged event file (what was\n"
    "readable is used first), 3 out of memory (a limit reached).\n";

struct command_info {
  const char* usage;
  const char* about;
};

const std::map<std::string, command_info> commands = {
    {"inspect",
     {"quern-board inspect LOGDIR [--run R]... [--tag T]...",
      "Lists each run (a folder holding event files, in TensorBoard's order: by\n"
      "start time), its files, its tags by kind with event counts, step ranges,\n"
      "first and last values, out-of-order steps, damaged records, and the\n"
      "points purged after a restart (\"purged 40 points: restarted at step 100\").\n"}},
    {"export",
     {"quern-board export LOGDIR [--run R]... [--tag T]... [--format csv|json] "
      "[--hparams]",
      "Prints every scalar: run, tag, step, wall_time (exact: the shortest\n"
      "decimal that reads back the same double), value (nine significant\n"
      "digits: the exact float). Runs in TensorBoard's order (by start time),\n"
      "events in file order. --hparams: one row per run with hparams, its\n"
      "hyper-parameters and the last and lowest value of each metric.\n"}},
    {"html",
     {"quern-board html LOGDIR [-o FILE] [--run R]... [--tag T]...",
      "Writes one HTML file (default LOGDIR/index.html; '-' for stdout) that\n"
      "opens from disk with no server and no network: a chart per tag with\n"
      "every run overlaid, TensorBoard's smoothing, filters and axes,\n"
      "histograms, text and images, each series as CSV (the same bytes as\n"
      "export), and the damage inspect reports. The same LOGDIR gives the same\n"
      "file.\n"}},
    {"serve",
     {"quern-board serve LOGDIR [--port N] [--reload SECONDS]",
      "Serves the html page on http://127.0.0.1:N/ (only there: it has no\n"
      "authentication); the page asks for new events every --reload seconds.\n"
      "Routes: / (the page), /data, /export.csv?run=R&tag=T, /export.json?run=R&tag=T,\n"
      "/logdir/<file>. An empty or missing LOGDIR is served too: the page shows\n"
      "runs as they are written.\n"
      "Ctrl-C (SIGINT) or SIGTERM stops it.\n"}},
};

int usage_error(const std::string& why, const std::string& cmd = "") {
  std::cerr << "quern-board: " << why << "\n\n";
  if (cmd.empty())
    std::cerr << usage_text;
  else
    std::cerr << "Usage: " << commands.at(cmd).usage << "\n(quern-board " << cmd
              << " --help for more)\n";
  return exit_usage;
}

int write_html(const std::string& logdir, const std::vector<quern::run_files>& runs,
               const selection& sel, std::string output) {
  auto reports = read_runs(runs, sel, true);
  page_options opt;
  opt.title = logdir_name(logdir);
  opt.logdir = logdir;
  auto page = render_page(reports, opt, "static");
  if (output.empty())
    output = (fs::path(logdir) / "index.html").string();
  if (output == "-") {
    std::cout << page;
    std::cout.flush();
  } else {
    // Written aside (a new file, never through a link) and renamed: a
    // browser or server never sees half a page.
    if (auto why = quern::cli::write_file_whole(output, page); !why.empty()) {
      std::cerr << "quern-board: " << why << "\n";
      return exit_usage;
    }
    size_t points = 0;
    for (auto& r : reports)
      for (auto& [tag, s] : r.scalars)
        points += s.total();
    std::cout << "quern-board: wrote " << output << " (" << reports.size() << " run"
              << (reports.size() == 1 ? "" : "s") << ", " << points << " scalar point"
              << (points == 1 ? "" : "s") << ", " << page.size() << " bytes)\n";
  }
  report_damage(reports);
  return any_damage(reports) ? exit_damaged : 0;
}

} // namespace

int run(int argc, char** argv) {
  if (argc < 2)
    return usage_error("missing command (inspect, export, html or serve)");
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << usage_text;
    for (auto& [name, info] : commands)
      std::cout << "\n  " << info.usage;
    std::cout << "\n";
    return 0;
  }
  if (!cmd.empty() && cmd[0] == '-')
    return usage_error("the command comes first (inspect, export, html or serve), not '" +
                       cmd + "'");
  if (!commands.count(cmd))
    return usage_error("unknown command '" + cmd +
                       "' (expected inspect, export, html or serve)");

  std::string logdir, format, output;
  std::vector<std::string> tag_list, run_list;
  unsigned port = 6006;
  double reload = 2;
  bool purge_orphaned = true;
  po::options_description visible{"Options"};
  visible.add_options()("help,h", "show this help and exit")(
      "purge-orphaned",
      po::value(&purge_orphaned)->default_value(true)->implicit_value(true),
      "drop the points a restart orphaned, as TensorBoard does: after a SessionLog START "
      "at step s, the run's earlier points at steps >= s (in files of version < 2: a "
      "tag's points at steps >= where its steps went back); false keeps them");
  if (cmd != "serve")
    visible.add_options()("run,r", po::value(&run_list)->composing(),
                          "only this run (repeatable; default: every run)")(
        "tag,t", po::value(&tag_list)->composing(),
        "only this tag (repeatable; default: every tag)");
  bool hparams = false;
  if (cmd == "export")
    visible.add_options()("format,f", po::value(&format)->default_value("csv"),
                          "csv or json")(
        "hparams", po::bool_switch(&hparams),
        "the runs' hparams and the last and lowest values of their metrics instead "
        "of the scalars");
  if (cmd == "html")
    visible.add_options()("output,o", po::value(&output),
                          "the file to write (default LOGDIR/index.html; - for stdout)");
  if (cmd == "serve")
    visible.add_options()("port,p", po::value(&port)->default_value(6006),
                          "TCP port on 127.0.0.1 (0: any free port)")(
        "reload", po::value(&reload)->default_value(2),
        "seconds between the page's checks for new events");
  quern::cli::parse_settings settings;
  settings.hidden.add_options()("logdir", po::value(&logdir));
  settings.positional = {"logdir"};
  settings.usage_status = exit_usage;
  settings.help = [&](std::ostream& out) {
    out << "Usage: " << commands.at(cmd).usage << "\n\n"
        << commands.at(cmd).about << "\n"
        << visible;
  };
  settings.usage_error = [&](const std::string& why) { usage_error(why, cmd); };
  po::variables_map vm;
  // The command is argv[1]: the parser skips it as it skips a program's name.
  if (auto status = quern::cli::parse_options("quern-board", argc - 1, argv + 1, visible,
                                              vm, settings))
    return *status;
  if (logdir.empty())
    return usage_error("missing LOGDIR", cmd);
  if (cmd == "export" && format != "csv" && format != "json")
    return usage_error("unknown format '" + format + "' (expected csv or json)", cmd);
  if (cmd == "serve" && port > 65535)
    return usage_error("--port " + std::to_string(port) + " is not a TCP port", cmd);
  if (cmd == "serve" && !(reload >= 0.1 && reload <= 86400))
    return usage_error("--reload must be between 0.1 and 86400 seconds", cmd);

  if (cmd == "serve") {
    // An empty or missing log directory is served too: the page says "no
    // runs yet" and shows runs as they are written.
    serve_options opt;
    opt.logdir = logdir;
    opt.port = static_cast<unsigned short>(port);
    opt.page.title = logdir_name(logdir);
    opt.page.logdir = logdir;
    opt.page.live = true;
    opt.page.reload_ms = static_cast<int>(reload * 1000);
    opt.purge_orphaned = purge_orphaned;
    return serve(opt);
  }
  auto runs = find_board_runs(logdir);
  if (!runs) {
    std::cerr << "quern-board: " << quern::message_of(runs.error()) << "\n";
    return exit_usage;
  }
  if (runs->empty()) {
    std::cerr << "quern-board: no event files (names containing 'tfevents') under '"
              << logdir << "'\n";
    return exit_usage;
  }
  selection sel;
  sel.purge_orphaned = purge_orphaned;
  sel.tags.insert(tag_list.begin(), tag_list.end());
  // The root run is named after the log directory; "." (find_runs' and
  // TensorBoard's name for it) still selects it.
  for (auto& r : run_list)
    for (auto& rf : *runs) {
      std::error_code ec;
      if (r == "." && !rf.files.empty() &&
          fs::equivalent(fs::path(rf.files.front()).parent_path(), logdir, ec))
        r = rf.run;
    }
  sel.runs.insert(run_list.begin(), run_list.end());
  for (auto& r : sel.runs) {
    bool known = false;
    for (auto& rf : *runs)
      known = known || rf.run == r;
    if (!known)
      return usage_error("no run '" + r + "' under '" + logdir + "'", cmd);
  }
  if (cmd == "inspect") {
    auto reports = read_runs(*runs, sel, false);
    write_inspect(std::cout, logdir, reports, !sel.tags.empty());
    report_damage(reports);
    return any_damage(reports) ? exit_damaged : 0;
  }
  if (cmd == "export" && hparams) {
    auto reports = read_runs(*runs, sel, false);
    write_hparams(std::cout, reports, format == "json");
    report_damage(reports);
    return any_damage(reports) ? exit_damaged : 0;
  }
  if (cmd == "export") {
    auto reports = write_export(std::cout, *runs, sel, format == "json");
    report_damage(reports);
    return any_damage(reports) ? exit_damaged : 0;
  }
  return write_html(logdir, *runs, sel, output);
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    // A memory limit (ulimit -v, a cgroup) reached: said, never an abort.
    std::cerr << "quern-board: out of memory: the process may not have the memory this "
                 "command needs (its limit was reached)\n";
    return exit_memory;
  }
}
