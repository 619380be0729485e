// FIFOQueue (Q-1..Q-44): oldest first.

#include "kind.hpp"

namespace quern::detail {

namespace {

/// Kept as runs, so that batches pass through without being split into rows.
class fifo_storage : public queue_storage {
public:
  size_t size() const override { return static_cast<size_t>(rows_.size()); }
  void push(row_list& from, int64_t n) override { from.move_front(n, rows_); }
  void take(size_t n, row_list& out) override {
    rows_.move_front(static_cast<int64_t>(n), out);
  }
  void put_back(row_list&& rows) override { rows_.prepend(std::move(rows)); }
  row_list copy_rows() const override { return rows_; }

private:
  row_list rows_;
};

class fifo : public queue_kind_rules {
public:
  const char* name() const override { return "FIFOQueue"; }
  const char* default_node_name() const override { return "fifo_queue"; }
  std::unique_ptr<queue_storage> make_storage(const queue_spec&) const override {
    return make_fifo_storage();
  }
};

} // namespace

std::unique_ptr<queue_storage> make_fifo_storage() {
  return std::make_unique<fifo_storage>();
}

const queue_kind_rules& fifo_rules() {
  static const fifo rules;
  return rules;
}

} // namespace quern::detail
