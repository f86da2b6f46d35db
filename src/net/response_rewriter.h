// SPDX-License-Identifier: Apache-2.0
// An upstream HTTP/1.x response rewritten for the client when redaction may change its body's
// length: head parsed, body decoded from its framing, redacted, framed again (pure).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "net/http_request.h"
#include "net/redactor.h"

namespace corral::net {

struct RewriterOptions {
  bool head_request = false;     // HEAD: no body follows, whatever the head says
  int client_minor_version = 1;  // HTTP/1.1 clients get a chunked body; HTTP/1.0 a close-delimited one
  size_t max_head = size_t{64} * 1024;   // status line and headers
};

// Output framing: the upstream's Content-Length or chunking is removed and the redacted body
// is sent chunked (or close-delimited to HTTP/1.0), always with `Connection: close`. A body
// that ends early therefore reaches an HTTP/1.1 client without its last chunk, so the client
// can tell a cut-off from a complete response. 1xx interim responses are dropped; header
// values and the reason phrase are redacted; a header whose name holds a secret is dropped;
// trailers are dropped. A Content-Encoding other than identity is refused: redaction cannot
// see inside compressed bytes.
class ResponseRewriter {
 public:
  ResponseRewriter(std::shared_ptr<const RedactionPatterns> patterns, RewriterOptions options);
  enum class Status : uint8_t { kNeedMore, kDone, kError };

  // Upstream bytes in; bytes for the client appended to out. Bytes after the end of the
  // response are ignored.
  Status feed(std::string_view data, std::string& out);
  // The upstream closed: ends a close-delimited body, and is an error anywhere else.
  Status finishAtEof(std::string& out);

  bool headDone() const { return state_ > State::kHead; }
  int status() const { return status_; }
  uint64_t redactions() const;
  // The label (lease name) of every secret redacted so far, each once.
  std::vector<std::string> redactedLabels() const;
  const HeadError& error() const { return error_; }  // rule (X-Corral-Denied) and reason

 private:
  enum class State : uint8_t { kHead, kLength, kChunked, kClose, kDone, kError };
  enum class Chunk : uint8_t { kSize, kExt, kSizeLf, kData, kDataCr, kDataLf, kTrailer };
  Status fail(std::string rule, std::string reason);
  Status parseHead(std::string& out, std::string& rest);
  void emitBody(std::string_view payload, std::string& out);
  // Appends redacted bytes, as one chunk when the response is re-chunked.
  void emitClean(std::string_view clean, std::string& out);
  void complete(std::string& out);
  Status feedChunked(std::string_view data, std::string& out);

  std::shared_ptr<const RedactionPatterns> patterns_;
  RewriterOptions options_;
  Redactor redactor_;
  uint64_t head_redactions_ = 0;
  std::vector<std::string> head_labels_;
  State state_ = State::kHead;
  HeadError error_;
  std::string head_buf_;
  int status_ = 0;
  bool chunk_out_ = false;  // frame the client's body as chunked
  uint64_t left_ = 0;       // Content-Length bytes, or bytes of the current chunk
  Chunk chunk_ = Chunk::kSize;
  size_t digits_ = 0;
  size_t line_ = 0;  // bytes of the current extension or trailer line
  size_t trailer_bytes_ = 0;
};

}  // namespace corral::net
