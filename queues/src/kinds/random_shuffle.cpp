// RandomShuffleQueue (Q-50..Q-53): a uniformly random element, and while
// open at least min_after_dequeue of them stay behind.

#include "kind.hpp"

#include <optional>
#include <random>
#include <sstream>

#include "quern/error.hpp"

#include "row_pool.hpp"

namespace quern::detail {

namespace {

/// RandomShuffleQueue: a uniformly random stored element, removed by
/// swapping the last one into its slot. The generator is seeded from
/// (seed, seed2) when either is non-zero, else from the OS. quern uses
/// std::mt19937_64, not Philox: the order is reproducible for a seed pair,
/// not bit-identical to TensorFlow's.
///
/// With fully defined shapes the rows live in a row_pool: an enqueued batch
/// is copied in as row records, and the rows one take() picks come out as
/// one new batch (one buffer for all its components). Without
/// them (dequeue_many is refused then, Q-6) single rows are kept as
/// elements.
class shuffle_storage : public queue_storage {
public:
  explicit shuffle_storage(const queue_spec& spec) {
    if (spec.shapes_specified())
      pool_.emplace(spec.dtypes, spec.shapes);
    if (spec.seed == 0 && spec.seed2 == 0) {
      std::random_device rd;
      std::seed_seq seq{rd(), rd(), rd(), rd()};
      rng_.seed(seq);
    } else {
      std::seed_seq seq{
          static_cast<uint32_t>(spec.seed), static_cast<uint32_t>(spec.seed >> 32),
          static_cast<uint32_t>(spec.seed2), static_cast<uint32_t>(spec.seed2 >> 32)};
      rng_.seed(seq);
    }
  }

  size_t size() const override { return pool_ ? pool_->size() : rows_.size(); }

  void push(row_list& from, int64_t n) override {
    row_list taken;
    from.move_front(n, taken);
    for (const auto& r : taken.runs()) {
      if (pool_) {
        pool_->append(r.data, r.begin, r.count, r.batched);
        continue;
      }
      for (int64_t i = 0; i < r.count; ++i)
        rows_.push_back(r.row(i));
    }
  }

  void take(size_t n, row_list& out) override {
    if (pool_) {
      auto batch = pool_->take(n, [this](size_t size) { return index_below(size); });
      if (n == 1)
        out.push_back(batch.row(0));
      else
        out.push_back(row_run::batch(std::move(batch), static_cast<int64_t>(n)));
      return;
    }
    for (size_t k = 0; k < n; ++k) {
      auto i = index_below(rows_.size());
      out.push_back(std::move(rows_[i]));
      if (i + 1 != rows_.size())
        rows_[i] = std::move(rows_.back());
      rows_.pop_back();
    }
  }

  void put_back(row_list&& rows) override { push(rows, rows.size()); }
  row_list copy_rows() const override {
    row_list out;
    if (pool_) {
      if (pool_->size() > 0)
        out.push_back(
            row_run::batch(pool_->copy_all(), static_cast<int64_t>(pool_->size())));
      return out;
    }
    for (auto& e : rows_)
      out.push_back(e);
    return out;
  }
  generator_state generator() const override { return generator_state{rng_}; }
  void restore_generator(const generator_state& g) override {
    if (auto* engine = g.engine()) {
      rng_ = *engine;
      return;
    }
    std::istringstream is{g.text()};
    std::mt19937_64 rng;
    is >> rng;
    if (!is)
      throw data_loss_error("RandomShuffleQueue: the saved generator state is not one of "
                            "std::mt19937_64");
    rng_ = rng;
  }

private:
  /// A uniform index in [0, size): Lemire's multiply-shift, no division.
  size_t index_below(size_t size) {
    return static_cast<size_t>((static_cast<unsigned __int128>(rng_()) * size) >> 64);
  }

  std::optional<row_pool> pool_; // fully defined shapes
  std::vector<element> rows_;    // otherwise
  std::mt19937_64 rng_;
};

class random_shuffle : public queue_kind_rules {
public:
  const char* name() const override { return "RandomShuffleQueue"; }
  const char* default_node_name() const override { return "random_shuffle_queue"; }

  void check_options(const queue_options& opts, int32_t capacity) const override {
    if (opts.min_after_dequeue < 0)
      throw invalid_argument_error("min_after_dequeue " +
                                   std::to_string(opts.min_after_dequeue) +
                                   " must be >= 0");
    if (opts.min_after_dequeue >= capacity)
      throw invalid_argument_error("min_after_dequeue " +
                                   std::to_string(opts.min_after_dequeue) +
                                   " must be < capacity " + std::to_string(capacity));
  }

  std::unique_ptr<queue_storage> make_storage(const queue_spec& spec) const override {
    return std::make_unique<shuffle_storage>(spec);
  }

  size_t available(size_t stored, bool closed, const queue_spec& spec) const override {
    if (closed)
      return stored;
    // while open, at least min_after_dequeue elements stay behind.
    auto keep = static_cast<size_t>(spec.min_after_dequeue);
    return stored > keep ? stored - keep : 0;
  }

  void check_shared(const queue_spec& have, const queue_spec& want) const override {
    queue_kind_rules::check_shared(have, want);
    const auto& n = have.resource_name;
    if (have.min_after_dequeue != want.min_after_dequeue)
      throw invalid_argument_error("Shared queue '" + n + "' has min_after_dequeue " +
                                   std::to_string(have.min_after_dequeue) +
                                   " but requested min_after_dequeue was " +
                                   std::to_string(want.min_after_dequeue) + ".");
    if ((want.seed != 0 || want.seed2 != 0) &&
        (have.seed != want.seed || have.seed2 != want.seed2))
      throw invalid_argument_error(
          "Shared queue '" + n + "' has random seeds (" + std::to_string(have.seed) +
          ", " + std::to_string(have.seed2) + ") but requested seeds are (" +
          std::to_string(want.seed) + ", " + std::to_string(want.seed2) + ").");
  }
};

} // namespace

const queue_kind_rules& random_shuffle_rules() {
  static const random_shuffle rules;
  return rules;
}

} // namespace quern::detail
