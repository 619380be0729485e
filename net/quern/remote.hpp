#pragma once

// quern across processes: CAF's middleman (caf::io) carries the queue
// protocol between actor systems (docs/distributed.md).
//
//   host:    quern::serve(sys, {.queues = {{"examples", q}}})  -> server
//   client:  auto node = quern::connect(sys, "127.0.0.1:7000");
//            quern::blocking_queue queue{sys, node.queue("examples")};
//
// Both sides need an actor system whose config loaded the middleman with
// quern's settings: quern::remote_config, or quern::enable_remoting(cfg).
// Programs that never call serve/connect keep quern::config, which does not
// load the middleman.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "quern/atoms.hpp"
#include "quern/coordination.hpp"
#include "quern/interfaces.hpp"
#include "quern/messages.hpp"
#include "quern/summary.hpp"

namespace quern {

/// The version of quern's wire protocol: the messages of interfaces.hpp and
/// their types as they travel. Two nodes talk only when it is equal: it is
/// CAF's application identifier (`quern-wire-<N>`, checked in CAF's
/// handshake) and is checked again by the node's hello. Raise it whenever a
/// message of the queue protocol or a type in it changes shape: CAF drops a
/// message it cannot read without answering it.
// 2: queue_actor without the internal deadline message;
// 3: one pull(demand) answered by pulled(xs, error);
// 4: feeder's `started` is -1 when a runner ends (a queue of version 3 would
//    take the end of its last runner for runners never started).
// 5: taken(n), a consumer's confirmation of what its code took; summary_event
//    holds its payload as a variant.
// 6: floats and doubles of summaries travel as their bits (CAF's own packing
//    never returns for an infinity); the node's lookup of summary writers.
// 7: enqueue_keyed and producer_mark, for producers that retry (batch_key);
//    push_batch carries several batches.
// 8: a queue runner's feeder messages come from the endpoint of its queue
//    (anonymous ones from a peer are refused), and a queue takes back
//    (give_back) only rows it handed to the sender.
// 9: a checkpoint's snapshot and restore of a queue (queue_state), the
//    coordinator's checkpoint members (add_member, members), and a queue's
//    barrier (barrier, barrier_passed).
// 10: a queue's counters and identity (queue_stats), which pipeline
//    telemetry asks of a queue of another process too, and a checkpoint
//    member's telemetry (member_telemetry) for the chief's pipeline.
constexpr uint32_t wire_version = 10;

/// `quern-wire-<wire_version>`.
std::string wire_identifier();

/// Loads CAF's middleman into `cfg` with quern's settings, which the command
/// line or a config file may still override:
///  - middleman.app-identifiers = ["quern-wire-<N>"] (wire_version);
///  - middleman.heartbeat-interval = 1s and middleman.connection-timeout =
///    5s: CAF 0.17.6 has them off, and then a frozen peer (SIGSTOP, a
///    partition) is never noticed and every call to it waits forever. Every
///    node must send heartbeats when any node has a timeout.
/// Call it before the actor system is made.
void enable_remoting(caf::actor_system_config& cfg);

/// This node's TLS identity and whom it trusts. All of certificate, key and
/// ca_file are required: peers authenticate each other (mutual TLS), and a
/// peer is admitted only with a certificate signed by a CA of `ca_file`.
/// CAF checks no host name: the CA is the identity, so give a deployment a
/// CA of its own.
struct tls_options {
  /// PEM certificate (chain) this node presents (openssl.certificate).
  std::string certificate;
  /// PEM private key of `certificate` (openssl.key).
  std::string key;
  /// The key's passphrase if it is encrypted (openssl.passphrase).
  std::string passphrase;
  /// PEM file of the CA certificates peers must be signed by (openssl.cafile).
  std::string ca_file;
};

/// Loads CAF's openssl module into `cfg` (after enable_remoting) and sets
/// `tls` as its `openssl.*` settings, which the command line or a config
/// file may still override. CAF reads them per actor system, so TLS is a
/// property of the process, not of one serve or connect: with it every
/// serve and connect of the system uses TLS, and none uses a plain socket
/// (CAF routes per node, not per port). Call it before the actor system is
/// made. The files are checked when serve or connect is called, before any
/// socket opens (and here, when `tls` names any): readable, the key opened
/// and matching the certificate, the certificate and its chain within their
/// validity dates and the CA file holding a certificate that is.
void enable_tls(caf::actor_system_config& cfg, const tls_options& tls);

/// quern::config with enable_remoting applied (and enable_tls with `tls`).
class remote_config : public config {
public:
  remote_config();
  explicit remote_config(const tls_options& tls);
};

// -- the node's published actor ---------------------------------------------------

using hello_atom = caf::atom_constant<caf::atom("q_hello")>;
using lookup_queue_atom = caf::atom_constant<caf::atom("q_lookup")>;
using lookup_coordinator_atom = caf::atom_constant<caf::atom("q_lookup_c")>;
using lookup_writer_atom = caf::atom_constant<caf::atom("q_lookup_w")>;

/// What a node publishes on its port (one actor, one port): peers reach the
/// queues it exports by name through it, and nothing else of the process.
///   hello(peer wire version) -> (own wire version, description);
///     failed_precondition when the versions differ
///   lookup_queue(name) -> queue_actor; failed_precondition when no queue
///     is exported under `name`
///   lookup_coordinator() -> coordinator_actor; failed_precondition when
///     none is exported
///   lookup_writer(name) -> summary_writer_actor; failed_precondition when
///     no summary writer is exported under `name`
using node_actor = caf::typed_actor<
    caf::replies_to<hello_atom, uint32_t>::with<uint32_t, std::string>,
    caf::replies_to<lookup_queue_atom, std::string>::with<queue_actor>,
    caf::replies_to<lookup_coordinator_atom>::with<coordinator_actor>,
    caf::replies_to<lookup_writer_atom, std::string>::with<summary_writer_actor>>;

// -- serving ----------------------------------------------------------------------

struct serve_options {
  /// `serve(sys, {"127.0.0.1", 7000, false, {{"examples", q}}, coord})`.
  serve_options(std::string host = "127.0.0.1", uint16_t port = 0,
                bool reuse_address = false,
                std::map<std::string, queue_actor> queues = {},
                coordinator_actor coordinator = {},
                std::map<std::string, summary_writer_actor> writers = {})
      : host(std::move(host)), port(port), reuse_address(reuse_address),
        queues(std::move(queues)), coordinator(std::move(coordinator)),
        writers(std::move(writers)) {}

  /// The address to listen on. Without TLS loopback only (127.0.0.0/8, ::1,
  /// localhost): any other address would let every machine that reaches it
  /// use the queues without authentication. With TLS (enable_tls) any
  /// address, 0.0.0.0 for every interface.
  std::string host;
  /// 0: the operating system chooses a free port (server::port() tells).
  uint16_t port;
  /// Listen even while an earlier socket on the port lingers (SO_REUSEADDR).
  bool reuse_address;
  /// The queues peers may use, by the name they ask for.
  std::map<std::string, queue_actor> queues;
  /// The coordinator peers may use (remote_node::coordinator); none if
  /// invalid.
  coordinator_actor coordinator;
  /// The summary writers peers may feed (remote_node::writer), by name: a
  /// writer's actor, e.g. `quern::summary_writer::actor()`.
  std::map<std::string, summary_writer_actor> writers;
  /// At most this many accepted connections may wait for their handshake at
  /// once (without TLS); the oldest is closed for a new one, with a line on
  /// stderr. Shared by every node of the process (the last serve sets it).
  size_t max_pending_handshakes = 256;
  /// A connection that has not finished its handshake this long after its
  /// accept is closed, with a line on stderr (without TLS).
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds{10}};
  /// A message (its BASP header's claim) larger than this closes its
  /// connection before anything is allocated (without TLS; a connect
  /// refuses it too, as not a quern node).
  size_t max_message_bytes = size_t{64} << 20;
};

/// A node being served: listens until it is destroyed or stop() is called.
/// Destroy it before its actor system (CAF's would otherwise wait forever
/// for the published actor).
class server {
public:
  server(server&&) noexcept;
  server& operator=(server&&) noexcept;
  ~server();

  /// The port it listens on.
  uint16_t port() const noexcept;
  /// `host:port`, as a peer passes it to connect().
  std::string address() const;
  /// Stops listening and ends the node's published actor. Peers that hold a
  /// queue keep using it while this process lives.
  void stop();

private:
  friend server serve(caf::actor_system&, serve_options);
  struct impl;
  explicit server(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

/// Exports `opts.queues` on `opts.host:opts.port`, over TLS when the actor
/// system has it (enable_tls). Peers never learn the queue's or the
/// coordinator's address: each lookup gets a facade, and every answer comes
/// from it or from a relay made for that peer's client actor, so a peer's
/// kill ends at most those. A facade lasts until its peer's connection is
/// gone (about a second after; about 10 KB each, docs/distributed.md) or
/// server::stop. Throws:
///  - failed_precondition_error when the middleman is not loaded
///    (enable_remoting), the address is not a loopback address and the
///    system has no TLS, or TLS is loaded without certificate, key and CA;
///  - invalid_argument_error for a TLS file that is missing, unreadable or
///    not PEM, a key that its passphrase does not open or that does not
///    match the certificate, a certificate that expired or is not yet valid,
///    a CA file of none that is valid (checked before the port opens);
///  - invalid_argument_error for an invalid queue handle or an empty name;
///  - unavailable_error when the port cannot be opened (in use, ...).
/// Blocks while the port opens: call it from main() or a detached actor,
/// never from an event-based actor.
server serve(caf::actor_system& sys, serve_options opts);

// -- connecting -------------------------------------------------------------------

struct connect_options {
  /// How long connect() may take in all (TCP, CAF's handshake, quern's
  /// hello), and each later lookup (remote_node::queue).
  std::chrono::milliseconds timeout = std::chrono::seconds{5};
  /// Not 0: this process ends when the node is lost (its process died or
  /// stopped serving, or it was silent for longer than
  /// middleman.connection-timeout), as a worker that has lost its chief.
  /// quern says why on stderr, stops the queue runners of the actor system,
  /// ends its actors (summary writers hand what they hold to the operating
  /// system and close their files), waits for them at most the exit grace
  /// (quern.exit-grace, 2 s) and exits with this status, whatever the
  /// process's threads are doing; rows and scalars their handles still
  /// hold are lost with it. 14 is TensorFlow's code for Unavailable.
  /// 0, the default: the process goes on, and every call waiting on the
  /// node fails with unavailable_error. connect() refuses a status outside
  /// 0..255 with invalid_argument_error (exit statuses are one byte).
  int exit_status_on_loss = 0;
  /// A message from the node (its BASP header's claim) larger than this
  /// ends the connection before anything is allocated; connect() then fails
  /// with failed_precondition_error (not a quern node). Set it as large as
  /// the node's serve_options::max_message_bytes when batches are larger.
  /// The first connect to a node sets it for the process's connection there.
  size_t max_message_bytes = size_t{64} << 20;
};

/// A connection to a node: hands out its exported queues as queue_actors
/// that every quern client uses as it would a local queue (blocking_queue,
/// queue_writer, queue_reader, batch_reader, queue runners).
///
/// Each queue comes through a local endpoint actor that watches the remote
/// queue: when the node is lost (its process died, or froze for longer than
/// the connection timeout), every call waiting on it fails with
/// unavailable_error naming the queue and the address, and readers and
/// writers see the queue end. Keep the remote_node alive while its queues
/// are used: destroying it ends the endpoints (calls then fail with
/// unavailable_error). Threads may share one remote_node.
class remote_node {
public:
  remote_node(remote_node&&) noexcept;
  remote_node& operator=(remote_node&&) noexcept;
  ~remote_node();

  /// The address connected to, as given (`127.0.0.1:7000`).
  const std::string& address() const noexcept;
  /// The node's description from its hello (`quern node pid 1234`).
  const std::string& description() const noexcept;

  /// The queue exported as `name`. Throws failed_precondition_error when
  /// the node exports no such queue, unavailable_error /
  /// deadline_exceeded_error when the node does not answer. Blocking, like
  /// connect(). The same name gives the same handle.
  queue_actor queue(const std::string& name);

  /// The node's exported coordinator, for a quern::coordinator handle
  /// (`quern::coordinator coord{sys, node.coordinator()}`). Its calls fail
  /// with unavailable_error when the node is lost. Throws
  /// failed_precondition_error when the node exports none.
  coordinator_actor coordinator();

  /// The summary writer exported as `name`, for a quern::summary_writer
  /// handle (`quern::summary_writer w{sys, node.writer("train")}`): the
  /// scalars of every process land in the exporting process's run, each
  /// handle's in the order it wrote them. Calls fail with unavailable_error
  /// when the node is lost; scalars a handle still held are lost with it. An
  /// add_summary whose wall time is not finite is refused
  /// (invalid_argument_error): CAF cannot send an infinite double.
  /// Throws failed_precondition_error when the node exports no such writer.
  /// The same name gives the same handle.
  summary_writer_actor writer(const std::string& name);

private:
  friend remote_node connect(caf::actor_system&, const std::string&, connect_options);
  struct impl;
  explicit remote_node(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

/// Connects to the node at `address` (`host:port`, `[v6]:port`) within
/// `opts.timeout`. Every failure is an op_error whose message names the
/// address:
///  - invalid_argument_error: a malformed address;
///  - failed_precondition_error: the middleman is not loaded
///    (enable_remoting), the peer speaks another wire version, the port
///    is not a quern node (another service answers there: an SSH or HTTP
///    server, bytes of no protocol), or TLS is loaded without certificate,
///    key and CA;
///  - invalid_argument_error: a bad TLS file, as for serve (checked before
///    any connection);
///  - unauthenticated_error: the peer cut every handshake (TLS refused
///    either side's certificate, or one side has TLS and the other not);
///  - unavailable_error: nothing accepts connections there;
///  - deadline_exceeded_error: no complete handshake within the timeout
///    (a frozen or foreign peer).
/// Blocks: call it from main() or a detached actor.
remote_node connect(caf::actor_system& sys, const std::string& address,
                    connect_options opts = {});

// -- a producer that retries -------------------------------------------------------

struct remote_producer_options {
  /// connect()'s options, for the first connection and every reconnection.
  connect_options connect;
  /// How long one call may keep finding the node lost (its process gone,
  /// frozen, or the network cut) before it gives up with unavailable_error;
  /// it reconnects and sends again all that time.
  std::chrono::milliseconds retry_for = std::chrono::seconds{60};
  /// The pause after a failed connection before the next one.
  std::chrono::milliseconds retry_interval = std::chrono::milliseconds{200};
  /// Called on the calling thread each time a call found the node lost or
  /// could not connect, with that error's text, before it pauses and tries
  /// again (to log reconnections). Not called when it gives up.
  std::function<void(const std::string&)> on_retry;
  /// push_batch(): the batches sent whose answer has not come yet, at most
  /// (1 to max_keyed_in_flight). More keep a connection busier; each is
  /// held by the producer until the queue confirms it.
  size_t window = 8;
};

/// A producer of a queue on another node that stores each of its batches
/// exactly once, across lost connections and its own restarts
/// (docs/distributed.md, Retried batches). Each batch gets the next number
/// of the producer's name (batch_key.hpp). When the node is lost while a
/// batch is on its way, the producer connects again and sends the batch
/// again, and the queue stores only what it did not have: nothing of a batch
/// it stored whole, the rest of one it stored in part.
///
/// The name is the producer's identity at the queue: give each producer its
/// own, and the same one when it restarts. A restarted producer goes on
/// where the queue says: resumed_after() batches of its input were stored by
/// its earlier run (skip them; the input must yield the same batches in the
/// same order). Threads may share one producer: their calls take turns.
class remote_producer {
public:
  /// Connects to `address` and looks up `queue` (retrying a lost node as
  /// enqueue_many does), and asks the queue where `producer` stands. Throws
  /// what connect() and remote_node::queue() throw, unavailable_error after
  /// retry_for, and invalid_argument_error for an empty producer name.
  remote_producer(caf::actor_system& sys, std::string address, std::string queue,
                  std::string producer, remote_producer_options opts = {});
  remote_producer(remote_producer&&) noexcept;
  remote_producer& operator=(remote_producer&&) noexcept;
  ~remote_producer();

  /// Batches of this producer's name the queue held whole when it started,
  /// stored by an earlier run: the next batch is number resumed_after() + 1.
  uint64_t resumed_after() const;
  /// Stores every row of `batch` (leading dimension, as enqueue_many) once,
  /// waiting for room as long as `timeout`. A lost node is retried as the
  /// options say. Throws what enqueue_many throws (cancelled_error on a
  /// closed queue, deadline_exceeded_error after `timeout`, ...): the rows
  /// stored before stay stored, as in TensorFlow, and the batch is done with.
  /// Throws unavailable_error when the node stayed lost for retry_for: the
  /// batch may then be stored in part or whole, and a producer started later
  /// with this name stores the rest of it (resumed_after()); this one then
  /// refuses every later call (failed_precondition_error).
  void enqueue_many(const element& batch,
                    std::chrono::nanoseconds timeout = wait_forever);
  /// Like enqueue_many(), without waiting for the queue's answer: the batch
  /// is sent at once, and up to `window` batches are in flight together (a
  /// call with a full window waits for the oldest answer). A lost node is
  /// retried as for enqueue_many(): every batch in flight is sent again, in
  /// order, and each is stored once. An error the queue answered for an
  /// earlier batch (cancelled_error, deadline_exceeded_error, ...) is thrown
  /// by the next push_batch(), enqueue_many() or flush(), that earlier batch
  /// being done with, and the batch of a call that throws is not sent; the
  /// first such error is thrown once (stored() and refused() count them all). Call
  /// flush() before the producer goes: one destroyed with batches in flight
  /// does not wait, and they may or may not be stored (a producer started
  /// later under the name learns which from the queue).
  void push_batch(element batch, std::chrono::nanoseconds timeout = wait_forever);
  /// Waits until every batch push_batch() sent is answered; throws the first
  /// error the queue answered (once), or unavailable_error as enqueue_many().
  void flush();
  /// Batches this producer stored and the queue confirmed (not counting
  /// resumed_after()).
  uint64_t stored() const;
  /// Batches the queue answered with an error (cancelled_error on a closed
  /// queue, deadline_exceeded_error, ...; rows stored before stay stored):
  /// each is done with. Once flush() returned or threw, every batch sent is
  /// counted in stored() or refused(), but when the producer gave up: the
  /// batches then in flight are named by its error.
  uint64_t refused() const;
  /// Times the node was found lost and connected again.
  uint64_t reconnections() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

namespace detail {

/// `host:port` split; throws invalid_argument_error naming `address`. An
/// address `to_listen` on (serve_options' host and port) may have port 0:
/// the system chooses.
std::pair<std::string, uint16_t> parse_address(const std::string& address,
                                               bool to_listen = false);

/// Whether `host` is a loopback address or name.
bool is_loopback(const std::string& host);

} // namespace detail

} // namespace quern
