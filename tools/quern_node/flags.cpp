#include "flags.hpp"

#include <cctype>
#include <charconv>
#include <climits>
#include <optional>
#include <vector>

#include "quern/dtype.hpp"
#include "quern/error.hpp"
#include "quern/queue.hpp"

namespace quern::node_tool {

namespace {

[[noreturn]] void bad(const std::string& flag, const std::string& text,
                      const std::string& why, const char* form) {
  throw invalid_argument_error(flag + " '" + text + "': " + why + " (expected " + form +
                               ")");
}

constexpr const char* queue_form =
    "NAME:KIND:CAPACITY:COMPONENTS[:OPTION=VALUE,...], e.g. "
    "examples:fifo:1000:float32[3],int64[]";

// Splits at `sep` outside brackets.
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts{""};
  int depth = 0;
  for (char c : s) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c == sep && depth == 0)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

// A whole decimal integer (sign allowed), or nothing.
template <class T>
std::optional<T> integer(const std::string& s) {
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty())
    return std::nullopt;
  return value;
}

queue_kind kind_of(const std::string& k, const std::string& text) {
  if (k == "fifo")
    return queue_kind::fifo;
  if (k == "random_shuffle" || k == "shuffle")
    return queue_kind::random_shuffle;
  if (k == "padding_fifo" || k == "padding")
    return queue_kind::padding_fifo;
  if (k == "priority")
    return queue_kind::priority;
  bad("--queue", text,
      "unknown kind '" + k + "' (fifo, random_shuffle, padding_fifo or priority)",
      queue_form);
}

// `float32[3]`: its dtype and, when it has brackets, its shape.
void add_component(queue_options& o, bool& any_shape, bool& no_shape,
                   const std::string& c, const std::string& text) {
  auto open = c.find('[');
  auto type = c.substr(0, open);
  try {
    o.dtypes.push_back(dtype_from_name(type));
  } catch (const op_error&) {
    bad("--queue", text, "unknown dtype '" + type + "'", queue_form);
  }
  if (open == std::string::npos) {
    no_shape = true;
    return;
  }
  any_shape = true;
  if (c.back() != ']')
    bad("--queue", text, "component '" + c + "' has no closing ']'", queue_form);
  std::vector<int64_t> dims;
  auto inside = c.substr(open + 1, c.size() - open - 2);
  if (!inside.empty())
    for (auto& d : split(inside, ',')) {
      auto v = integer<int64_t>(d);
      if (!v || *v < -1)
        bad("--queue", text, "dimension '" + d + "' of '" + c + "' is not a size or -1",
            queue_form);
      dims.push_back(*v);
    }
  o.shapes.emplace_back(std::move(dims));
}

} // namespace

queue_flag parse_queue_flag(const std::string& text) {
  auto parts = split(text, ':');
  if (parts.size() < 4 || parts.size() > 5)
    bad("--queue", text,
        "it has " + std::to_string(parts.size()) + " ':'-separated parts", queue_form);
  queue_flag q;
  q.name = parts[0];
  if (q.name.empty())
    bad("--queue", text, "no name", queue_form);
  q.kind = kind_of(parts[1], text);
  if (parts[2] == "unbounded") {
    q.options.capacity = -1;
  } else if (auto c = integer<int32_t>(parts[2])) {
    q.options.capacity = *c;
  } else {
    bad("--queue", text, "capacity '" + parts[2] + "' is not a number", queue_form);
  }
  bool any_shape = false;
  bool no_shape = false;
  if (parts[3].empty())
    bad("--queue", text, "no components", queue_form);
  for (auto& c : split(parts[3], ','))
    add_component(q.options, any_shape, no_shape, c, text);
  if (any_shape && no_shape)
    bad("--queue", text, "some components have a shape and others not: give all or none",
        queue_form);
  if (parts.size() == 5)
    for (auto& kv : split(parts[4], ',')) {
      auto eq = kv.find('=');
      auto key = kv.substr(0, eq);
      auto value = eq == std::string::npos ? std::optional<int64_t>{}
                                           : integer<int64_t>(kv.substr(eq + 1));
      if (!value)
        bad("--queue", text, "option '" + kv + "' is not OPTION=NUMBER", queue_form);
      if (key == "min_after_dequeue" && *value >= INT32_MIN && *value <= INT32_MAX)
        q.options.min_after_dequeue = static_cast<int32_t>(*value);
      else if (key == "seed")
        q.options.seed = *value;
      else if (key == "seed2")
        q.options.seed2 = *value;
      else
        bad("--queue", text,
            "unknown option '" + key + "' (min_after_dequeue, seed, seed2)", queue_form);
    }
  q.options.name = q.name;
  return q;
}

writer_flag parse_writer_flag(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    bad("--writer", text, "no NAME=LOGDIR", "NAME=LOGDIR, e.g. train=runs/chief");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::string describe(const queue_flag& q) {
  auto& o = q.options;
  std::string s = queue_kind_name(q.kind);
  s += o.capacity < 0 ? ", unbounded" : ", capacity " + std::to_string(o.capacity);
  for (size_t i = 0; i < o.dtypes.size(); ++i)
    s += std::string(", ") + dtype_name(o.dtypes[i]) +
         (o.shapes.empty() ? std::string() : o.shapes[i].to_string());
  if (q.kind == queue_kind::random_shuffle)
    s += ", min_after_dequeue " + std::to_string(o.min_after_dequeue);
  return s;
}

} // namespace quern::node_tool
