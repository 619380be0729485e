// TLS for quern's remoting: CAF's openssl module, mutual authentication
// only, and the TLS files checked with OpenSSL before any socket opens.
#include "internal.hpp"

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

// CAF 0.17.6's TLS session (libcaf_openssl's session.cpp) drains OpenSSL's
// per-thread error queue only inside its log statements, which Debian's
// build compiles out, and never clears it before a call. OpenSSL's
// SSL_get_error reads that queue, so an error left by one connection (seen:
// a peer gone without close_notify, as every CAF peer goes: CAF never calls
// SSL_shutdown) is taken by the next TLS read of another peer in the same
// I/O thread for its own, and that connection is dropped (observed: a
// producer process that exits cut a waiting consumer's connection). OpenSSL's documented
// rule is to clear the queue before each TLS I/O call; quern does it for CAF by defining
// these four functions in the program, which the dynamic linker prefers over libssl's for
// libcaf_openssl, and calling libssl's own after clearing.
namespace {

template <class F>
F next_definition(const char* name) {
  auto f = reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
  if (f == nullptr)
    std::abort(); // libssl is linked in; no other outcome is possible
  return f;
}

} // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static auto real = next_definition<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static auto real = next_definition<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_connect(SSL* ssl) {
  static auto real = next_definition<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return real(ssl);
}

int SSL_accept(SSL* ssl) {
  static auto real = next_definition<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return real(ssl);
}

} // extern "C"

namespace quern {

void enable_tls(caf::actor_system_config& cfg, const tls_options& tls) {
  cfg.load<caf::openssl::manager>();
  // CAF's openssl manager reads these fields of the system's config when it
  // makes each connection's context; the command line (--openssl.key=...)
  // or a config file may still override them (serve and connect check the
  // final values again).
  cfg.openssl_certificate = tls.certificate;
  cfg.openssl_key = tls.key;
  cfg.openssl_passphrase = tls.passphrase;
  cfg.openssl_cafile = tls.ca_file;
  // Checked now, before the actor system: CAF's own start throws on a
  // certificate without a key. Nothing given is left for serve and connect
  // to refuse (anonymous TLS), so that a config file may still supply it.
  if (!tls.certificate.empty() || !tls.key.empty() || !tls.ca_file.empty())
    remote_detail::check_tls_files(cfg, "quern::enable_tls");
}

namespace remote_detail {

namespace {

// OpenSSL's oldest queued error, then an empty queue for the next check.
std::string openssl_reason() {
  auto code = ERR_get_error();
  ERR_clear_error();
  if (code == 0)
    return "no reason given by OpenSSL";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

// Hands the configured passphrase to OpenSSL; without a callback of its own
// OpenSSL would ask on the terminal for an encrypted key.
int passphrase_cb(char* buf, int size, int, void* user) {
  auto& pass = *static_cast<const std::string*>(user);
  if (pass.empty() || static_cast<int>(pass.size()) >= size)
    return 0;
  std::memcpy(buf, pass.data(), pass.size());
  return static_cast<int>(pass.size());
}

void require_readable(const std::string& what, const char* role,
                      const std::string& file) {
  std::ifstream in{file};
  if (in)
    return;
  auto why = std::strerror(errno);
  throw invalid_argument_error(what + ": cannot read the TLS " + role + " '" + file +
                               "': " + why);
}

void require_complete(const caf::actor_system_config& cfg, const std::string& what) {
  if (cfg.openssl_certificate.empty() && cfg.openssl_key.empty() &&
      cfg.openssl_cafile.empty() && cfg.openssl_capath.empty())
    throw failed_precondition_error(
        what + ": TLS is on (quern::enable_tls) but no certificate, key and CA file are "
               "configured; quern never uses anonymous TLS, which authenticates nobody");
  std::string missing;
  auto need = [&](const std::string& v, const char* name) {
    if (v.empty())
      missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need(cfg.openssl_certificate, "certificate (openssl.certificate)");
  need(cfg.openssl_key, "key (openssl.key)");
  if (cfg.openssl_cafile.empty() && cfg.openssl_capath.empty())
    need({}, "CA file (openssl.cafile)");
  if (!missing.empty())
    throw invalid_argument_error(
        what +
        ": TLS needs a certificate, its key and a CA file together; missing: " + missing);
}

// Opens the key with the passphrase, then pairs it with the certificate
// already in `ctx`: two checks, so that each failure is named.
void use_key(SSL_CTX* ctx, const caf::actor_system_config& cfg, const std::string& what) {
  const auto& key = cfg.openssl_key;
  auto pass = cfg.openssl_passphrase;
  std::unique_ptr<BIO, int (*)(BIO*)> in{BIO_new_file(key.c_str(), "r"), BIO_free};
  std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)> pkey{
      in ? PEM_read_bio_PrivateKey(in.get(), nullptr, passphrase_cb, &pass) : nullptr,
      EVP_PKEY_free};
  if (!pkey)
    throw invalid_argument_error(what + ": cannot open the TLS key '" + key +
                                 "': a wrong or missing passphrase (openssl.passphrase), "
                                 "or not a PEM private key (" +
                                 openssl_reason() + ")");
  if (SSL_CTX_use_PrivateKey(ctx, pkey.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1)
    throw invalid_argument_error(
        what + ": the TLS key '" + key + "' does not match the certificate '" +
        cfg.openssl_certificate + "' (" + openssl_reason() + ")");
}

// `Nov 28 19:25:41 2026 GMT`: an ASN.1 time as OpenSSL prints it.
std::string time_text(const ASN1_TIME* t) {
  std::unique_ptr<BIO, int (*)(BIO*)> out{BIO_new(BIO_s_mem()), BIO_free};
  if (!out || ASN1_TIME_print(out.get(), t) != 1)
    return "an unreadable date";
  char* data = nullptr;
  auto n = BIO_get_mem_data(out.get(), &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n))
               : std::string("an unreadable date");
}

// The certificate's subject, for a chain or a CA file of several.
std::string subject_of(X509* x) {
  char buf[256];
  if (X509_NAME_oneline(X509_get_subject_name(x), buf, sizeof buf) == nullptr)
    return "an unnamed certificate";
  return buf;
}

// Why `x` is outside its validity dates by this machine's clock, or empty.
// A peer refuses such a certificate in the handshake, with nothing that
// tells the two ends why.
std::string outside_validity(X509* x) {
  auto after = X509_get0_notAfter(x);
  if (X509_cmp_current_time(after) < 0)
    return "expired on " + time_text(after);
  auto before = X509_get0_notBefore(x);
  if (X509_cmp_current_time(before) > 0)
    return "is not yet valid: valid from " + time_text(before);
  return {};
}

// The certificate `ctx` presents and the rest of its chain, within their
// validity dates.
void require_current_chain(SSL_CTX* ctx, const std::string& cert,
                           const std::string& what) {
  if (auto* leaf = SSL_CTX_get0_certificate(ctx))
    if (auto why = outside_validity(leaf); !why.empty())
      throw invalid_argument_error(
          what + ": the TLS certificate '" + cert + "' " + why +
          " (this machine's clock); every peer would refuse it: renew it");
  STACK_OF(X509)* chain = nullptr;
  if (SSL_CTX_get0_chain_certs(ctx, &chain) != 1 || chain == nullptr)
    return;
  for (int i = 0; i < sk_X509_num(chain); ++i) {
    auto* x = sk_X509_value(chain, i);
    if (auto why = outside_validity(x); !why.empty())
      throw invalid_argument_error(what + ": the certificate " + subject_of(x) +
                                   " of the TLS certificate chain '" + cert + "' " + why +
                                   " (this machine's clock); every peer would refuse it: "
                                   "renew it");
  }
}

// A CA file none of whose certificates is within its validity dates admits
// no peer: its verification fails for every certificate it signed.
void require_current_ca(SSL_CTX* ctx, const std::string& cafile,
                        const std::string& what) {
  auto* objs = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx));
  std::string last_why;
  X509* last = nullptr;
  for (int i = 0; i < sk_X509_OBJECT_num(objs); ++i) {
    auto* x = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, i));
    if (x == nullptr)
      continue;
    auto why = outside_validity(x);
    if (why.empty())
      return;
    last_why = std::move(why);
    last = x;
  }
  if (last != nullptr)
    throw invalid_argument_error(
        what + ": no certificate of the TLS CA file '" + cafile +
        "' is within its validity dates (this machine's clock): " + subject_of(last) +
        " " + last_why + "; it admits no peer: renew the CA");
}

} // namespace

bool uses_tls(const caf::actor_system& sys) {
  return sys.has_openssl_manager();
}

caf::io::middleman_actor transport(caf::actor_system& sys) {
  return door_transport(sys);
}

// The same OpenSSL calls as CAF's session makes for each connection
// (libcaf_openssl's create_ssl_context), made once up front: where CAF
// aborts the process (a server's bad certificate) or never answers (a
// client's wrong passphrase), quern throws an error naming the file.
void check_tls_files(const caf::actor_system_config& cfg, const std::string& what) {
  tls_context(cfg, what);
}

std::shared_ptr<SSL_CTX> tls_context(const caf::actor_system_config& cfg,
                                     const std::string& what) {
  require_complete(cfg, what);
  const auto& cert = cfg.openssl_certificate;
  const auto& key = cfg.openssl_key;
  const auto& cafile = cfg.openssl_cafile;
  require_readable(what, "certificate", cert);
  require_readable(what, "key", key);
  if (!cafile.empty())
    require_readable(what, "CA file", cafile);
  ERR_clear_error();
  std::shared_ptr<SSL_CTX> ctx{SSL_CTX_new(TLS_method()), SSL_CTX_free};
  if (!ctx)
    throw internal_error(what + ": OpenSSL cannot make a context: " + openssl_reason());
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert.c_str()) != 1)
    throw invalid_argument_error(what + ": the TLS certificate '" + cert +
                                 "' is not a PEM certificate OpenSSL accepts (" +
                                 openssl_reason() + ")");
  require_current_chain(ctx.get(), cert, what);
  use_key(ctx.get(), cfg, what);
  const auto& capath = cfg.openssl_capath;
  if (SSL_CTX_load_verify_locations(ctx.get(), cafile.empty() ? nullptr : cafile.c_str(),
                                    capath.empty() ? nullptr : capath.c_str()) != 1)
    throw invalid_argument_error(what + ": cannot load the TLS CA file '" + cafile +
                                 (capath.empty() ? "" : "' or CA path '" + capath) +
                                 "' (" + openssl_reason() + ")");
  if (!cafile.empty() && capath.empty())
    require_current_ca(ctx.get(), cafile, what);
  // As CAF's openssl session (mutual authentication).
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     nullptr);
  if (SSL_CTX_set_cipher_list(ctx.get(), "HIGH:!aNULL:!MD5") != 1)
    throw internal_error(what + ": OpenSSL refuses the cipher list: " + openssl_reason());
  return ctx;
}

} // namespace remote_detail

} // namespace quern
