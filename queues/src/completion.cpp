#include "completion.hpp"

#include <caf/local_actor.hpp>
#include <caf/mailbox_element.hpp>

#include "quern/atoms.hpp"

namespace quern::detail {

namespace {

// Sends a one-way message from `self` to `dest` (the streaming protocol's
// answers go to whoever pushed or pulled, which may be any kind of actor).
template <class... Ts>
// `self` null: sent anonymously (see queue_core::shutdown).
void send_to(caf::local_actor* self, const caf::strong_actor_ptr& dest, Ts&&... xs) {
  if (!dest)
    return;
  caf::strong_actor_ptr sender;
  if (self)
    sender = caf::strong_actor_ptr{self->ctrl()};
  dest->enqueue(caf::make_mailbox_element(std::move(sender), caf::make_message_id(), {},
                                          std::forward<Ts>(xs)...),
                self ? self->context() : nullptr);
}

} // namespace

// -- completion ---------------------------------------------------------------

completion completion::promise(caf::response_promise rp) {
  completion c;
  c.kind_ = kind::promise;
  c.rp_ = std::move(rp);
  return c;
}

completion completion::pushed_to(caf::strong_actor_ptr client) {
  completion c;
  c.kind_ = kind::pushed;
  c.client_ = std::move(client);
  return c;
}

completion completion::pulled_to(caf::strong_actor_ptr client) {
  completion c;
  c.kind_ = kind::pulled;
  c.client_ = std::move(client);
  return c;
}

void completion::deliver_count(caf::local_actor* self, int32_t stored, caf::error err) {
  if (kind_ == kind::pushed)
    send_to(self, client_, pushed_atom::value, stored, std::move(err));
  else if (err)
    rp_.deliver(std::move(err));
  else
    rp_.deliver(stored);
}

void completion::deliver_pulled(caf::local_actor* self, std::vector<element> xs,
                                caf::error err) {
  if (kind_ == kind::pulled) {
    send_to(self, client_, pulled_atom::value, std::move(xs), std::move(err));
  } else if (err) {
    rp_.deliver(std::move(err));
  } else {
    rp_.deliver(std::move(xs.front()));
  }
}

void completion::deliver_bool(bool value) {
  rp_.deliver(value);
}

void completion::deliver_error(caf::local_actor* self, caf::error err) {
  switch (kind_) {
  case kind::promise:
    rp_.deliver(std::move(err));
    break;
  case kind::pushed:
    send_to(self, client_, pushed_atom::value, int32_t{0}, std::move(err));
    break;
  case kind::pulled:
    send_to(self, client_, pulled_atom::value, std::vector<element>{}, std::move(err));
    break;
  }
}
} // namespace quern::detail
