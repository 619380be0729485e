#include <algorithm>
#include <limits>

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
/// Pushed runs stay whole ("chunks"); the queue indexes their rows, so an
/// enqueue_many of 1,000 rows costs 1,000 small index entries and no row
/// objects. With fully defined shapes, the rows picked by one take() are
/// gathered into one new batch: one allocation per component and one copy
/// per row, whatever the number of rows. A chunk is released when its last
/// row is taken.
class shuffle_storage : public queue_storage {
public:
  explicit shuffle_storage(const queue_spec& spec)
      : dtypes_(spec.dtypes), shapes_(spec.shapes), gather_(spec.shapes_specified()) {
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

  size_t size() const override { return refs_.size(); }

  void push(row_list& from, int64_t n) override {
    row_list taken;
    from.move_front(n, taken);
    for (const auto& r : taken.runs()) {
      // Row numbers are 32-bit: a (theoretical) run of more rows becomes
      // several chunks.
      constexpr int64_t max_rows = std::numeric_limits<uint32_t>::max();
      for (int64_t first = 0; first < r.count; first += max_rows) {
        auto rows = std::min(max_rows, r.count - first);
        auto c = new_chunk(r.data, r.begin + first, rows, r.batched);
        auto at = refs_.size();
        refs_.resize(at + static_cast<size_t>(rows));
        for (int64_t i = 0; i < rows; ++i)
          refs_[at + static_cast<size_t>(i)] = row_ref{c, static_cast<uint32_t>(i)};
      }
    }
  }

  void take(size_t n, row_list& out) override {
    if (!gather_ || n == 1) {
      for (size_t k = 0; k < n; ++k) {
        auto p = pick();
        const auto& ch = chunks_[p.chunk];
        out.push_back(ch.batched ? ch.data.row(ch.begin + p.row) : ch.data);
        release_rows(p.chunk, 1);
      }
      return;
    }
    // One pass picks the rows and numbers the few chunks they come from as
    // gather sources; then one gather per component.
    sources_.clear();
    taken_.clear();
    gather_picks_.clear();
    gather_picks_.reserve(n);
    slot_of_chunk_.resize(chunks_.size(), no_slot);
    for (size_t k = 0; k < n; ++k) {
      auto p = pick();
      auto& slot = slot_of_chunk_[p.chunk];
      if (slot == no_slot) {
        slot = static_cast<uint32_t>(sources_.size());
        sources_.push_back(p.chunk);
        taken_.push_back(0);
      }
      ++taken_[slot];
      gather_picks_.push_back(tensor::gather_pick{slot, chunks_[p.chunk].begin + p.row});
    }
    element batch;
    batch.components.reserve(dtypes_.size());
    std::vector<tensor::rows_part> parts(sources_.size());
    for (size_t c = 0; c < dtypes_.size(); ++c) {
      for (size_t s = 0; s < sources_.size(); ++s) {
        const auto& ch = chunks_[sources_[s]];
        parts[s] = tensor::rows_part{&ch.data.components[c], ch.batched};
      }
      batch.components.push_back(
          tensor::gather_rows(parts, gather_picks_, dtypes_[c], shapes_[c]));
    }
    for (size_t s = 0; s < sources_.size(); ++s) {
      slot_of_chunk_[sources_[s]] = no_slot;
      release_rows(sources_[s], taken_[s]);
    }
    out.push_back(row_run::batch(std::move(batch), static_cast<int64_t>(n)));
  }

  void put_back(row_list&& rows) override { push(rows, rows.size()); }

private:
  struct chunk {
    element data;
    int64_t begin = 0; // its first row in `data`
    bool batched = false;
    int64_t live = 0; // rows of this chunk still in the queue
  };
  // 8 bytes: twice as many fit in a cache line as with 64-bit rows.
  struct row_ref {
    uint32_t chunk;
    uint32_t row; // counted from the chunk's first row
  };

  uint32_t new_chunk(const element& data, int64_t begin, int64_t rows, bool batched) {
    uint32_t c;
    if (!free_.empty()) {
      c = free_.back();
      free_.pop_back();
    } else {
      c = static_cast<uint32_t>(chunks_.size());
      chunks_.emplace_back();
    }
    chunks_[c] = chunk{data, begin, batched, rows};
    return c;
  }

  /// A uniformly random stored row, removed by swapping the last one into
  /// its slot. Requires size() > 0.
  row_ref pick() {
    // Lemire's multiply-shift: a uniform index without a division.
    auto i = static_cast<size_t>(
        (static_cast<unsigned __int128>(rng_()) * refs_.size()) >> 64);
    auto p = refs_[i];
    refs_[i] = refs_.back();
    refs_.pop_back();
    return p;
  }

  void release_rows(uint32_t c, int64_t rows) {
    if ((chunks_[c].live -= rows) == 0) {
      chunks_[c].data = element{}; // frees the batch's buffers
      free_.push_back(c);
    }
  }

  std::vector<dtype> dtypes_;
  std::vector<tensor_shape> shapes_;
  bool gather_;
  std::vector<chunk> chunks_;
  std::vector<uint32_t> free_;
  std::vector<row_ref> refs_;
  // Scratch of take(): the chunks picked from, numbered as gather sources.
  static constexpr uint32_t no_slot = ~uint32_t{0};
  std::vector<uint32_t> slot_of_chunk_;
  std::vector<uint32_t> sources_;
  std::vector<int64_t> taken_; // rows picked from each source
  std::vector<tensor::gather_pick> gather_picks_;
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
