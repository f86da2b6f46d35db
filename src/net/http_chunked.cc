// SPDX-License-Identifier: Apache-2.0
// Chunked body validation: strict hex sizes, CRLF only, bounded extensions and trailers.
#include "net/http_chunked.h"

#include <algorithm>

#include "base/hex.h"

namespace corral::net {
namespace {

// 15 hex digits keep the size below 2^60: no overflow, and more than any body we relay.
constexpr size_t kMaxSizeDigits = 15;

}  // namespace

ChunkedDecoder::Status ChunkedDecoder::fail(std::string rule, std::string reason) {
  state_ = State::kError;
  error_ = {std::move(rule), std::move(reason)};
  return Status::kError;
}

ChunkedDecoder::Status ChunkedDecoder::feed(std::string_view data, size_t* consumed, std::string* payload) {
  *consumed = 0;
  if (state_ == State::kError) return Status::kError;
  size_t i = 0;
  while (i < data.size() && state_ != State::kDone) {
    const char c = data[i];
    switch (state_) {
      case State::kSize: {
        int v = hexValue(c);
        if (v >= 0) {
          if (++size_digits_ > kMaxSizeDigits) return fail("chunked-malformed", "a chunk size has more than 15 hex digits");
          chunk_left_ = chunk_left_ * 16 + static_cast<uint64_t>(v);
        } else if (size_digits_ == 0) {
          return fail("chunked-malformed", "a chunk size line does not start with a hex digit");
        } else if (c == ';') {
          state_ = State::kExt;
        } else if (c == '\r') {
          state_ = State::kSizeLf;
        } else {
          return fail("chunked-malformed", "a chunk size is followed by a byte other than ';' or CRLF");
        }
        ++line_len_;
        break;
      }
      case State::kExt: {
        auto u = static_cast<unsigned char>(c);
        if (c == '\r') {
          state_ = State::kSizeLf;
        } else if (u != '\t' && (u < 0x20 || u == 0x7f)) {
          return fail("chunked-malformed", "a chunk extension contains a control byte");
        }
        if (++line_len_ > limits_.max_size_line)
          return fail("chunk-size-line-too-long", "a chunk size line exceeds " + std::to_string(limits_.max_size_line) + " bytes");
        break;
      }
      case State::kSizeLf:
        if (c != '\n') return fail("chunked-malformed", "a chunk size line ends in a bare CR");
        line_len_ = 0;
        size_digits_ = 0;
        state_ = chunk_left_ == 0 ? State::kTrailer : State::kData;
        break;
      case State::kData: {
        uint64_t take = std::min<uint64_t>(chunk_left_, data.size() - i);
        if (payload) payload->append(data.substr(i, static_cast<size_t>(take)));
        chunk_left_ -= take;
        payload_ += take;
        i += static_cast<size_t>(take);
        if (chunk_left_ == 0) state_ = State::kDataCr;
        continue;
      }
      case State::kDataCr:
        if (c != '\r') return fail("chunked-malformed", "chunk data is longer than its size or lacks its CRLF");
        state_ = State::kDataLf;
        break;
      case State::kDataLf:
        if (c != '\n') return fail("chunked-malformed", "chunk data ends in a bare CR");
        state_ = State::kSize;
        break;
      case State::kTrailer:
        if (c == '\r') {
          state_ = State::kTrailerLf;
        } else if (c == '\n') {
          return fail("chunked-malformed", "a trailer line ends in a bare LF");
        } else {
          trailer_line_ += c;
          if (trailer_bytes_ + trailer_line_.size() > limits_.max_trailer_block)
            return fail("chunked-trailers-too-large", "the trailers exceed " + std::to_string(limits_.max_trailer_block) + " bytes");
        }
        break;
      case State::kTrailerLf: {
        if (c != '\n') return fail("chunked-malformed", "a trailer line ends in a bare CR");
        if (trailer_line_.empty()) {
          state_ = State::kDone;
          break;
        }
        Header h;
        if (auto err = parseHeaderLine(trailer_line_, h)) return fail(err->rule, "trailer: " + err->reason);
        if (++trailers_ > limits_.max_trailers)
          return fail("chunked-trailers-too-large", "more than " + std::to_string(limits_.max_trailers) + " trailers");
        trailer_bytes_ += trailer_line_.size() + 2;
        trailer_line_.clear();
        state_ = State::kTrailer;
        break;
      }
      case State::kDone:
      case State::kError:
        break;
    }
    ++i;
  }
  *consumed = i;
  return state_ == State::kDone ? Status::kDone : Status::kNeedMore;
}

}  // namespace corral::net
