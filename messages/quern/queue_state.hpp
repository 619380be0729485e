#pragma once

// What a queue holds at a checkpoint (docs/resume.md): the rows it stores, the
// rows of the enqueues waiting for room, whether it is closed, and its random
// generator. A queue of this process answers snapshot with it and takes it back
// with restore (checkpoint_queue_actor, quern/interfaces.hpp); the pipeline
// writes it to a checkpoint file.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/none.hpp>

#include "quern/element.hpp"

namespace quern {

/// A RandomShuffleQueue's generator at a checkpoint: std::mt19937_64 in its
/// own text form (`operator<<`). A queue of this process keeps a copy of the
/// engine and leaves the text to whoever reads it (the checkpoint file's
/// writer thread, or the state crossing processes): writing the text took
/// four fifths of a shuffle queue's snapshot, while every runner waited.
class generator_state {
public:
  /// None: the queue's kind has no generator.
  generator_state() = default;
  /// The text of a file or of another process (checked when restored).
  explicit generator_state(std::string text) : text_(std::move(text)) {}
  /// A copy of a queue's engine.
  explicit generator_state(const std::mt19937_64& engine) : engine_(engine) {}

  bool empty() const noexcept { return !engine_ && text_.empty(); }
  /// The text form (written now when it holds an engine).
  std::string text() const;
  /// The engine, when copied from a queue of this process (else nullptr:
  /// read it from text()).
  const std::mt19937_64* engine() const noexcept { return engine_ ? &*engine_ : nullptr; }

  /// As text: across processes the state is its text form.
  template <class Inspector>
  friend std::enable_if_t<Inspector::reads_state, typename Inspector::result_type>
  inspect(Inspector& f, generator_state& x) {
    auto text = x.text();
    return f(text);
  }
  template <class Inspector>
  friend std::enable_if_t<Inspector::writes_state, typename Inspector::result_type>
  inspect(Inspector& f, generator_state& x) {
    std::string text;
    return f(text, caf::meta::load_callback([&]() -> caf::error {
               x = generator_state{std::move(text)};
               return caf::none;
             }));
  }

private:
  std::string text_;
  std::optional<std::mt19937_64> engine_;
};

struct queue_state {
  /// The rows stored, as batches (every component has a leading dimension),
  /// in the queue's own order: restored in this order, a FIFO hands them out
  /// in the same order, a shuffle queue's storage and a priority queue's heap
  /// are laid out as they were.
  std::vector<element> stored;
  /// The rows of enqueues that waited for room, as batches, in the order
  /// they would have been stored. A restored queue stores them as room frees,
  /// before anything enqueued after the restore; a non-cancelling close that
  /// waited behind them (`close_waiting`) takes effect after them.
  std::vector<element> waiting;
  bool close_waiting = false;
  bool closed = false;
  /// A RandomShuffleQueue's generator, so that a restored queue picks what
  /// the unbroken one would have picked; empty for the other kinds.
  generator_state generator;

  int64_t stored_rows() const;
  int64_t waiting_rows() const;

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, queue_state& x) {
    return f(caf::meta::type_name("quern::queue_state"), x.stored, x.waiting,
             x.close_waiting, x.closed, x.generator);
  }
};

/// The bytes of a queue_state in a checkpoint file (docs/resume.md): a
/// format version, closed, close_waiting, the generator, then the stored
/// and the waiting batches (state_writer's elements).
std::string encode_queue_state(const queue_state& s);
/// Reads encode_queue_state's bytes; throws data_loss_error naming `what`
/// (the queue) and the problem.
queue_state decode_queue_state(std::string_view bytes, const std::string& what);

} // namespace quern
