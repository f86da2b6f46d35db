// SPDX-License-Identifier: Apache-2.0
#include "net/response_rewriter.h"

#include <gtest/gtest.h>

#include <random>

namespace corral::net {
namespace {

constexpr std::string_view kSecret = "tok-7f3a/SECRET+value";

std::shared_ptr<const RedactionPatterns> patterns() {
  RedactTarget t{"gh", kSecret};
  return std::make_shared<const RedactionPatterns>(std::span<const RedactTarget>(&t, 1));
}

struct Rewritten {
  ResponseRewriter::Status status;
  std::string out;
  std::string rule;
};

// Feeds `response` in pieces cut at random points, then EOF if it is still open.
Rewritten rewrite(std::string_view response, RewriterOptions options, uint32_t seed, bool eof = true) {
  ResponseRewriter rw(patterns(), options);
  std::mt19937 rng(seed);
  Rewritten r{ResponseRewriter::Status::kNeedMore, "", ""};
  size_t i = 0;
  while (i < response.size() && r.status == ResponseRewriter::Status::kNeedMore) {
    size_t n = std::min<size_t>(response.size() - i, 1 + rng() % 7);
    r.status = rw.feed(response.substr(i, n), r.out);
    i += n;
  }
  if (eof && r.status == ResponseRewriter::Status::kNeedMore) r.status = rw.finishAtEof(r.out);
  r.rule = rw.error().rule;
  return r;
}

// The body of a chunked message, de-chunked (the test's own reader).
std::string dechunk(std::string_view body, bool* complete) {
  std::string out;
  *complete = false;
  while (true) {
    size_t eol = body.find("\r\n");
    if (eol == std::string_view::npos) return out;
    size_t size = std::stoul(std::string(body.substr(0, eol)), nullptr, 16);
    body.remove_prefix(eol + 2);
    if (size == 0) {
      *complete = body == "\r\n";
      return out;
    }
    out += body.substr(0, size);
    body.remove_prefix(size + 2);
  }
}

std::string bodyText() { return "a " + std::string(kSecret) + " b tok-7f3a%2FSECRET%2Bvalue c"; }

TEST(ResponseRewriter, ContentLengthBodyIsRedactedAndRechunkedOverAnySplit) {
  const std::string body = bodyText();
  const std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\nX-Echo: " + std::string(kSecret) + "\r\nConnection: keep-alive\r\n\r\n" + body;
  for (uint32_t seed = 0; seed < 50; ++seed) {
    Rewritten r = rewrite(resp, {}, seed, false);
    ASSERT_EQ(r.status, ResponseRewriter::Status::kDone) << r.rule;
    EXPECT_EQ(r.out.find(kSecret), std::string::npos);
    EXPECT_EQ(r.out.find("Content-Length"), std::string::npos);
    EXPECT_NE(r.out.find("X-Echo: [REDACTED:gh]\r\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"), std::string::npos);
    bool complete = false;
    EXPECT_EQ(dechunk(r.out.substr(r.out.find("\r\n\r\n") + 4), &complete), patterns()->redactAll(body));
    EXPECT_TRUE(complete);
  }
}

TEST(ResponseRewriter, ChunkedUpstreamWithTinyChunksAndTrailersIsRedacted) {
  const std::string body = bodyText();
  std::string resp = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (size_t i = 0; i < body.size(); i += 3) {
    std::string part = body.substr(i, 3);
    char size[8];
    std::snprintf(size, sizeof size, "%zx", part.size());
    resp += std::string(size) + (i == 0 ? ";ext=1" : "") + "\r\n" + part + "\r\n";
  }
  resp += "0\r\nX-Trailer: " + std::string(kSecret) + "\r\n\r\nGET /pipelined HTTP/1.1\r\n";
  for (uint32_t seed = 0; seed < 50; ++seed) {
    Rewritten r = rewrite(resp, {}, seed, false);
    ASSERT_EQ(r.status, ResponseRewriter::Status::kDone) << r.rule;
    EXPECT_EQ(r.out.find(kSecret), std::string::npos);
    EXPECT_EQ(r.out.find("X-Trailer"), std::string::npos);
    EXPECT_EQ(r.out.find("pipelined"), std::string::npos);
    bool complete = false;
    EXPECT_EQ(dechunk(r.out.substr(r.out.find("\r\n\r\n") + 4), &complete), patterns()->redactAll(body));
    EXPECT_TRUE(complete);
  }
}

TEST(ResponseRewriter, HttpOneZeroClientGetsCloseDelimitedBody) {
  const std::string body = bodyText();
  RewriterOptions o;
  o.client_minor_version = 0;
  Rewritten r = rewrite("HTTP/1.1 200 OK\r\n\r\n" + body, o, 1);
  ASSERT_EQ(r.status, ResponseRewriter::Status::kDone);
  EXPECT_EQ(r.out, "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n" + patterns()->redactAll(body));
}

TEST(ResponseRewriter, InterimResponsesAreDroppedAndBodylessStatusesEndAtTheHead) {
  Rewritten r = rewrite("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", {}, 2, false);
  EXPECT_EQ(r.status, ResponseRewriter::Status::kDone);
  EXPECT_EQ(r.out, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
  RewriterOptions head;
  head.head_request = true;
  r = rewrite("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", head, 3, false);
  EXPECT_EQ(r.status, ResponseRewriter::Status::kDone);
  EXPECT_EQ(r.out, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
}

TEST(ResponseRewriter, TruncationAndBadFramingAreErrors) {
  struct Case {
    std::string response;
    std::string rule;
  } cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "lease-response-truncated"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "lease-response-truncated"},
      {"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\nx", "lease-response-encoded"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", "lease-response-malformed"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", "lease-response-malformed"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "lease-response-malformed"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "lease-response-malformed"},
      {"HTTP/1.1 200 OK\r\n folded\r\n\r\n", "lease-response-malformed"},
      {"SSH-2.0-x\r\n\r\n", "lease-response-malformed"},
      {"HTTP/1.1 101 Switching\r\n\r\n", "lease-response-malformed"},
      // A bare LF in the reason phrase smuggles a header the client sees and corral does not:
      // the chunked body would reach the client un-de-framed, the secret split across chunks.
      {"HTTP/1.1 301 M\nTransfer-Encoding: chunked\r\n\r\n5\r\ntok-7\r\n10\r\nf3a/SECRET+value\r\n0\r\n\r\n",
       "lease-response-malformed"},
      {std::string("HTTP/1.1 200 O\0K\r\nContent-Length: 0\r\n\r\n", sizeof("HTTP/1.1 200 O\0K\r\nContent-Length: 0\r\n\r\n") - 1),
       "lease-response-malformed"},
      {"HTTP/1.1 200 O\rK\r\nContent-Length: 0\r\n\r\n", "lease-response-malformed"},
      {"", "upstream-unreachable"},
  };
  for (const Case& c : cases) {
    Rewritten r = rewrite(c.response, {}, 4);
    EXPECT_EQ(r.status, ResponseRewriter::Status::kError) << c.response;
    EXPECT_EQ(r.rule, c.rule) << c.response;
  }
}

TEST(ResponseRewriter, CloseDelimitedBodyEndsAtEof) {
  Rewritten r = rewrite("HTTP/1.1 200 OK\r\n\r\nabc", {}, 5);
  ASSERT_EQ(r.status, ResponseRewriter::Status::kDone);
  EXPECT_EQ(r.out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
}

}  // namespace
}  // namespace corral::net
