#include "quern/blocking_queue.hpp"
#include "quern/detail/receipts.hpp"

#include <limits>
#include <optional>
#include <utility>

#include <caf/after.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>

#include "writer_pump.hpp"

namespace quern {

namespace {

void require_valid(const queue_actor& q, const char* who) {
  if (!q)
    throw argument_error(std::string(who) +
                         " needs a queue actor, got an invalid handle");
}

// A reader with nothing buffered and an end recorded: false for the normal
// end of data (out_of_range), the error thrown otherwise.
bool more_after(const caf::error& end) {
  if (is(end, error_code::out_of_range))
    return false;
  throw_error(end);
}

} // namespace

// -- blocking_queue -------------------------------------------------------------

blocking_queue::blocking_queue(caf::actor_system& sys, queue_actor q)
    : client_(sys), queue_(std::move(q)) {
  require_valid(queue_, "blocking_queue");
}

void blocking_queue::enqueue(const element& e, timeout_type timeout) {
  client_.call<int32_t>(queue_, enqueue_atom::value, e, caf::timespan{timeout});
}

void blocking_queue::enqueue_many(const element& batch, timeout_type timeout) {
  client_.call<int32_t>(queue_, enqueue_many_atom::value, batch, caf::timespan{timeout});
}

element blocking_queue::dequeue(timeout_type timeout) {
  return client_.call<element>(queue_, dequeue_atom::value, caf::timespan{timeout});
}

element blocking_queue::dequeue_many(int32_t n, timeout_type timeout) {
  return client_.call<element>(queue_, dequeue_many_atom::value, n,
                               caf::timespan{timeout});
}

element blocking_queue::dequeue_up_to(int32_t n, timeout_type timeout) {
  return client_.call<element>(queue_, dequeue_up_to_atom::value, n,
                               caf::timespan{timeout});
}

void blocking_queue::close(bool cancel_pending_enqueues) {
  client_.call<bool>(queue_, close_atom::value, cancel_pending_enqueues);
}

int32_t blocking_queue::size() {
  return client_.call<int32_t>(queue_, size_atom::value);
}

queue_state blocking_queue::snapshot() {
  return client_.call<queue_state>(caf::actor_cast<checkpoint_queue_actor>(queue_),
                                   snapshot_atom::value);
}

void blocking_queue::restore(queue_state s) {
  client_.call<bool>(caf::actor_cast<checkpoint_queue_actor>(queue_), restore_atom::value,
                     std::move(s));
}

bool blocking_queue::is_closed() {
  return client_.call<bool>(queue_, is_closed_atom::value);
}

queue_spec blocking_queue::spec() {
  return client_.call<queue_spec>(queue_, spec_atom::value);
}

queue_stats blocking_queue::stats() {
  return client_.call<queue_stats>(queue_, queue_stats_atom::value);
}

// -- the streaming clients' parts ---------------------------------------------

namespace detail {

namespace {

const queue_actor& checked(const queue_actor& q, const char* who) {
  require_valid(q, who);
  return q;
}

} // namespace

// A remote queue's endpoint ends with `unavailable` naming the queue and its
// address; the actor system shuts queues down at exit, as Session.close()
// cancels pending ops.
caf::error queue_gone(const caf::down_msg& dm) {
  if (dm.reason && dm.reason.category() == error_category)
    return dm.reason;
  if (dm.reason == caf::exit_reason::user_shutdown)
    return make_error(error_code::cancelled, "the queue actor was shut down");
  return make_error(error_code::unavailable, "the queue actor terminated");
}

stream_client::stream_client(caf::actor_system& sys, queue_actor q, const char* who)
    : self(sys), queue(checked(q, who)) {
  // Named in exit reports: a streaming handle still alive when the actor
  // system goes keeps its caller actor from ending.
  exit_watch::track(sys, caf::actor_cast<caf::actor>(self),
                    std::string{"the caller actor of a "} + who + " that is still alive",
                    {}, false);
  self->monitor(queue);
}

void stream_client::queue_lost(const caf::down_msg& dm) {
  queue_down = true;
  if (!end)
    end = queue_gone(dm);
  ledger.forget();
}

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

void pull_stream::withdraw() {
  // Each pull still waiting is answered, with what was already on its way
  // or with cancelled; then nothing more comes.
  if (!ledger.empty() && !queue_down)
    self->send(queue, unpull_atom::value);
  while (!ledger.empty() && !queue_down)
    await_one();
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

} // namespace detail

// -- queue_writer -----------------------------------------------------------------

queue_writer::queue_writer(caf::actor_system& sys, queue_actor q, size_t window)
    : sys_(sys), state_(std::make_shared<detail::writer_state>(
                     detail::checked(q, "queue_writer"), std::max<size_t>(window, 1))) {
  pump_ = detail::make_writer_pump(sys, state_);
  // Named in exit reports: a writer still alive when the actor system goes
  // keeps its pump from ending.
  detail::exit_watch::track(sys, pump_, "the pump of a queue_writer that is still alive",
                            {}, false);
}

queue_writer::~queue_writer() {
  {
    auto& st = *state_;
    std::lock_guard<std::mutex> guard{st.mtx};
    // Hand every accepted row to the queue without waiting for room: the
    // queue stores them in order, or refuses them if it closes first. A
    // destructor must not block on a full queue that nobody drains.
    if (!st.end)
      st.send_pending(pump_);
  }
  detail::end_writer_pump(pump_, state_->queue);
}

void queue_writer::wait(std::unique_lock<std::mutex>& lock) {
  detail::exit_watch::blocked_call waiting{
      sys_, caf::actor_cast<caf::actor_addr>(state_->queue), push_atom::value};
  state_->changed.wait(lock);
}

void queue_writer::fail_pending() {
  auto& st = *state_;
  st.refused += static_cast<int64_t>(st.pending_rows());
  st.rows.clear();
  st.batches.clear();
  st.batch_rows = 0;
  throw_error(st.end);
}

int64_t queue_writer::stored() const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  return state_->stored;
}

int64_t queue_writer::refused() const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  return state_->refused;
}

int64_t queue_writer::unconfirmed() const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  return state_->unconfirmed;
}

void queue_writer::push(element e) {
  auto& st = *state_;
  std::unique_lock<std::mutex> lock{st.mtx};
  if (st.end) {
    ++st.refused; // push() refuses its row once the stream failed
    throw_error(st.end);
  }
  if (!st.batches.empty())
    st.send_pending(pump_); // batches pushed before go first
  st.rows.push_back(std::move(e));
  // The pump sends what waits when a push is answered; past the window
  // the writer waits for the queue.
  while (!st.may_send() && st.ledger.units() + st.rows.size() >= st.window && !st.hurried)
    wait(lock);
  if (st.end)
    fail_pending();
  if (st.may_send() || std::exchange(st.hurried, false))
    st.send_pending(pump_);
}

void queue_writer::push_batch(element batch) {
  auto& st = *state_;
  std::unique_lock<std::mutex> lock{st.mtx};
  auto rows = static_cast<size_t>(batch.batch_size());
  if (st.end) {
    st.refused += static_cast<int64_t>(rows);
    throw_error(st.end);
  }
  // Rows pushed before go first: the queue serves one producer's messages
  // in order.
  if (!st.rows.empty())
    st.send_pending(pump_);
  st.batches.push_back(std::move(batch));
  st.batch_rows += rows;
  while (!st.ledger.empty() && st.ledger.units() + st.batch_rows > st.window &&
         !st.hurried)
    wait(lock);
  if (st.end)
    fail_pending();
  if (st.may_send() || std::exchange(st.hurried, false))
    st.send_pending(pump_);
}

void queue_writer::hurry() {
  {
    std::lock_guard<std::mutex> guard{state_->mtx};
    state_->hurried = true;
  }
  state_->changed.notify_all();
}

bool queue_writer::settle(caf::timespan limit) {
  auto& st = *state_;
  std::unique_lock<std::mutex> lock{st.mtx};
  if (st.end)
    return true;
  st.send_pending(pump_);
  st.hurried = false; // sent: the next push waits for the window again
  // The queue handles one sender's messages in order: the barrier comes
  // back once every push sent before it reached the queue.
  auto token = ++st.barrier_sent;
  caf::send_as(pump_, st.queue, barrier_atom::value, token);
  detail::exit_watch::blocked_call waiting{
      sys_, caf::actor_cast<caf::actor_addr>(st.queue), barrier_atom::value};
  return st.changed.wait_for(lock, limit,
                             [&] { return st.end || st.barrier_back >= token; });
}

void queue_writer::flush() {
  auto& st = *state_;
  std::unique_lock<std::mutex> lock{st.mtx};
  if (!st.end)
    st.send_pending(pump_);
  while (!st.ledger.empty())
    wait(lock);
  if (st.end)
    fail_pending();
}

// -- queue_reader -----------------------------------------------------------------

// Up to four pulls stay granted, each for a quarter of the window: some are
// answered while the others wait at the queue.
constexpr size_t max_pulls_outstanding = 4;

namespace {

size_t checked_row_window(size_t window) {
  // Each of the pulls granted at a time asks for a quarter of the window, as
  // an int32: at least one row each, and no share that overflows.
  if (window < max_pulls_outstanding ||
      window > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw argument_error("queue_reader needs a window of 4 to 2147483647 rows, got " +
                         std::to_string(window));
  return window;
}

demand rows_demand() {
  demand d;
  d.cut = batch_cut::any_size;
  d.as_rows = true;
  return d;
}

} // namespace

queue_reader::queue_reader(caf::actor_system& sys, queue_actor q, size_t window)
    : stream_(sys, std::move(q), "queue_reader", rows_demand(),
              checked_row_window(window), window / max_pulls_outstanding,
              max_pulls_outstanding) {}

element queue_reader::pull() {
  return stream_.pull();
}

std::optional<element> queue_reader::try_pull() {
  return stream_.try_pull();
}

// -- batch_reader -----------------------------------------------------------------

namespace {

demand batches_demand(int32_t batch_size, batch_cut cut) {
  if (batch_size <= 0)
    throw argument_error("batch_reader needs a positive batch size, got " +
                         std::to_string(batch_size));
  demand d;
  d.n = batch_size;
  d.cut = cut;
  return d;
}

size_t checked_batch_window(size_t window) {
  if (window < 2 || window > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw argument_error("batch_reader needs a window of at least 2 batches, got " +
                         std::to_string(window));
  return window;
}

} // namespace

// Demand goes out in chunks of at least half the window, so that one grant
// serves many batches and the queue can send every batch it has ready in one
// message (a window of 16 batches of 128 rows measured 1.2x the plain loop in
// bench_reading_pipeline, 64 measured 1.35x: fewer wake-ups of the consumer
// and of the queue per row).
batch_reader::batch_reader(caf::actor_system& sys, queue_actor q, int32_t batch_size,
                           batch_cut cut, size_t window)
    : stream_(std::make_shared<detail::pull_stream>(
          sys, std::move(q), "batch_reader", batches_demand(batch_size, cut),
          checked_batch_window(window), window - window / 2,
          std::numeric_limits<size_t>::max())) {}

element batch_reader::pull() {
  return stream_->pull();
}

std::optional<element> batch_reader::try_pull() {
  return stream_->try_pull();
}

} // namespace quern
