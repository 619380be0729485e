#include <algorithm>

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
class shuffle_storage : public row_storage {
public:
  shuffle_storage(int64_t seed, int64_t seed2) {
    if (seed == 0 && seed2 == 0) {
      std::random_device rd;
      std::seed_seq seq{rd(), rd(), rd(), rd()};
      rng_.seed(seq);
    } else {
      std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                        static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32)};
      rng_.seed(seq);
    }
  }
  size_t size() const override { return elems_.size(); }

protected:
  void push_row(element e) override { elems_.push_back(std::move(e)); }
  element pop() override {
    auto i = static_cast<size_t>(rng_() % elems_.size());
    auto e = std::move(elems_[i]);
    if (i + 1 != elems_.size())
      elems_[i] = std::move(elems_.back());
    elems_.pop_back();
    return e;
  }

private:
  std::vector<element> elems_;
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
    return std::make_unique<shuffle_storage>(spec.seed, spec.seed2);
  case queue_kind::priority:
    return std::make_unique<priority_storage>();
  case queue_kind::fifo:
  case queue_kind::padding_fifo:
    break;
  }
  return std::make_unique<fifo_storage>();
}

} // namespace quern::detail
