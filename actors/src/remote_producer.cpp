// quern::remote_producer (quern/remote.hpp): a producer whose batches a queue
// of another process stores once, whatever connections are lost on the way.
// The queue keeps the producer's mark (producer_marks.cpp); this side numbers
// batches and attempts and connects again while the node is lost.
#include "remote_internal.hpp"

#include <atomic>
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
  queue_actor queue;
  uint64_t resumed = 0;
  uint64_t next_batch = 1;
  uint64_t next_attempt = 1;
  // Read without the lock: a call may wait long for room.
  std::atomic<uint64_t> stored{0};
  std::atomic<uint64_t> reconnections{0};
  std::string gave_up; // why later calls are refused, once it gave up

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
        queue = n.queue(queue_name);
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
};

remote_producer::remote_producer(caf::actor_system& sys, std::string address,
                                 std::string queue, std::string producer,
                                 remote_producer_options opts) {
  if (producer.empty())
    throw invalid_argument_error("a remote_producer of queue '" + queue + "' on " +
                                 address + " needs a producer name");
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
  std::lock_guard<std::mutex> guard{d.mtx};
  if (!d.gave_up.empty())
    throw failed_precondition_error(d.gave_up);
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
    throw;
  }
  ++d.next_batch;
  ++d.stored;
}

uint64_t remote_producer::stored() const {
  return impl_->stored;
}

uint64_t remote_producer::reconnections() const {
  return impl_->reconnections;
}

} // namespace quern
