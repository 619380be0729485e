#pragma once
// Shared by the csv_pipeline example and bench_reading_pipeline: synthetic
// linear data y = 3 x1 - 2 x2 + 1 + noise as CSV files with a header line,
// and the input guide's reader stage (a text_line_reader that skips the
// header + decode_csv: quern::csv_source) as a batching source.

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>

#include "quern/input/batching.hpp"
#include "quern/input/csv_source.hpp"
#include "quern/state_bytes.hpp"

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

/// The signature of one decoded example: x1, x2, y (float32 scalars), for
/// sources that carry none (the benchmark's synthetic one).
inline void set_csv_signature(batch_options& opts) {
  opts.dtypes = {dtype::float32, dtype::float32, dtype::float32};
  opts.shapes = {tensor_shape{}, tensor_shape{}, tensor_shape{}};
  opts.enqueue_many = true;
}

/// The flagship's reader stage: text_line_reader(skip_header_lines = 1) +
/// decode_csv of the three float columns, `read_batch` lines per call.
inline example_source csv_reader_source(caf::actor_system& sys, queue_actor filenames,
                                        int64_t read_batch) {
  csv_source_options ro;
  ro.skip_header_lines = 1;
  ro.read_batch = read_batch;
  return csv_source(sys, std::move(filenames), csv_defaults(), ro);
}

/// The model the flagship trains: y = w1 x1 + w2 x2 + b, by SGD on the mean
/// squared error of each batch.
struct linear_model {
  double w1 = 0;
  double w2 = 0;
  double b = 0;

  /// The weights as a checkpoint part's bytes, and back.
  std::string save() const {
    state_writer out;
    out.write_f64(w1).write_f64(w2).write_f64(b);
    return out.take();
  }
  void restore(const std::string& bytes) {
    state_reader in{bytes, "the model's checkpoint"};
    w1 = in.read_f64();
    w2 = in.read_f64();
    b = in.read_f64();
    in.expect_end();
  }

  /// One step on a batch of columns (x1, x2, y); returns the batch's loss
  /// before the step.
  double step(const element& batch, double learning_rate) {
    auto x1 = batch[0].values<float>();
    auto x2 = batch[1].values<float>();
    auto y = batch[2].values<float>();
    auto n = static_cast<double>(y.size());
    double g1 = 0, g2 = 0, gb = 0, loss = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      double err = w1 * x1[i] + w2 * x2[i] + b - y[i];
      loss += err * err;
      g1 += err * x1[i];
      g2 += err * x2[i];
      gb += err;
    }
    w1 -= learning_rate * 2 * g1 / n;
    w2 -= learning_rate * 2 * g2 / n;
    b -= learning_rate * 2 * gb / n;
    return loss / n;
  }
};

} // namespace quern::examples
