// SPDX-License-Identifier: Apache-2.0
// TLS upstream client against an in-test TLS server whose CA and certificates are made here.
#include "net/tls_upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

namespace corral::net {
namespace {

namespace egress = policy::egress;

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* x) const { X509_free(x); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

constexpr long kDay = 24 * 3600;

struct CertSpec {
  std::string cn;
  std::string san;  // "DNS:test.example,IP:127.0.0.1"; "" for a CA
  bool ca = false;
  long not_before = -kDay;  // seconds from now
  long not_after = kDay;
};

void addExt(X509* x, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, x, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  ASSERT_NE(ext, nullptr) << value;
  X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for key, signed by issuer (self-signed when issuer is null).
Cert makeCert(const CertSpec& s, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key) {
  static long serial = 1;
  Cert x(X509_new());
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), s.not_before);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), s.not_after);
  X509_set_pubkey(x.get(), key);
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(s.cn.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : x.get();
  X509_set_issuer_name(x.get(), X509_get_subject_name(signer));
  addExt(x.get(), signer, NID_basic_constraints, s.ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  addExt(x.get(), signer, NID_key_usage, s.ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
  if (!s.san.empty()) addExt(x.get(), signer, NID_subject_alt_name, s.san);
  EXPECT_GT(X509_sign(x.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()), 0);
  return x;
}

Key newKey() { return Key(EVP_EC_gen("P-256")); }

struct Pki {
  Key ca_key = newKey();
  Cert ca = makeCert({"corral test CA", "", true}, ca_key.get(), nullptr, nullptr);
  Key other_ca_key = newKey();
  Cert other_ca = makeCert({"untrusted CA", "", true}, other_ca_key.get(), nullptr, nullptr);
  Key leaf_key = newKey();
  std::string bundle_path;

  Pki() {
    char path[] = "/tmp/corral-tls-test-XXXXXX";
    int fd = ::mkstemp(path);
    EXPECT_GE(fd, 0);
    ::close(fd);
    bundle_path = path;
    BIO* bio = BIO_new_file(path, "w");
    PEM_write_bio_X509(bio, ca.get());
    BIO_free(bio);
  }
  ~Pki() { ::unlink(bundle_path.c_str()); }
  Cert leaf(const CertSpec& s, bool trusted = true) {
    return makeCert(s, leaf_key.get(), trusted ? ca.get() : other_ca.get(),
                    trusted ? ca_key.get() : other_ca_key.get());
  }
};

// Accepts one connection, handshakes with cert, sends a greeting, echoes one read, closes.
class TestServer {
 public:
  TestServer(X509* cert, EVP_PKEY* key, int max_version = 0, bool handshake = true) {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
    EXPECT_EQ(::listen(listen_, 4), 0);
    socklen_t len = sizeof sin;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&sin), &len);
    port_ = ntohs(sin.sin_port);
    ctx_ = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate(ctx_, cert);
    SSL_CTX_use_PrivateKey(ctx_, key);
    if (max_version != 0) {
      SSL_CTX_set_security_level(ctx_, 0);
      SSL_CTX_set_min_proto_version(ctx_, TLS1_VERSION);
      SSL_CTX_set_max_proto_version(ctx_, max_version);
    }
    if (handshake) thread_ = std::thread([this] { serveOne(); });
  }
  ~TestServer() {
    if (thread_.joinable()) thread_.join();
    ::close(listen_);
    SSL_CTX_free(ctx_);
  }
  uint16_t port() const { return port_; }
  bool handshook() const { return handshook_; }

 private:
  void serveOne() {
    int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      handshook_ = true;
      SSL_write(ssl, "hello ", 6);
      char buf[64];
      int n = SSL_read(ssl, buf, sizeof buf);
      if (n > 0) SSL_write(ssl, buf, n);
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    ::close(fd);
  }
  int listen_ = -1;
  uint16_t port_ = 0;
  SSL_CTX* ctx_ = nullptr;
  std::thread thread_;
  bool handshook_ = false;
};

class TlsUpstreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ::signal(SIGPIPE, SIG_IGN); }
  TlsClientContext context(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto ctx = TlsClientContext::create({pki_.bundle_path, timeout, timeout});
    EXPECT_TRUE(ctx.ok()) << ctx.error().message();
    return std::move(ctx).value();
  }
  Result<TlsStream> dial(const TlsClientContext& ctx, uint16_t port, const std::string& host) {
    return TlsStream::connect(ctx, egress::ipv4(127, 0, 0, 1), port, host);
  }
  Pki pki_;
};

std::string readAll(TlsStream& s) {
  std::string out;
  char buf[16];
  while (true) {
    auto n = s.read(buf);
    EXPECT_TRUE(n.ok()) << n.error().message();
    if (!n.ok() || *n == 0) return out;
    out.append(buf, *n);
  }
}

TEST_F(TlsUpstreamTest, ValidCertificateIsAcceptedAndCarriesData) {
  Cert cert = pki_.leaf({"test.example", "DNS:test.example"});
  TestServer server(cert.get(), pki_.leaf_key.get());
  auto ctx = context();
  auto s = dial(ctx, server.port(), "test.example");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->protocol() == "TLSv1.3" || s->protocol() == "TLSv1.2") << s->protocol();
  ASSERT_TRUE(s->writeAll("world").ok());
  EXPECT_EQ(readAll(*s), "hello world");
  EXPECT_TRUE(s->shutdown().ok());
}

TEST_F(TlsUpstreamTest, WrongHostnameIsRefused) {
  Cert cert = pki_.leaf({"test.example", "DNS:test.example"});
  TestServer server(cert.get(), pki_.leaf_key.get());
  auto ctx = context();
  auto s = dial(ctx, server.port(), "other.example");
  ASSERT_FALSE(s.ok()) << "connected to other.example with test.example's certificate";
  EXPECT_EQ(s.error().code(), static_cast<int>(Errc::kRefused));
  EXPECT_NE(s.error().message().find("hostname mismatch"), std::string::npos) << s.error().message();
  EXPECT_FALSE(server.handshook());
}

TEST_F(TlsUpstreamTest, FullWildcardIsAccepted) {  // the control for the partial one
  Cert cert = pki_.leaf({"w", "DNS:*.test.example"});
  TestServer server(cert.get(), pki_.leaf_key.get());
  auto ctx = context();
  auto s = dial(ctx, server.port(), "ab.test.example");
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE(s->writeAll("w").ok());
  EXPECT_EQ(readAll(*s), "hello w");
}

TEST_F(TlsUpstreamTest, PartialWildcardIsRefused) {
  Cert cert = pki_.leaf({"w", "DNS:a*.test.example"});
  TestServer server(cert.get(), pki_.leaf_key.get());
  auto ctx = context();
  auto s = dial(ctx, server.port(), "ab.test.example");
  ASSERT_FALSE(s.ok()) << "a*.test.example vouched for ab.test.example";
  EXPECT_NE(s.error().message().find("hostname mismatch"), std::string::npos) << s.error().message();
}

TEST_F(TlsUpstreamTest, UntrustedCaIsRefused) {
  Cert cert = pki_.leaf({"test.example", "DNS:test.example"}, /*trusted=*/false);
  TestServer server(cert.get(), pki_.leaf_key.get());
  auto ctx = context();
  auto s = dial(ctx, server.port(), "test.example");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("certificate refused"), std::string::npos) << s.error().message();
}

TEST_F(TlsUpstreamTest, SystemStoreDoesNotTrustTheTestCa) {
  Cert cert = pki_.leaf({"test.example", "DNS:test.example"});
  TestServer server(cert.get(), pki_.leaf_key.get());
  auto ctx = TlsClientContext::create({});
  ASSERT_TRUE(ctx.ok()) << ctx.error().message();
  auto s = dial(*ctx, server.port(), "test.example");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), static_cast<int>(Errc::kRefused)) << s.error().message();
}

// The system store loads on a thread of its own (create() does not wait for it) and the
// handshake waits for it: the store OpenSSL's defaults name, here through SSL_CERT_FILE, is
// what verifies. The control is SystemStoreDoesNotTrustTheTestCa above.
TEST_F(TlsUpstreamTest, TheSystemStoreLoadedBehindTheCallerIsWhatVerifies) {
  Cert cert = pki_.leaf({"test.example", "DNS:test.example"});
  TestServer server(cert.get(), pki_.leaf_key.get());
  const char* old_file = std::getenv("SSL_CERT_FILE");
  const std::string saved = old_file ? old_file : "";
  ::setenv("SSL_CERT_FILE", pki_.bundle_path.c_str(), 1);
  auto ctx = TlsClientContext::create({});
  ASSERT_TRUE(ctx.ok()) << ctx.error().message();
  auto s = dial(*ctx, server.port(), "test.example");
  EXPECT_TRUE(s.ok()) << s.error().message();
  // Only now: the loader reads the variable on its own thread.
  if (old_file) ::setenv("SSL_CERT_FILE", saved.c_str(), 1);
  else ::unsetenv("SSL_CERT_FILE");
}

TEST_F(TlsUpstreamTest, ExpiredCertificateIsRefused) {
  Cert cert = pki_.leaf({"test.example", "DNS:test.example", false, -3 * kDay, -kDay});
  TestServer server(cert.get(), pki_.leaf_key.get());
  auto ctx = context();
  auto s = dial(ctx, server.port(), "test.example");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("certificate has expired"), std::string::npos) << s.error().message();
}

TEST_F(TlsUpstreamTest, IpLiteralIsCheckedAgainstIpAddresses) {
  Cert by_ip = pki_.leaf({"ip", "IP:127.0.0.1"});
  {
    TestServer server(by_ip.get(), pki_.leaf_key.get());
    auto ctx = context();
    auto s = dial(ctx, server.port(), "127.0.0.1");
    ASSERT_TRUE(s.ok()) << s.error().message();
    ASSERT_TRUE(s->writeAll("x").ok());
    EXPECT_EQ(readAll(*s), "hello x");
  }
  Cert by_name = pki_.leaf({"127.0.0.1", "DNS:127.0.0.1"});  // a name that looks like the IP
  TestServer server(by_name.get(), pki_.leaf_key.get());
  auto ctx = context();
  EXPECT_FALSE(dial(ctx, server.port(), "127.0.0.1").ok()) << "a DNS SAN must not vouch for an IP";
}

TEST_F(TlsUpstreamTest, OldProtocolIsRefused) {
  Cert cert = pki_.leaf({"test.example", "DNS:test.example"});
  TestServer server(cert.get(), pki_.leaf_key.get(), TLS1_1_VERSION);
  auto ctx = context();
  auto s = dial(ctx, server.port(), "test.example");
  ASSERT_FALSE(s.ok()) << "negotiated " << s->protocol();
  EXPECT_FALSE(server.handshook());
}

TEST_F(TlsUpstreamTest, SilentServerTimesOut) {
  Cert cert = pki_.leaf({"test.example", "DNS:test.example"});
  TestServer server(cert.get(), pki_.leaf_key.get(), 0, /*handshake=*/false);  // listens, never answers
  auto ctx = context(std::chrono::milliseconds(200));
  auto s = dial(ctx, server.port(), "test.example");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ETIMEDOUT) << s.error().message();
}

TEST_F(TlsUpstreamTest, RefusedPortIsAnError) {
  uint16_t port = 0;
  {
    TestServer closed(nullptr, nullptr, 0, false);
    port = closed.port();
  }
  auto ctx = context();
  auto s = dial(ctx, port, "test.example");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ECONNREFUSED) << s.error().message();
}

TEST(TlsClientContext, MissingOrEmptyBundleIsAClearError) {
  auto missing = TlsClientContext::create({"/nonexistent/corral-ca.pem"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/corral-ca.pem"), std::string::npos);
  auto empty = TlsClientContext::create({"/dev/null"});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("no usable PEM"), std::string::npos) << empty.error().message();
}

}  // namespace
}  // namespace corral::net
