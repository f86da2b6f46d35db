// SPDX-License-Identifier: Apache-2.0
// Fuzzes the proxy's HTTP request-head parser and chunked body validator: whole and split
// feeds must agree, and what is accepted must be unambiguous to forward.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "net/http_chunked.h"
#include "net/http_request.h"

namespace corral::fuzz {
namespace {

using net::Framing;
using net::RequestHeadParser;

bool clean(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u == 0 || u == '\r' || u == '\n') return false;
  }
  return true;
}

void checkHead(std::string_view input, size_t step) {
  RequestHeadParser whole;
  auto st = whole.feed(input);
  if (st == RequestHeadParser::Status::kError) {
    PROPERTY(noControlBytes(whole.error().reason) && !whole.error().reason.empty(), whole.error().reason);
    PROPERTY(!whole.error().rule.empty(), std::string(input.substr(0, 200)));
  }
  // Split feeding (the proxy sees the head in pieces) must reach the same verdict.
  RequestHeadParser split;
  auto st2 = RequestHeadParser::Status::kNeedMore;
  for (size_t n = step; st2 == RequestHeadParser::Status::kNeedMore; n += step) {
    st2 = split.feed(input.substr(0, std::min(n, input.size())));
    if (n >= input.size()) break;
  }
  PROPERTY(st == st2, "whole and split feeds disagree");
  if (st == RequestHeadParser::Status::kError) PROPERTY(whole.error().rule == split.error().rule, whole.error().rule + " vs " + split.error().rule);
  if (st != RequestHeadParser::Status::kDone) return;
  const net::RequestHead& h = whole.head();
  PROPERTY(h.head_size <= input.size() && input.substr(h.head_size - 4, 4) == "\r\n\r\n", "head_size off the blank line");
  PROPERTY(h.head_size == split.head().head_size, "split head_size differs");
  PROPERTY(h.minor_version == 0 || h.minor_version == 1, h.method);
  for (char c : h.method) PROPERTY(net::isTokenChar(c), h.method);
  for (char c : h.target) PROPERTY(c > 0x20 && c < 0x7f, h.target);
  size_t cl = 0, te = 0;
  for (const auto& hd : h.headers) {
    PROPERTY(!hd.name.empty() && clean(hd.name) && clean(hd.value), hd.name);
    for (char c : hd.name) PROPERTY(net::isTokenChar(c), hd.name);
    cl += net::iequals(hd.name, "content-length");
    te += net::iequals(hd.name, "transfer-encoding");
  }
  // Invariant of the anti-smuggling rules: at most one framing signal, and it is the parsed one.
  PROPERTY(cl <= 1 && !(cl && te), "ambiguous framing accepted");
  PROPERTY((h.framing == Framing::kContentLength) == (cl == 1), "content-length framing mismatch");
  PROPERTY((h.framing == Framing::kChunked) == (te >= 1), "chunked framing mismatch");
  if (h.framing != Framing::kChunked) return;
  // The chunked body after the head: whole vs byte-wise feeding agree on verdict and length.
  std::string_view body = input.substr(h.head_size);
  net::ChunkedDecoder a, b;
  size_t ca = 0;
  auto sa = a.feed(body, &ca);
  PROPERTY(ca <= body.size(), "consumed past the input");
  size_t cb = 0;
  auto sb = net::ChunkedDecoder::Status::kNeedMore;
  for (size_t i = 0; i < body.size() && sb == net::ChunkedDecoder::Status::kNeedMore; ++i) {
    size_t c = 0;
    sb = b.feed(body.substr(i, 1), &c);
    cb += c;
  }
  PROPERTY(sa == sb, "chunked whole and byte-wise disagree");
  if (sa == net::ChunkedDecoder::Status::kDone) {
    PROPERTY(ca == cb, "chunked body length differs between feeds");
    PROPERTY(body.substr(ca - 2, 2) == "\r\n", "chunked body does not end in CRLF");
  }
  if (sa == net::ChunkedDecoder::Status::kError) PROPERTY(noControlBytes(a.error().reason), a.error().reason);
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 80 * 1024) return 0;
  size_t step = 1 + data[0] % 64;
  corral::fuzz::checkHead(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), step);
  return 0;
}
