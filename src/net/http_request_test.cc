// SPDX-License-Identifier: Apache-2.0
#include "net/http_request.h"

#include <gtest/gtest.h>

#include <string>

namespace corral::net {
namespace {

struct Parsed {
  RequestHeadParser::Status status;
  RequestHead head;
  HeadError error;
};

Parsed parse(const std::string& bytes, HttpLimits limits = {}) {
  RequestHeadParser p(limits);
  auto st = p.feed(bytes);
  return {st, p.head(), p.error()};
}

std::string refusedRule(const std::string& bytes) {
  Parsed p = parse(bytes);
  EXPECT_EQ(p.status, RequestHeadParser::Status::kError) << "accepted: " << bytes;
  return p.error.rule;
}

TEST(HttpRequest, ParsesAbsoluteFormWithOrderedHeaders) {
  Parsed p = parse("GET http://example.com/a?b HTTP/1.1\r\nHost:  example.com \r\nX-A: 1\r\nx-a: 2\r\n\r\nBODY");
  ASSERT_EQ(p.status, RequestHeadParser::Status::kDone) << p.error.reason;
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(p.head.target, "http://example.com/a?b");
  EXPECT_EQ(p.head.minor_version, 1);
  ASSERT_EQ(p.head.headers.size(), 3u);
  EXPECT_EQ(p.head.headers[0].value, "example.com");
  EXPECT_EQ(p.head.headers[2].name, "x-a");
  EXPECT_EQ(p.head.framing, Framing::kNone);
  EXPECT_EQ(p.head.head_size, p.head.head_size);
  EXPECT_EQ(std::string("GET http://example.com/a?b HTTP/1.1\r\nHost:  example.com \r\nX-A: 1\r\nx-a: 2\r\n\r\n").size(), p.head.head_size);
}

TEST(HttpRequest, IncrementalFeedByteByByteMatchesWhole) {
  const std::string req = "POST http://h/ HTTP/1.0\r\nContent-Length: 12\r\n\r\n";
  RequestHeadParser p;
  for (size_t i = 1; i < req.size(); ++i)
    ASSERT_EQ(p.feed(std::string_view(req).substr(0, i)), RequestHeadParser::Status::kNeedMore) << i;
  ASSERT_EQ(p.feed(req), RequestHeadParser::Status::kDone);
  EXPECT_EQ(p.head().framing, Framing::kContentLength);
  EXPECT_EQ(p.head().content_length, 12u);
  EXPECT_EQ(p.head().minor_version, 0);
}

TEST(HttpRequest, ChunkedFraming) {
  Parsed p = parse("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n");
  ASSERT_EQ(p.status, RequestHeadParser::Status::kDone);
  EXPECT_EQ(p.head.framing, Framing::kChunked);
}

TEST(HttpRequest, RefusesSmugglingFraming) {
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
            "content-length-and-transfer-encoding");
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"), "content-length-duplicate");
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n"), "content-length-malformed");
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.1\r\nContent-Length: +3\r\n\r\n"), "content-length-malformed");
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.1\r\nContent-Length: 0x3\r\n\r\n"), "content-length-malformed");
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.1\r\nContent-Length: \r\n\r\n"), "content-length-malformed");
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"), "content-length-malformed");
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), "transfer-encoding-unsupported");
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
            "transfer-encoding-unsupported");
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n"), "transfer-encoding-unsupported");
  EXPECT_EQ(refusedRule("POST http://h/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), "transfer-encoding-unsupported");
  EXPECT_EQ(refusedRule("CONNECT h:443 HTTP/1.1\r\nContent-Length: 1\r\n\r\n"), "connect-with-body");
}

TEST(HttpRequest, RefusesBadBytesAndFolding) {
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.1\r\nHost: h\r\n X-Folded: y\r\n\r\n"), "obs-fold");
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.1\r\nHost: h\rX: y\r\n\r\n"), "bare-cr");
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.1\nHost: h\r\n\r\n"), "bare-lf");
  EXPECT_EQ(refusedRule(std::string("GET http://h/ HTTP/1.1\r\nHost: h\0x\r\n\r\n", 36)), "nul-byte");
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.1\r\nHost : h\r\n\r\n"), "bad-header-name");
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.1\r\nHo(st: h\r\n\r\n"), "bad-header-name");
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.1\r\n: h\r\n\r\n"), "bad-header-name");
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.1\r\nNoColon\r\n\r\n"), "bad-header-name");
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.1\r\nX: a\x01z\r\n\r\n"), "bad-header-value");
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.1\r\nX: a\x7fz\r\n\r\n"), "bad-header-value");
}

TEST(HttpRequest, RefusesBadRequestLines) {
  EXPECT_EQ(refusedRule("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), "http2-preface");
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/2\r\n\r\n"), "http-version-unsupported");
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.2\r\n\r\n"), "http-version-unsupported");
  EXPECT_EQ(refusedRule("GET http://h/ http/1.1\r\n\r\n"), "http-version-unsupported");
  EXPECT_EQ(refusedRule("GET  http://h/ HTTP/1.1\r\n\r\n"), "bad-request-line");
  EXPECT_EQ(refusedRule("GET http://h/\r\n\r\n"), "bad-request-line");
  EXPECT_EQ(refusedRule("GET http://h/ x HTTP/1.1\r\n\r\n"), "bad-request-line");
  EXPECT_EQ(refusedRule("G(T http://h/ HTTP/1.1\r\n\r\n"), "bad-request-line");
  EXPECT_EQ(refusedRule("GET http://h/\x80 HTTP/1.1\r\n\r\n"), "bad-request-line");
  EXPECT_EQ(refusedRule("\r\nGET http://h/ HTTP/1.1\r\n\r\n"), "bad-request-line");
}

TEST(HttpRequest, LimitsRefuseEarlyWithoutTheEndOfHead) {
  // The line is refused as soon as it is too long, before its CRLF ever arrives.
  EXPECT_EQ(refusedRule("GET http://h/" + std::string(9 * 1024, 'a')), "request-line-too-long");
  Parsed ok = parse("GET http://h/" + std::string(8 * 1024 - 22, 'a') + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(ok.status, RequestHeadParser::Status::kDone) << ok.error.reason;
  EXPECT_EQ(refusedRule("GET http://h/ HTTP/1.1\r\nX: " + std::string(64 * 1024, 'a')), "headers-too-large");
  std::string many = "GET http://h/ HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "X" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(refusedRule(many + "\r\n"), "too-many-headers");
  std::string hundred = "GET http://h/ HTTP/1.1\r\n";
  for (int i = 0; i < 100; ++i) hundred += "X" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(parse(hundred + "\r\n").status, RequestHeadParser::Status::kDone);
}

TEST(HttpRequest, PrintableEscapesHostileBytes) {
  EXPECT_EQ(printable("a\r\n\"b"), "a\\x0d\\x0a\\x22b");
  EXPECT_EQ(printable(std::string(100, 'x'), 4), "xxxx...");
}

}  // namespace
}  // namespace corral::net
