// SPDX-License-Identifier: Apache-2.0
// Streaming validator of a chunked request body (RFC 9112 section 7.1): the proxy forwards
// exactly the bytes it has validated, so a body cannot end where another hop thinks it goes on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/http_request.h"

namespace corral::net {

struct ChunkedLimits {
  size_t max_size_line = 4096;  // chunk-size plus extensions, without the CRLF
  size_t max_trailer_block = size_t{32} * 1024;
  size_t max_trailers = 100;
};

class ChunkedDecoder {
 public:
  explicit ChunkedDecoder(const ChunkedLimits& limits = {}) : limits_(limits) {}
  enum class Status : uint8_t { kNeedMore, kDone, kError };
  // Reads a prefix of data; *consumed is how many bytes of it belong to the body (forward
  // those verbatim). After kDone any bytes past *consumed are not part of this body. With
  // payload, the chunk data among them (the body without its framing) is appended there.
  Status feed(std::string_view data, size_t* consumed, std::string* payload = nullptr);
  const HeadError& error() const { return error_; }
  uint64_t payloadBytes() const { return payload_; }

 private:
  enum class State : uint8_t { kSize, kExt, kSizeLf, kData, kDataCr, kDataLf, kTrailer, kTrailerLf, kDone, kError };
  Status fail(std::string rule, std::string reason);

  ChunkedLimits limits_;
  State state_ = State::kSize;
  HeadError error_;
  uint64_t chunk_left_ = 0;
  uint64_t payload_ = 0;
  size_t size_digits_ = 0;
  size_t line_len_ = 0;
  std::string trailer_line_;
  size_t trailer_bytes_ = 0;
  size_t trailers_ = 0;
};

}  // namespace corral::net
