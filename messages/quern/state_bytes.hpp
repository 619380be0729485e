#pragma once

// The bytes state is kept in: a reader's serialize_state, the rows of a
// queue in a checkpoint (docs/resume.md). state_writer appends values, and
// state_reader reads them back in the same order; nothing names the values,
// so both sides agree on the order, as a struct's fields do:
//   quern::state_writer w;
//   w.write_i64(step).write_string("train.csv").write_element(row);
//   quern::state_reader r{w.bytes(), "my state"};
//   auto step = r.read_i64(); auto file = r.read_string(); auto row = r.read_element();
//   r.expect_end();
// Integers and doubles are little-endian and fixed-width on every host.
// Bytes that do not read (cut short, a length larger than what is left, an
// unknown dtype...) throw data_loss_error `<what>: <problem> at byte <n>`,
// never more memory than the bytes given: the reader is safe on any bytes.

#include <cstdint>
#include <string>
#include <string_view>

#include "quern/element.hpp"
#include "quern/tensor.hpp"

namespace quern {

/// Appends values as bytes (see the header comment for the format).
class state_writer {
public:
  state_writer& write_u8(uint8_t v);
  state_writer& write_u32(uint32_t v);
  state_writer& write_u64(uint64_t v);
  state_writer& write_i64(int64_t v);
  /// The IEEE 754 bits of `v`, as a u64.
  state_writer& write_f64(double v);
  /// A u64 length, then the bytes.
  state_writer& write_string(std::string_view s);
  /// The dtype (its TensorFlow number, u8), the rank (u32), each dimension
  /// (i64), then the values: for a numeric or bool tensor a u64 byte count and
  /// the values' little-endian bytes, for a string tensor each string as
  /// write_string writes it.
  state_writer& write_tensor(const tensor& t);
  /// The number of components (u32), then each component as write_tensor.
  state_writer& write_element(const element& e);

  /// What was written so far.
  const std::string& bytes() const { return out_; }
  /// The bytes, moved out; the writer is empty after.
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

/// Reads what a state_writer wrote, in the same order. `what` names the
/// bytes in every error (`reader state`, `checkpoint 'ckpt/ckpt-7.quern'
/// section "queue/q"`).
class state_reader {
public:
  /// Views `bytes`, which must outlive the reader.
  state_reader(std::string_view bytes, std::string what);

  uint8_t read_u8();
  uint32_t read_u32();
  uint64_t read_u64();
  int64_t read_i64();
  double read_f64();
  std::string read_string();
  /// Refuses an unknown dtype, a negative dimension, a shape whose element
  /// count does not fit int64, a byte count other than the shape's, a bool
  /// value other than 0 or 1, and any length larger than the bytes left.
  tensor read_tensor();
  element read_element();

  /// Throws data_loss_error `<what>: <n> trailing bytes at byte <offset>`
  /// unless every byte was read.
  void expect_end() const;

  /// Bytes read so far.
  size_t offset() const { return pos_; }
  /// Bytes not read yet.
  size_t remaining() const { return bytes_.size() - pos_; }
  const std::string& what() const { return what_; }

  /// Throws data_loss_error `<what>: <problem> at byte <at>`.
  [[noreturn]] void fail(const std::string& problem, size_t at) const;
  /// The same at the current offset.
  [[noreturn]] void fail(const std::string& problem) const { fail(problem, pos_); }

private:
  /// The next n bytes, or data_loss_error naming `field`.
  const char* take(size_t n, const char* field);

  std::string_view bytes_;
  std::string what_;
  size_t pos_ = 0;
};

} // namespace quern
