// SPDX-License-Identifier: Apache-2.0
// The relay protocol's frames, strict parser and stream table (relay_frame.h).
#include "vm/relay_frame.h"

#include <algorithm>

namespace corral::vm::relay {
namespace {

void putU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}
uint32_t getU32(std::string_view s) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}
bool known(uint8_t t) {
  switch (static_cast<Type>(t)) {
    case Type::kOpen:
    case Type::kData:
    case Type::kWindow:
    case Type::kClose:
    case Type::kReset:
      return true;
  }
  return false;
}

}  // namespace

std::string encode(Type type, uint32_t stream, std::string_view payload) {
  std::string out;
  out.reserve(kHeaderBytes + kMinLength + payload.size());
  putU32(out, static_cast<uint32_t>(kMinLength + payload.size()));
  out.push_back(static_cast<char>(type));
  putU32(out, stream);
  out.append(payload);
  return out;
}

std::string encodeWindow(uint32_t stream, uint32_t bytes) {
  std::string n;
  putU32(n, bytes);
  return encode(Type::kWindow, stream, n);
}

Result<std::optional<Frame>> Parser::fail(const std::string& why) {
  failed_ = true;
  return Error(Errc::kIo, "net relay: " + why);
}

Result<std::optional<Frame>> Parser::next() {
  if (failed_) return Error(Errc::kIo, "net relay: refused after an earlier malformed frame");
  const std::string_view in = std::string_view(buf_).substr(pos_);
  if (in.size() < kHeaderBytes) return std::optional<Frame>{};
  const uint32_t len = getU32(in);
  if (len < kMinLength || len > kMaxLength)
    return fail("frame length " + std::to_string(len) + " outside " + std::to_string(kMinLength) + ".." + std::to_string(kMaxLength));
  if (in.size() > kHeaderBytes) {
    const auto t = static_cast<uint8_t>(in[kHeaderBytes]);
    if (!known(t)) return fail("unknown frame type " + std::to_string(t));
    if (t == static_cast<uint8_t>(Type::kOpen) && side_ != Side::kHost) return fail("an open sent to the guest");
  }
  if (in.size() < kHeaderBytes + len) return std::optional<Frame>{};
  Frame f{static_cast<Type>(in[kHeaderBytes]), getU32(in.substr(kHeaderBytes + 1)),
          std::string(in.substr(kHeaderBytes + kMinLength, len - kMinLength))};
  pos_ += kHeaderBytes + len;
  if (pos_ > 4 * kMaxLength || pos_ == buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  const size_t n = f.payload.size();
  if (f.stream == 0) return fail("stream id 0");
  if (f.type == Type::kData && n == 0) return fail("an empty data frame");
  if (f.type == Type::kWindow && n != 4) return fail("a window frame of " + std::to_string(n) + " bytes");
  if ((f.type == Type::kOpen || f.type == Type::kClose || f.type == Type::kReset) && n != 0)
    return fail("a payload on an open, close or reset frame");
  return std::optional<Frame>(std::move(f));
}

Result<Streams::Verdict> Streams::fail(const std::string& why) {
  failed_ = true;
  return Error(Errc::kIo, "net relay: " + why);
}

Result<Streams::Verdict> Streams::receive(const Frame& f) {
  if (failed_) return Error(Errc::kIo, "net relay: refused after an earlier protocol error");
  const std::string id = "stream " + std::to_string(f.stream);
  if (f.type == Type::kOpen) {
    if (side_ != Side::kHost) return fail("an open sent to the guest");
    if (f.stream <= highest_) return fail(id + " opened again (ids must increase)");
    if (live_.size() >= kMaxStreams) return fail(id + ": more than " + std::to_string(kMaxStreams) + " streams open");
    highest_ = f.stream;
    live_.emplace(f.stream, State{});
    return Verdict::kApply;
  }
  if (f.stream > highest_) return fail(id + " was never opened");
  auto it = live_.find(f.stream);
  if (it == live_.end()) return Verdict::kDrop;  // retired: what was in flight when it was reset
  State& s = it->second;
  switch (f.type) {
    case Type::kData:
      if (s.peer_closed) return fail(id + ": data after its close");
      if (f.payload.size() > kWindow - s.in_unacked) return fail(id + ": data beyond its window");
      s.in_unacked += static_cast<uint32_t>(f.payload.size());
      return Verdict::kApply;
    case Type::kWindow: {
      const uint32_t n = (static_cast<uint32_t>(static_cast<unsigned char>(f.payload[0])) << 24) |
                         (static_cast<uint32_t>(static_cast<unsigned char>(f.payload[1])) << 16) |
                         (static_cast<uint32_t>(static_cast<unsigned char>(f.payload[2])) << 8) |
                         static_cast<uint32_t>(static_cast<unsigned char>(f.payload[3]));
      if (n == 0 || n > s.out_unacked) return fail(id + ": a window for bytes never sent");
      s.out_unacked -= n;
      return Verdict::kApply;
    }
    case Type::kClose:
      if (s.peer_closed) return fail(id + " closed twice");
      s.peer_closed = true;
      return Verdict::kApply;
    case Type::kReset:
      live_.erase(it);
      return Verdict::kApply;
    case Type::kOpen:
      break;
  }
  return fail(id + ": unexpected frame");
}

std::optional<uint32_t> Streams::openNext() {
  if (live_.size() >= kMaxStreams || highest_ == UINT32_MAX) return std::nullopt;
  ++highest_;
  live_.emplace(highest_, State{});
  return highest_;
}

uint32_t Streams::sendCredit(uint32_t id) const {
  const State* s = find(id);
  return s && !s->local_closed ? kWindow - s->out_unacked : 0;
}
void Streams::sent(uint32_t id, uint32_t bytes) {
  if (auto it = live_.find(id); it != live_.end()) it->second.out_unacked += bytes;
}
void Streams::acked(uint32_t id, uint32_t bytes) {
  if (auto it = live_.find(id); it != live_.end()) it->second.in_unacked -= std::min(bytes, it->second.in_unacked);
}
void Streams::closedLocal(uint32_t id) {
  if (auto it = live_.find(id); it != live_.end()) it->second.local_closed = true;
}
void Streams::retire(uint32_t id) { live_.erase(id); }
bool Streams::finished(uint32_t id) const {
  const State* s = find(id);
  return s && s->peer_closed && s->local_closed && s->in_unacked == 0 && s->out_unacked == 0;
}
const Streams::State* Streams::find(uint32_t id) const {
  auto it = live_.find(id);
  return it == live_.end() ? nullptr : &it->second;
}

}  // namespace corral::vm::relay
