#include "logdir.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string_view>

#include <sys/stat.h>

#include "quern/format/record.hpp"
#include "quern/io_error.hpp"
#include "quern/summary/event.hpp"

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

uint64_t get_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

uint32_t get_le32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}

caf::error data_loss(const char* what, uint64_t offset) {
  return make_error(error_code::data_loss,
                    what + std::string(" record at ") + std::to_string(offset));
}

struct scan_result {
  uint64_t end = 0;
  size_t records = 0;
  caf::error error;
};

/// Reads the records of `path` from `from` (a record boundary) up to `to`,
/// one at a time (TFRecord framing and damage as quern's record_reader
/// reports it), calling `each` with every payload and its offset until it
/// returns false or sets its error (the record is then not counted).
scan_result
scan_records(const std::string& path, uint64_t from, uint64_t to,
             const std::function<bool(const std::string&, uint64_t, caf::error&)>& each) {
  scan_result r;
  r.end = from;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    r.error = io_error(errno, "cannot open '" + path + "'");
    return r;
  }
  struct closer {
    std::FILE* f;
    ~closer() { std::fclose(f); }
  } close_it{f};
  struct ::stat st {};
  if (::fstat(::fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    r.error = io_error(EISDIR, "cannot open '" + path + "'");
    return r;
  }
  uint64_t known_size = static_cast<uint64_t>(st.st_size);
  std::setvbuf(f, nullptr, _IOFBF, 1 << 16);
  if (from > 0 && ::fseeko(f, static_cast<off_t>(from), SEEK_SET) != 0) {
    r.error = io_error(errno, "cannot read at offset " + std::to_string(from));
    return r;
  }
  std::string payload;
  uint64_t offset = from;
  while (offset < to) {
    unsigned char hdr[record_header_size];
    auto n = std::fread(hdr, 1, sizeof hdr, f);
    if (n == 0 && std::ferror(f)) {
      r.error = io_error(errno, "cannot read at offset " + std::to_string(offset));
      return r;
    }
    if (n == 0)
      return r;
    if (n < sizeof hdr) {
      r.error = data_loss("truncated", offset);
      return r;
    }
    if (mask_crc(crc32c(hdr, 8)) != get_le32(hdr + 8)) {
      r.error = data_loss("corrupted", offset);
      return r;
    }
    uint64_t length = get_le64(hdr);
    auto end = offset + record_header_size + length + record_footer_size;
    if (end > known_size || end < offset) {
      if (::fstat(::fileno(f), &st) == 0)
        known_size = static_cast<uint64_t>(st.st_size);
    }
    uint64_t body = known_size > offset + record_header_size
                        ? known_size - offset - record_header_size
                        : 0;
    if (body == 0) {
      r.error = data_loss("truncated", offset);
      return r;
    }
    if (body < record_footer_size || body - record_footer_size < length) {
      r.error = data_loss("truncated", offset + record_header_size);
      return r;
    }
    payload.resize(length);
    unsigned char ftr[record_footer_size];
    if (std::fread(payload.data(), 1, length, f) != length ||
        std::fread(ftr, 1, sizeof ftr, f) != sizeof ftr) {
      r.error = data_loss("truncated", offset + record_header_size);
      return r;
    }
    if (mask_crc(crc32c(payload)) != get_le32(ftr)) {
      r.error = data_loss("corrupted", offset + record_header_size);
      return r;
    }
    caf::error err;
    bool go = each(payload, offset, err);
    if (err) {
      r.error = std::move(err);
      return r;
    }
    offset = end;
    r.end = end;
    ++r.records;
    if (!go)
      return r;
  }
  return r;
}

caf::error parse_error(uint64_t offset) {
  return make_error(error_code::data_loss,
                    "cannot parse Event at " + std::to_string(offset));
}

/// The events of `path` from `from` up to `to` (see scan_records).
scan_result scan_events(const std::string& path, uint64_t from, uint64_t to,
                        const std::function<bool(summary_event&, uint64_t)>& each) {
  return scan_records(path, from, to,
                      [&](const std::string& payload, uint64_t at, caf::error& err) {
                        auto ev = decode_event(payload);
                        if (!ev) {
                          err = parse_error(at);
                          return false;
                        }
                        return each(*ev, at);
                      });
}

scan_result scan_events(const std::string& path, uint64_t from,
                        const std::function<bool(summary_event&, uint64_t)>& each) {
  return scan_events(path, from, UINT64_MAX, each);
}

/// What the purge plan's pass needs of an event (TB-2), read from its
/// protobuf encoding without decoding its values: Event{step = 2,
/// file_version = 3, summary = 5, session_log = 7}, SessionLog{status = 1},
/// Summary{value = 1}, Summary.Value{tag = 1}.
struct event_head {
  int64_t step = 0;
  bool has_version = false;
  std::string version;
  bool has_summary = false;
  std::string_view summary;    // the last summary field's bytes
  int32_t session_status = -1; // -1: no session log
};

bool get_varint(const char*& p, const char* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end)
      return false;
    auto b = static_cast<unsigned char>(*p++);
    v |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80)
      return true;
  }
  return false;
}

/// Calls each(field, wire type, varint, bytes) for the fields of a message;
/// false when it is not well-formed (or has groups: the caller then decodes
/// the event whole).
template <class F>
bool walk_fields(std::string_view msg, F&& each) {
  const char* p = msg.data();
  const char* end = p + msg.size();
  while (p < end) {
    uint64_t key = 0, v = 0;
    if (!get_varint(p, end, key))
      return false;
    std::string_view bytes;
    switch (key & 7) {
    case 0:
      if (!get_varint(p, end, v))
        return false;
      break;
    case 1:
      if (end - p < 8)
        return false;
      p += 8;
      break;
    case 5:
      if (end - p < 4)
        return false;
      p += 4;
      break;
    case 2:
      if (!get_varint(p, end, v) || v > static_cast<uint64_t>(end - p))
        return false;
      bytes = std::string_view(p, static_cast<size_t>(v));
      p += v;
      break;
    default:
      return false;
    }
    each(key >> 3, v, bytes);
  }
  return true;
}

bool parse_head(std::string_view payload, event_head& h) {
  bool ok = true;
  bool well_formed =
      walk_fields(payload, [&](uint64_t field, uint64_t v, std::string_view bytes) {
        switch (field) {
        case 2:
          h.step = static_cast<int64_t>(v);
          break;
        case 3:
          h.has_version = true;
          h.version = std::string(bytes);
          break;
        case 5:
          h.has_summary = true;
          h.summary = bytes;
          break;
        case 7:
          h.session_status = 0;
          ok = ok && walk_fields(bytes, [&](uint64_t f, uint64_t x, std::string_view) {
                 if (f == 1)
                   h.session_status = static_cast<int32_t>(x);
               });
          break;
        default:
          break;
        }
      });
  return well_formed && ok;
}

/// The tags of a summary's values (parse_head's summary bytes).
bool summary_tags(std::string_view summary, std::vector<std::string>& tags) {
  bool ok = true;
  bool well_formed =
      walk_fields(summary, [&](uint64_t field, uint64_t, std::string_view value) {
        if (field != 1)
          return;
        std::string tag;
        ok = ok && walk_fields(value, [&](uint64_t f, uint64_t, std::string_view bytes) {
               if (f == 1)
                 tag = std::string(bytes);
             });
        tags.push_back(std::move(tag));
      });
  return well_formed && ok;
}

/// TensorBoard's ParseFileVersion: the number after the last
/// "brain.Event:", -1 when it is not one.
double parse_file_version(const std::string& v) {
  auto at = v.rfind("brain.Event:");
  auto token = at == std::string::npos ? v : v.substr(at + 12);
  const char* begin = token.c_str();
  char* end = nullptr;
  double d = std::strtod(begin, &end);
  if (end == begin)
    return -1;
  while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
    ++end;
  return *end == '\0' ? d : -1;
}

/// A value of TensorBoard's hparams plugin: its metadata names the plugin,
/// or (the writer keeps a tag's metadata only the first time, SW-7) a later
/// value of one of its tags without metadata.
bool is_hparams(const summary_value& v) {
  if (v.plugin_name == hparams_plugin_name)
    return true;
  return v.plugin_name.empty() && v.kind() == summary_kind::tensor &&
         (v.tag == hparams_experiment_tag || v.tag == hparams_session_start_tag ||
          v.tag == hparams_session_end_tag);
}

void read_hparams(run_report& rep, const summary_value& v) {
  auto data = decode_hparams(v.plugin_content);
  if (!data) // not the plugin's data (or metadata dropped): nothing to show
    return;
  switch (data->what) {
  case hparams_data::kind::session_start:
    rep.has_hparams = true;
    rep.hparams = std::move(data->hparams);
    break;
  case hparams_data::kind::experiment:
    rep.hparam_metrics = std::move(data->metrics);
    break;
  case hparams_data::kind::session_end:
    rep.hparams_end = status_name(data->status);
    break;
  }
}

void stat_file(file_report& f) {
  struct ::stat st {};
  if (::stat(f.path.c_str(), &st) == 0) {
    f.size = st.st_size;
    f.mtime = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  }
}

} // namespace

void scalar_series::start_bucket(const point& p) {
  buckets_.push_back({p, p, p, p});
}

void scalar_series::add(int64_t step, double wall, float value) {
  point p{total_++, step, wall, value};
  dirty_ = true;
  if (!thinned_) {
    steps.push_back(step);
    walls.push_back(wall);
    values.push_back(value);
    if (steps.size() <= exact_limit)
      return;
    // Too many to keep each: into buckets, half as many as may be.
    thinned_ = true;
    width_ = 1;
    while ((steps.size() + width_ - 1) / width_ > bucket_limit / 2)
      width_ *= 2;
    for (size_t i = 0; i < steps.size(); ++i) {
      point q{i, steps[i], walls[i], values[i]};
      if (i % width_ == 0) {
        start_bucket(q);
        continue;
      }
      auto& b = buckets_.back();
      if (q.value < b.low.value)
        b.low = q;
      if (q.value > b.high.value)
        b.high = q;
      b.last = q;
    }
    std::vector<int64_t>().swap(steps);
    std::vector<double>().swap(walls);
    std::vector<float>().swap(values);
    return;
  }
  if (p.index % width_ == 0) {
    if (buckets_.size() == bucket_limit) {
      // Full: pairs of buckets become one, twice as wide.
      size_t n = 0;
      for (size_t i = 0; i < buckets_.size(); i += 2, ++n) {
        auto a = buckets_[i];
        if (i + 1 < buckets_.size()) {
          auto& b = buckets_[i + 1];
          if (b.low.value < a.low.value)
            a.low = b.low;
          if (b.high.value > a.high.value)
            a.high = b.high;
          a.last = b.last;
        }
        buckets_[n] = a;
      }
      buckets_.resize(n);
      width_ *= 2;
    }
    if (p.index % width_ == 0) {
      start_bucket(p);
      return;
    }
  }
  auto& b = buckets_.back();
  if (p.value < b.low.value || std::isnan(b.low.value))
    b.low = p;
  if (p.value > b.high.value || std::isnan(b.high.value))
    b.high = p;
  b.last = p;
}

void scalar_series::settle() {
  if (!dirty_ || !thinned_)
    return;
  dirty_ = false;
  steps.clear();
  walls.clear();
  values.clear();
  for (auto& b : buckets_) {
    const point* ps[] = {&b.first, &b.low, &b.high, &b.last};
    std::sort(std::begin(ps), std::end(ps),
              [](const point* x, const point* y) { return x->index < y->index; });
    uint64_t prev = UINT64_MAX;
    for (auto* q : ps) {
      if (q->index == prev)
        continue;
      prev = q->index;
      steps.push_back(q->step);
      walls.push_back(q->wall);
      values.push_back(q->value);
    }
  }
}

void purge_plan::push(std::vector<trigger>& stack, trigger t) {
  // A trigger at a step no lower than a later one's never purges a point
  // the later one does not: only rising steps are kept.
  while (!stack.empty() && stack.back().step >= t.step)
    stack.pop_back();
  stack.push_back(t);
}

const purge_plan::trigger* purge_plan::first_after(const std::vector<trigger>& stack,
                                                   const event_position& at) {
  auto it = std::upper_bound(
      stack.begin(), stack.end(), at,
      [](const event_position& a, const trigger& t) { return a < t.at; });
  return it == stack.end() ? nullptr : &*it;
}

uint64_t purge_plan::scan(size_t file, const std::string& path, uint64_t from,
                          caf::error& damage) {
  std::vector<std::string> tags;
  auto scanned = scan_records(
      path, from, UINT64_MAX,
      [&](const std::string& payload, uint64_t at, caf::error& err) {
        event_head h;
        tags.clear();
        bool light = parse_head(payload, h);
        std::optional<summary_event> ev;
        if (!light) {
          // Not read by the light walk (groups, say): decoded whole, as the
          // second pass decodes it.
          auto decoded = decode_event(payload);
          if (!decoded) {
            err = parse_error(at);
            return false;
          }
          ev = std::move(*decoded);
          h = event_head{};
          h.step = ev->step;
          if (auto fv = caf::get_if<summary_event::file_version>(&ev->what)) {
            h.has_version = true;
            h.version = fv->version;
          } else if (auto sl = caf::get_if<summary_event::session_log>(&ev->what)) {
            h.session_status = sl->status;
          } else if (auto sm = caf::get_if<summary_event::summary>(&ev->what)) {
            h.has_summary = true;
            for (auto& v : sm->values)
              tags.push_back(v.tag);
          }
        }
        if (h.has_version) {
          has_version_ = true;
          version_ = parse_file_version(h.version);
        }
        event_position pos{file, at};
        // TensorBoard: `if self.file_version and self.file_version >= 2`.
        if (has_version_ && version_ != 0 && version_ >= 2) {
          if (h.session_status == 1) {
            restarts.push_back({pos, h.step, 0});
            push(starts_, {pos, h.step});
            if (any_summary_ && max_summary_step_ >= h.step)
              cut_ = true;
          }
        } else if (h.has_summary && h.step < last_summary_step_) {
          if (light && !summary_tags(h.summary, tags)) {
            err = parse_error(at);
            return false;
          }
          ++went_back_events;
          cut_ = true;
          for (auto& tag : tags)
            push(went_back_[tag], {pos, h.step});
        }
        if (h.has_summary) {
          last_summary_step_ = h.step;
          max_summary_step_ = any_summary_ ? std::max(max_summary_step_, h.step) : h.step;
          any_summary_ = true;
        }
        return true;
      });
  damage = std::move(scanned.error);
  return scanned.end;
}

bool purge_plan::purged(const event_position& at, int64_t step, const std::string& tag) {
  if (auto* t = first_after(starts_, at); t && t->step <= step) {
    // Counted for the first START after it at a step no higher.
    auto it = std::upper_bound(
        restarts.begin(), restarts.end(), at,
        [](const event_position& a, const restart& r) { return a < r.at; });
    for (; it != restarts.end(); ++it)
      if (it->step <= step) {
        ++it->points;
        break;
      }
    return true;
  }
  if (went_back_.empty())
    return false;
  auto w = went_back_.find(tag);
  if (w == went_back_.end())
    return false;
  if (auto* t = first_after(w->second, at); t && t->step <= step) {
    ++went_back_points;
    return true;
  }
  return false;
}

std::vector<std::string> purge_lines(const run_report& run) {
  auto points = [](size_t n) {
    return "purged " + std::to_string(n) + " point" + (n == 1 ? "" : "s") + ": ";
  };
  std::vector<std::string> lines;
  for (auto& r : run.purge.restarts)
    if (r.points > 0)
      lines.push_back(points(r.points) + "restarted at step " + std::to_string(r.step));
  if (auto n = run.purge.went_back_points; n > 0) {
    auto k = run.purge.went_back_events;
    lines.push_back(points(n) + "steps went back " + std::to_string(k) + " time" +
                    (k == 1 ? "" : "s") + " (a file without version 2)");
  }
  return lines;
}

void read_into(run_report& rep, file_report file, const selection& sel, bool keep_values,
               uint64_t to, caf::error damage) {
  if (rep.files.empty() || rep.files.back().path != file.path) {
    file.records = 0;
    file.end = 0;
    rep.files.push_back(std::move(file));
  }
  auto& f = rep.files.back();
  stat_file(f);
  event_position pos{rep.files.size() - 1, 0};
  bool purging = sel.purge_orphaned;
  auto scanned = scan_events(f.path, f.end, to, [&](summary_event& ev, uint64_t at) {
    pos.offset = at;
    if (std::isinf(rep.start_time))
      rep.start_time = ev.wall_time;
    if (auto fv = caf::get_if<summary_event::file_version>(&ev.what)) {
      f.version = fv->version;
      return true;
    }
    auto summary = caf::get_if<summary_event::summary>(&ev.what);
    if (!summary) {
      ++rep.other_events[event_name(ev.what)];
      return true;
    }
    for (auto& v : summary->values) {
      if (is_hparams(v)) {
        read_hparams(rep, v);
        continue;
      }
      if (!sel.wants_tag(v.tag))
        continue;
      if (purging && rep.purge.purged(pos, ev.step, v.tag))
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
        st.min_value = value;
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
      if (value < st.min_value || std::isnan(st.min_value))
        st.min_value = value;
      if (!keep_values)
        continue;
      struct keep {
        run_report& rep;
        const summary_event& ev;
        std::string& tag;
        void operator()(float x) { rep.scalars[tag].add(ev.step, ev.wall_time, x); }
        void operator()(const histogram_data& h) {
          rep.histograms.try_emplace(tag, histogram_limit)
              .first->second.add({ev.step, ev.wall_time, compress_histogram(h)});
        }
        void operator()(image_data& img) {
          rep.images.try_emplace(tag, image_limit)
              .first->second.add({ev.step, ev.wall_time, std::move(img)});
        }
        void operator()(const text_tensor& t) {
          rep.texts.try_emplace(tag, text_limit)
              .first->second.add({ev.step, ev.wall_time, join_strings(t.strings)});
        }
      };
      caf::visit(keep{rep, ev, v.tag}, v.value);
    }
    return true;
  });
  f.records += scanned.records;
  f.end = scanned.end;
  f.error = std::move(scanned.error);
  // Where the plan's pass stopped at a bad record, this pass stops before it.
  if (!f.error && damage && scanned.end >= to)
    f.error = std::move(damage);
  // Bytes written after the plan's pass are read next time: the file must
  // look changed then, so its size is taken as what was read.
  if (!f.error && f.size >= 0 && static_cast<int64_t>(f.end) < f.size)
    f.size = static_cast<int64_t>(f.end);
  rep.damaged = false;
  for (auto& x : rep.files)
    rep.damaged = rep.damaged || static_cast<bool>(x.error);
  for (auto& [tag, series] : rep.scalars)
    series.settle();
}

bool read_more(run_report& rep, const run_files& files, size_t first,
               const selection& sel, bool keep_values, bool stop_at_cut) {
  auto n = files.files.size();
  std::vector<uint64_t> ends(n, UINT64_MAX);
  std::vector<caf::error> damage(n);
  if (sel.purge_orphaned) {
    // The first pass: what purges points, up to where the second pass reads
    // (a file that grows in between is read on next time).
    for (size_t i = first; i < n; ++i)
      ends[i] = rep.purge.scan(i, files.files[i],
                               i < rep.files.size() ? rep.files[i].end : 0, damage[i]);
    if (rep.purge.take_cut() && stop_at_cut)
      return false;
  }
  for (size_t i = first; i < n; ++i) {
    file_report f;
    f.path = files.files[i];
    read_into(rep, std::move(f), sel, keep_values, ends[i], std::move(damage[i]));
  }
  return true;
}

run_report read_run(const run_files& files, const selection& sel, bool keep_values) {
  run_report rep;
  rep.run = files.run;
  rep.start_time = std::numeric_limits<double>::infinity();
  read_more(rep, files, 0, sel, keep_values);
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
  for (auto& r : runs)
    if (sel.wants_run(r.run))
      result.push_back(read_run(r, sel, keep_values));
  sort_by_start_time(result);
  return result;
}

std::vector<run_files> runs_by_start_time(const std::vector<run_files>& runs,
                                          const selection& sel) {
  std::vector<run_report> order;
  for (auto& r : runs) {
    if (!sel.wants_run(r.run))
      continue;
    run_report rep;
    rep.run = r.run;
    rep.start_time = std::numeric_limits<double>::infinity();
    for (auto& path : r.files) {
      scan_events(path, 0, [&](summary_event& ev, uint64_t) {
        rep.start_time = ev.wall_time;
        return false;
      });
      if (!std::isinf(rep.start_time))
        break;
    }
    order.push_back(std::move(rep));
  }
  sort_by_start_time(order);
  std::map<std::string, const run_files*> by_name;
  for (auto& r : runs)
    by_name[r.run] = &r;
  std::vector<run_files> result;
  for (auto& rep : order)
    result.push_back(*by_name.at(rep.run));
  return result;
}

std::vector<run_report>
for_each_scalar(const std::vector<run_files>& runs, const selection& sel,
                const std::function<bool(const std::string&, const std::string&, int64_t,
                                         double, float)>& each) {
  std::vector<run_report> reports;
  bool go = true;
  for (auto& r : runs_by_start_time(runs, sel)) {
    if (!go)
      break;
    run_report rep;
    rep.run = r.run;
    // When purging (TB-2), a first pass finds what purges points: the rows
    // are still written as they are read, memory bounded by the restarts.
    auto n = r.files.size();
    std::vector<uint64_t> ends(n, UINT64_MAX);
    std::vector<caf::error> damage(n);
    if (sel.purge_orphaned)
      for (size_t i = 0; i < n; ++i)
        ends[i] = rep.purge.scan(i, r.files[i], 0, damage[i]);
    for (size_t i = 0; i < n; ++i) {
      if (!go)
        break;
      file_report f;
      f.path = r.files[i];
      event_position pos{i, 0};
      auto scanned = scan_events(f.path, 0, ends[i], [&](summary_event& ev, uint64_t at) {
        auto summary = caf::get_if<summary_event::summary>(&ev.what);
        if (!summary)
          return true;
        pos.offset = at;
        for (auto& v : summary->values)
          if (auto x = caf::get_if<float>(&v.value); x && sel.wants_tag(v.tag)) {
            if (sel.purge_orphaned && rep.purge.purged(pos, ev.step, v.tag))
              continue;
            if (!(go = each(r.run, v.tag, ev.step, ev.wall_time, *x)))
              return false;
          }
        return true;
      });
      f.records = scanned.records;
      f.error = std::move(scanned.error);
      if (!f.error && damage[i] && scanned.end >= ends[i])
        f.error = std::move(damage[i]);
      rep.damaged = rep.damaged || static_cast<bool>(f.error);
      rep.files.push_back(std::move(f));
    }
    reports.push_back(std::move(rep));
  }
  return reports;
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

std::string logdir_name(const std::string& logdir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto p = fs::weakly_canonical(fs::path(logdir), ec);
  if (ec)
    p = fs::path(logdir);
  auto name = p.filename().string();
  if (name.empty() || name == "." || name == "..")
    name = p.parent_path().filename().string();
  return name.empty() ? logdir : name;
}

caf::expected<std::vector<run_files>> find_board_runs(const std::string& logdir) {
  auto runs = find_runs(logdir);
  if (!runs)
    return runs;
  auto root = std::find_if(runs->begin(), runs->end(),
                           [](const run_files& r) { return r.run == "."; });
  if (root == runs->end())
    return runs;
  auto name = logdir_name(logdir);
  auto taken = [&](const std::string& n) {
    return std::any_of(runs->begin(), runs->end(),
                       [&](const run_files& r) { return r.run == n; });
  };
  if (taken(name))
    name += " (root)";
  root->run = name;
  return runs;
}

std::vector<std::string> hparams_metrics(const std::vector<run_report>& runs) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (auto& r : runs)
    for (auto& m : r.hparam_metrics)
      if (seen.insert(m).second)
        out.push_back(m);
  if (!out.empty())
    return out;
  for (auto& r : runs)
    if (r.has_hparams)
      for (auto& [tag, st] : r.tags)
        if (st.kind == summary_kind::scalar)
          seen.insert(tag);
  return {seen.begin(), seen.end()};
}

std::vector<std::string> hparams_names(const std::vector<run_report>& runs) {
  std::set<std::string> names;
  for (auto& r : runs)
    for (auto& [name, value] : r.hparams)
      names.insert(name);
  return {names.begin(), names.end()};
}

std::string status_name(hparams_status status) {
  switch (status) {
  case hparams_status::success:
    return "success";
  case hparams_status::failure:
    return "failure";
  case hparams_status::running:
    return "running";
  case hparams_status::unknown:
    break;
  }
  return "unknown";
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
