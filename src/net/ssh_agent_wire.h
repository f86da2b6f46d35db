// SPDX-License-Identifier: Apache-2.0
// The ssh-agent protocol's wire format (draft-miller-ssh-agent), as much of it as corral's
// host-side agent answers, plus the two structures it inspects: the SSH userauth request a
// client asks to have signed (RFC 4252 section 7) and the OpenSSH private key file. Pure: no
// I/O, no crypto. docs/egress-proxy.md, "SSH agent".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corral::net::ssh_agent {

// Message numbers (draft-miller-ssh-agent section 5.1).
inline constexpr uint8_t kFailure = 5;
inline constexpr uint8_t kSuccess = 6;
inline constexpr uint8_t kRequestIdentities = 11;
inline constexpr uint8_t kIdentitiesAnswer = 12;
inline constexpr uint8_t kSignRequest = 13;
inline constexpr uint8_t kSignResponse = 14;
inline constexpr uint8_t kExtension = 27;
// OpenSSH's agent refuses longer messages too (AGENT_MAX_LEN, 256 KiB).
inline constexpr uint32_t kMaxFrame = 256 * 1024;

// A name for the log: "request-identities", "add-identity", ..., "type-<n>".
std::string messageName(uint8_t type);

// One frame from the front of a byte stream: uint32 length, then that many bytes (the first
// is the type). kError: an empty frame or one over kMaxFrame (the stream cannot be trusted
// beyond it: close the connection).
enum class FrameStatus { kNeedMore, kFrame, kError };
struct Frame {
  FrameStatus status = FrameStatus::kNeedMore;
  uint8_t type = 0;
  std::string_view body;  // after the type byte; points into the input
  size_t size = 0;        // bytes consumed, header included
};
Frame takeFrame(std::string_view stream);

// Big-endian reader of SSH wire types (RFC 4251 section 5); every read fails once one did.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  std::optional<uint32_t> u32();
  std::optional<uint8_t> byte();
  std::optional<std::string_view> string();
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

std::string u32(uint32_t v);
std::string string(std::string_view s);
// A whole frame: length, type, body.
std::string frame(uint8_t type, std::string_view body);

struct SignRequest {
  std::string_view key_blob, data;
  uint32_t flags = 0;
};
std::optional<SignRequest> parseSignRequest(std::string_view body);

// SSH_AGENTC_EXTENSION: the name, and what follows it.
struct Extension {
  std::string_view name, contents;
};
std::optional<Extension> parseExtension(std::string_view body);

// session-bind@openssh.com (OpenSSH PROTOCOL.agent): the server's host key, the session
// identifier, the host key's signature over it, and whether the connection forwards the agent.
struct SessionBind {
  std::string_view host_key, session_id, signature;
  bool forwarding = false;
};
inline constexpr std::string_view kSessionBind = "session-bind@openssh.com";
std::optional<SessionBind> parseSessionBind(std::string_view contents);

// What an SSH client asks its agent to sign to log in by public key (RFC 4252 section 7), or
// OpenSSH's publickey-hostbound-v00@openssh.com, which adds the server's host key.
struct UserauthRequest {
  std::string_view session_id, user, service, method, algorithm, key_blob;
  std::optional<std::string_view> host_key;  // the hostbound method only
};
std::optional<UserauthRequest> parseUserauthRequest(std::string_view data);

// The type name a public key or signature blob starts with ("ssh-ed25519"), "" if none.
std::string_view blobType(std::string_view blob);
// An ssh-ed25519 blob's 32-byte key or a signature blob's 64 bytes; nullopt otherwise.
std::optional<std::string_view> ed25519Key(std::string_view key_blob);
std::optional<std::string_view> ed25519Signature(std::string_view sig_blob);
std::string ed25519KeyBlob(std::string_view key32);
std::string ed25519SignatureBlob(std::string_view sig64);

// An unencrypted OpenSSH private key file ("-----BEGIN OPENSSH PRIVATE KEY-----") holding one
// ssh-ed25519 key. The error names what is wrong, never a byte of the key.
struct Ed25519PrivateKey {
  std::string public_key;  // 32 bytes
  std::string seed;        // 32 bytes: the secret
  ~Ed25519PrivateKey();    // wipes seed
};
struct KeyFileResult {
  std::optional<Ed25519PrivateKey> key;
  std::string error;
};
KeyFileResult parseOpenSshPrivateKey(std::string_view text);

}  // namespace corral::net::ssh_agent
