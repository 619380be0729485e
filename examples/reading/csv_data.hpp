#pragma once
// Shared by the csv_pipeline example and bench_reading_pipeline: synthetic
// linear data y = 3 x1 - 2 x2 + 1 + noise as CSV files with a header line,
// and the reader stage of seed 003 (a text_line_reader that skips the header
// + decode_csv) as a batching source that emits decoded record batches.

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "quern/blocking_queue.hpp"
#include "quern/input/batching.hpp"
#include "quern/input/decode_csv.hpp"
#include "quern/input/readers.hpp"

namespace quern::examples {

constexpr float true_w1 = 3.0f;
constexpr float true_w2 = -2.0f;
constexpr float true_b = 1.0f;

/// Writes `files` CSV files of `rows` rows each (header `x1,x2,y`) into
/// `dir` (which must exist) and returns their paths; returns the bytes
/// written in `bytes`.
inline std::vector<std::string> write_csv_files(const std::string& dir, int files,
                                                int64_t rows, uint64_t seed,
                                                uint64_t* bytes = nullptr) {
  std::mt19937_64 gen{seed};
  std::uniform_real_distribution<float> x{-1.0f, 1.0f};
  std::normal_distribution<float> noise{0.0f, 0.1f};
  std::vector<std::string> paths;
  uint64_t total = 0;
  char line[96];
  for (int f = 0; f < files; ++f) {
    auto path = dir + "/data_" + std::to_string(f) + ".csv";
    std::string text = "x1,x2,y\n";
    text.reserve(static_cast<size_t>(rows) * 30 + 16);
    for (int64_t r = 0; r < rows; ++r) {
      auto x1 = x(gen);
      auto x2 = x(gen);
      auto y = true_w1 * x1 + true_w2 * x2 + true_b + noise(gen);
      auto n = std::snprintf(line, sizeof line, "%.6f,%.6f,%.6f\n", x1, x2, y);
      text.append(line, static_cast<size_t>(n));
    }
    std::ofstream out{path, std::ios::binary};
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out)
      throw std::runtime_error("cannot write " + path);
    total += text.size();
    paths.push_back(path);
  }
  if (bytes)
    *bytes = total;
  return paths;
}

/// The record defaults of the three float columns.
inline std::vector<tensor> csv_defaults() {
  return {tensor::vector<float>({0.0f}), tensor::vector<float>({0.0f}),
          tensor::vector<float>({0.0f})};
}

/// The signature of one decoded example: x1, x2, y (float32 scalars).
inline void set_csv_signature(batch_options& opts) {
  opts.dtypes = {dtype::float32, dtype::float32, dtype::float32};
  opts.shapes = {tensor_shape{}, tensor_shape{}, tensor_shape{}};
  opts.enqueue_many = true;
}

/// One reader worker: read_up_to(`read_batch`) lines from the files named by
/// `filenames` (skipping each file's header) and decode them into a batch
/// {x1[n], x2[n], y[n]}. Blocking: runs in its worker's own thread (the
/// example_fn of a batching helper). Throws out_of_range_error when the
/// filename queue is closed and drained.
inline example_source csv_reader_source(caf::actor_system& sys, queue_actor filenames,
                                        int64_t read_batch) {
  struct state {
    text_line_reader reader{1};
    std::unique_ptr<blocking_queue> files;
    std::vector<tensor> defaults = csv_defaults();
  };
  auto st = std::make_shared<state>();
  return example_fn{[st, &sys, filenames, read_batch]() -> element {
    if (!st->files) // created in the worker's thread, used only there
      st->files = std::make_unique<blocking_queue>(sys, filenames);
    auto records = st->reader.read_up_to(*st->files, read_batch);
    std::vector<std::string> lines;
    lines.reserve(records.size());
    for (auto& r : records)
      lines.push_back(std::move(r.value));
    return element{
        decode_csv(tensor::vector<std::string>(std::move(lines)), st->defaults)};
  }};
}

} // namespace quern::examples
