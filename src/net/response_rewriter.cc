// SPDX-License-Identifier: Apache-2.0
// ResponseRewriter: upstream head and framing in, redacted and re-framed bytes out.
#include "net/response_rewriter.h"

#include <set>

namespace corral::net {
namespace {

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// Hop-by-hop and framing: the proxy frames the body itself and closes after it.
bool droppedFromResponse(std::string_view lname) {
  return lname == "connection" || lname == "keep-alive" || lname == "proxy-connection" ||
         lname == "transfer-encoding" || lname == "content-length" || lname == "te" || lname == "trailer" ||
         lname == "upgrade";
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr size_t kMaxChunkLine = 4096;
constexpr size_t kMaxTrailers = size_t{32} * 1024;

}  // namespace

ResponseRewriter::ResponseRewriter(std::shared_ptr<const RedactionPatterns> patterns, RewriterOptions options)
    : patterns_(patterns), options_(options), redactor_(std::move(patterns)) {}

uint64_t ResponseRewriter::redactions() const { return head_redactions_ + redactor_.redactions(); }

std::vector<std::string> ResponseRewriter::redactedLabels() const {
  std::vector<std::string> labels = head_labels_;
  redactor_.addLabels(labels);
  return labels;
}

ResponseRewriter::Status ResponseRewriter::fail(std::string rule, std::string reason) {
  state_ = State::kError;
  error_ = {std::move(rule), std::move(reason)};
  return Status::kError;
}

ResponseRewriter::Status ResponseRewriter::feed(std::string_view data, std::string& out) {
  switch (state_) {
    case State::kError: return Status::kError;
    case State::kDone: return Status::kDone;
    case State::kHead: {
      head_buf_.append(data);
      std::string rest;
      Status st = parseHead(out, rest);
      if (st != Status::kNeedMore || state_ == State::kHead) return st;
      return rest.empty() ? Status::kNeedMore : feed(rest, out);
    }
    case State::kLength: {
      std::string_view take = data.substr(0, static_cast<size_t>(std::min<uint64_t>(left_, data.size())));
      left_ -= take.size();
      emitBody(take, out);
      if (left_ == 0) complete(out);
      return state_ == State::kDone ? Status::kDone : Status::kNeedMore;
    }
    case State::kChunked: return feedChunked(data, out);
    case State::kClose:
      emitBody(data, out);
      return Status::kNeedMore;
  }
  return Status::kError;
}

ResponseRewriter::Status ResponseRewriter::finishAtEof(std::string& out) {
  if (state_ == State::kClose) {
    complete(out);
    return Status::kDone;
  }
  if (state_ == State::kDone || state_ == State::kError) return state_ == State::kDone ? Status::kDone : Status::kError;
  if (state_ == State::kHead)
    return fail("upstream-unreachable", head_buf_.empty() ? "the upstream closed without a response"
                                                          : "the upstream closed inside the response head");
  return fail("lease-response-truncated", "the upstream closed before the end of the response body");
}

// Parses one complete head from head_buf_ (1xx heads are dropped and parsing goes on). On
// success the client head is appended to out, the state is the body's, and rest holds the
// bytes after the head.
ResponseRewriter::Status ResponseRewriter::parseHead(std::string& out, std::string& rest) {
  while (true) {
    size_t end = head_buf_.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (head_buf_.size() > options_.max_head)
        return fail("lease-response-malformed", "the upstream's response head exceeds " + std::to_string(options_.max_head) + " bytes");
      return Status::kNeedMore;
    }
    if (end + 4 > options_.max_head)
      return fail("lease-response-malformed", "the upstream's response head exceeds " + std::to_string(options_.max_head) + " bytes");
    std::string_view head(head_buf_.data(), end);
    size_t eol = head.find("\r\n");
    std::string_view status_line = head.substr(0, eol);
    // "HTTP/1.x NNN[ reason]"
    if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ' ||
        (status_line.size() > 12 && status_line[12] != ' '))
      return fail("lease-response-malformed", "the upstream sent no HTTP/1.x status line");
    int code = 0;
    for (size_t i = 9; i < 12; ++i) {
      if (status_line[i] < '0' || status_line[i] > '9')
        return fail("lease-response-malformed", "the upstream's status code is not three digits");
      code = code * 10 + (status_line[i] - '0');
    }
    if (code < 100) return fail("lease-response-malformed", "the upstream's status code is below 100");
    std::string_view reason = status_line.size() > 13 ? status_line.substr(13) : std::string_view();
    // RFC 9112: HTAB, SP, VCHAR, obs-text only. A bare LF here would end the line for the
    // client but not for this parser: a header the client sees (Transfer-Encoding) that
    // corral did not, and a body that reaches the client without being de-framed and redacted
    // (found by fuzz/fuzz_response_rewriter.cc).
    for (char c : reason) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && u != '\t') || u == 0x7f)
        return fail("lease-response-malformed", "the upstream's reason phrase holds a control byte");
    }
    std::vector<Header> headers;
    std::string_view lines = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
    while (!lines.empty()) {
      size_t e = lines.find("\r\n");
      std::string_view line = lines.substr(0, e);
      lines = e == std::string_view::npos ? std::string_view() : lines.substr(e + 2);
      Header h;
      if (auto err = parseHeaderLine(line, h)) return fail("lease-response-malformed", "upstream header: " + err->reason);
      headers.push_back(std::move(h));
    }
    std::string after = head_buf_.substr(end + 4);
    if (code == 101) return fail("lease-response-malformed", "the upstream switched protocols, which leases do not carry");
    if (code < 200) {  // interim (100 Continue, 103 Early Hints): dropped
      head_buf_ = std::move(after);
      continue;
    }
    status_ = code;

    // Framing of the upstream's body.
    const bool no_body = options_.head_request || code == 204 || code == 304;
    std::set<std::string> listed;
    int te_count = 0, cl_count = 0;
    bool chunked = false;
    uint64_t length = 0;
    for (const Header& h : headers) {
      std::string lname = lowered(h.name);
      if (lname == "connection") {
        std::string_view v = h.value;
        while (!v.empty()) {
          size_t comma = v.find(',');
          std::string_view item = trimmed(v.substr(0, comma));
          if (!item.empty()) listed.insert(lowered(item));
          v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
        }
      } else if (lname == "transfer-encoding") {
        ++te_count;
        chunked = iequals(trimmed(h.value), "chunked");
      } else if (lname == "content-length") {
        ++cl_count;
        std::string_view v = trimmed(h.value);
        if (v.empty() || v.size() > 18) return fail("lease-response-malformed", "the upstream's Content-Length is malformed");
        for (char c : v) {
          if (c < '0' || c > '9') return fail("lease-response-malformed", "the upstream's Content-Length is malformed");
          length = length * 10 + static_cast<uint64_t>(c - '0');
        }
      } else if (lname == "content-encoding" && !no_body && !iequals(trimmed(h.value), "identity")) {
        return fail("lease-response-encoded",
                    "the upstream sent a Content-Encoding other than identity, which cannot be redacted");
      }
    }
    if (!no_body && (te_count > 1 || (te_count == 1 && !chunked) || cl_count > 1 || (te_count && cl_count)))
      return fail("lease-response-malformed", "the upstream's response framing is ambiguous or unsupported");

    chunk_out_ = !no_body && options_.client_minor_version >= 1;
    std::string redacted_reason = patterns_->redactAll(reason, &head_redactions_, &head_labels_);
    out += "HTTP/1." + std::to_string(options_.client_minor_version >= 1 ? 1 : 0) + " " + std::to_string(code);
    if (!redacted_reason.empty()) out += " " + redacted_reason;
    out += "\r\n";
    for (const Header& h : headers) {
      std::string lname = lowered(h.name);
      if (droppedFromResponse(lname) || listed.count(lname)) continue;
      uint64_t in_name = 0;
      (void)patterns_->redactAll(h.name, &in_name, &head_labels_);
      if (in_name) {  // a marker is no token: the field goes
        head_redactions_ += in_name;
        continue;
      }
      out += h.name + ": " + patterns_->redactAll(h.value, &head_redactions_, &head_labels_) + "\r\n";
    }
    if (chunk_out_) out += "Transfer-Encoding: chunked\r\n";
    out += "Connection: close\r\n\r\n";
    head_buf_.clear();
    rest = std::move(after);
    if (no_body) {
      state_ = State::kDone;
      return Status::kDone;
    }
    if (te_count) {
      state_ = State::kChunked;
    } else if (cl_count) {
      state_ = State::kLength;
      left_ = length;
      if (left_ == 0) {
        complete(out);
        return Status::kDone;
      }
    } else {
      state_ = State::kClose;
    }
    return Status::kNeedMore;
  }
}

void ResponseRewriter::emitBody(std::string_view payload, std::string& out) {
  if (payload.empty()) return;
  emitClean(redactor_.feed(payload), out);
}

void ResponseRewriter::emitClean(std::string_view clean, std::string& out) {
  if (clean.empty()) return;
  if (chunk_out_) {
    char size[20];
    std::snprintf(size, sizeof size, "%zx\r\n", clean.size());
    out += size;
    out += clean;
    out += "\r\n";
  } else {
    out += clean;
  }
}

void ResponseRewriter::complete(std::string& out) {
  emitClean(redactor_.finish(), out);
  if (chunk_out_) out += "0\r\n\r\n";
  state_ = State::kDone;
}

ResponseRewriter::Status ResponseRewriter::feedChunked(std::string_view data, std::string& out) {
  size_t i = 0;
  while (i < data.size() && state_ == State::kChunked) {
    const char c = data[i];
    switch (chunk_) {
      case Chunk::kSize: {
        int v = hexValue(c);
        if (v >= 0) {
          if (++digits_ > 15) return fail("lease-response-malformed", "the upstream's chunk size is too long");
          left_ = left_ * 16 + static_cast<uint64_t>(v);
        } else if (digits_ > 0 && c == ';') {
          chunk_ = Chunk::kExt;
          line_ = 0;
        } else if (digits_ > 0 && c == '\r') {
          chunk_ = Chunk::kSizeLf;
        } else {
          return fail("lease-response-malformed", "the upstream's chunk size line is malformed");
        }
        ++i;
        break;
      }
      case Chunk::kExt:
        if (c == '\r') {
          chunk_ = Chunk::kSizeLf;
        } else if (++line_ > kMaxChunkLine || c == '\n') {
          return fail("lease-response-malformed", "the upstream's chunk extension is malformed");
        }
        ++i;
        break;
      case Chunk::kSizeLf:
        if (c != '\n') return fail("lease-response-malformed", "the upstream's chunk size line is malformed");
        ++i;
        digits_ = 0;
        line_ = 0;
        chunk_ = left_ == 0 ? Chunk::kTrailer : Chunk::kData;
        break;
      case Chunk::kData: {
        size_t take = static_cast<size_t>(std::min<uint64_t>(left_, data.size() - i));
        emitBody(data.substr(i, take), out);
        left_ -= take;
        i += take;
        if (left_ == 0) chunk_ = Chunk::kDataCr;
        break;
      }
      case Chunk::kDataCr:
        if (c != '\r') return fail("lease-response-malformed", "the upstream's chunk data is longer than its size");
        chunk_ = Chunk::kDataLf;
        ++i;
        break;
      case Chunk::kDataLf:
        if (c != '\n') return fail("lease-response-malformed", "the upstream's chunk data is longer than its size");
        chunk_ = Chunk::kSize;
        ++i;
        break;
      case Chunk::kTrailer:
        // Trailers are read and dropped: they could carry anything, and the client's body
        // framing is the proxy's own.
        if (++trailer_bytes_ > kMaxTrailers) return fail("lease-response-malformed", "the upstream's trailers are too large");
        if (c == '\n') {
          if (line_ == 1) {  // just "\r": the empty line that ends the body
            complete(out);
            return Status::kDone;
          }
          line_ = 0;
        } else {
          ++line_;
        }
        ++i;
        break;
    }
  }
  return state_ == State::kDone ? Status::kDone : (state_ == State::kError ? Status::kError : Status::kNeedMore);
}

}  // namespace corral::net
