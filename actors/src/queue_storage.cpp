#include <algorithm>

#include "queue_core.hpp"

namespace quern::detail {

namespace {

/// FIFOQueue and PaddingFIFOQueue: oldest first.
class fifo_storage : public queue_storage {
public:
  size_t size() const override { return elems_.size(); }
  void push(element e) override { elems_.push_back(std::move(e)); }
  element pop() override {
    auto e = std::move(elems_.front());
    elems_.pop_front();
    return e;
  }
  void put_back(std::vector<element> rows) override {
    elems_.insert(elems_.begin(), std::make_move_iterator(rows.begin()),
                  std::make_move_iterator(rows.end()));
  }

private:
  std::deque<element> elems_;
};

/// RandomShuffleQueue: a uniformly random stored element, removed by
/// swapping the last one into its slot. The generator is seeded from
/// (seed, seed2) when either is non-zero, else from the OS. quern uses
/// std::mt19937_64, not Philox: the order is reproducible for a seed pair,
/// not bit-identical to TensorFlow's.
class shuffle_storage : public queue_storage {
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
  void push(element e) override { elems_.push_back(std::move(e)); }
  element pop() override {
    auto i = static_cast<size_t>(rng_() % elems_.size());
    auto e = std::move(elems_[i]);
    if (i + 1 != elems_.size())
      elems_[i] = std::move(elems_.back());
    elems_.pop_back();
    return e;
  }
  void put_back(std::vector<element> rows) override {
    for (auto& r : rows)
      elems_.push_back(std::move(r));
  }

private:
  std::vector<element> elems_;
  std::mt19937_64 rng_;
};

/// PriorityQueue: smallest int64 priority (component 0) first; a
/// binary heap, so equal priorities come out in no particular order.
class priority_storage : public queue_storage {
public:
  size_t size() const override { return heap_.size(); }
  void push(element e) override {
    heap_.push_back(std::move(e));
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  element pop() override {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    auto e = std::move(heap_.back());
    heap_.pop_back();
    return e;
  }
  void put_back(std::vector<element> rows) override {
    for (auto& r : rows)
      push(std::move(r));
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
