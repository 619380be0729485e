#include "quern/input/summaries.hpp"

#include <algorithm>
#include <cctype>
#include <variant>

#include "quern/pipeline.hpp"

#include "quern/error.hpp"

namespace quern {

input_summaries::input_summaries(caf::actor_system& sys) : sys_(sys) {}

input_summaries::~input_summaries() = default;

std::string input_summaries::unique_scope(const std::string& scope) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto& n = scopes_[scope];
  auto result = n == 0 ? scope : scope + "_" + std::to_string(n);
  ++n;
  // A scope_1 given explicitly later must not collide either.
  if (n > 1)
    scopes_[result] += 1;
  return result;
}

std::string input_summaries::clean_tag(const std::string& tag) {
  std::string out;
  out.reserve(tag.size());
  for (char c : tag) {
    auto u = static_cast<unsigned char>(c);
    out.push_back(std::isalnum(u) || c == '_' || c == '-' || c == '/' || c == '.' ? c
                                                                                  : '_');
  }
  auto first = out.find_first_not_of('/');
  return first == std::string::npos ? std::string{} : out.substr(first);
}

std::string input_summaries::add_fraction_full(queue_actor q, const std::string& scope,
                                               int32_t capacity, std::string name) {
  if (name.empty())
    name = "fraction_of_" + std::to_string(capacity) + "_full";
  auto tag = clean_tag(scope + "/" + name);
  std::lock_guard<std::mutex> guard{mtx_};
  entries_.push_back(entry{tag, std::make_unique<blocking_queue>(sys_, std::move(q)),
                           capacity, 0, false});
  return tag;
}

std::string input_summaries::add_fraction_over(queue_actor q, const std::string& scope,
                                               int32_t capacity,
                                               int32_t min_after_dequeue) {
  auto tag = clean_tag(scope + "/fraction_over_" + std::to_string(min_after_dequeue) +
                       "_of_" + std::to_string(capacity - min_after_dequeue) + "_full");
  std::lock_guard<std::mutex> guard{mtx_};
  entries_.push_back(entry{tag, std::make_unique<blocking_queue>(sys_, std::move(q)),
                           capacity, min_after_dequeue, true});
  return tag;
}

std::vector<std::string> input_summaries::tags() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<std::string> result;
  for (auto& e : entries_)
    result.push_back(e.tag);
  return result;
}

std::vector<std::pair<std::string, float>> input_summaries::values() {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<std::pair<std::string, float>> result;
  for (auto& e : entries_) {
    auto size = e.queue->size();
    float value;
    if (e.over) {
      // float32(max(0, size - m)) * float32(1 / (c - m))  (IN-12)
      auto excess = std::max<int32_t>(0, size - e.min_after_dequeue);
      value =
          static_cast<float>(excess) *
          static_cast<float>(1.0 / static_cast<double>(e.capacity - e.min_after_dequeue));
    } else {
      // float32(size) * float32(1 / capacity)  (IN-2, IN-10)
      value = static_cast<float>(size) *
              static_cast<float>(1.0 / static_cast<double>(e.capacity));
    }
    result.emplace_back(e.tag, value);
  }
  return result;
}

void input_summaries::write(summary_writer& writer, int64_t step) {
  for (auto& [tag, value] : values())
    writer.scalar(tag, value, step);
  pipeline* pipe = nullptr;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (telemetry_ == nullptr)
      return;
    auto now = std::chrono::steady_clock::now(); // one clock read per write
    if (now - telemetry_last_ < telemetry_every_)
      return;
    telemetry_last_ = now;
    pipe = telemetry_;
  }
  auto t = pipe->telemetry();
  for (auto& [tag, value] : telemetry_values(t))
    writer.scalar(tag, value, step);
  writer.text("pipeline/verdict", t.verdict, step);
  // The structure only when it changed (an input edge is known once a
  // worker has waited for it), so that it costs nothing run after run.
  auto graph = telemetry_graph(t);
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (graph == telemetry_graph_)
      return;
    telemetry_graph_ = graph;
  }
  writer.text("pipeline/graph", graph, step);
}

void input_summaries::add_telemetry(pipeline& pipe, caf::timespan every) {
  if (every < caf::timespan{0})
    throw invalid_argument_error("input_summaries::add_telemetry: the interval must not "
                                 "be negative");
  std::lock_guard<std::mutex> guard{mtx_};
  telemetry_ = &pipe;
  telemetry_every_ = every;
  telemetry_graph_.clear();
  telemetry_last_ = std::chrono::steady_clock::now();
}

std::vector<std::pair<std::string, float>>
input_summaries::telemetry_values(const pipeline_telemetry& t) {
  std::vector<std::pair<std::string, float>> out;
  auto add = [&out](const std::string& prefix, const char* name, double v) {
    out.emplace_back(clean_tag(prefix + "/" + name), static_cast<float>(v));
  };
  for (auto& c : t.consumers) {
    auto p = "consumer/" + c.queue;
    add(p, "wait_fraction", c.wait_fraction);
    add(p, "wait_seconds", c.dequeues > 0 ? c.wait_seconds / c.dequeues : 0.0);
    add(p, "steps_per_second", t.span_seconds > 0 ? c.dequeues / t.span_seconds : 0.0);
  }
  auto stage = [&add](const std::string& p, double busy, double input, double room,
                      double rows) {
    add(p, "busy", busy);
    add(p, "waiting_for_input", input);
    add(p, "waiting_for_room", room);
    add(p, "rows_per_second", rows);
  };
  for (auto& r : t.runners) {
    stage("runner/" + r.name, r.busy, r.waiting_for_input, r.waiting_for_room,
          r.rows_per_second);
    add("runner/" + r.name, "limiting", r.name == t.limiting_stage ? 1.0 : 0.0);
    for (auto& w : r.workers)
      stage("worker/" + w.name, w.busy, w.waiting_for_input, w.waiting_for_room,
            w.rows_per_second);
  }
  for (auto& q : t.queues) {
    auto p = "queue/" + q.name;
    add(p, "fill", q.fill);
    add(p, "enqueue_rate", q.enqueue_rate);
    add(p, "dequeue_rate", q.dequeue_rate);
    add(p, "enqueue_wait_seconds", q.enqueue_wait_seconds);
    add(p, "dequeue_wait_seconds", q.dequeue_wait_seconds);
  }
  return out;
}

namespace {

/// `s` as a JSON string (quotes, backslashes and control characters
/// escaped; other bytes as they are, UTF-8 passing through).
std::string json_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      static const char* hex = "0123456789abcdef";
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? "," : "") + items[i];
  return out + "]";
}

} // namespace

std::string input_summaries::telemetry_graph(const pipeline_telemetry& t) {
  std::vector<std::string> stages;
  for (auto& r : t.runners) {
    std::vector<std::string> workers;
    for (auto& w : r.workers)
      workers.push_back(json_quoted(w.name));
    stages.push_back("{\"name\":" + json_quoted(r.name) +
                     ",\"tag\":" + json_quoted(clean_tag("runner/" + r.name)) +
                     ",\"input\":" + json_quoted(r.input_queue) + ",\"queue\":" +
                     json_quoted(r.queue) + ",\"workers\":" + json_list(workers) + "}");
  }
  std::vector<std::string> queues;
  for (auto& q : t.queues)
    queues.push_back("{\"name\":" + json_quoted(q.name) +
                     ",\"tag\":" + json_quoted(clean_tag("queue/" + q.name)) +
                     ",\"capacity\":" + std::to_string(q.capacity) + "}");
  std::vector<std::string> consumers;
  for (auto& c : t.consumers)
    consumers.push_back("{\"queue\":" + json_quoted(c.queue) + ",\"tag\":" +
                        json_quoted(clean_tag("consumer/" + c.queue)) + "}");
  return "{\"stages\":" + json_list(stages) + ",\"queues\":" + json_list(queues) +
         ",\"consumers\":" + json_list(consumers) + "}";
}

void log_pipeline_settings(summary_writer& writer, const pipeline& pipe,
                           const std::vector<std::string>& metrics,
                           const hparam_list& more) {
  hparam_list all;
  for (auto& [name, value] : pipe.settings())
    all.emplace_back(name,
                     std::visit([](const auto& v) { return hparam_value{v}; }, value));
  all.insert(all.end(), more.begin(), more.end());
  writer.hparams(all, metrics);
}

} // namespace quern
