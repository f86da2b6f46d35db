// SPDX-License-Identifier: Apache-2.0
#include "net/tls_sni.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <string>

namespace corral::net {
namespace {

// The first flight of a real OpenSSL client: what curl and python send through a tunnel.
std::string clientHello(const char* sni) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* rbio = BIO_new(BIO_s_mem());
  BIO* wbio = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, rbio, wbio);
  if (sni) SSL_set_tlsext_host_name(ssl, sni);
  SSL_set_connect_state(ssl);
  (void)SSL_do_handshake(ssl);  // wants to read the ServerHello: the ClientHello is in wbio
  char* data = nullptr;
  long n = BIO_get_mem_data(wbio, &data);
  std::string out(data, static_cast<size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return out;
}

TEST(TlsSni, FindsTheServerNameOfARealClientHello) {
  std::string hello = clientHello("api.example.com");
  SniResult r = parseClientHelloSni(hello);
  ASSERT_EQ(r.status, SniStatus::kFound) << r.reason;
  EXPECT_EQ(r.host, "api.example.com");
}

TEST(TlsSni, AbsentWhenTheClientSendsNone) {
  EXPECT_EQ(parseClientHelloSni(clientHello(nullptr)).status, SniStatus::kAbsent);
}

TEST(TlsSni, NeedsMoreOnEveryPrefix) {
  std::string hello = clientHello("a.example");
  for (size_t i = 1; i < hello.size(); ++i)
    ASSERT_EQ(parseClientHelloSni(hello.substr(0, i)).status, SniStatus::kNeedMore) << i;
}

TEST(TlsSni, ReassemblesAClientHelloSplitOverRecords) {
  std::string hello = clientHello("split.example");
  std::string payload = hello.substr(5);
  std::string two;
  size_t half = payload.size() / 2;
  for (auto part : {payload.substr(0, half), payload.substr(half)}) {
    two += std::string("\x16\x03\x01", 3);
    two += static_cast<char>(part.size() >> 8);
    two += static_cast<char>(part.size() & 0xff);
    two += part;
  }
  SniResult r = parseClientHelloSni(two);
  ASSERT_EQ(r.status, SniStatus::kFound) << r.reason;
  EXPECT_EQ(r.host, "split.example");
}

TEST(TlsSni, NotTlsAndMalformed) {
  EXPECT_EQ(parseClientHelloSni("GET / HTTP/1.1\r\n").status, SniStatus::kNotTls);
  EXPECT_EQ(parseClientHelloSni(std::string("\x16\x03\x01\x00\x00", 5)).status, SniStatus::kMalformed);
  EXPECT_EQ(parseClientHelloSni(std::string("\x16\x02\x01\x00\x01\x01", 6)).status, SniStatus::kMalformed);
  // A handshake record whose message is a ServerHello (2), not a ClientHello.
  EXPECT_EQ(parseClientHelloSni(std::string("\x16\x03\x01\x00\x04\x02\x00\x00\x00", 9)).status, SniStatus::kMalformed);
  // A record too long for TLS.
  EXPECT_EQ(parseClientHelloSni(std::string("\x16\x03\x01\xff\xff", 5)).status, SniStatus::kMalformed);
  // A ClientHello whose body is truncated inside the random.
  EXPECT_EQ(parseClientHelloSni(std::string("\x16\x03\x01\x00\x08\x01\x00\x00\x04\x03\x03\x00\x00", 13)).status,
            SniStatus::kMalformed);
}

TEST(TlsSni, RefusesTwoServerNameExtensions) {
  std::string hello = clientHello("one.example");
  // Duplicate the extension by appending a copy of it; fix up the three lengths.
  size_t pos = hello.find("one.example");
  ASSERT_NE(pos, std::string::npos);
  // The SNI extension starts 9 bytes before the name: type(2) len(2) list(2) name_type(1) len(2).
  size_t ext_start = pos - 9;
  size_t ext_len = 9 + 11;
  std::string ext = hello.substr(ext_start, ext_len);
  hello += ext;
  auto bump = [&](size_t at, size_t width, size_t add) {
    size_t v = 0;
    for (size_t i = 0; i < width; ++i) v = (v << 8) | static_cast<uint8_t>(hello[at + i]);
    v += add;
    for (size_t i = 0; i < width; ++i) hello[at + width - 1 - i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  bump(3, 2, ext_len);  // record length
  bump(6, 3, ext_len);  // handshake length
  // Extensions length: after version(2) random(32) sid cs comp.
  size_t p = 9 + 2 + 32;
  p += 1 + static_cast<uint8_t>(hello[p]);
  p += 2 + ((static_cast<uint8_t>(hello[p]) << 8) | static_cast<uint8_t>(hello[p + 1]));
  p += 1 + static_cast<uint8_t>(hello[p]);
  bump(p, 2, ext_len);
  SniResult r = parseClientHelloSni(hello);
  EXPECT_EQ(r.status, SniStatus::kMalformed) << r.host;
}

}  // namespace
}  // namespace corral::net
