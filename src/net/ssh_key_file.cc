// SPDX-License-Identifier: Apache-2.0
// sshFingerprint and sshKeyFileFingerprint (net/ssh_agent.h), apart from the agent itself: the
// daemon checks an ssh-key credential record with them (daemon/credential_request.cc), and that
// parser's fuzz target links only this and the pure wire code, not the agent's sockets.
#include <openssl/evp.h>

#include <memory>

#include "audit/base64.h"
#include "base/sha256.h"
#include "net/ssh_agent.h"
#include "net/ssh_agent_wire.h"

namespace corral::net {
namespace wire = ssh_agent;

std::string sshFingerprint(std::string_view key_blob) {
  const Sha256Digest d = sha256(key_blob);
  std::string b64 = audit::base64Encode(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  return "SHA256:" + b64;
}

Result<std::string> sshKeyFileFingerprint(std::string_view text) {
  wire::KeyFileResult parsed = wire::parseOpenSshPrivateKey(text);
  if (!parsed.key) return Error(Errc::kInvalidArgument, "ssh key: " + parsed.error);
  // The same test the agent's loadKey makes: OpenSSL must take the seed as an Ed25519 key.
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(parsed.key->seed.data()), 32),
      &EVP_PKEY_free);
  if (!key) return Error(Errc::kInvalidArgument, "ssh key: OpenSSL refused the key");
  return sshFingerprint(wire::ed25519KeyBlob(parsed.key->public_key));
}

}  // namespace corral::net
