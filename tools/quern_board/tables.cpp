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
    if (rep.has_hparams) {
      out << "  hparams";
      for (auto& [name, value] : rep.hparams)
        out << "  " << name << " = " << hparam_text(value);
      if (!rep.hparam_metrics.empty()) {
        out << "  (metrics";
        for (auto& m : rep.hparam_metrics)
          out << " " << m;
        out << ")";
      }
      if (!rep.hparams_end.empty())
        out << "  ended " << rep.hparams_end;
      out << "\n";
    }
    for (auto& [name, count] : rep.other_events)
      out << "  " << name << "  events " << count << "\n";
    for (auto& line : purge_lines(rep))
      out << "  " << line << "\n";
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

std::string hparam_text(const hparam_value& v) {
  switch (v.kind()) {
  case hparam_value::type::string:
    return v.string();
  case hparam_value::type::boolean:
    return v.boolean() ? "true" : "false";
  case hparam_value::type::number:
    break;
  }
  return json_number(v.number());
}

namespace {

/// A float32 value as export's JSON writes it (nine digits, null when not finite).
std::string json_value(double v) {
  return std::isfinite(v) ? format_value(v) : "null";
}

} // namespace

void write_hparams(std::ostream& out, const std::vector<run_report>& runs, bool json) {
  auto names = hparams_names(runs);
  auto metrics = hparams_metrics(runs);
  auto find = [](const run_report& r, const std::string& name) -> const hparam_value* {
    for (auto& [n, v] : r.hparams)
      if (n == name)
        return &v;
    return nullptr;
  };
  if (json) {
    out << "[";
    bool first = true;
    for (auto& r : runs) {
      if (!r.has_hparams)
        continue;
      out << (first ? "\n  " : ",\n  ") << "{\"run\": " << json_string(r.run)
          << ", \"hparams\": {";
      first = false;
      for (size_t i = 0; i < r.hparams.size(); ++i) {
        auto& [name, v] = r.hparams[i];
        out << (i ? ", " : "") << json_string(name) << ": "
            << (v.kind() == hparam_value::type::string ? json_string(v.string())
                                                       : hparam_text(v));
      }
      out << "}, \"metrics\": {";
      bool any = false;
      for (auto& m : metrics) {
        auto st = r.tags.find(m);
        if (st == r.tags.end() || st->second.kind != summary_kind::scalar)
          continue;
        out << (any ? ", " : "") << json_string(m)
            << ": {\"last\": " << json_value(st->second.last_value)
            << ", \"min\": " << json_value(st->second.min_value)
            << ", \"step\": " << st->second.last_step << "}";
        any = true;
      }
      out << "}, \"status\": " << json_string(r.hparams_end) << "}";
    }
    out << (first ? "]\n" : "\n]\n");
    out.flush();
    return;
  }
  out << "run";
  for (auto& n : names)
    out << "," << csv_field(n);
  for (auto& m : metrics)
    out << "," << csv_field(m);
  for (auto& m : metrics)
    out << "," << csv_field("min(" + m + ")");
  out << "\n";
  for (auto& r : runs) {
    if (!r.has_hparams)
      continue;
    out << csv_field(r.run);
    for (auto& n : names) {
      auto v = find(r, n);
      out << "," << (v ? csv_field(hparam_text(*v)) : std::string{});
    }
    for (int pass = 0; pass < 2; ++pass)
      for (auto& m : metrics) {
        auto st = r.tags.find(m);
        out << ",";
        if (st != r.tags.end() && st->second.kind == summary_kind::scalar)
          out << format_value(pass == 0 ? st->second.last_value : st->second.min_value);
      }
    out << "\n";
  }
  out.flush();
}

} // namespace quern::board
