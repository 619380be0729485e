// quern-board: a command-line viewer of TensorBoard event files.
//
//   quern-board inspect LOGDIR [--tag T]...
//       runs (sub-folders holding event files), their files, tags, event
//       counts, step ranges, first and last values, and any corrupt or
//       truncated record (like `tensorboard --inspect`)
//   quern-board export LOGDIR [--tag T]... [--format csv|json]
//       the scalars as a table: run, tag, step, wall_time, value
//
// Exit status: 0 success; 1 bad usage or an unreadable / empty log
// directory; 2 a damaged event file (everything readable is still printed).

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "quern/error.hpp"
#include "quern/summary/reader.hpp"

namespace po = boost::program_options;

namespace {

constexpr int exit_usage = 1;
constexpr int exit_damaged = 2;

const char* usage_text =
    "Usage:\n"
    "  quern-board inspect LOGDIR [--tag T]...\n"
    "  quern-board export LOGDIR [--tag T]... [--format csv|json]\n"
    "\n"
    "inspect  runs (sub-folders with event files), tags, event counts, step\n"
    "         ranges, first and last values, and any damaged record\n"
    "export   the scalars as a table (run, tag, step, wall_time, value)\n"
    "\n"
    "Exit status: 0 ok, 1 bad input, 2 a damaged event file (what was\n"
    "readable is printed first).\n";

std::string format_number(double x, const char* fmt = "%.9g") {
  if (std::isnan(x))
    return "nan";
  if (std::isinf(x))
    return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, x);
  return buf;
}

const char* kind_name(quern::summary_kind k) {
  switch (k) {
  case quern::summary_kind::scalar:
    return "scalars";
  case quern::summary_kind::histogram:
    return "histograms";
  case quern::summary_kind::image:
    return "images";
  case quern::summary_kind::tensor:
    return "tensors";
  }
  return "other";
}

struct tag_stats {
  quern::summary_kind kind = quern::summary_kind::scalar;
  size_t count = 0;
  int64_t min_step = 0;
  int64_t max_step = 0;
  int64_t first_step = 0;
  int64_t last_step = 0;
  double first_value = 0;
  double last_value = 0;
  size_t out_of_order = 0;
  std::string plugin;
};

struct file_report {
  std::string path;
  size_t records = 0;
  std::string version;
  caf::error error;
};

struct run_report {
  std::string run;
  std::vector<file_report> files;
  std::map<std::string, tag_stats> tags;
  std::map<std::string, size_t> other_events; // session logs, log messages, graphs
  bool damaged = false;
};

bool wanted(const std::set<std::string>& tags, const std::string& tag) {
  return tags.empty() || tags.count(tag) > 0;
}

const char* event_kind_name(quern::event_kind k, int32_t code) {
  using quern::event_kind;
  switch (k) {
  case event_kind::graph_def:
    return "graph";
  case event_kind::meta_graph_def:
    return "meta_graph";
  case event_kind::log_message:
    return "log_message";
  case event_kind::session_log:
    return code == 1   ? "sessionlog:start"
           : code == 2 ? "sessionlog:stop"
           : code == 3 ? "sessionlog:checkpoint"
                       : "sessionlog";
  case event_kind::tagged_run_metadata:
    return "run_metadata";
  case event_kind::none:
    return "empty";
  default:
    return "other";
  }
}

/// Reads every file of every run; reports damage on stderr as it goes.
std::vector<run_report> read_runs(const std::vector<quern::run_files>& runs,
                                  const std::set<std::string>& tags,
                                  std::vector<quern::event_file_contents>* keep) {
  std::vector<run_report> result;
  for (auto& r : runs) {
    run_report rep;
    rep.run = r.run;
    for (auto& path : r.files) {
      auto contents = quern::read_event_file(path);
      file_report f;
      f.path = path;
      f.records = contents.events.size();
      f.error = contents.error;
      for (auto& ev : contents.events) {
        if (ev.what == quern::event_kind::file_version) {
          f.version = ev.data;
          continue;
        }
        if (ev.what != quern::event_kind::summary) {
          ++rep.other_events[event_kind_name(ev.what, ev.code)];
          continue;
        }
        for (auto& v : ev.values) {
          if (!wanted(tags, v.tag))
            continue;
          auto& st = rep.tags[v.tag];
          double value = v.kind == quern::summary_kind::scalar      ? v.simple_value
                         : v.kind == quern::summary_kind::histogram ? v.histo.num
                                                                    : 0.0;
          if (st.count == 0) {
            st.kind = v.kind;
            st.min_step = st.max_step = st.first_step = ev.step;
            st.first_value = value;
          } else if (ev.step < st.last_step) {
            ++st.out_of_order;
          }
          if (!v.plugin_name.empty())
            st.plugin = v.plugin_name;
          ++st.count;
          st.min_step = std::min(st.min_step, ev.step);
          st.max_step = std::max(st.max_step, ev.step);
          st.last_step = ev.step;
          st.last_value = value;
        }
      }
      if (f.error)
        rep.damaged = true;
      rep.files.push_back(std::move(f));
      if (keep)
        keep->push_back(std::move(contents));
    }
    result.push_back(std::move(rep));
  }
  return result;
}

void report_damage(const std::vector<run_report>& reports) {
  for (auto& rep : reports)
    for (auto& f : rep.files)
      if (f.error)
        std::cerr << "quern-board: " << f.path << ": " << quern::render(f.error) << " ("
                  << f.records << " record" << (f.records == 1 ? "" : "s")
                  << " read before it)\n";
}

bool any_damage(const std::vector<run_report>& reports) {
  for (auto& rep : reports)
    if (rep.damaged)
      return true;
  return false;
}

int inspect(const std::string& logdir, const std::vector<quern::run_files>& runs,
            const std::set<std::string>& tags) {
  auto reports = read_runs(runs, tags, nullptr);
  std::cout << "Log directory: " << logdir << "\n";
  for (auto& rep : reports) {
    std::cout << "\nRun: " << rep.run << "\n";
    for (auto& f : rep.files) {
      std::cout << "  file " << f.path << ": " << f.records << " record"
                << (f.records == 1 ? "" : "s");
      if (!f.version.empty())
        std::cout << ", " << f.version;
      if (f.error)
        std::cout << ", DAMAGED: " << quern::render(f.error);
      std::cout << "\n";
    }
    std::map<std::string, std::vector<const std::pair<const std::string, tag_stats>*>>
        by_kind;
    for (auto& kv : rep.tags)
      by_kind[kv.second.plugin == "text" ? "text" : kind_name(kv.second.kind)].push_back(
          &kv);
    for (auto& [kind, entries] : by_kind) {
      std::cout << "  " << kind << "\n";
      for (auto* kv : entries) {
        auto& st = kv->second;
        std::cout << "    " << kv->first << "  events " << st.count << "  steps "
                  << st.min_step << ".." << st.max_step;
        if (st.kind == quern::summary_kind::scalar)
          std::cout << "  first " << format_number(st.first_value) << " (step "
                    << st.first_step << ")  last " << format_number(st.last_value)
                    << " (step " << st.last_step << ")";
        else if (st.kind == quern::summary_kind::histogram)
          std::cout << "  first num " << format_number(st.first_value) << "  last num "
                    << format_number(st.last_value);
        if (st.out_of_order > 0)
          std::cout << "  out-of-order steps " << st.out_of_order;
        std::cout << "\n";
      }
    }
    for (auto& [name, count] : rep.other_events)
      std::cout << "  " << name << "  events " << count << "\n";
    if (rep.tags.empty() && rep.other_events.empty())
      std::cout << "  (no summaries" << (tags.empty() ? "" : " with the given tags")
                << ")\n";
  }
  std::cout.flush();
  report_damage(reports);
  return any_damage(reports) ? exit_damaged : 0;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos)
    return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"')
      out += '"';
    out += c;
  }
  return out + "\"";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

std::string json_number(double x, const char* fmt = "%.9g") {
  if (!std::isfinite(x))
    return "null"; // JSON has no NaN or infinities
  return format_number(x, fmt);
}

int export_scalars(const std::vector<quern::run_files>& runs,
                   const std::set<std::string>& tags, const std::string& format) {
  std::vector<quern::event_file_contents> contents;
  auto reports = read_runs(runs, tags, &contents);
  bool json = format == "json";
  if (json)
    std::cout << "[";
  else
    std::cout << "run,tag,step,wall_time,value\n";
  bool first = true;
  size_t file_index = 0;
  for (auto& rep : reports) {
    for (size_t i = 0; i < rep.files.size(); ++i, ++file_index) {
      for (auto& ev : contents[file_index].events) {
        if (ev.what != quern::event_kind::summary)
          continue;
        for (auto& v : ev.values) {
          if (v.kind != quern::summary_kind::scalar || !wanted(tags, v.tag))
            continue;
          if (json) {
            std::cout << (first ? "\n  " : ",\n  ")
                      << "{\"run\": " << json_string(rep.run)
                      << ", \"tag\": " << json_string(v.tag) << ", \"step\": " << ev.step
                      << ", \"wall_time\": " << json_number(ev.wall_time, "%.6f")
                      << ", \"value\": " << json_number(v.simple_value) << "}";
          } else {
            std::cout << csv_field(rep.run) << "," << csv_field(v.tag) << "," << ev.step
                      << "," << format_number(ev.wall_time, "%.6f") << ","
                      << format_number(v.simple_value) << "\n";
          }
          first = false;
        }
      }
    }
  }
  if (json)
    std::cout << (first ? "]\n" : "\n]\n");
  std::cout.flush();
  report_damage(reports);
  return any_damage(reports) ? exit_damaged : 0;
}

} // namespace

int main(int argc, char** argv) {
  std::string command;
  std::string logdir;
  std::vector<std::string> tag_list;
  std::string format;
  po::options_description visible{"Options"};
  visible.add_options()("help,h", "show this help and exit")(
      "tag,t", po::value(&tag_list)->composing(),
      "only this tag (repeatable; default: every tag)")(
      "format,f", po::value(&format)->default_value("csv"), "export format: csv or json");
  po::options_description hidden;
  hidden.add_options()("command", po::value(&command))("logdir", po::value(&logdir));
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add("command", 1).add("logdir", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "quern-board: " << e.what() << "\n\n" << usage_text << visible;
    return exit_usage;
  }
  if (vm.count("help")) {
    std::cout << usage_text << "\n" << visible;
    return 0;
  }
  if (command.empty()) {
    std::cerr << "quern-board: missing command (inspect or export)\n\n" << usage_text;
    return exit_usage;
  }
  if (command != "inspect" && command != "export") {
    std::cerr << "quern-board: unknown command '" << command
              << "' (expected inspect or export)\n\n"
              << usage_text;
    return exit_usage;
  }
  if (logdir.empty()) {
    std::cerr << "quern-board: missing LOGDIR\n\n" << usage_text;
    return exit_usage;
  }
  if (format != "csv" && format != "json") {
    std::cerr << "quern-board: unknown format '" << format
              << "' (expected csv or json)\n";
    return exit_usage;
  }
  if (command == "inspect" && !vm["format"].defaulted()) {
    std::cerr << "quern-board: --format applies to export only\n";
    return exit_usage;
  }
  auto runs = quern::find_runs(logdir);
  if (!runs) {
    std::cerr << "quern-board: " << quern::message_of(runs.error()) << "\n";
    return exit_usage;
  }
  if (runs->empty()) {
    std::cerr << "quern-board: no event files (names containing 'tfevents') under '"
              << logdir << "'\n";
    return exit_usage;
  }
  std::set<std::string> tags(tag_list.begin(), tag_list.end());
  if (command == "inspect")
    return inspect(logdir, *runs, tags);
  return export_scalars(*runs, tags, format);
}
