// SPDX-License-Identifier: Apache-2.0
// A verifying TLS 1.2+ client over OpenSSL 3, loaded on first use (tls_client.h says why).
#include "wasm/guest/tls_client.h"

#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <climits>

#include "wasm/guest/wasi_host.h"

namespace corral::wasm::guest {
namespace {

// The OpenSSL functions used, resolved from libssl.so.3 (libcrypto's come through its
// dependencies). Types come from the headers, so a signature mismatch does not compile.
struct Ssl {
#define CORRAL_SSL_FN(name) decltype(&::name) name = nullptr;  // NOLINT(bugprone-macro-parentheses): a declared name
  CORRAL_SSL_FN(TLS_client_method)
  CORRAL_SSL_FN(SSL_CTX_new)
  CORRAL_SSL_FN(SSL_CTX_free)
  CORRAL_SSL_FN(SSL_CTX_ctrl)
  CORRAL_SSL_FN(SSL_CTX_set_verify)
  CORRAL_SSL_FN(SSL_CTX_load_verify_locations)
  CORRAL_SSL_FN(SSL_CTX_set_default_verify_paths)
  CORRAL_SSL_FN(SSL_new)
  CORRAL_SSL_FN(SSL_free)
  CORRAL_SSL_FN(SSL_set_fd)
  CORRAL_SSL_FN(SSL_ctrl)
  CORRAL_SSL_FN(SSL_set1_host)
  CORRAL_SSL_FN(SSL_get0_param)
  CORRAL_SSL_FN(X509_VERIFY_PARAM_set1_ip_asc)
  CORRAL_SSL_FN(SSL_connect)
  CORRAL_SSL_FN(SSL_read)
  CORRAL_SSL_FN(SSL_write)
  CORRAL_SSL_FN(ERR_peek_last_error)
#undef CORRAL_SSL_FN
};

const Ssl* ssl() {
  static Ssl s;
  static int state = 0;  // 0 untried, 1 loaded, -1 unavailable
  if (state != 0) return state > 0 ? &s : nullptr;
  state = -1;
  void* lib = ::dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return nullptr;
  bool ok = true;
#define CORRAL_SSL_LOAD(name)                                                  \
  s.name = reinterpret_cast<decltype(&::name)>(::dlsym(lib, #name));           \
  ok = ok && s.name != nullptr;
  CORRAL_SSL_LOAD(TLS_client_method)
  CORRAL_SSL_LOAD(SSL_CTX_new)
  CORRAL_SSL_LOAD(SSL_CTX_free)
  CORRAL_SSL_LOAD(SSL_CTX_ctrl)
  CORRAL_SSL_LOAD(SSL_CTX_set_verify)
  CORRAL_SSL_LOAD(SSL_CTX_load_verify_locations)
  CORRAL_SSL_LOAD(SSL_CTX_set_default_verify_paths)
  CORRAL_SSL_LOAD(SSL_new)
  CORRAL_SSL_LOAD(SSL_free)
  CORRAL_SSL_LOAD(SSL_set_fd)
  CORRAL_SSL_LOAD(SSL_ctrl)
  CORRAL_SSL_LOAD(SSL_set1_host)
  CORRAL_SSL_LOAD(SSL_get0_param)
  CORRAL_SSL_LOAD(X509_VERIFY_PARAM_set1_ip_asc)
  CORRAL_SSL_LOAD(SSL_connect)
  CORRAL_SSL_LOAD(SSL_read)
  CORRAL_SSL_LOAD(SSL_write)
  CORRAL_SSL_LOAD(ERR_peek_last_error)
#undef CORRAL_SSL_LOAD
  if (ok) state = 1;
  return ok ? &s : nullptr;
}

bool isIpLiteral(const std::string& host) {
  if (host.find(':') != std::string::npos) return true;  // IPv6 (brackets already stripped)
  return !host.empty() && host.find_first_not_of("0123456789.") == std::string::npos;
}

}  // namespace

uint16_t TlsClient::connect(int fd, const std::string& host, const std::string& ca_file, std::unique_ptr<TlsClient>* out) {
  const Ssl* s = ssl();
  if (!s) return kNotsup;
  SSL_CTX* ctx = s->SSL_CTX_new(s->TLS_client_method());
  if (!ctx) return kIo;
  s->SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
  s->SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const int cas = ca_file.empty() ? s->SSL_CTX_set_default_verify_paths(ctx)
                                  : s->SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  SSL* ssl = cas == 1 ? s->SSL_new(ctx) : nullptr;
  std::unique_ptr<TlsClient> c(new TlsClient(ctx, ssl));
  if (!ssl || s->SSL_set_fd(ssl, fd) != 1) return kIo;
  // A name: SNI (the proxy's tunnel rule requires it to match) and the certificate's name; an
  // address: no SNI (RFC 6066) and the certificate's IP SAN.
  const bool literal = isIpLiteral(host);
  if (literal ? s->X509_VERIFY_PARAM_set1_ip_asc(s->SSL_get0_param(ssl), host.c_str()) != 1
              : (s->SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(host.c_str())) != 1 ||
                 s->SSL_set1_host(ssl, host.c_str()) != 1))
    return kIo;
  if (s->SSL_connect(ssl) != 1)
    return ERR_GET_REASON(s->ERR_peek_last_error()) == SSL_R_TLSV1_ALERT_ACCESS_DENIED ? kNotcapable : kIo;
  *out = std::move(c);
  return kOk;
}

TlsClient::~TlsClient() {
  const Ssl* s = ssl();
  if (!s) return;
  if (ssl_) s->SSL_free(static_cast<SSL*>(ssl_));
  if (ctx_) s->SSL_CTX_free(static_cast<SSL_CTX*>(ctx_));
}

ssize_t TlsClient::write(const char* data, size_t len) {
  const int n = ssl()->SSL_write(static_cast<SSL*>(ssl_), data, static_cast<int>(std::min<size_t>(len, INT_MAX)));
  return n > 0 ? n : -1;
}

ssize_t TlsClient::read(char* data, size_t len) {
  const int n = ssl()->SSL_read(static_cast<SSL*>(ssl_), data, static_cast<int>(std::min<size_t>(len, INT_MAX)));
  return n > 0 ? n : 0;  // a close, clean or not: the framing tells a cut-short body
}

}  // namespace corral::wasm::guest
