// TLS for quern's remoting: CAF's openssl module, mutual authentication
// only, and the TLS files checked with OpenSSL before any socket opens.
#include "internal.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

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

} // namespace

bool uses_tls(const caf::actor_system& sys) {
  return sys.has_openssl_manager();
}

caf::io::middleman_actor transport(caf::actor_system& sys) {
  return uses_tls(sys) ? sys.openssl_manager().actor_handle()
                       : sys.middleman().actor_handle();
}

// The same OpenSSL calls as CAF's session makes for each connection
// (libcaf_openssl's create_ssl_context), made once up front: where CAF
// aborts the process (a server's bad certificate) or never answers (a
// client's wrong passphrase), quern throws an error naming the file.
void check_tls_files(const caf::actor_system_config& cfg, const std::string& what) {
  require_complete(cfg, what);
  const auto& cert = cfg.openssl_certificate;
  const auto& key = cfg.openssl_key;
  const auto& cafile = cfg.openssl_cafile;
  require_readable(what, "certificate", cert);
  require_readable(what, "key", key);
  if (!cafile.empty())
    require_readable(what, "CA file", cafile);
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx{SSL_CTX_new(TLS_method()),
                                                   SSL_CTX_free};
  if (!ctx)
    throw internal_error(what + ": OpenSSL cannot make a context: " + openssl_reason());
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert.c_str()) != 1)
    throw invalid_argument_error(what + ": the TLS certificate '" + cert +
                                 "' is not a PEM certificate OpenSSL accepts (" +
                                 openssl_reason() + ")");
  use_key(ctx.get(), cfg, what);
  const auto& capath = cfg.openssl_capath;
  if (SSL_CTX_load_verify_locations(ctx.get(), cafile.empty() ? nullptr : cafile.c_str(),
                                    capath.empty() ? nullptr : capath.c_str()) != 1)
    throw invalid_argument_error(what + ": cannot load the TLS CA file '" + cafile +
                                 (capath.empty() ? "" : "' or CA path '" + capath) +
                                 "' (" + openssl_reason() + ")");
}

} // namespace remote_detail

} // namespace quern
