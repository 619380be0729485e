// quern::remote_producer (quern/remote.hpp): a producer whose batches a queue
// of another process stores once, whatever connections are lost on the way.
// The queue keeps the producer's mark (producer_marks.cpp); this side numbers
// batches and attempts and connects again while the node is lost.
#include "internal.hpp"

#include <atomic>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "quern/blocking_client.hpp"
#include "quern/error.hpp"

namespace quern {

using clock_type = remote_detail::steady;

struct remote_producer::impl {
  impl(caf::actor_system& sys, std::string address, std::string queue,
       std::string producer, remote_producer_options opts)
      : sys(sys), address(std::move(address)), queue_name(std::move(queue)),
        producer(std::move(producer)), opts(opts), client(sys) {}

  caf::actor_system& sys;
  std::string address;
  std::string queue_name;
  std::string producer;
  remote_producer_options opts;
  blocking_client client;
  std::mutex mtx; // calls take turns: one batch in flight
  std::optional<remote_node> node;
  remote_queue_actor queue; // the node's endpoint: keyed enqueues and marks
  uint64_t resumed = 0;
  uint64_t next_batch = 1;
  uint64_t next_attempt = 1;
  // Read without the lock: a call may wait long for room.
  std::atomic<uint64_t> stored{0};
  std::atomic<uint64_t> refused{0}; // answered with an error
  std::atomic<uint64_t> reconnections{0};
  std::string gave_up; // why later calls are refused, once it gave up

  // push_batch(): the batches sent and not yet answered, oldest first, with
  // their answers coming to a mailbox of their own.
  using keyed_reply = decltype(std::declval<caf::scoped_actor&>()->request(
      std::declval<const remote_queue_actor&>(), caf::infinite, enqueue_keyed_atom::value,
      std::declval<batch_key>(), std::declval<element>(), caf::timespan{}));
  struct in_flight {
    uint64_t number;
    element batch; // kept to be sent again
    caf::timespan timeout;
    std::optional<keyed_reply> reply;
  };
  std::deque<in_flight> flight;
  std::optional<blocking_client::lease> pipe;
  uint64_t epoch = 0; // the attempt of the batches in flight; 0: none yet
  std::optional<clock_type::time_point> lost_since; // no answer since
  std::exception_ptr first_error;                   // the queue's, for an earlier batch

  std::string what() const {
    return "producer '" + producer + "' of queue '" + queue_name + "' on " + address;
  }

  [[noreturn]] void give_up(const std::string& doing, const std::string& last) {
    throw unavailable_error(what() + " found the node lost for " +
                            remote_detail::seconds_text(opts.retry_for) + " while " +
                            doing + " and gave up (last: " + last + ")");
  }

  // Pauses before the next try, or gives up when retry_for has passed.
  void pause(clock_type::time_point until, const std::string& doing,
             const std::string& last) {
    auto now = clock_type::now();
    if (now >= until)
      give_up(doing, last);
    if (opts.on_retry)
      opts.on_retry(last);
    std::this_thread::sleep_for(
        std::min<clock_type::duration>(opts.retry_interval, until - now));
  }

  // Connects and looks the queue up, again while the node is unreachable
  // (nothing accepts connections, or a frozen node lets a handshake time out).
  void connect(clock_type::time_point until, const std::string& doing) {
    while (!node) {
      try {
        auto n = quern::connect(sys, address, opts.connect);
        queue = caf::actor_cast<remote_queue_actor>(n.queue(queue_name));
        node.emplace(std::move(n));
      } catch (const unavailable_error& e) {
        pause(until, doing, e.what());
      } catch (const deadline_exceeded_error& e) {
        pause(until, doing, e.what());
      }
    }
  }

  // Runs `call` on the queue until it is answered; a lost node is connected
  // again for at most retry_for. Each try gets a new attempt number.
  template <class Call>
  auto with_retries(const std::string& doing, Call call) {
    auto until = clock_type::now() + opts.retry_for;
    for (;;) {
      connect(until, doing);
      try {
        return call(next_attempt++);
      } catch (const unavailable_error& e) {
        // The node was lost with the call on its way: whether it arrived
        // is unknown, and the queue sorts it out when it comes again.
        node.reset();
        queue = nullptr;
        ++reconnections;
        pause(until, doing, e.what());
      }
    }
  }

  caf::scoped_actor& mailbox() {
    if (!pipe)
      pipe.emplace(client.acquire());
    return **pipe;
  }

  void send(in_flight& f) {
    f.reply.emplace(mailbox()->request(queue, caf::infinite, enqueue_keyed_atom::value,
                                       batch_key{producer, f.number, epoch}, f.batch,
                                       f.timeout));
  }

  // The queue's answer to `f`: none when its rows are stored. The queue's
  // endpoint answers every request when the node is lost, so this returns.
  caf::error answer(in_flight& f) {
    detail::exit_watch::blocked_call waiting{sys, caf::actor_cast<caf::actor_addr>(queue),
                                             enqueue_keyed_atom::value};
    caf::error err;
    f.reply->receive([](int32_t) {}, [&](caf::error& e) { err = std::move(e); });
    return err;
  }

  // Whether `err` says the node was lost (as a call would throw it).
  static bool lost(const caf::error& err) {
    try {
      throw_error(err);
    } catch (const unavailable_error&) {
      return true;
    } catch (...) {
    }
    return false;
  }

  // The queue answered a batch with `err`: it is done with, and the first
  // such error is thrown by the next call.
  void keep_first(const caf::error& err) {
    ++refused;
    if (first_error)
      return;
    try {
      throw_error(err);
    } catch (...) {
      first_error = std::current_exception();
    }
  }

  void rethrow_first() {
    if (auto e = std::exchange(first_error, nullptr))
      std::rethrow_exception(e);
  }

  std::string numbers_in_flight() const {
    auto first = std::to_string(flight.front().number);
    auto last = std::to_string(flight.back().number);
    return flight.size() == 1 ? "its batch " + first
                              : "its batches " + first + " to " + last;
  }

  // The node was lost with `flight` on its way (the oldest answered `err`):
  // takes the other answers of that connection, connects again and sends
  // what was not answered again, in order, under a new attempt.
  void send_again(const caf::error& err) {
    if (!lost_since)
      lost_since = clock_type::now();
    std::string last;
    try {
      throw_error(err);
    } catch (const std::exception& e) {
      last = e.what();
    }
    std::deque<in_flight> again;
    again.push_back(std::move(flight.front()));
    flight.pop_front();
    for (auto& f : flight) {
      if (auto e = answer(f); !e)
        ++stored;
      else if (lost(e))
        again.push_back(std::move(f));
      else
        keep_first(e);
    }
    flight = std::move(again);
    node.reset();
    queue = nullptr;
    ++reconnections;
    auto doing = "sending " + numbers_in_flight();
    try {
      auto until = *lost_since + opts.retry_for;
      pause(until, doing, last);
      connect(until, doing);
    } catch (const std::exception& e) {
      gave_up = what() + " gave up on " + numbers_in_flight() + " (" + e.what() +
                "); a new remote_producer of the name goes on where the queue "
                "stands (resumed_after)";
      flight.clear();
      throw;
    }
    epoch = next_attempt++;
    for (auto& f : flight)
      send(f);
  }

  // Takes the oldest answer in flight.
  void settle_oldest() {
    auto err = answer(flight.front());
    if (err && lost(err)) {
      send_again(err);
      return;
    }
    if (err) {
      keep_first(err); // the queue answered: the batch is done with
    } else {
      ++stored;
      lost_since.reset();
    }
    flight.pop_front();
  }

  void settle_all() {
    while (!flight.empty())
      settle_oldest();
  }

  // A call's turn (threads take turns); refused once the producer gave up.
  std::unique_lock<std::mutex> take_turn() {
    std::unique_lock<std::mutex> turn{mtx};
    if (!gave_up.empty())
      throw failed_precondition_error(gave_up);
    return turn;
  }
};

remote_producer::remote_producer(caf::actor_system& sys, std::string address,
                                 std::string queue, std::string producer,
                                 remote_producer_options opts) {
  if (producer.empty())
    throw invalid_argument_error("a remote_producer of queue '" + queue + "' on " +
                                 address + " needs a producer name");
  if (opts.window < 1 || opts.window > max_keyed_in_flight)
    throw invalid_argument_error("the window of remote_producer '" + producer + "' is " +
                                 std::to_string(opts.window) +
                                 " batches; it must be 1 to " +
                                 std::to_string(max_keyed_in_flight));
  impl_ = std::make_unique<impl>(sys, std::move(address), std::move(queue),
                                 std::move(producer), opts);
  auto& d = *impl_;
  auto mark = d.with_retries("asking where it stands", [&d](uint64_t) {
    return d.client.call<batch_key>(d.queue, producer_mark_atom::value, d.producer);
  });
  d.resumed = mark.batch;
  d.next_batch = mark.batch + 1;
  d.next_attempt = mark.attempt + 1;
}

remote_producer::remote_producer(remote_producer&&) noexcept = default;
remote_producer& remote_producer::operator=(remote_producer&&) noexcept = default;
remote_producer::~remote_producer() = default;

uint64_t remote_producer::resumed_after() const {
  return impl_->resumed;
}

void remote_producer::enqueue_many(const element& batch,
                                   std::chrono::nanoseconds timeout) {
  auto& d = *impl_;
  auto turn = d.take_turn();
  // Pushed batches go first, and their error before this batch is sent.
  d.settle_all();
  d.rethrow_first();
  d.epoch = 0; // this call numbers its own attempts
  auto number = d.next_batch;
  auto doing = "sending its batch " + std::to_string(number);
  try {
    d.with_retries(doing, [&](uint64_t attempt) {
      return d.client.call<int32_t>(d.queue, enqueue_keyed_atom::value,
                                    batch_key{d.producer, number, attempt}, batch,
                                    caf::timespan{timeout});
    });
  } catch (const unavailable_error& e) {
    // Whether the queue has the batch, whole, in part or not at all, only
    // the queue can say: a new producer of the name asks it.
    d.gave_up = d.what() + " gave up on its batch " + std::to_string(number) + " (" +
                e.what() +
                "); a new remote_producer of the name goes on where the "
                "queue stands (resumed_after)";
    throw;
  } catch (...) {
    ++d.next_batch; // the queue answered: the batch is done with
    ++d.refused;
    throw;
  }
  ++d.next_batch;
  ++d.stored;
}

void remote_producer::push_batch(element batch, std::chrono::nanoseconds timeout) {
  auto& d = *impl_;
  auto turn = d.take_turn();
  d.rethrow_first();
  while (d.flight.size() >= d.opts.window)
    d.settle_oldest();
  d.rethrow_first();
  if (d.epoch == 0)
    d.epoch = d.next_attempt++;
  d.flight.push_back({d.next_batch++, std::move(batch), caf::timespan{timeout}, {}});
  d.send(d.flight.back());
}

void remote_producer::flush() {
  auto& d = *impl_;
  auto turn = d.take_turn();
  d.settle_all();
  d.rethrow_first();
}

uint64_t remote_producer::stored() const {
  return impl_->stored;
}

uint64_t remote_producer::refused() const {
  return impl_->refused;
}

uint64_t remote_producer::reconnections() const {
  return impl_->reconnections;
}

} // namespace quern
