// SPDX-License-Identifier: Apache-2.0
// The request head corral-wasm-guest sends to the egress proxy for a corral_http request:
// what the guest chooses and what it cannot (wasm.http-head-owned at the unit level).
#include "wasm/guest/http_exchange.h"

#include <gtest/gtest.h>

#include "wasm/guest/wasi_host.h"

namespace corral::wasm::guest {
namespace {

HttpConfig config() { return {3128, {{"api", "https://api.example.com:443"}}}; }

std::string head(const HttpRequest& r, uint16_t* err = nullptr) {
  std::string h;
  const uint16_t e = requestHead(config(), r, &h);
  if (err) *err = e;
  return e == kOk ? h : "";
}

TEST(WasmHttpRequestHead, ForwardRequestWithHostFramingAndClose) {
  EXPECT_EQ(head({"GET", "http://Example.com:8080/a?b=1", "Accept: x\n", "", 0}),
            "GET http://Example.com:8080/a?b=1 HTTP/1.1\r\nHost: Example.com:8080\r\nAccept: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(head({"POST", "http://h", "", "", 5}), "POST http://h/ HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(head({"PUT", "http://h?q", "", "", -1}),
            "PUT http://h/?q HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
}

TEST(WasmHttpRequestHead, LeasedRequestGoesToTheBrokerOnlyForItsOrigin) {
  EXPECT_EQ(head({"GET", "https://API.example.com/v1/x", "", "api", 0}),
            "GET /lease/api/v1/x HTTP/1.1\r\nHost: 127.0.0.1:3128\r\nConnection: close\r\n\r\n");
  EXPECT_NE(head({"GET", "https://api.example.com:443/", "", "api", 0}), "");
  uint16_t e = 0;
  for (const char* url : {"https://api.example.com:8443/", "http://api.example.com/", "https://evil.example.com/"}) {
    head({"GET", url, "", "api", 0}, &e);
    EXPECT_EQ(e, kNotcapable) << url;
  }
  head({"GET", "https://api.example.com/", "", "other", 0}, &e);
  EXPECT_EQ(e, kNotcapable);
}

TEST(WasmHttpRequestHead, MalformedOrHostOwnedPartsAreInval) {
  const HttpRequest bad[] = {
      {"G ET", "http://h/", "", "", 0},          {"", "http://h/", "", "", 0},
      {"GET", "http://h/a b", "", "", 0},        {"GET", "http://h/#frag", "", "", 0},
      {"GET", "http://u:p@h/", "", "", 0},       {"GET", "ftp://h/", "", "", 0},
      {"GET", "http:///x", "", "", 0},           {"GET", "h/x", "", "", 0},
      {"GET", "http://h/", "Host: other", "", 0}, {"GET", "http://h/", "content-length: 1", "", 0},
      {"GET", "http://h/", "X: a\rB: c", "", 0},  {"GET", "http://h/", "NoColon", "", 0},
      {"GET", "http://h/", "Bad Name: v", "", 0}, {"GET", "http://h/", "X: \x01", "", 0},
      {"GET", "http://h/", "", "", -2},
  };
  for (const HttpRequest& r : bad) {
    uint16_t e = 0;
    head(r, &e);
    EXPECT_EQ(e, kInval) << r.method << " " << r.url << " [" << r.headers << "]";
  }
}

TEST(WasmHttpRequestHead, HttpsWithoutALeaseGoesInATunnelToItsAuthority) {
  std::string h, tunnel, host;
  ASSERT_EQ(requestHead(config(), {"GET", "https://Example.com/x", "", "", 0}, &h, &tunnel, &host), kOk);
  EXPECT_EQ(h, "GET /x HTTP/1.1\r\nHost: Example.com\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(tunnel, "example.com:443");
  EXPECT_EQ(host, "example.com");
  ASSERT_EQ(requestHead(config(), {"GET", "https://[::1]:8443", "", "", 0}, &h, &tunnel, &host), kOk);
  EXPECT_EQ(tunnel, "[::1]:8443");
  EXPECT_EQ(host, "::1");
  ASSERT_EQ(requestHead(config(), {"GET", "http://h/", "", "", 0}, &h, &tunnel, &host), kOk);
  EXPECT_EQ(tunnel, "") << "plain http is forwarded, not tunnelled";
}

}  // namespace
}  // namespace corral::wasm::guest
