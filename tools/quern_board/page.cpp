#include "page.hpp"

#include <cstring>

#include "quern/error.hpp"
#include "text.hpp"

namespace quern::board {

namespace embedded {
extern const char* const dygraph_js;
extern const char* const dygraph_css;
extern const char* const marked_js;
extern const char* const purify_js;
extern const char* const dagre_js;
extern const char* const page_js;
extern const char* const page_css;
} // namespace embedded

namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

// A 64-bit pattern as the differences of its high and its low 32 bits from
// the previous one: zigzag(low difference) * 2 + (high changed), then the
// high difference only when it changed. Neighbouring steps and wall times
// share their high bits, so most points cost the low difference alone, and
// the page decodes every number exactly (all below 2^53).
class pair_encoder {
public:
  void put(std::string& out, uint64_t bits, bool signed_hi) {
    int64_t hi = signed_hi
                     ? int64_t{static_cast<int32_t>(static_cast<uint32_t>(bits >> 32))}
                     : static_cast<int64_t>(bits >> 32);
    auto lo = static_cast<int64_t>(bits & 0xffffffffu);
    bool hi_changed = hi != prev_hi_;
    put_varint(out, zigzag(lo - prev_lo_) * 2 + (hi_changed ? 1 : 0));
    if (hi_changed)
      put_varint(out, zigzag(hi - prev_hi_));
    prev_hi_ = hi;
    prev_lo_ = lo;
  }

private:
  int64_t prev_hi_ = 0;
  int64_t prev_lo_ = 0;
};

// Steps: exact for every int64 (the high half signed).
std::string encode_steps(const std::vector<int64_t>& steps) {
  std::string out;
  pair_encoder enc;
  for (auto s : steps)
    enc.put(out, static_cast<uint64_t>(s), true);
  return out;
}

// Wall times: the bit patterns of the doubles, exactly.
std::string encode_walls(const std::vector<double>& walls) {
  std::string out;
  pair_encoder enc;
  for (auto w : walls) {
    uint64_t bits;
    std::memcpy(&bits, &w, sizeof bits);
    enc.put(out, bits, false);
  }
  return out;
}

// Values: the float32 bytes, little-endian (exact, as written).
std::string encode_values(const std::vector<float>& values) {
  std::string out;
  out.reserve(values.size() * 4);
  for (auto v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 4; ++i)
      out += static_cast<char>((bits >> (8 * i)) & 0xff);
  }
  return out;
}

std::string relative_path(const std::string& path, const std::string& logdir) {
  auto prefix = logdir;
  while (prefix.size() > 1 && prefix.back() == '/')
    prefix.pop_back();
  prefix += '/';
  if (path.compare(0, prefix.size(), prefix) == 0)
    return path.substr(prefix.size());
  return path;
}

std::string image_mime(const image_data& img) {
  auto& e = img.encoded;
  if (e.size() >= 8 && e.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0)
    return "image/png";
  if (e.size() >= 3 && e.compare(0, 3, "\xff\xd8\xff") == 0)
    return "image/jpeg";
  if (e.size() >= 6 && (e.compare(0, 6, "GIF87a") == 0 || e.compare(0, 6, "GIF89a") == 0))
    return "image/gif";
  return "application/octet-stream";
}

// The runs: names, start times, files, problems (what `inspect` reports as
// wrong) and other events, as a JSON array.
std::string runs_json(const std::vector<run_report>& runs, const page_options& opt) {
  std::string out = "[";
  for (size_t r = 0; r < runs.size(); ++r) {
    auto& rep = runs[r];
    out += r ? "," : "";
    out += "{\"name\":" + json_string(rep.run) +
           ",\"start\":" + json_number(rep.start_time) + ",\"files\":[";
    for (size_t i = 0; i < rep.files.size(); ++i) {
      auto& f = rep.files[i];
      out += i ? "," : "";
      out += "{\"path\":" + json_string(relative_path(f.path, opt.logdir)) +
             ",\"records\":" + std::to_string(f.records) +
             ",\"version\":" + json_string(f.version) + "}";
    }
    // What `inspect` reports as wrong: damaged records and steps going back.
    out += "],\"problems\":[";
    bool first = true;
    for (auto& f : rep.files) {
      if (!f.error)
        continue;
      out += first ? "" : ",";
      first = false;
      out += json_string(relative_path(f.path, opt.logdir) + ": DAMAGED: " +
                         render(f.error) + " (" + std::to_string(f.records) + " record" +
                         (f.records == 1 ? "" : "s") + " read before it)");
    }
    for (auto& [tag, st] : rep.tags) {
      if (st.out_of_order == 0)
        continue;
      out += first ? "" : ",";
      first = false;
      out += json_string(tag + ": out-of-order steps " + std::to_string(st.out_of_order));
    }
    // TensorBoard's hparams (TB-1): values by name, the declared metrics,
    // the end status; none: no "hparams" member.
    if (rep.has_hparams) {
      out += "],\"hparams\":{";
      for (size_t i = 0; i < rep.hparams.size(); ++i) {
        auto& [name, v] = rep.hparams[i];
        out += i ? "," : "";
        out += json_string(name) + ":" +
               (v.kind() == hparam_value::type::string ? json_string(v.string())
                : v.kind() == hparam_value::type::boolean
                    ? std::string(v.boolean() ? "true" : "false")
                    : json_number(v.number()));
      }
      out += "},\"metrics\":[";
      for (size_t i = 0; i < rep.hparam_metrics.size(); ++i)
        out += (i ? "," : "") + json_string(rep.hparam_metrics[i]);
      out += "],\"ended\":" + json_string(rep.hparams_end);
    }
    out += (rep.has_hparams ? "" : "]") + std::string(",\"purged\":[");
    // What a restart purged (TB-2), as inspect says it.
    auto purged = purge_lines(rep);
    for (size_t i = 0; i < purged.size(); ++i)
      out += (i ? "," : "") + json_string(purged[i]);
    out += "],\"other\":{";
    first = true;
    for (auto& [name, count] : rep.other_events) {
      out += first ? "" : ",";
      first = false;
      out += json_string(name) + ":" + std::to_string(count);
    }
    out += "}}";
  }
  return out + "]";
}

// One scalar series from point `from` on.
std::string series_json(size_t run, const std::string& tag, const scalar_series& s,
                        size_t from) {
  auto tail = [from](const auto& v) {
    return std::vector<typename std::decay_t<decltype(v)>::value_type>(v.begin() + from,
                                                                       v.end());
  };
  // A thinned series says how many points it stands for.
  return "{\"run\":" + std::to_string(run) + ",\"tag\":" + json_string(tag) +
         (s.thinned() ? ",\"total\":" + std::to_string(s.total()) : std::string{}) +
         ",\"n\":" + std::to_string(s.steps.size() - from) + ",\"steps\":\"" +
         base64(encode_steps(tail(s.steps))) + "\",\"walls\":\"" +
         base64(encode_walls(tail(s.walls))) + "\",\"values\":\"" +
         base64(encode_values(tail(s.values))) + "\"}";
}

} // namespace

std::string page_data(const std::vector<run_report>& runs, const page_options& opt,
                      const std::string& version) {
  std::string out = "{\"title\":" + json_string(opt.title) +
                    ",\"live\":" + (opt.live ? "true" : "false") +
                    ",\"reload\":" + std::to_string(opt.reload_ms) +
                    ",\"version\":" + json_string(version) + ",\"runs\":";
  out += runs_json(runs, opt);
  out += ",\"scalars\":[";
  bool first = true;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (auto& [tag, s] : runs[r].scalars) {
      out += first ? "" : ",";
      first = false;
      out += series_json(r, tag, s, 0);
    }
  }
  out += "],\"histograms\":[";
  first = true;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (auto& [tag, points] : runs[r].histograms) {
      out += first ? "" : ",";
      first = false;
      out += "{\"run\":" + std::to_string(r) + ",\"tag\":" + json_string(tag) +
             ",\"points\":[";
      auto items = points.items();
      for (size_t i = 0; i < items.size(); ++i) {
        out += i ? "," : "";
        out += "[" + std::to_string(items[i]->step) + "," + json_number(items[i]->wall);
        for (double b : items[i]->value)
          out += "," + json_number(b);
        out += "]";
      }
      out += "]}";
    }
  }
  out += "],\"texts\":[";
  first = true;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (auto& [tag, points] : runs[r].texts) {
      out += first ? "" : ",";
      first = false;
      out += "{\"run\":" + std::to_string(r) + ",\"tag\":" + json_string(tag) +
             ",\"points\":[";
      auto items = points.items();
      for (size_t i = 0; i < items.size(); ++i) {
        out += i ? "," : "";
        out += "[" + std::to_string(items[i]->step) + "," + json_number(items[i]->wall) +
               "," + json_string(items[i]->value) + "]";
      }
      out += "]}";
    }
  }
  out += "],\"images\":[";
  first = true;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (auto& [tag, points] : runs[r].images) {
      out += first ? "" : ",";
      first = false;
      out += "{\"run\":" + std::to_string(r) + ",\"tag\":" + json_string(tag) +
             ",\"points\":[";
      auto items = points.items();
      for (size_t i = 0; i < items.size(); ++i) {
        auto& img = items[i]->value;
        out += i ? "," : "";
        out += "[" + std::to_string(items[i]->step) + "," + json_number(items[i]->wall) +
               "," + std::to_string(img.width) + "," + std::to_string(img.height) +
               ",\"data:" + image_mime(img) + ";base64," + base64(img.encoded) + "\"]";
      }
      out += "]}";
    }
  }
  out += "]}";
  return out;
}

namespace {

template <class T>
bool same_prefix(const std::vector<T>& now, const std::vector<T>& before) {
  return now.size() >= before.size() &&
         (before.empty() ||
          std::memcmp(now.data(), before.data(), before.size() * sizeof(T)) == 0);
}

template <class M>
bool same_sizes(const M& a, const M& b) {
  if (a.size() != b.size())
    return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
    if (i->first != j->first || i->second.total() != j->second.total())
      return false;
  return true;
}

} // namespace

std::string page_delta(const std::vector<run_report>& before,
                       const std::vector<run_report>& now, const page_options& opt,
                       const std::string& base, const std::string& version) {
  // Only points appended to series the page has: anything else (a new run,
  // tag, histogram, text or image, a file rewritten) needs the whole data.
  if (before.size() != now.size())
    return {};
  for (size_t r = 0; r < now.size(); ++r) {
    auto& b = before[r];
    auto& n = now[r];
    if (b.run != n.run || b.scalars.size() != n.scalars.size() ||
        !same_sizes(b.histograms, n.histograms) || !same_sizes(b.texts, n.texts) ||
        !same_sizes(b.images, n.images))
      return {};
    for (auto i = b.scalars.begin(), j = n.scalars.begin(); i != b.scalars.end();
         ++i, ++j)
      if (i->first != j->first || i->second.thinned() || j->second.thinned() ||
          !same_prefix(j->second.steps, i->second.steps) ||
          !same_prefix(j->second.walls, i->second.walls) ||
          !same_prefix(j->second.values, i->second.values))
        return {};
  }
  std::string out = "{\"version\":" + json_string(version) +
                    ",\"base\":" + json_string(base) +
                    ",\"runs\":" + runs_json(now, opt) + ",\"append\":[";
  bool first = true;
  for (size_t r = 0; r < now.size(); ++r) {
    auto i = before[r].scalars.begin();
    for (auto& [tag, s] : now[r].scalars) {
      size_t from = (i++)->second.steps.size();
      if (from == s.steps.size())
        continue;
      out += first ? "" : ",";
      first = false;
      out += series_json(r, tag, s, from);
    }
  }
  return out + "]}";
}

std::string render_page(const std::vector<run_report>& runs, const page_options& opt,
                        const std::string& version) {
  return render_page_with(page_data(runs, opt, version), opt);
}

std::string render_page_with(const std::string& data, const page_options& opt) {
  // Nothing may leave the page: the policy blocks (and the browser reports)
  // any load but inline code, inline styles and data: images; a served page
  // may also ask its own server for new data.
  std::string csp = "default-src 'none'; script-src 'unsafe-inline'; style-src "
                    "'unsafe-inline'; img-src data: blob:";
  if (opt.live)
    csp += "; connect-src 'self'";
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"" + csp + "\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<link rel=\"icon\" href=\"data:,\">\n";
  out += "<title>" + html_escape(opt.title) + " - quern-board</title>\n";
  out += "<style>\n";
  out += embedded::dygraph_css;
  out += "\n";
  out += embedded::page_css;
  out += "</style>\n</head>\n<body>\n";
  out += "<header><h1>" + html_escape(opt.title) +
         "</h1><span id=\"status\"></span></header>\n";
  out += "<div id=\"controls\"></div>\n<div id=\"runs\"></div>\n<div "
         "id=\"hparams\"></div>\n<main "
         "id=\"cards\"></main>\n";
  out += "<script type=\"application/json\" id=\"quern-data\">";
  out += data;
  out += "</script>\n<script>\n";
  out += embedded::dygraph_js;
  out += "\n</script>\n<script>\n";
  out += embedded::marked_js;
  out += "\n</script>\n<script>\n";
  // Debian's node-dompurify 2.4.1+dfsg-2+deb12u1 (its fix for deep nesting)
  // reads an undeclared `shadowNode` in sanitize(), which throws a
  // ReferenceError for any text with a '<'. Declared here, around the
  // library, with no depth, that stray check does nothing; the nesting
  // checks of its node loop still act (and the page appends the sanitized
  // nodes, never parsing them again).
  out += "(function () {\nvar shadowNode = {};\n";
  out += embedded::purify_js;
  out += "\n}).call(window);\n</script>\n<script>\n";
  out += embedded::dagre_js;
  out += "\n</script>\n<script>\n";
  out += embedded::page_js;
  out += "\n</script>\n</body>\n</html>\n";
  return out;
}

} // namespace quern::board
