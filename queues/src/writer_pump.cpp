#include "writer_pump.hpp"

#include <algorithm>

#include <caf/actor_companion.hpp>
#include <caf/scoped_execution_unit.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>

#include "quern/atoms.hpp"
#include "quern/error.hpp"

namespace quern::detail {

namespace {

// At most this many pushes are in flight: one being served, one filling up
// behind it. Rows (or batches) pushed meanwhile gather in the writer and
// travel together, so the message count falls as the load rises.
constexpr size_t max_pushes_in_flight = 2;

} // namespace

void writer_state::send_pending(const caf::actor& pump) {
  if (!rows.empty()) {
    ledger.sent(rows.size());
    caf::send_as(pump, queue, push_atom::value, std::move(rows));
    rows.clear();
  }
  if (!batches.empty()) {
    ledger.sent(batch_rows);
    caf::send_as(pump, queue, push_batch_atom::value, std::move(batches));
    batches.clear();
    batch_rows = 0;
  }
}

void writer_state::answered(int32_t n, caf::error& err) {
  auto sent = ledger.oldest();
  ledger.answered(sent, true);
  stored += n;
  if (err) {
    refused += static_cast<int64_t>(sent) - n;
    if (!end)
      end = std::move(err);
  }
}

void writer_state::lost(caf::error why) {
  // Whatever was in flight was never answered: a queue of another process
  // may have stored it before its process or the connection was lost.
  auto n = static_cast<int64_t>(ledger.forget());
  unconfirmed += n;
  if (end)
    return;
  if (n > 0)
    why = with_message(why,
                       message_of(why) + "; " + std::to_string(n) +
                           " row(s) this writer sent were never confirmed: the "
                           "queue may or may not hold them (queue_writer::unconfirmed)");
  end = std::move(why);
}

bool writer_state::may_send() const {
  return ledger.messages() < max_pushes_in_flight;
}

caf::actor make_writer_pump(caf::actor_system& sys, std::shared_ptr<writer_state> st) {
  auto pump = sys.spawn<caf::actor_companion>();
  // The handler runs in the thread of whoever sends to the pump: the
  // queue's (or its relay's) scheduler thread as it answers. It holds the
  // state's mutex only to update it, as the writer's threads do (they never
  // wait while holding it), so a scheduler thread is never held up for long,
  // and an answer costs no scheduling of an actor of its own.
  // (The handler holds the pump's handle until end_writer_pump drops it.)
  caf::actor_cast<caf::actor_companion*>(pump)->on_enqueue(
      [st, pump](caf::mailbox_element_ptr ptr) {
        // Read in place: making a caf::message of it would copy it.
        const auto& msg = ptr->content();
        std::lock_guard<std::mutex> guard{st->mtx};
        if (msg.match_elements<pushed_atom, int32_t, caf::error>()) {
          auto err = msg.get_as<caf::error>(2);
          st->answered(msg.get_as<int32_t>(1), err);
          if (!st->end && st->may_send())
            st->send_pending(pump);
        } else if (msg.match_elements<barrier_passed_atom, uint64_t>()) {
          st->barrier_back = std::max(st->barrier_back, msg.get_as<uint64_t>(1));
        } else if (msg.match_elements<caf::down_msg>()) {
          st->lost(queue_gone(msg.get_as<caf::down_msg>(0)));
        } else {
          return; // nothing else is sent to a pump
        }
        st->changed.notify_all();
      });
  caf::actor_cast<caf::actor_companion*>(pump)->monitor(st->queue);
  return pump;
}

void end_writer_pump(const caf::actor& pump, const queue_actor& queue) {
  auto* companion = caf::actor_cast<caf::actor_companion*>(pump);
  // CAF 0.17's companion keeps its handler after cleanup (only a widget's
  // on_exit drops it), and the handler holds the pump and, through the
  // state, the queue: drop it first. This waits for a handler still running
  // in another thread, and later answers are dropped.
  companion->on_enqueue(nullptr);
  // A long-lived queue would otherwise keep one monitor per writer it ever
  // had.
  companion->demonitor(queue->address());
  // As CAF's own widget mixin ends its companion (actor_companion's
  // disconnect() is declared but not defined in CAF 0.17).
  caf::scoped_execution_unit context{&pump.home_system()};
  companion->cleanup(caf::error{}, &context);
}

} // namespace quern::detail
