// The consumer side of the readers (queue_reader, batch_reader): demand
// kept granted within a window, units handed out one at a time, and a
// pipeline checkpoint's withdrawal (settle).

#include "quern/blocking_queue.hpp"
#include "quern/detail/receipts.hpp"

#include <caf/send.hpp>

namespace quern::detail {

namespace {

// A reader with nothing buffered and an end recorded: false for the normal
// end of data (out_of_range), the error thrown otherwise.
bool more_after(const caf::error& end) {
  if (is(end, error_code::out_of_range))
    return false;
  throw_error(end);
}

} // namespace

pull_stream::pull_stream(caf::actor_system& sys, queue_actor q, const char* who,
                         demand shape, size_t window, size_t chunk, size_t max_messages)
    : stream_client(sys, std::move(q), who), shape_(shape), window_(window),
      chunk_(chunk), max_messages_(max_messages), receipts_(receipts_to(queue)) {
  // From here on, what this reader is sent and does not confirm goes back
  // to a queue of another process if this process is lost.
  if (receipts_)
    self->send(receipts_, taken_atom::value, uint64_t{0});
}

void pull_stream::confirm() {
  if (confirmed_ == handed_ || !receipts_)
    return;
  self->send(receipts_, taken_atom::value, handed_);
  confirmed_ = handed_;
}

void append_rows(std::vector<element>& rows, element&& unit, bool batch) {
  if (!batch) {
    rows.push_back(std::move(unit));
    return;
  }
  for (int64_t i = 0; i < unit.batch_size(); ++i)
    rows.push_back(unit.row(i));
}

std::vector<element> rows_of(std::deque<element>& units, bool as_rows) {
  std::vector<element> rows;
  for (auto& x : units)
    append_rows(rows, std::move(x), !as_rows);
  units.clear();
  return rows;
}

pull_stream::~pull_stream() {
  std::lock_guard<std::timed_mutex> guard{mtx};
  if (queue_down)
    return;
  // Once nothing more is on its way, what it holds goes back to the front.
  withdraw();
  if (queue_down)
    return;
  // What it holds goes back, then all it received is confirmed (what went
  // back is done with too): a process lost in between has those rows
  // handed out twice, never lost.
  auto told = confirmed_ != handed_ || !items_.empty();
  handed_ += items_.size();
  if (!items_.empty())
    self->send(queue, give_back_atom::value, rows_of(items_, shape_.as_rows));
  confirm();
  // Across processes the queue's side learns of this reader's end (its
  // down) straight from this process's middleman, which can overtake the
  // confirmation and the give-back on their way through the endpoint: it
  // would then give back rows this reader took, to be handed out twice. One
  // answered request the same way makes sure they arrived first (a local
  // queue answers at once; a lost node fails it).
  if (told)
    self->request(queue, std::chrono::seconds{10}, size_atom::value)
        .receive([](int32_t) {}, [](caf::error&) {});
}

void pull_stream::grant() {
  while (!end && ledger.messages() < max_messages_) {
    auto have = ledger.units() + items_.size();
    if (have + chunk_ > window_)
      return;
    // A demand of rows is answered once, so several stay out; a demand of
    // batches is answered as batches are ready, so one asks for the room.
    auto units = shape_.as_rows ? chunk_ : window_ - have;
    demand d = shape_;
    (shape_.as_rows ? d.n : d.count) = static_cast<int32_t>(units);
    self->send(queue, pull_atom::value, d);
    ledger.sent(units);
  }
}

void pull_stream::await_one() {
  stream_client::await_one(pull_atom::value,
                           [&](pulled_atom, std::vector<element>& xs, caf::error& err) {
                             // Answers settle the oldest demand: one of rows at once, one
                             // of batches when it delivered them all or ended with an
                             // error.
                             ledger.answered(xs.size(), shape_.as_rows || err);
                             for (auto& x : xs)
                               items_.push_back(std::move(x));
                             // A withdrawn pull's cancelled is no end of the data.
                             if (err && !is(err, error_code::cancelled) && !end)
                               end = std::move(err);
                           });
}

std::optional<element> pull_stream::try_pull() {
  std::lock_guard<std::timed_mutex> guard{mtx};
  while (items_.empty()) {
    if (end && !more_after(end))
      return std::nullopt;
    grant();
    await_one();
  }
  auto x = std::move(items_.front());
  items_.pop_front();
  // What the caller's code had before this call is confirmed every `chunk_`
  // units: a process lost has at most that many, and the one it holds now,
  // handed out again, and none lost.
  if (handed_ - confirmed_ >= chunk_)
    confirm();
  ++handed_;
  // Answers already in settle their demand first, so that the grant sees
  // all the room there is.
  while (!ledger.empty() && self->has_next_message())
    await_one();
  grant();
  return x;
}

void pull_stream::begin_settle() {
  // Each pull still waiting is answered, with what was already on its way
  // or with cancelled; then nothing more comes.
  if (!withdrawing_ && !ledger.empty() && !queue_down) {
    self->send(queue, unpull_atom::value);
    withdrawing_ = true;
  }
}

void pull_stream::withdraw() {
  begin_settle();
  while (!ledger.empty() && !queue_down)
    await_one();
  withdrawing_ = false;
}

std::vector<element> pull_stream::settle() {
  withdraw();
  return {items_.begin(), items_.end()};
}

void pull_stream::prefill(std::vector<element> units) {
  items_.insert(items_.begin(), std::make_move_iterator(units.begin()),
                std::make_move_iterator(units.end()));
}

element pull_stream::pull() {
  auto x = try_pull();
  if (!x) {
    caf::error err;
    {
      std::lock_guard<std::timed_mutex> guard{mtx}; // another thread may be pulling
      err = end;
    }
    throw_error(err);
  }
  return std::move(*x);
}

} // namespace quern::detail
