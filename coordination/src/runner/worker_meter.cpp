// A worker's figures (worker_meter.hpp).

#include "worker_meter.hpp"

#include "quern/atoms.hpp"

namespace quern::detail {

void worker_meter::begin(caf::atom_value op, caf::actor_id dest) noexcept {
  if (op == dequeue_atom::value || op == dequeue_many_atom::value ||
      op == dequeue_up_to_atom::value || op == pull_atom::value)
    waiting_for(dest);
  else if (op == enqueue_atom::value || op == enqueue_many_atom::value ||
           op == enqueue_keyed_atom::value || op == push_atom::value ||
           op == push_batch_atom::value)
    to(activity::room);
}

worker_reading worker_meter::read() const noexcept {
  worker_reading r;
  for (;;) {
    auto s1 = seq_.load(std::memory_order_acquire);
    if (s1 % 2 != 0)
      continue; // the worker is writing
    for (size_t i = 0; i < r.ns.size(); ++i)
      r.ns[i] = ns_[i].load(std::memory_order_relaxed);
    auto cur = state_.load(std::memory_order_relaxed);
    auto since = since_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq_.load(std::memory_order_relaxed) != s1)
      continue;
    r.ns[static_cast<size_t>(cur)] += std::max<int64_t>(steady_ns() - since, 0);
    break;
  }
  r.rows_out = rows_out_.load(std::memory_order_relaxed);
  r.runs = runs_.load(std::memory_order_relaxed);
  r.input = input_.load(std::memory_order_relaxed);
  return r;
}

} // namespace quern::detail
