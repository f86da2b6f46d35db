// SPDX-License-Identifier: Apache-2.0
// The ssh-agent wire format and the structures the agent inspects (ssh_agent_wire.h).
#include "net/ssh_agent_wire.h"

#include <cstring>

#include "audit/base64.h"

namespace corral::net::ssh_agent {
namespace {

constexpr std::string_view kEd25519 = "ssh-ed25519";
constexpr std::string_view kKeyBegin = "-----BEGIN OPENSSH PRIVATE KEY-----";
constexpr std::string_view kKeyEnd = "-----END OPENSSH PRIVATE KEY-----";
constexpr std::string_view kKeyMagic{"openssh-key-v1\0", 15};

}  // namespace

std::string messageName(uint8_t type) {
  switch (type) {
    case 11: return "request-identities";
    case 13: return "sign-request";
    case 17: return "add-identity";
    case 18: return "remove-identity";
    case 19: return "remove-all-identities";
    case 20: return "add-smartcard-key";
    case 21: return "remove-smartcard-key";
    case 22: return "lock";
    case 23: return "unlock";
    case 25: return "add-id-constrained";
    case 26: return "add-smartcard-key-constrained";
    case 27: return "extension";
    default: return "type-" + std::to_string(type);
  }
}

Frame takeFrame(std::string_view stream) {
  Frame f;
  if (stream.size() < 4) return f;
  const auto* p = reinterpret_cast<const uint8_t*>(stream.data());
  const uint32_t len = uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
  if (len == 0 || len > kMaxFrame) {
    f.status = FrameStatus::kError;
    return f;
  }
  if (stream.size() - 4 < len) return f;
  f.status = FrameStatus::kFrame;
  f.type = p[4];
  f.body = stream.substr(5, len - 1);
  f.size = 4 + size_t{len};
  return f;
}

std::optional<uint32_t> Reader::u32() {
  if (in_.size() < 4) {
    in_ = {};
    return std::nullopt;
  }
  const auto* p = reinterpret_cast<const uint8_t*>(in_.data());
  in_.remove_prefix(4);
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

std::optional<uint8_t> Reader::byte() {
  if (in_.empty()) return std::nullopt;
  const auto b = static_cast<uint8_t>(in_[0]);
  in_.remove_prefix(1);
  return b;
}

std::optional<std::string_view> Reader::string() {
  auto len = u32();
  if (!len || in_.size() < *len) {
    in_ = {};
    return std::nullopt;
  }
  std::string_view s = in_.substr(0, *len);
  in_.remove_prefix(*len);
  return s;
}

std::string u32(uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
  return std::string(b, 4);
}

std::string string(std::string_view s) { return u32(static_cast<uint32_t>(s.size())) + std::string(s); }

std::string frame(uint8_t type, std::string_view body) {
  return u32(static_cast<uint32_t>(body.size() + 1)) + static_cast<char>(type) + std::string(body);
}

std::optional<SignRequest> parseSignRequest(std::string_view body) {
  Reader r(body);
  auto key = r.string();
  auto data = r.string();
  auto flags = r.u32();
  if (!key || !data || !flags || !r.done()) return std::nullopt;
  return SignRequest{*key, *data, *flags};
}

std::optional<Extension> parseExtension(std::string_view body) {
  Reader r(body);
  auto name = r.string();
  if (!name) return std::nullopt;
  return Extension{*name, body.substr(4 + name->size())};
}

std::optional<SessionBind> parseSessionBind(std::string_view contents) {
  Reader r(contents);
  auto host_key = r.string();
  auto sid = r.string();
  auto sig = r.string();
  auto fwd = r.byte();
  if (!host_key || !sid || !sig || !fwd || *fwd > 1 || !r.done()) return std::nullopt;
  return SessionBind{*host_key, *sid, *sig, *fwd == 1};
}

std::optional<UserauthRequest> parseUserauthRequest(std::string_view data) {
  Reader r(data);
  UserauthRequest u;
  auto sid = r.string();
  auto type = r.byte();
  auto user = r.string();
  auto service = r.string();
  auto method = r.string();
  auto has_sig = r.byte();
  auto alg = r.string();
  auto key = r.string();
  if (!sid || type != 50 || !user || !service || !method || has_sig != 1 || !alg || !key) return std::nullopt;
  u = {*sid, *user, *service, *method, *alg, *key, std::nullopt};
  if (u.method == "publickey-hostbound-v00@openssh.com") {
    auto host = r.string();
    if (!host) return std::nullopt;
    u.host_key = *host;
  } else if (u.method != "publickey") {
    return std::nullopt;
  }
  if (!r.done()) return std::nullopt;
  return u;
}

std::string_view blobType(std::string_view blob) {
  Reader r(blob);
  return r.string().value_or(std::string_view{});
}

std::optional<std::string_view> ed25519Key(std::string_view key_blob) {
  Reader r(key_blob);
  auto type = r.string();
  auto key = r.string();
  if (type != kEd25519 || !key || key->size() != 32 || !r.done()) return std::nullopt;
  return key;
}

std::optional<std::string_view> ed25519Signature(std::string_view sig_blob) {
  Reader r(sig_blob);
  auto type = r.string();
  auto sig = r.string();
  if (type != kEd25519 || !sig || sig->size() != 64 || !r.done()) return std::nullopt;
  return sig;
}

std::string ed25519KeyBlob(std::string_view key32) { return string(kEd25519) + string(key32); }
std::string ed25519SignatureBlob(std::string_view sig64) { return string(kEd25519) + string(sig64); }

Ed25519PrivateKey::~Ed25519PrivateKey() {
  volatile char* p = seed.data();
  for (size_t i = 0; i < seed.size(); ++i) p[i] = 0;
}

// PROTOCOL.key in OpenSSH: magic, cipher, kdf, kdf options, key count, public keys, then the
// private section (two equal check words, per key: type, public, private (seed || public),
// comment; then padding 1, 2, 3, ...).
KeyFileResult parseOpenSshPrivateKey(std::string_view text) {
  KeyFileResult out;
  const size_t begin = text.find(kKeyBegin);
  const size_t end = text.find(kKeyEnd);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) {
    out.error = "not an OpenSSH private key file (ssh-keygen writes one)";
    return out;
  }
  std::string b64;
  for (char c : text.substr(begin + kKeyBegin.size(), end - begin - kKeyBegin.size()))
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') b64 += c;
  std::optional<std::string> bin = audit::base64DecodeStrict(b64);
  struct Wipe {
    std::string* s;
    ~Wipe() {
      if (!s) return;
      volatile char* p = s->data();
      for (size_t i = 0; i < s->size(); ++i) p[i] = 0;
    }
  } wipe_bin{bin ? &*bin : nullptr}, wipe_b64{&b64};
  if (!bin || bin->size() < kKeyMagic.size() || bin->compare(0, kKeyMagic.size(), kKeyMagic) != 0) {
    out.error = "malformed OpenSSH private key file";
    return out;
  }
  Reader r(std::string_view(*bin).substr(kKeyMagic.size()));
  auto cipher = r.string();
  auto kdf = r.string();
  auto kdf_options = r.string();
  auto count = r.u32();
  if (!cipher || !kdf || !kdf_options || !count) {
    out.error = "malformed OpenSSH private key file";
    return out;
  }
  if (*cipher != "none") {
    out.error = "the key is passphrase-protected (cipher " + std::string(cipher->substr(0, 32)) +
                "): corral's agent holds only unencrypted keys; give it a copy without a passphrase";
    return out;
  }
  if (*count != 1) {
    out.error = "the key file holds " + std::to_string(*count) + " keys, not one";
    return out;
  }
  auto pub_blob = r.string();
  auto priv = r.string();
  if (!pub_blob || !priv || !r.done()) {
    out.error = "malformed OpenSSH private key file";
    return out;
  }
  if (blobType(*pub_blob) != kEd25519) {
    out.error = "unsupported key type " + std::string(blobType(*pub_blob).substr(0, 64)) + " (only ssh-ed25519)";
    return out;
  }
  Reader p(*priv);
  auto check1 = p.u32();
  auto check2 = p.u32();
  auto type = p.string();
  auto pub = p.string();
  auto secret = p.string();
  auto comment = p.string();
  if (!check1 || !check2 || *check1 != *check2 || type != kEd25519 || !pub || pub->size() != 32 || !secret ||
      secret->size() != 64 || secret->substr(32) != *pub || !comment || ed25519Key(*pub_blob) != *pub) {
    out.error = "malformed OpenSSH private key file";
    return out;
  }
  out.key.emplace();
  out.key->public_key = std::string(*pub);
  out.key->seed = std::string(secret->substr(0, 32));
  return out;
}

}  // namespace corral::net::ssh_agent
