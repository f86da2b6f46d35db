// SPDX-License-Identifier: Apache-2.0
// ClientHello walker: record layer, handshake header, then the fixed fields up to the
// extensions (RFC 8446 section 4.1.2; the layout is the same for TLS 1.0 to 1.3).
#include "net/tls_sni.h"

#include <cstdint>

namespace corral::net {
namespace {

constexpr uint8_t kHandshakeRecord = 0x16;
constexpr uint8_t kClientHello = 0x01;
constexpr uint16_t kServerNameExt = 0x0000;
constexpr size_t kMaxRecordPayload = 16384 + 2048;  // TLSPlaintext limit, with the slack TLSCompressed allows

// A bounds-checked reader: every read fails instead of running past the end.
class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool u8(uint32_t& v) { return take(1, v); }
  bool u16(uint32_t& v) { return take(2, v); }
  bool u24(uint32_t& v) { return take(3, v); }
  bool bytes(size_t n, std::string_view& out) {
    if (b_.size() - pos_ < n) return false;
    out = b_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool skip(size_t n) {
    std::string_view unused;
    return bytes(n, unused);
  }
  size_t left() const { return b_.size() - pos_; }

 private:
  bool take(size_t n, uint32_t& v) {
    if (b_.size() - pos_ < n) return false;
    v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(b_[pos_ + i]);
    pos_ += n;
    return true;
  }
  std::string_view b_;
  size_t pos_ = 0;
};

SniResult malformed(std::string reason) { return {SniStatus::kMalformed, "", std::move(reason)}; }

SniResult parseServerName(std::string_view ext) {
  Reader r(ext);
  uint32_t list_len = 0;
  if (!r.u16(list_len) || list_len != r.left() || list_len == 0) return malformed("server_name list length is inconsistent");
  SniResult found{SniStatus::kAbsent, "", ""};
  while (r.left() > 0) {
    uint32_t type = 0, len = 0;
    std::string_view name;
    if (!r.u8(type) || !r.u16(len) || !r.bytes(len, name)) return malformed("server_name entry is truncated");
    if (type != 0) continue;  // only host_name (0) is defined; others are skipped
    if (found.status == SniStatus::kFound) return malformed("server_name has more than one host_name");
    if (len == 0) return malformed("server_name host_name is empty");
    found = {SniStatus::kFound, std::string(name), ""};
  }
  if (found.status != SniStatus::kFound) return malformed("server_name has no host_name entry");
  return found;
}

SniResult parseClientHelloBody(std::string_view body) {
  Reader r(body);
  uint32_t version = 0, sid_len = 0, cs_len = 0, comp_len = 0;
  if (!r.u16(version) || !r.skip(32)) return malformed("ClientHello is truncated before the session id");
  if ((version >> 8) != 3) return malformed("ClientHello legacy_version is not 3.x");
  if (!r.u8(sid_len) || sid_len > 32 || !r.skip(sid_len)) return malformed("ClientHello session id is malformed");
  if (!r.u16(cs_len) || cs_len < 2 || cs_len % 2 != 0 || !r.skip(cs_len)) return malformed("ClientHello cipher suites are malformed");
  if (!r.u8(comp_len) || comp_len < 1 || !r.skip(comp_len)) return malformed("ClientHello compression methods are malformed");
  if (r.left() == 0) return {SniStatus::kAbsent, "", ""};  // no extensions at all (SSL 3.0 style)
  uint32_t ext_total = 0;
  if (!r.u16(ext_total) || ext_total != r.left()) return malformed("ClientHello extensions length is inconsistent");
  SniResult result{SniStatus::kAbsent, "", ""};
  bool seen = false;
  while (r.left() > 0) {
    uint32_t type = 0, len = 0;
    std::string_view data;
    if (!r.u16(type) || !r.u16(len) || !r.bytes(len, data)) return malformed("a ClientHello extension is truncated");
    if (type != kServerNameExt) continue;
    // Two server_name extensions could be read differently by us and by the server.
    if (seen) return malformed("ClientHello has two server_name extensions");
    seen = true;
    result = parseServerName(data);
    if (result.status == SniStatus::kMalformed) return result;
  }
  return result;
}

}  // namespace

SniResult parseClientHelloSni(std::string_view bytes) {
  if (bytes.empty()) return {};
  if (static_cast<uint8_t>(bytes[0]) != kHandshakeRecord) return {SniStatus::kNotTls, "", ""};
  std::string handshake;  // record payloads concatenated
  size_t pos = 0;
  while (true) {
    if (bytes.size() - pos < 5) return {};
    Reader rec(bytes.substr(pos, 5));
    uint32_t type = 0, version = 0, len = 0;
    (void)rec.u8(type);
    (void)rec.u16(version);
    (void)rec.u16(len);
    if (type != kHandshakeRecord) return malformed("the ClientHello is interrupted by a non-handshake record");
    if ((version >> 8) != 3) return malformed("the record version is not 3.x");
    if (len == 0 || len > kMaxRecordPayload) return malformed("a handshake record has length " + std::to_string(len));
    if (bytes.size() - pos - 5 < len) return {};
    handshake.append(bytes.substr(pos + 5, len));
    pos += 5 + len;
    if (handshake.size() < 4) continue;
    Reader hs(handshake);
    uint32_t msg = 0, msg_len = 0;
    (void)hs.u8(msg);
    (void)hs.u24(msg_len);
    if (msg != kClientHello) return malformed("the first handshake message is not a ClientHello");
    if (msg_len > kMaxClientHello) return malformed("the ClientHello is larger than 64 KiB");
    if (handshake.size() - 4 >= msg_len) return parseClientHelloBody(std::string_view(handshake).substr(4, msg_len));
  }
}

}  // namespace corral::net
