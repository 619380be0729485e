#include "quern/queue_state.hpp"

#include <sstream>

#include "quern/error.hpp"
#include "quern/state_bytes.hpp"

namespace quern {

namespace {

int64_t rows_of(const std::vector<element>& batches) {
  int64_t n = 0;
  for (auto& b : batches)
    n += b.batch_size();
  return n;
}

/// Version 1: what encode_queue_state writes.
constexpr uint8_t queue_state_version = 1;

void write_batches(state_writer& w, const std::vector<element>& batches) {
  w.write_u64(batches.size());
  for (auto& b : batches)
    w.write_element(b);
}

std::vector<element> read_batches(state_reader& r) {
  auto n = r.read_u64();
  // Each element takes at least its 8-byte component count: a count beyond
  // what the bytes can hold is damage, not a reason to reserve.
  if (n > r.remaining() / 8)
    throw data_loss_error(r.what() + ": " + std::to_string(n) +
                          " batches cannot fit in the " + std::to_string(r.remaining()) +
                          " bytes left at byte " + std::to_string(r.offset()));
  std::vector<element> out;
  out.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    auto b = r.read_element();
    for (auto& t : b.components)
      if (t.shape().rank() == 0)
        throw data_loss_error(r.what() +
                              ": a saved batch has a scalar component at byte " +
                              std::to_string(r.offset()));
    out.push_back(std::move(b));
  }
  return out;
}

} // namespace

std::string generator_state::text() const {
  if (!engine_)
    return text_;
  std::ostringstream os;
  os << *engine_;
  return os.str();
}

int64_t queue_state::stored_rows() const {
  return rows_of(stored);
}

int64_t queue_state::waiting_rows() const {
  return rows_of(waiting);
}

std::string encode_queue_state(const queue_state& s) {
  state_writer w;
  w.write_u8(queue_state_version)
      .write_u8(s.closed ? 1 : 0)
      .write_u8(s.close_waiting ? 1 : 0)
      .write_string(s.generator.text());
  write_batches(w, s.stored);
  write_batches(w, s.waiting);
  return w.take();
}

queue_state decode_queue_state(std::string_view bytes, const std::string& what) {
  state_reader r{bytes, what};
  auto version = r.read_u8();
  if (version != queue_state_version)
    throw data_loss_error(what + ": queue state version " + std::to_string(version) +
                          ", this quern reads version " +
                          std::to_string(queue_state_version));
  queue_state s;
  auto flag = [&](const char* name) {
    auto v = r.read_u8();
    if (v > 1)
      throw data_loss_error(what + ": " + name + " is " + std::to_string(v) +
                            ", not 0 or 1, at byte " + std::to_string(r.offset() - 1));
    return v == 1;
  };
  s.closed = flag("closed");
  s.close_waiting = flag("close_waiting");
  s.generator = generator_state{r.read_string()};
  s.stored = read_batches(r);
  s.waiting = read_batches(r);
  r.expect_end();
  return s;
}

} // namespace quern
