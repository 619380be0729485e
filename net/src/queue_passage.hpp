#pragma once

// The one table of how quern::net's go-betweens pass on the messages of a
// queue (remote_queue_actor, quern/interfaces.hpp): the node's facade and
// its relay for each client (facade.cpp), and the endpoint of a connect
// (endpoint.cpp). Each builds its behaviour from remote_queue_actor's own
// signatures with queue_behavior(), so a message added to the interface is
// passed on as its passage says, and a message that needs more than its
// default is one entry of passage_of below.

#include <type_traits>

#include <caf/detail/type_list.hpp>
#include <caf/replies_to.hpp>
#include <caf/result.hpp>

#include "quern/interfaces.hpp"

namespace quern::remote_detail {

/// How a go-between passes one message of the queue on.
enum class passage {
  /// A request the queue answers: asked of it, its answer passed back.
  ask,
  /// A request answered with rows that a consumer takes (dequeue, ...): the
  /// relay keeps the answer until its consumer confirms it (taken), the
  /// endpoint counts it for that confirmation.
  dequeue,
  /// One-way, with its sender kept: the queue answers the sender itself with
  /// a message (push -> pushed), if at all.
  stream,
  /// A streamed demand (pull): the relay counts what it owes the consumer.
  pull,
  /// A consumer's confirmation (taken): the relay's, never the queue's.
  receipt,
  /// Rows a consumer hands back (give_back): the queue takes back only what
  /// it handed to the sender, so the endpoint hands back as itself what its
  /// dequeues answered.
  return_rows,
  /// A queue runner's declaration (feeder): the queue keeps it while its
  /// sender lives, so it travels as the runner's process's endpoint, and a
  /// relay refuses one of a peer without a sender.
  declaration,
};

/// The table. The default: a request is asked, a one-way message streamed.
template <class Atom, class Result>
struct passage_of
    : std::integral_constant<passage,
                             std::is_void_v<Result> ? passage::stream : passage::ask> {};
template <class R>
struct passage_of<dequeue_atom, R> : std::integral_constant<passage, passage::dequeue> {};
template <class R>
struct passage_of<dequeue_many_atom, R>
    : std::integral_constant<passage, passage::dequeue> {};
template <class R>
struct passage_of<dequeue_up_to_atom, R>
    : std::integral_constant<passage, passage::dequeue> {};
template <class R>
struct passage_of<pull_atom, R> : std::integral_constant<passage, passage::pull> {};
template <class R>
struct passage_of<taken_atom, R> : std::integral_constant<passage, passage::receipt> {};
template <class R>
struct passage_of<give_back_atom, R>
    : std::integral_constant<passage, passage::return_rows> {};
template <class R>
struct passage_of<feeder_atom, R>
    : std::integral_constant<passage, passage::declaration> {};

/// What a go-between's `Pass` is handed first: the message's passage and
/// the type of its answer (void for a one-way message).
template <passage P, class R>
struct message_tag {
  static constexpr passage how = P;
  using result = R;
};

/// A handler of one message of the interface: hands `(tag, atom, args...)`
/// to the go-between's `Pass`, which returns what answers it.
template <class Signature, class Pass>
struct pass_on;

template <class Atom, class... Args, class R, class Pass>
struct pass_on<
    caf::typed_mpi<caf::detail::type_list<Atom, Args...>, caf::output_tuple<R>>, Pass> {
  Pass pass;
  caf::result<R> operator()(Atom a, Args&... xs) const {
    return pass(message_tag<passage_of<Atom, R>::value, R>{}, a, xs...);
  }
};

template <class Handle, class Pass, class... Signatures, class... Extra>
typename Handle::behavior_type queue_behavior(caf::detail::type_list<Signatures...>,
                                              Pass pass, Extra... extra) {
  return {pass_on<Signatures, Pass>{pass}..., std::move(extra)...};
}

/// The behaviour of a go-between of type `Handle` (remote_queue_actor, or an
/// extension of it by `extra` handlers): every message of remote_queue_actor
/// goes to `pass(message_tag<...>{}, atom, args&...)`.
template <class Handle, class Pass, class... Extra>
typename Handle::behavior_type queue_behavior(Pass pass, Extra... extra) {
  return queue_behavior<Handle>(remote_queue_actor::signatures{}, std::move(pass),
                                std::move(extra)...);
}

/// Whether the dequeue `Atom` is answered with a batch (else one row).
template <class Atom>
constexpr bool answers_batch = !std::is_same_v<Atom, dequeue_atom>;

} // namespace quern::remote_detail
