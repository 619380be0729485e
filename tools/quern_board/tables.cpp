#include "tables.hpp"

#include <cmath>

#include "quern/error.hpp"
#include "text.hpp"

namespace quern::board {

void write_inspect(std::ostream& out, const std::string& logdir,
                   const std::vector<run_report>& runs, bool tags_filtered) {
  out << "Log directory: " << logdir << "\n";
  for (auto& rep : runs) {
    out << "\nRun: " << rep.run << "\n";
    for (auto& f : rep.files) {
      out << "  file " << f.path << ": " << f.records << " record"
          << (f.records == 1 ? "" : "s");
      if (!f.version.empty())
        out << ", " << f.version;
      if (f.error)
        out << ", DAMAGED: " << render(f.error);
      out << "\n";
    }
    std::map<std::string, std::vector<const std::pair<const std::string, tag_stats>*>>
        by_kind;
    for (auto& kv : rep.tags)
      by_kind[kind_name(kv.second)].push_back(&kv);
    for (auto& [kind, entries] : by_kind) {
      out << "  " << kind << "\n";
      for (auto* kv : entries) {
        auto& st = kv->second;
        out << "    " << kv->first << "  events " << st.count << "  steps " << st.min_step
            << ".." << st.max_step;
        if (st.kind == summary_kind::scalar)
          out << "  first " << format_value(st.first_value) << " (step " << st.first_step
              << ")  last " << format_value(st.last_value) << " (step " << st.last_step
              << ")";
        else if (st.kind == summary_kind::histogram)
          out << "  first num " << format_value(st.first_value) << "  last num "
              << format_value(st.last_value);
        if (st.out_of_order > 0)
          out << "  out-of-order steps " << st.out_of_order;
        out << "\n";
      }
    }
    for (auto& [name, count] : rep.other_events)
      out << "  " << name << "  events " << count << "\n";
    if (rep.tags.empty() && rep.other_events.empty())
      out << "  (no summaries" << (tags_filtered ? " with the given tags" : "") << ")\n";
  }
  out.flush();
}

std::vector<run_report> write_export(std::ostream& out,
                                     const std::vector<run_files>& runs,
                                     const selection& sel, bool json) {
  if (json)
    out << "[";
  else
    out << "run,tag,step,wall_time,value\n";
  bool first = true;
  // Row by row as the events are read: nothing but the row in memory.
  std::string run_name, run_csv, run_json;
  auto reports = for_each_scalar(
      runs, sel,
      [&](const std::string& run, const std::string& tag, int64_t step, double wall,
          float value) {
        if (run != run_name) {
          run_name = run;
          run_csv = csv_field(run);
          run_json = json_string(run);
        }
        if (json) {
          out << (first ? "\n  " : ",\n  ") << "{\"run\": " << run_json
              << ", \"tag\": " << json_string(tag) << ", \"step\": " << step
              << ", \"wall_time\": "
              << (std::isfinite(wall) ? format_wall_time(wall) : "null")
              << ", \"value\": " << (std::isfinite(value) ? format_value(value) : "null")
              << "}";
        } else {
          out << run_csv << "," << csv_field(tag) << "," << step << ","
              << format_wall_time(wall) << "," << format_value(value) << "\n";
        }
        first = false;
        // A reader that went away ends the export.
        return static_cast<bool>(out);
      });
  if (json)
    out << (first ? "]\n" : "\n]\n");
  out.flush();
  return reports;
}

} // namespace quern::board
