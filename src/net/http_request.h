// SPDX-License-Identifier: Apache-2.0
// Incremental, strict HTTP/1.x request-head parser: refuses anything a smuggler could use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace corral::net {

struct HttpLimits {
  size_t max_request_line = size_t{8} * 1024;   // bytes, without the CRLF
  size_t max_header_block = size_t{32} * 1024;  // every header line with its CRLF, plus the final CRLF
  size_t max_headers = 100;
};

struct Header {
  std::string name;   // as sent (compare with iequals)
  std::string value;  // leading and trailing SP/HTAB trimmed
};

enum class Framing : uint8_t { kNone, kContentLength, kChunked };

struct RequestHead {
  std::string method;
  std::string target;
  int minor_version = 1;  // HTTP/1.<minor>: 0 or 1
  std::vector<Header> headers;
  Framing framing = Framing::kNone;
  uint64_t content_length = 0;  // meaningful for kContentLength
  size_t head_size = 0;         // bytes up to and including the blank line
};

// Why a head was refused: `rule` goes to X-Corral-Denied ("bad-request-line",
// "content-length-and-transfer-encoding", ...); `reason` is one printable line.
struct HeadError {
  std::string rule;
  std::string reason;
};

// Feed it the bytes received so far (always the same buffer, growing): it scans only what
// is new, refuses as soon as a limit or a forbidden byte is seen (without waiting for the
// end of the head), and reports completion with the parsed head.
class RequestHeadParser {
 public:
  explicit RequestHeadParser(const HttpLimits& limits = {}) : limits_(limits) {}
  enum class Status : uint8_t { kNeedMore, kDone, kError };
  Status feed(std::string_view buffered);
  const RequestHead& head() const { return head_; }    // after kDone
  const HeadError& error() const { return error_; }    // after kError

 private:
  Status fail(std::string rule, std::string reason);
  Status lineDone(std::string_view line);
  Status finish();

  HttpLimits limits_;
  RequestHead head_;
  HeadError error_;
  size_t line_start_ = 0;   // offset of the line being scanned
  size_t scanned_ = 0;      // bytes already checked
  size_t header_bytes_ = 0;
  bool have_request_line_ = false;
  bool done_ = false;
};

// Shared by the chunked trailer parser: one "name: value" line (no CRLF) checked strictly.
std::optional<HeadError> parseHeaderLine(std::string_view line, Header& out);
// tchar per RFC 9110.
bool isTokenChar(char c);
bool iequals(std::string_view a, std::string_view b);
// The header names every Connection header lists (RFC 9110 7.6.1: hop-by-hop for this
// request), lowercased, without surrounding SP/HTAB.
std::set<std::string> connectionListed(const std::vector<Header>& headers);
// Printable rendering of hostile bytes for a reason line: at most `max` bytes, others \xNN.
std::string printable(std::string_view text, size_t max = 64);

}  // namespace corral::net
