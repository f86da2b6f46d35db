// SPDX-License-Identifier: Apache-2.0
// Frame encoding and the strict incremental frame parser.
#include "vm/frame.h"

namespace corral::vm::frame {

bool validType(uint8_t type, Direction d) {
  if (d == Direction::kToGuest)
    switch (static_cast<Type>(type)) {
      case Type::kRequest:
      case Type::kStdin:
      case Type::kQuiesce:
      case Type::kReseed:
      case Type::kSessionStart:
      case Type::kCommand:
      case Type::kCmdStdin:
      case Type::kCmdSignal:
      case Type::kFileGet:
      case Type::kFilePut:
      case Type::kFileData:
      case Type::kClock:
        return true;
      default:
        return false;
    }
  switch (static_cast<Type>(type)) {
    case Type::kHello:
    case Type::kStarted:
    case Type::kStdout:
    case Type::kStderr:
    case Type::kOutput:
    case Type::kData:
    case Type::kExit:
    case Type::kQuiesced:
    case Type::kReseeded:
    case Type::kSessionUp:
    case Type::kCmdSpawned:
    case Type::kCmdFailed:
    case Type::kCmdStdout:
    case Type::kCmdStderr:
    case Type::kCmdExited:
    case Type::kFileReply:
    case Type::kFileBytes:
      return true;
    default:
      return false;
  }
}

void putU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

bool getU32s(std::string_view payload, size_t fields, uint32_t* out) {
  if (payload.size() < 4 * fields) return false;
  for (size_t i = 0; i < fields; ++i) {
    uint32_t v = 0;
    for (size_t b = 0; b < 4; ++b) v = (v << 8) | static_cast<unsigned char>(payload[4 * i + b]);
    out[i] = v;
  }
  return true;
}

std::string encode(Type type, std::string_view payload) {
  const auto len = static_cast<uint32_t>(payload.size() + 1);
  std::string out;
  out.reserve(kHeaderBytes + len);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((len >> shift) & 0xff));
  out.push_back(static_cast<char>(type));
  out.append(payload);
  return out;
}

Result<std::optional<Frame>> Parser::next() {
  if (failed_) return Error(Errc::kIo, "control channel: refused after an earlier malformed frame");
  if (buf_.size() - pos_ < kHeaderBytes) return std::optional<Frame>{};
  uint32_t len = 0;
  for (size_t i = 0; i < kHeaderBytes; ++i) len = (len << 8) | static_cast<unsigned char>(buf_[pos_ + i]);
  if (len == 0 || len > kMaxPayload + 1) {
    failed_ = true;
    return Error(Errc::kIo, "control channel: frame length " + std::to_string(len) + " outside 1.." +
                                std::to_string(kMaxPayload + 1));
  }
  const auto type = static_cast<uint8_t>(buf_.size() - pos_ > kHeaderBytes ? buf_[pos_ + kHeaderBytes] : 0);
  if (buf_.size() - pos_ > kHeaderBytes && !validType(type, accepting_)) {
    failed_ = true;
    return Error(Errc::kIo, "control channel: unknown frame type " + std::to_string(type));
  }
  if (buf_.size() - pos_ < kHeaderBytes + len) return std::optional<Frame>{};
  Frame f{static_cast<Type>(type), buf_.substr(pos_ + kHeaderBytes + 1, len - 1)};
  pos_ += kHeaderBytes + len;
  // Compact once the consumed prefix dominates, so a long stream does not grow the buffer.
  if (pos_ > 4 * kMaxPayload || pos_ == buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return std::optional<Frame>(std::move(f));
}

}  // namespace corral::vm::frame
