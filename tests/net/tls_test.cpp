// quern's TLS, bind policy and a rogue peer (docs/distributed.md): a CA and
// certificates made at test time with the openssl command, real processes
// on this machine, ports chosen by the OS, every wait bounded.
#include <fcntl.h>
#include <ifaddrs.h>

#include <csignal>
#include <cstdlib>
#include <fstream>

#include <catch2/catch.hpp>

#include <quern/blocking_queue.hpp>
#include <quern/queue.hpp>
#include <quern/remote.hpp>

#include "harness.hpp"

using namespace std::chrono_literals;
using namespace quern::test;

namespace {

// Runs the openssl command in `dir`; its output goes to openssl.log there.
void openssl(const scratch_dir& dir, const std::string& args) {
  auto cmd = "cd '" + dir.file("") + "' && openssl " + args + " >>openssl.log 2>&1";
  INFO(cmd << "\n" << read_file(dir.file("openssl.log")));
  REQUIRE(std::system(cmd.c_str()) == 0);
}

// EC keys: quick to make.
const std::string new_key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1";

// `name`.pem and `name`.key, a self-signed CA.
void make_ca(const scratch_dir& dir, const std::string& name) {
  openssl(dir, "req -x509 " + new_key + " -nodes -keyout " + name + ".key -out " + name +
                   ".pem -days 2 -subj /CN=" + name);
}

// `name`.pem signed by `ca`, and its key `name`.key (encrypted with
// `passphrase` unless empty).
void make_cert(const scratch_dir& dir, const std::string& name, const std::string& ca,
               const std::string& passphrase = "") {
  auto enc = passphrase.empty() ? std::string("-nodes") : "-passout pass:" + passphrase;
  openssl(dir, "req " + new_key + " " + enc + " -keyout " + name + ".key -out " + name +
                   ".csr -subj /CN=" + name);
  openssl(dir, "x509 -req -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
                   ".key -CAcreateserial -out " + name + ".pem -days 2");
}

// `name`.pem signed by `ca` and valid from `start` to `end` (YYYYMMDDHHMMSSZ,
// as openssl ca takes them, which may set both in the past or the future),
// and its key `name`.key.
void make_dated_cert(const scratch_dir& dir, const std::string& name,
                     const std::string& ca, const std::string& start,
                     const std::string& end) {
  {
    std::ofstream cnf{dir.file(name + ".cnf")};
    cnf << "[ca]\ndefault_ca=d\n[d]\ndatabase=" << name
        << ".index\nnew_certs_dir=.\ndefault_md=sha256\npolicy=p\nserial=" << name
        << ".serial\n[p]\ncommonName=supplied\n";
    std::ofstream{dir.file(name + ".index")};
    std::ofstream{dir.file(name + ".serial")} << "01\n";
  }
  openssl(dir, "req " + new_key + " -nodes -keyout " + name + ".key -out " + name +
                   ".csr -subj /CN=" + name);
  openssl(dir, "ca -batch -notext -config " + name + ".cnf -cert " + ca +
                   ".pem -keyfile " + ca + ".key -in " + name + ".csr -out " + name +
                   ".pem -startdate " + start + " -enddate " + end);
}

// The usual set: CA `ca` with `host` (key encrypted with "secret") and
// `client`; CA `other-ca` with `stranger`.
void make_pki(const scratch_dir& dir) {
  make_ca(dir, "ca");
  make_cert(dir, "host", "ca", "secret");
  make_cert(dir, "client", "ca");
  make_ca(dir, "other-ca");
  make_cert(dir, "stranger", "other-ca");
}

quern::tls_options tls_of(const scratch_dir& dir, const std::string& name,
                          const std::string& ca, const std::string& passphrase = "") {
  return {dir.file(name + ".pem"), dir.file(name + ".key"), passphrase,
          dir.file(ca + ".pem")};
}

// A node process's command-line options for `tls`.
std::vector<std::string> tls_args(const quern::tls_options& tls) {
  std::vector<std::string> args{"--node.tls", "--openssl.certificate=" + tls.certificate,
                                "--openssl.key=" + tls.key,
                                "--openssl.cafile=" + tls.ca_file};
  if (!tls.passphrase.empty())
    args.push_back("--openssl.passphrase=" + tls.passphrase);
  return args;
}

std::vector<std::string> plus(std::vector<std::string> a,
                              const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Whether a connection waits to be accepted on `l` (without accepting it).
bool was_connected(const silent_listener& l) {
  ::fcntl(l.fd, F_SETFL, ::fcntl(l.fd, F_GETFL) | O_NONBLOCK);
  auto fd = ::accept(l.fd, nullptr, nullptr);
  if (fd < 0)
    return false;
  ::close(fd);
  return true;
}

// This machine's first IPv4 address that is not loopback, if any.
std::string own_address() {
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) != 0)
    return {};
  std::string found;
  for (auto* i = ifs; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET)
      continue;
    char buf[INET_ADDRSTRLEN];
    auto* a = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    if (::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf) != nullptr &&
        !quern::detail::is_loopback(buf))
      found = buf;
  }
  ::freeifaddrs(ifs);
  return found;
}

} // namespace

TEST_CASE("distributed NET-5 NET-7 TLS: mutual authentication carries rows end to end") {
  scratch_dir dir;
  make_pki(dir);
  // The host's key is encrypted: its passphrase opens it.
  auto host = start_host(dir, tls_args(tls_of(dir, "host", "ca", "secret")));
  auto client = tls_args(tls_of(dir, "client", "ca"));
  auto out = dir.file("consumer.out");
  auto consumer = start_client(
      dir, "consumer", host.address,
      plus({"--node.role=consume", "--node.api=dequeue", "--node.out=" + out}, client));
  auto producer = start_client(dir, "producer", host.address,
                               plus({"--node.role=produce", "--node.api=enqueue",
                                     "--node.id=1", "--node.count=300"},
                                    client));
  require_exit(*producer, 0);
  auto closer =
      start_client(dir, "closer", host.address, plus({"--node.role=close"}, client));
  require_exit(*closer, 0);
  require_exit(*consumer, 0);
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
  auto vs = taken(out);
  REQUIRE(std::multiset<int64_t>(vs.begin(), vs.end()) == rows_made(1, 300));
}

TEST_CASE("distributed NET-7 NET-10 TLS under a streaming load while peers come and go: "
          "every row taken, none lost") {
  // A queue_writer streams 6,000 rows through the TLS host to a paced
  // queue_reader (1 ms a row, so the stream lasts seconds) while, four times,
  // a producer of enqueue_many batches comes and goes, a peer connects and
  // leaves, a peer of another CA is refused, and a batch_reader consumer is
  // killed (kill -9) after it took rows. The reader stays connected
  // throughout; every row made is taken, and only rows of the killed readers'
  // give-backs are taken twice (at most 4 + 2 batches of 32 each).
  constexpr int64_t count = 6000;
  constexpr int rounds = 4;
  scratch_dir dir;
  make_pki(dir);
  auto host = start_host(dir, tls_args(tls_of(dir, "host", "ca", "secret")));
  auto client = tls_args(tls_of(dir, "client", "ca"));
  auto out = dir.file("reader.out");
  auto reader = start_client(dir, "reader", host.address,
                             plus({"--node.role=consume", "--node.api=reader",
                                   "--node.pace-ms=1", "--node.out=" + out},
                                  client));
  auto writer =
      start_client(dir, "writer", host.address,
                   plus({"--node.role=produce", "--node.api=writer", "--node.id=1",
                         "--node.count=" + std::to_string(count)},
                        client));
  require_written(*reader, out, 1);
  std::multiset<int64_t> made = rows_made(1, count);
  std::vector<std::string> outs{out};
  for (int i = 0; i < rounds; ++i) {
    auto n = std::to_string(i);
    auto batches =
        start_client(dir, "batches-" + n, host.address,
                     plus({"--node.role=produce", "--node.api=batch",
                           "--node.id=" + std::to_string(10 + i), "--node.count=200"},
                          client));
    auto peer = start_client(dir, "peer-" + n, host.address,
                             plus({"--node.role=connect"}, client));
    auto stranger = start_client(dir, "stranger-" + n, host.address,
                                 plus({"--node.role=connect", "--node.timeout-ms=60000"},
                                      tls_args(tls_of(dir, "stranger", "ca"))));
    outs.push_back(dir.file("victim-" + n + ".out"));
    auto victim = start_client(dir, "victim-" + n, host.address,
                               plus({"--node.role=consume", "--node.api=batch",
                                     "--node.pace-ms=2", "--node.out=" + outs.back()},
                                    client));
    require_written(*victim, outs.back(), 1);
    victim->signal(SIGKILL);
    require_exit(*victim, 128 + SIGKILL);
    require_exit(*batches, 0);
    require_exit(*peer, 0);
    require_exit(*stranger, 16);
    CHECK(contains(stranger->err(), "Unauthenticated"));
    auto theirs = rows_made(10 + i, 200);
    made.insert(theirs.begin(), theirs.end());
  }
  require_exit(*writer, 0);
  auto closer =
      start_client(dir, "closer", host.address, plus({"--node.role=close"}, client));
  require_exit(*closer, 0);
  require_exit(*reader, 0);
  std::multiset<int64_t> took;
  for (auto& o : outs)
    for (auto v : taken(o))
      took.insert(v);
  size_t twice = 0;
  std::vector<int64_t> lost;
  for (auto v : made) {
    auto k = took.count(v);
    if (k == 0)
      lost.push_back(v);
    else
      twice += k - 1;
  }
  CHECK(lost == std::vector<int64_t>{});
  CHECK(took.size() == made.size() + twice); // nothing that was not made
  CHECK(twice <= static_cast<size_t>(rounds) * (4 + 2) * 32);
}

TEST_CASE("distributed NET-5 TLS: a peer without a certificate of the CA is refused") {
  scratch_dir dir;
  make_pki(dir);
  auto host = start_host(dir, tls_args(tls_of(dir, "host", "ca", "secret")));
  auto client = tls_args(tls_of(dir, "client", "ca"));
  // Connected before the refusal, still connected after it: a refused
  // handshake must not take another peer's connection with it.
  auto out = dir.file("consumer.out");
  auto consumer = start_client(
      dir, "consumer", host.address,
      plus({"--node.role=consume", "--node.api=dequeue", "--node.out=" + out}, client));
  require_ready(*consumer, out);
  // A deadline far beyond a refusal: the answer must be unauthenticated
  // (16), not deadline_exceeded (4).
  auto attempt = [&](const std::string& name, std::vector<std::string> args) {
    auto c = start_client(dir, name, host.address,
                          plus({"--node.role=connect", "--node.timeout-ms=60000"}, args));
    require_exit(*c, 16);
    INFO(c->report());
    CHECK(contains(c->err(), "Unauthenticated"));
    CHECK(contains(c->err(), host.address));
    return c->err();
  };
  SECTION("a certificate of another CA") {
    auto err = attempt("stranger", tls_args(tls_of(dir, "stranger", "other-ca")));
    CHECK(contains(err, "TLS handshake"));
    CHECK(contains(err, dir.file("stranger.pem")));
  }
  SECTION("a certificate of another CA that trusts the host's CA") {
    auto err = attempt("stranger", tls_args(tls_of(dir, "stranger", "ca")));
    CHECK(contains(err, "TLS handshake"));
  }
  SECTION("a client without TLS") {
    auto err = attempt("plain", {});
    CHECK(contains(err, "TLS"));
  }
  SECTION("an anonymous TLS client (CAF's openssl module without certificates)") {
    auto c = start_client(dir, "anonymous", host.address, {"--node.role=anon-connect"});
    require_exit(*c, 16);
    INFO(c->report());
    CHECK(contains(c->err(), "refused"));
  }
  SECTION("a TLS client at a plain node") {
    scratch_dir plain_dir; // a host.port of its own
    auto plain = start_host(plain_dir);
    auto c =
        start_client(dir, "tls-at-plain", plain.address,
                     plus({"--node.role=connect", "--node.timeout-ms=60000"}, client));
    require_exit(*c, 16);
    INFO(c->report());
    CHECK(contains(c->err(), "Unauthenticated"));
    CHECK(contains(c->err(), "node without TLS"));
    CHECK(contains(c->err(), plain.address));
    plain.proc->close_stdin();
    require_exit(*plain.proc, 0);
  }
  // The host still serves a client of its CA.
  auto good =
      start_client(dir, "client", host.address,
                   plus({"--node.role=connect"}, tls_args(tls_of(dir, "client", "ca"))));
  require_exit(*good, 0);
  CHECK(contains(good->out(), "connected"));
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
}

TEST_CASE("distributed NET-6 TLS files are checked before any socket opens") {
  scratch_dir dir;
  make_pki(dir);
  silent_listener listener;
  auto address = "127.0.0.1:" + std::to_string(listener.port);
  // Given to enable_tls (quern::remote_config), the files are checked at
  // once; given later (the command line, a config file), serve and connect
  // check them before any socket opens.
  auto refused = [&](const quern::tls_options& tls, const std::string& what,
                     bool complete = true) {
    try {
      quern::remote_config early{tls};
      FAIL("enable_tls accepted bad TLS files");
    } catch (const quern::invalid_argument_error& e) {
      INFO(e.what());
      CHECK(contains(e.what(), what));
      CHECK(contains(e.what(), "quern::enable_tls"));
    }
    if (!complete)
      return; // CAF's own start refuses a certificate without a key
    quern::remote_config cfg{tls_of(dir, "client", "ca")};
    cfg.openssl_certificate = tls.certificate;
    cfg.openssl_key = tls.key;
    cfg.openssl_passphrase = tls.passphrase;
    cfg.openssl_cafile = tls.ca_file;
    quern::actor_system sys{cfg};
    auto q = quern::spawn_fifo_queue(sys, 4, {quern::dtype::int64});
    try {
      quern::serve(sys, {"127.0.0.1", 0, false, {{"q", q}}});
      FAIL("serve accepted bad TLS files");
    } catch (const quern::invalid_argument_error& e) {
      INFO(e.what());
      CHECK(contains(e.what(), what));
      CHECK(contains(e.what(), "quern::serve on 127.0.0.1"));
    }
    try {
      quern::connect(sys, address);
      FAIL("connect accepted bad TLS files");
    } catch (const quern::invalid_argument_error& e) {
      INFO(e.what());
      CHECK(contains(e.what(), what));
      CHECK(contains(e.what(), address));
    }
    CHECK_FALSE(was_connected(listener));
  };
  SECTION("a missing certificate") {
    auto tls = tls_of(dir, "client", "ca");
    tls.certificate = dir.file("nope.pem");
    refused(tls, "'" + dir.file("nope.pem") + "': No such file");
  }
  SECTION("a missing CA file") {
    auto tls = tls_of(dir, "client", "ca");
    tls.ca_file = dir.file("nope-ca.pem");
    refused(tls, dir.file("nope-ca.pem"));
  }
  SECTION("a wrong passphrase") {
    refused(tls_of(dir, "host", "ca", "wrong"), "passphrase");
  }
  SECTION("no passphrase for an encrypted key") {
    refused(tls_of(dir, "host", "ca"), dir.file("host.key"));
  }
  SECTION("a key that is not the certificate's") {
    auto tls = tls_of(dir, "client", "ca");
    tls.key = dir.file("stranger.key");
    refused(tls, "does not match");
  }
  SECTION("an expired certificate") {
    make_dated_cert(dir, "expired", "ca", "20200101000000Z", "20200102000000Z");
    refused(tls_of(dir, "expired", "ca"),
            "the TLS certificate '" + dir.file("expired.pem") + "' expired on Jan  2");
  }
  SECTION("a certificate not yet valid") {
    make_dated_cert(dir, "early", "ca", "20991231000000Z", "21000101000000Z");
    refused(tls_of(dir, "early", "ca"), "the TLS certificate '" + dir.file("early.pem") +
                                            "' is not yet valid: valid from Dec 31");
  }
  SECTION("a CA file whose only certificate expired") {
    // Self-signed, valid from now to a day ago.
    openssl(dir, "req " + new_key +
                     " -nodes -keyout old-ca.key -out old-ca.csr -subj "
                     "/CN=old-ca");
    openssl(dir, "x509 -req -in old-ca.csr -signkey old-ca.key -out old-ca.pem -days -1");
    refused(tls_of(dir, "client", "old-ca"), "no certificate of the TLS CA file '" +
                                                 dir.file("old-ca.pem") +
                                                 "' is within its validity dates");
  }
  SECTION("a certificate without its key and CA") {
    quern::tls_options tls;
    tls.certificate = dir.file("client.pem");
    refused(tls, "missing: key (openssl.key), CA file", false);
  }
  SECTION("no certificate at all: anonymous TLS is never used") {
    quern::remote_config cfg{quern::tls_options{}};
    quern::actor_system sys{cfg};
    try {
      quern::connect(sys, address);
      FAIL("connect used anonymous TLS");
    } catch (const quern::failed_precondition_error& e) {
      CHECK(contains(e.what(), "anonymous TLS"));
    }
    CHECK_FALSE(was_connected(listener));
  }
}

TEST_CASE("distributed NET-4 a non-loopback address is served only with TLS") {
  scratch_dir dir;
  make_pki(dir);
  auto own = own_address();
  std::vector<std::string> hosts{"0.0.0.0"};
  if (own.empty())
    WARN("no non-loopback IPv4 address on this machine: only 0.0.0.0 is tried");
  else
    hosts.push_back(own);
  SECTION("without TLS: refused") {
    quern::remote_config cfg;
    quern::actor_system sys{cfg};
    auto q = quern::spawn_fifo_queue(sys, 4, {quern::dtype::int64});
    for (auto& h : hosts) {
      INFO("host " << h);
      try {
        quern::serve(sys, {h, 0, false, {{"rows", q}}});
        FAIL("served a non-loopback address without TLS");
      } catch (const quern::failed_precondition_error& e) {
        CHECK(contains(e.what(), "'" + h + "' without TLS"));
      }
    }
  }
  SECTION("with TLS: served, and a client of the CA gets in") {
    quern::remote_config cfg{tls_of(dir, "host", "ca", "secret")};
    quern::actor_system sys{cfg};
    auto q = quern::spawn_fifo_queue(sys, 4, {quern::dtype::int64},
                                     {quern::tensor_shape{}}, "rows");
    for (auto& h : hosts) {
      INFO("host " << h);
      auto srv = quern::serve(sys, {h, 0, false, {{"rows", q}}});
      REQUIRE(srv.port() != 0);
      auto target = (h == "0.0.0.0" ? std::string("127.0.0.1") : h) + ":" +
                    std::to_string(srv.port());
      auto c = start_client(
          dir, "client", target,
          plus({"--node.role=connect"}, tls_args(tls_of(dir, "client", "ca"))));
      require_exit(*c, 0);
      CHECK(contains(c->out(), "connected"));
    }
  }
}

TEST_CASE("distributed NET-14 a peer's kill reaches only what was made for it") {
  scratch_dir dir;
  auto host = start_host(dir);
  // A consumer and a producer connected before the rogue, working after it.
  auto c_out = dir.file("consumer.out");
  auto consumer =
      start_client(dir, "consumer", host.address,
                   {"--node.role=consume", "--node.api=dequeue", "--node.out=" + c_out});
  auto p_out = dir.file("producer.out");
  auto start = dir.file("start");
  auto producer = start_client(dir, "producer", host.address,
                               {"--node.role=produce", "--node.api=writer", "--node.id=1",
                                "--node.count=200", "--node.out=" + p_out,
                                "--node.start-file=" + start, "--node.close-after"});
  REQUIRE(eventually(start_limit, [&] { return is_ready(c_out) && is_ready(p_out); }));
  // The rogue kills the facades it got (queue and coordinator) and every
  // sender of an answer it got (its row 4242 was stored first), and waits
  // until each is down; then tries every way to end the node.
  auto rogue =
      start_client(dir, "rogue", host.address, {"--node.role=rogue", "--node.id=4242"});
  require_exit(*rogue, 0);
  INFO(rogue->report());
  CHECK(contains(rogue->out(), "killed"));
  // A stop the coordinator pushes to a runner of a peer is anonymous: the
  // peer never learns the coordinator's address.
  CHECK(contains(rogue->out(), "the coordinator's stop came anonymously"));
  // The node outlived it: it answered the rogue after the kill, and a new
  // peer connects and is served.
  CHECK(contains(rogue->out(), "the node answered after its kill"));
  auto late = start_client(dir, "late", host.address, {"--node.role=connect"});
  require_exit(*late, 0);
  INFO(late->report());
  CHECK(contains(late->out(), "connected"));
  // The queue and the other peers' facades live on.
  { std::ofstream{start} << "go\n"; }
  require_exit(*producer, 0);
  require_exit(*consumer, 0);
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
  auto vs = taken(c_out);
  auto made = rows_made(1, 200);
  made.insert(4242);
  REQUIRE(std::multiset<int64_t>(vs.begin(), vs.end()) == made);
}

TEST_CASE("distributed NET-25 a TLS node under a descriptor limit outlives idle "
          "connections, and a real client still gets through") {
  scratch_dir dir;
  make_pki(dir);
  // 128 descriptors, soft and hard: the node cannot raise its limit. CAF
  // 0.17.6's TLS session loaded the certificate file for each accepted
  // connection and aborted the process when no descriptor was left.
  auto port_file = dir.file("host.port");
  auto args = plus({"/usr/bin/prlimit", "--nofile=128:128", node_binary,
                    "--node.role=host", "--node.port-file=" + port_file},
                   tls_args(tls_of(dir, "host", "ca", "secret")));
  host_process host;
  host.proc = std::make_unique<child>("host", args, dir, true);
  REQUIRE(eventually(start_limit, [&] {
    return std::filesystem::exists(port_file) || host.proc->wait(0ms).has_value();
  }));
  INFO(host.proc->report());
  REQUIRE(std::filesystem::exists(port_file));
  auto port = static_cast<uint16_t>(std::stoi(quern::test::read_file(port_file)));
  host.address = "127.0.0.1:" + std::to_string(port);
  // 400 connections that never send a byte, all held open.
  std::vector<int> idle;
  for (int i = 0; i < 400; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0)
      idle.push_back(fd);
    else
      ::close(fd);
  }
  CHECK(idle.size() > 128);
  auto producer = start_client(
      dir, "producer", host.address,
      plus({"--node.role=produce", "--node.api=enqueue", "--node.id=1", "--node.count=5"},
           tls_args(tls_of(dir, "client", "ca"))));
  require_exit(*producer, 0);
  CHECK_FALSE(host.proc->wait(0ms).has_value()); // still serving
  for (int fd : idle)
    ::close(fd);
  host.proc->close_stdin();
  require_exit(*host.proc, 0);
  CHECK_FALSE(contains(quern::test::read_file(dir.file("host.stderr")), "terminate"));
}
