// SPDX-License-Identifier: Apache-2.0
// Strict HTTP/1.x request-head parser. Every refusal here is one a front end and a back end
// could disagree on (RFC 9112 section 11.2): the proxy answers 400 and closes instead.
#include "net/http_request.h"

#include <cstdio>

namespace corral::net {
namespace {

bool isOws(char c) { return c == ' ' || c == '\t'; }

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && isOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && isOws(s.back())) s.remove_suffix(1);
  return s;
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Field-value bytes: VCHAR, obs-text, SP and HTAB. Everything else (NUL, CR, LF, other
// controls, DEL) is refused rather than replaced, so no hop sees a different value.
bool isFieldValueByte(unsigned char u) { return u == '\t' || u == ' ' || (u >= 0x21 && u != 0x7f); }

bool allDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

bool isTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::string printable(std::string_view text, size_t max) {
  std::string out;
  for (char c : text.substr(0, max)) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '\'' || c == '"' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  if (text.size() > max) out += "...";
  return out;
}

std::optional<HeadError> parseHeaderLine(std::string_view line, Header& out) {
  if (!line.empty() && isOws(line.front()))
    return HeadError{"obs-fold", "a header line starts with whitespace (obsolete line folding)"};
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return HeadError{"bad-header-name", "a header line has no ':'"};
  std::string_view name = line.substr(0, colon);
  if (name.empty()) return HeadError{"bad-header-name", "a header has an empty name"};
  for (char c : name)
    if (!isTokenChar(c))
      return HeadError{"bad-header-name", "header name '" + printable(name) + "' has a byte outside the token set"};
  std::string_view value = trimOws(line.substr(colon + 1));
  for (char c : value)
    if (!isFieldValueByte(static_cast<unsigned char>(c)))
      return HeadError{"bad-header-value", "header '" + printable(name) + "' has a control byte in its value"};
  out.name.assign(name);
  out.value.assign(value);
  return std::nullopt;
}

RequestHeadParser::Status RequestHeadParser::fail(std::string rule, std::string reason) {
  error_ = {std::move(rule), std::move(reason)};
  done_ = true;
  return Status::kError;
}

RequestHeadParser::Status RequestHeadParser::feed(std::string_view buf) {
  if (done_) return error_.rule.empty() ? Status::kDone : Status::kError;
  for (size_t i = scanned_; i < buf.size(); ++i) {
    const char c = buf[i];
    if (c == '\0') return fail("nul-byte", "the request head contains a NUL byte");
    if (i > line_start_ && buf[i - 1] == '\r' && c != '\n')
      return fail("bare-cr", "the request head contains a CR not followed by LF");
    if (c == '\n') {
      if (i == line_start_ || buf[i - 1] != '\r')
        return fail("bare-lf", "the request head contains a LF not preceded by CR");
      std::string_view line = buf.substr(line_start_, i - 1 - line_start_);
      if (have_request_line_) header_bytes_ += line.size() + 2;
      if (have_request_line_ && header_bytes_ > limits_.max_header_block)
        return fail("headers-too-large", "the header block exceeds " + std::to_string(limits_.max_header_block) + " bytes");
      line_start_ = i + 1;
      scanned_ = i + 1;
      if (Status s = lineDone(line); s != Status::kNeedMore) {
        if (s == Status::kDone) head_.head_size = i + 1;
        return s;
      }
      continue;
    }
    const size_t partial = i + 1 - line_start_;
    if (!have_request_line_ && partial > limits_.max_request_line + 1)
      return fail("request-line-too-long", "the request line exceeds " + std::to_string(limits_.max_request_line) + " bytes");
    if (have_request_line_ && header_bytes_ + partial > limits_.max_header_block)
      return fail("headers-too-large", "the header block exceeds " + std::to_string(limits_.max_header_block) + " bytes");
  }
  scanned_ = buf.size();
  return Status::kNeedMore;
}

RequestHeadParser::Status RequestHeadParser::lineDone(std::string_view line) {
  if (!have_request_line_) {
    if (line.size() > limits_.max_request_line)
      return fail("request-line-too-long", "the request line exceeds " + std::to_string(limits_.max_request_line) + " bytes");
    have_request_line_ = true;
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
      return fail("bad-request-line", "the request line is not 'METHOD target HTTP/1.x' with single spaces");
    std::string_view method = line.substr(0, sp1);
    std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::string_view version = line.substr(sp2 + 1);
    if (method == "PRI" && version == "HTTP/2.0")
      return fail("http2-preface", "HTTP/2 prior knowledge is not served; use HTTP/1.1 to the proxy");
    if (method.empty() || target.empty())
      return fail("bad-request-line", "the request line has an empty method or target");
    for (char c : method)
      if (!isTokenChar(c)) return fail("bad-request-line", "the method '" + printable(method) + "' is not a token");
    for (char c : target)
      if (c < 0x21 || c > 0x7e)
        return fail("bad-request-line", "the request target has a byte outside visible ASCII");
    if (version == "HTTP/1.1") {
      head_.minor_version = 1;
    } else if (version == "HTTP/1.0") {
      head_.minor_version = 0;
    } else {
      return fail("http-version-unsupported", "version '" + printable(version, 16) + "' is not HTTP/1.0 or HTTP/1.1");
    }
    head_.method.assign(method);
    head_.target.assign(target);
    return Status::kNeedMore;
  }
  if (line.empty()) return finish();
  if (head_.headers.size() >= limits_.max_headers)
    return fail("too-many-headers", "the request has more than " + std::to_string(limits_.max_headers) + " headers");
  Header h;
  if (auto err = parseHeaderLine(line, h)) return fail(err->rule, err->reason);
  head_.headers.push_back(std::move(h));
  return Status::kNeedMore;
}

RequestHeadParser::Status RequestHeadParser::finish() {
  const Header* cl = nullptr;
  std::string te;  // every Transfer-Encoding value, comma-joined
  bool has_te = false;
  for (const Header& h : head_.headers) {
    if (iequals(h.name, "content-length")) {
      if (cl) return fail("content-length-duplicate", "the request has more than one Content-Length header");
      cl = &h;
    } else if (iequals(h.name, "transfer-encoding")) {
      if (has_te) te += ',';
      te += h.value;
      has_te = true;
    }
  }
  if (cl && has_te)
    return fail("content-length-and-transfer-encoding", "the request has both Content-Length and Transfer-Encoding");
  if (cl) {
    // Digits only: "5, 5", "+5", " 5" and hex are refused, and 18 digits bound the value.
    if (!allDigits(cl->value) || cl->value.size() > 18)
      return fail("content-length-malformed", "Content-Length '" + printable(cl->value, 24) + "' is not a decimal number");
    head_.framing = Framing::kContentLength;
    head_.content_length = std::stoull(cl->value);
  }
  if (has_te) {
    if (head_.minor_version == 0)
      return fail("transfer-encoding-unsupported", "an HTTP/1.0 request must not use Transfer-Encoding");
    if (!iequals(trimOws(te), "chunked"))
      return fail("transfer-encoding-unsupported", "Transfer-Encoding '" + printable(te, 32) + "' is not exactly 'chunked'");
    head_.framing = Framing::kChunked;
  }
  if (head_.method == "CONNECT" && head_.framing != Framing::kNone)
    return fail("connect-with-body", "a CONNECT request must not carry Content-Length or Transfer-Encoding");
  done_ = true;
  return Status::kDone;
}

std::set<std::string> connectionListed(const std::vector<Header>& headers) {
  std::set<std::string> listed;
  for (const Header& hd : headers) {
    if (!iequals(hd.name, "connection")) continue;
    std::string_view v = hd.value;
    while (!v.empty()) {
      size_t comma = v.find(',');
      std::string_view item = v.substr(0, comma);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      if (!item.empty()) {
        std::string name(item);
        for (char& c : name)
          if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        listed.insert(std::move(name));
      }
      v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
    }
  }
  return listed;
}

}  // namespace corral::net
