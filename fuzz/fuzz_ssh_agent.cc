// SPDX-License-Identifier: Apache-2.0
// Fuzzes the SSH agent's wire parsers (src/net/ssh_agent_wire.h) as a hostile sandbox feeds
// them: a byte stream cut into frames, each frame's body through every parser the agent
// applies, and the input as a private key file. No read past the input; every frame consumes
// what its header says; a parsed message re-encodes to exactly the bytes it came from.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "net/ssh_agent_wire.h"

namespace wire = corral::net::ssh_agent;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512 * 1024) return 0;
  // A heap copy of exactly the input: ASan catches any read past it.
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::string_view rest = bytes;
  while (!rest.empty()) {
    const wire::Frame f = wire::takeFrame(rest);
    if (f.status != wire::FrameStatus::kFrame) break;
    PROPERTY(f.size >= 5 && f.size <= rest.size() && f.body.size() == f.size - 5, "frame size " + std::to_string(f.size));
    PROPERTY(wire::frame(f.type, f.body) == rest.substr(0, f.size), std::string("frame does not re-encode"));
    if (auto s = wire::parseSignRequest(f.body)) {
      PROPERTY(wire::string(s->key_blob) + wire::string(s->data) + wire::u32(s->flags) == f.body,
               std::string("sign request does not re-encode"));
      (void)wire::parseUserauthRequest(s->data);
      (void)wire::ed25519Key(s->key_blob);
    }
    if (auto e = wire::parseExtension(f.body)) {
      PROPERTY(wire::string(e->name) + std::string(e->contents) == f.body, std::string("extension does not re-encode"));
      if (auto b = wire::parseSessionBind(e->contents)) {
        (void)wire::ed25519Key(b->host_key);
        (void)wire::ed25519Signature(b->signature);
      }
    }
    (void)wire::parseUserauthRequest(f.body);
    rest.remove_prefix(f.size);
  }
  wire::KeyFileResult k = wire::parseOpenSshPrivateKey(bytes);
  PROPERTY(k.key.has_value() != !k.error.empty(), std::string("a key file is either a key or an error"));
  if (k.key) PROPERTY(k.key->seed.size() == 32 && k.key->public_key.size() == 32, std::string("key sizes"));
  return 0;
}
