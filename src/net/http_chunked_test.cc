// SPDX-License-Identifier: Apache-2.0
#include "net/http_chunked.h"

#include <gtest/gtest.h>

#include <string>

namespace corral::net {
namespace {

struct Fed {
  ChunkedDecoder::Status status;
  size_t consumed;
  std::string rule;
  uint64_t payload;
};

Fed feedAll(const std::string& body, size_t step = 0) {
  ChunkedDecoder d;
  size_t total = 0;
  ChunkedDecoder::Status st = ChunkedDecoder::Status::kNeedMore;
  if (step == 0) step = body.size() ? body.size() : 1;
  for (size_t off = 0; off < body.size() && st == ChunkedDecoder::Status::kNeedMore; off += step) {
    size_t c = 0;
    st = d.feed(std::string_view(body).substr(off, step), &c);
    total += c;
  }
  return {st, total, d.error().rule, d.payloadBytes()};
}

TEST(HttpChunked, ValidBodyEndsExactlyAtTheFinalCrlf) {
  const std::string body = "5;ext=\"q\"\r\nhello\r\n1A\r\n" + std::string(26, 'z') + "\r\n0\r\nX-T: v\r\n\r\n";
  for (size_t step : {size_t(0), size_t(1), size_t(3)}) {
    Fed f = feedAll(body + "GET /next HTTP/1.1\r\n\r\n", step);
    EXPECT_EQ(f.status, ChunkedDecoder::Status::kDone) << step << " " << f.rule;
    EXPECT_EQ(f.consumed, body.size()) << step;
    EXPECT_EQ(f.payload, 31u);
  }
}

// The payload sink gets the chunk data alone, whatever the feeding steps: extensions,
// sizes, CRLFs and trailers stay out.
TEST(HttpChunked, PayloadSinkGetsTheDataWithoutItsFraming) {
  const std::string body = "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-T: trailer\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{3}, body.size()}) {
    ChunkedDecoder d;
    std::string payload;
    ChunkedDecoder::Status st = ChunkedDecoder::Status::kNeedMore;
    for (size_t off = 0; off < body.size() && st == ChunkedDecoder::Status::kNeedMore; off += step) {
      size_t c = 0;
      st = d.feed(std::string_view(body).substr(off, step), &c, &payload);
    }
    EXPECT_EQ(st, ChunkedDecoder::Status::kDone) << step;
    EXPECT_EQ(payload, "hello, world") << step;
  }
}

TEST(HttpChunked, NeedsMoreUntilTheLastChunk) {
  EXPECT_EQ(feedAll("5\r\nhello\r\n").status, ChunkedDecoder::Status::kNeedMore);
  EXPECT_EQ(feedAll("0\r\n").status, ChunkedDecoder::Status::kNeedMore);
  EXPECT_EQ(feedAll("0\r\n\r\n").status, ChunkedDecoder::Status::kDone);
}

TEST(HttpChunked, RefusesMalformedChunks) {
  EXPECT_EQ(feedAll("g\r\n").rule, "chunked-malformed");
  EXPECT_EQ(feedAll(" 5\r\nhello\r\n0\r\n\r\n").rule, "chunked-malformed");
  EXPECT_EQ(feedAll("5 \r\nhello\r\n0\r\n\r\n").rule, "chunked-malformed");
  EXPECT_EQ(feedAll("5\nhello\r\n0\r\n\r\n").rule, "chunked-malformed");
  EXPECT_EQ(feedAll("5\rhello\r\n0\r\n\r\n").rule, "chunked-malformed");
  EXPECT_EQ(feedAll("5\r\nhelloX\r\n0\r\n\r\n").rule, "chunked-malformed");  // data longer than its size
  EXPECT_EQ(feedAll("5\r\nhello\n0\r\n\r\n").rule, "chunked-malformed");
  EXPECT_EQ(feedAll("-5\r\n").rule, "chunked-malformed");
  EXPECT_EQ(feedAll("1000000000000000\r\n").rule, "chunked-malformed");  // 16 hex digits
  EXPECT_EQ(feedAll("5;a\x01\r\n").rule, "chunked-malformed");
  EXPECT_EQ(feedAll("0\r\nX-T: v\n\r\n").rule, "chunked-malformed");
  EXPECT_EQ(feedAll("0\r\n X-T: v\r\n\r\n").rule, "obs-fold");
  EXPECT_EQ(feedAll("0\r\nBad Name: v\r\n\r\n").rule, "bad-header-name");
}

TEST(HttpChunked, Limits) {
  EXPECT_EQ(feedAll("5;" + std::string(5000, 'e') + "\r\n").rule, "chunk-size-line-too-long");
  EXPECT_EQ(feedAll("0\r\nX: " + std::string(40000, 'v') + "\r\n\r\n").rule, "chunked-trailers-too-large");
  std::string many = "0\r\n";
  for (int i = 0; i < 101; ++i) many += "T" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(feedAll(many + "\r\n").rule, "chunked-trailers-too-large");
}

TEST(HttpChunked, ErrorIsSticky) {
  ChunkedDecoder d;
  size_t c = 0;
  EXPECT_EQ(d.feed("zz", &c), ChunkedDecoder::Status::kError);
  EXPECT_EQ(d.feed("0\r\n\r\n", &c), ChunkedDecoder::Status::kError);
  EXPECT_EQ(c, 0u);
}

}  // namespace
}  // namespace corral::net
