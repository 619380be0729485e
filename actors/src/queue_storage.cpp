#include <algorithm>
#include <optional>

#include "row_pool.hpp"

#include "queue_core.hpp"

namespace quern::detail {

namespace {

/// FIFOQueue and PaddingFIFOQueue: oldest first, kept as runs so that
/// batches pass through without being split into rows.
class fifo_storage : public queue_storage {
public:
  size_t size() const override { return static_cast<size_t>(rows_.size()); }
  void push(row_list& from, int64_t n) override { from.move_front(n, rows_); }
  void take(size_t n, row_list& out) override {
    rows_.move_front(static_cast<int64_t>(n), out);
  }
  void put_back(row_list&& rows) override { rows_.prepend(std::move(rows)); }

private:
  row_list rows_;
};

/// Kinds that pick rows one by one store single rows.
class row_storage : public queue_storage {
public:
  void push(row_list& from, int64_t n) override {
    for (int64_t i = 0; i < n; ++i)
      push_row(from.pop_front());
  }
  void take(size_t n, row_list& out) override {
    for (size_t i = 0; i < n; ++i)
      out.push_back(pop());
  }
  void put_back(row_list&& rows) override { push(rows, rows.size()); }

protected:
  virtual void push_row(element e) = 0;
  virtual element pop() = 0;
};

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

private:
  /// A uniform index in [0, size): Lemire's multiply-shift, no division.
  size_t index_below(size_t size) {
    return static_cast<size_t>((static_cast<unsigned __int128>(rng_()) * size) >> 64);
  }

  std::optional<row_pool> pool_; // fully defined shapes
  std::vector<element> rows_;    // otherwise
  std::mt19937_64 rng_;
};

/// PriorityQueue: smallest int64 priority (component 0) first; a
/// binary heap, so equal priorities come out in no particular order.
class priority_storage : public row_storage {
public:
  size_t size() const override { return heap_.size(); }

protected:
  void push_row(element e) override {
    heap_.push_back(std::move(e));
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  element pop() override {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    auto e = std::move(heap_.back());
    heap_.pop_back();
    return e;
  }

private:
  static bool later(const element& a, const element& b) {
    return a.components[0].scalar_value<int64_t>() >
           b.components[0].scalar_value<int64_t>();
  }
  std::vector<element> heap_;
};

} // namespace

std::unique_ptr<queue_storage> make_storage(const queue_spec& spec) {
  switch (spec.kind) {
  case queue_kind::random_shuffle:
    return std::make_unique<shuffle_storage>(spec);
  case queue_kind::priority:
    return std::make_unique<priority_storage>();
  case queue_kind::fifo:
  case queue_kind::padding_fifo:
    break;
  }
  return std::make_unique<fifo_storage>();
}

} // namespace quern::detail
