#include "logdir.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>

#include "quern/error.hpp"

namespace quern::board {

namespace {

/// The name inspect shows for an event that is not a summary.
const char* event_name(const summary_event::what_type& what) {
  struct name {
    const char* operator()(const summary_event::graph_def&) { return "graph"; }
    const char* operator()(const summary_event::meta_graph_def&) { return "meta_graph"; }
    const char* operator()(const summary_event::log_message&) { return "log_message"; }
    const char* operator()(const summary_event::session_log& x) {
      return x.status == 1   ? "sessionlog:start"
             : x.status == 2 ? "sessionlog:stop"
             : x.status == 3 ? "sessionlog:checkpoint"
                             : "sessionlog";
    }
    const char* operator()(const summary_event::tagged_run_metadata&) {
      return "run_metadata";
    }
    const char* operator()(const summary_event::none&) { return "empty"; }
    const char* operator()(const summary_event::file_version&) { return "other"; }
    const char* operator()(const summary_event::summary&) { return "other"; }
  };
  return caf::visit(name{}, what);
}

std::string join_strings(const std::vector<std::string>& strings) {
  std::string out;
  for (size_t i = 0; i < strings.size(); ++i) {
    if (i > 0)
      out += '\n';
    out += strings[i];
  }
  return out;
}

} // namespace

run_report make_run_report(const std::string& run,
                           const std::vector<const event_file_contents*>& files,
                           const selection& sel, bool keep_values) {
  run_report rep;
  rep.run = run;
  rep.start_time = std::numeric_limits<double>::infinity();
  for (auto* contents : files) {
    file_report f;
    f.path = contents->path;
    f.records = contents->events.size();
    f.error = contents->error;
    for (auto& ev : contents->events) {
      if (std::isinf(rep.start_time))
        rep.start_time = ev.wall_time;
      if (auto fv = caf::get_if<summary_event::file_version>(&ev.what)) {
        f.version = fv->version;
        continue;
      }
      auto summary = caf::get_if<summary_event::summary>(&ev.what);
      if (!summary) {
        ++rep.other_events[event_name(ev.what)];
        continue;
      }
      for (auto& v : summary->values) {
        if (!sel.wants_tag(v.tag))
          continue;
        auto& st = rep.tags[v.tag];
        double value = 0.0;
        if (auto x = caf::get_if<float>(&v.value))
          value = *x;
        else if (auto h = caf::get_if<histogram_data>(&v.value))
          value = h->num;
        if (st.count == 0) {
          st.kind = v.kind();
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
        if (!keep_values)
          continue;
        struct keep {
          run_report& rep;
          const summary_event& ev;
          const std::string& tag;
          void operator()(float x) {
            auto it = rep.scalars.try_emplace(tag).first;
            auto& s = it->second;
            rep.scalar_order.emplace_back(&it->first, s.steps.size());
            s.steps.push_back(ev.step);
            s.walls.push_back(ev.wall_time);
            s.values.push_back(x);
          }
          void operator()(const histogram_data& h) {
            rep.histograms[tag].push_back({ev.step, ev.wall_time, h});
          }
          void operator()(const image_data& img) {
            rep.images[tag].push_back({ev.step, ev.wall_time, img});
          }
          void operator()(const text_tensor& t) {
            rep.texts[tag].push_back({ev.step, ev.wall_time, join_strings(t.strings)});
          }
        };
        caf::visit(keep{rep, ev, v.tag}, v.value);
      }
    }
    if (f.error)
      rep.damaged = true;
    rep.files.push_back(std::move(f));
  }
  return rep;
}

void sort_by_start_time(std::vector<run_report>& runs) {
  // TensorBoard's run list (core plugin, /data/runs): by start time, runs
  // without one last, ties broken by name.
  std::stable_sort(runs.begin(), runs.end(),
                   [](const run_report& a, const run_report& b) {
                     if (a.start_time != b.start_time)
                       return a.start_time < b.start_time;
                     return a.run < b.run;
                   });
}

std::vector<run_report> read_runs(const std::vector<run_files>& runs,
                                  const selection& sel, bool keep_values) {
  std::vector<run_report> result;
  for (auto& r : runs) {
    if (!sel.wants_run(r.run))
      continue;
    std::vector<event_file_contents> contents;
    contents.reserve(r.files.size());
    for (auto& path : r.files)
      contents.push_back(read_event_file(path));
    std::vector<const event_file_contents*> ptrs;
    for (auto& c : contents)
      ptrs.push_back(&c);
    result.push_back(make_run_report(r.run, ptrs, sel, keep_values));
  }
  sort_by_start_time(result);
  return result;
}

std::vector<std::string> damage_lines(const run_report& run) {
  std::vector<std::string> lines;
  for (auto& f : run.files)
    if (f.error)
      lines.push_back(f.path + ": " + render(f.error) + " (" + std::to_string(f.records) +
                      " record" + (f.records == 1 ? "" : "s") + " read before it)");
  return lines;
}

bool any_damage(const std::vector<run_report>& runs) {
  for (auto& rep : runs)
    if (rep.damaged)
      return true;
  return false;
}

void report_damage(const std::vector<run_report>& runs) {
  for (auto& rep : runs)
    for (auto& line : damage_lines(rep))
      std::cerr << "quern-board: " << line << "\n";
}

std::string kind_name(const tag_stats& st) {
  if (st.plugin == "text")
    return "text";
  switch (st.kind) {
  case summary_kind::scalar:
    return "scalars";
  case summary_kind::histogram:
    return "histograms";
  case summary_kind::image:
    return "images";
  case summary_kind::tensor:
    return "tensors";
  }
  return "other";
}

std::vector<double> compress_histogram(const histogram_data& h) {
  // TensorBoard's compress_histogram_proto (plugins/distribution/compressor.py).
  static const double bps[] = {0, 668, 1587, 3085, 5000, 6915, 8413, 9332, 10000};
  constexpr size_t n_bps = sizeof(bps) / sizeof(bps[0]);
  std::vector<double> out;
  if (h.num == 0)
    return std::vector<double>(n_bps, 0.0);
  size_t n = std::min(h.bucket.size(), h.bucket_limit.size());
  double total = 0;
  for (size_t i = 0; i < n; ++i)
    total += h.bucket[i];
  if (total == 0)
    total = 1;
  std::vector<double> weights(n);
  double acc = 0;
  for (size_t i = 0; i < n; ++i) {
    acc += h.bucket[i] * bps[n_bps - 1] / total;
    weights[i] = acc;
  }
  size_t j = 0;
  while (j < n_bps) {
    // searchsorted(weights, bps[j], side="right")
    size_t i = static_cast<size_t>(
        std::upper_bound(weights.begin(), weights.end(), bps[j]) - weights.begin());
    bool found = false;
    for (; i < n; ++i) {
      double cumsum = weights[i];
      double prev = i > 0 ? weights[i - 1] : 0.0;
      if (cumsum == prev)
        continue;
      double lhs = (i == 0 || prev == 0) ? h.min : std::max(h.bucket_limit[i - 1], h.min);
      double rhs = std::min(h.bucket_limit[i], h.max);
      out.push_back(lhs + (bps[j] - prev) * (rhs - lhs) / (cumsum - prev));
      ++j;
      found = true;
      break;
    }
    if (!found)
      break;
  }
  while (j < n_bps) {
    out.push_back(h.max);
    ++j;
  }
  return out;
}

} // namespace quern::board
