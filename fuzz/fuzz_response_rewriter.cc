// SPDX-License-Identifier: Apache-2.0
// Fuzzes the lease response path (net::ResponseRewriter): an upstream's bytes in, the client's
// bytes out. Properties: any chunking of the input gives the same output and outcome as one
// feed, and the leased secret never reaches the client in clear (the secret holds no control
// byte, so it cannot straddle the head's CRLFs or corral's own framing).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "net/response_rewriter.h"

namespace corral::fuzz {
namespace {

constexpr std::string_view kSecret = "corral-fuzz-secret-7f3a";

struct Outcome {
  std::string out;
  net::ResponseRewriter::Status status = net::ResponseRewriter::Status::kNeedMore;
  std::string rule;
};

Outcome run(const std::shared_ptr<const net::RedactionPatterns>& patterns, const net::RewriterOptions& opts,
            std::string_view data, const std::vector<size_t>& sizes, bool eof) {
  net::ResponseRewriter rw(patterns, opts);
  Outcome o;
  size_t pos = 0;
  for (size_t n : sizes) {
    o.status = rw.feed(data.substr(pos, n), o.out);
    pos += n;
    if (o.status != net::ResponseRewriter::Status::kNeedMore) break;
  }
  if (o.status == net::ResponseRewriter::Status::kNeedMore && eof) o.status = rw.finishAtEof(o.out);
  if (o.status == net::ResponseRewriter::Status::kError) o.rule = rw.error().rule;
  return o;
}

// The client's view: the head as sent, plus the body with corral's chunked framing removed.
// Chunk sizes follow the input's chunking, the payload must not. false when corral's own
// framing does not parse (a property violation of its own).
bool deframe(const std::string& out, std::string* view) {
  size_t end = out.find("\r\n\r\n");
  if (end == std::string::npos || out.find("\r\nTransfer-Encoding: chunked\r\n") > end) {
    *view = out;
    return true;
  }
  *view = out.substr(0, end + 4);
  size_t pos = end + 4;
  while (pos < out.size()) {
    size_t eol = out.find("\r\n", pos);
    if (eol == std::string::npos) return true;  // cut short (an error after part of the body)
    size_t n = 0;
    for (size_t i = pos; i < eol; ++i) {
      char c = out[i];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0 || n > (size_t{1} << 40)) return false;
      n = n * 16 + static_cast<size_t>(d);
    }
    if (eol == pos) return false;
    pos = eol + 2;
    if (n == 0) return out.compare(pos, std::string::npos, "\r\n") == 0 || pos == out.size();
    if (out.size() - pos < n) {
      view->append(out, pos, std::string::npos);
      return true;
    }
    view->append(out, pos, n);
    pos += n;
    if (out.compare(pos, 2, "\r\n") != 0 && pos != out.size()) return false;
    pos += 2;
  }
  return true;
}

}  // namespace
}  // namespace corral::fuzz

// Input: [flags][chunking seed][upstream bytes...]. flags: bit 0 HEAD, bit 1 HTTP/1.0 client,
// bit 2 the upstream closes after the bytes.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral;
  if (size < 2) return 0;
  const uint8_t flags = data[0];
  const uint32_t seed = data[1];
  std::string_view body(reinterpret_cast<const char*>(data + 2), size - 2);
  net::RewriterOptions opts;
  opts.head_request = flags & 1;
  opts.client_minor_version = (flags & 2) ? 0 : 1;
  opts.max_head = 4096;
  std::vector<net::RedactTarget> targets = {{"fz", fuzz::kSecret}};
  auto patterns = std::make_shared<const net::RedactionPatterns>(targets);
  const bool eof = flags & 4;
  fuzz::Outcome whole = fuzz::run(patterns, opts, body, {body.size()}, eof);
  fuzz::Outcome split = fuzz::run(patterns, opts, body, fuzz::chunking(seed, body.size(), 23), eof);
  PROPERTY(whole.status == split.status, "status depends on chunking");
  PROPERTY(whole.rule == split.rule, "error rule depends on chunking: " + whole.rule + " vs " + split.rule);
  std::string whole_view, split_view;
  PROPERTY(fuzz::deframe(whole.out, &whole_view), "corral's chunked framing does not parse");
  PROPERTY(fuzz::deframe(split.out, &split_view), "corral's chunked framing does not parse (chunked input)");
  PROPERTY(whole_view == split_view, "what the client reads depends on chunking");
  PROPERTY(whole.out.find(fuzz::kSecret) == std::string::npos, "the secret reached the client in clear");
  PROPERTY(split.out.find(fuzz::kSecret) == std::string::npos, "the secret reached the client in clear (chunked)");
  return 0;
}
