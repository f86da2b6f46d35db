// SPDX-License-Identifier: Apache-2.0
// corral's host-side SSH agent (--ssh-key): answers a sandbox's ssh-agent socket with a key
// the sandbox never holds, and signs only SSH logins to servers the sandbox reaches through
// an open tcp-grant tunnel. docs/egress-proxy.md, "SSH agent".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/secret.h"
#include "base/unique_fd.h"
#include "net/open_tunnels.h"
#include "net/proxy_server.h"

namespace corral::net {

// The host keys of type `type` ("ssh-ed25519") the SSH server at ip:port presents, as key
// blobs. The default asks the server itself (ssh-keyscan, to exactly that address).
using HostKeyLookup = std::function<std::vector<std::string>(const std::string& ip, uint16_t port, std::string_view type)>;
std::vector<std::string> scanHostKeys(const std::string& ip, uint16_t port, std::string_view type);

struct SshAgentConfig {
  std::string tag;                 // the run: every event carries it
  std::string key_path;            // an unencrypted OpenSSH ssh-ed25519 private key file, read at start
  // Or the key file's text itself (a daemon credential record): used when set, and wiped
  // once parsed; key_path then only names it in errors.
  std::shared_ptr<Secret> key_text;
  UniqueFd listener;               // a listening UNIX stream socket (the sandbox's SSH_AUTH_SOCK)
  std::shared_ptr<const OpenTunnels> tunnels;  // the proxy's tcp-grant tunnels of this sandbox
  std::function<void(const ConnectionEvent&)> on_event;  // on the agent's thread
  HostKeyLookup host_keys = scanHostKeys;
};

class SshAgent {
 public:
  // Reads the key (an unreadable, encrypted or non-Ed25519 key refuses the run) and serves
  // the listener on a thread of its own until destroyed.
  static Result<std::unique_ptr<SshAgent>> start(SshAgentConfig config);
  ~SshAgent();
  SshAgent(const SshAgent&) = delete;
  SshAgent& operator=(const SshAgent&) = delete;
  // "SHA256:<base64>", as ssh-keygen -l prints it (of the key in use now).
  std::string fingerprint() const;
  // A new key (the text of an OpenSSH key file) signs from the next request on; the old one
  // never again. A key that does not parse changes nothing. Returns the new fingerprint.
  Result<std::string> rotateKey(std::string_view text);

  struct Impl;

 private:
  explicit SshAgent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "SHA256:<unpadded base64 of SHA-256(blob)>": OpenSSH's key fingerprint.
std::string sshFingerprint(std::string_view key_blob);
// The fingerprint of the key an OpenSSH private key file's text holds, when the agent can use
// it (unencrypted, one ssh-ed25519 key); the error names what is wrong, never a byte of it.
Result<std::string> sshKeyFileFingerprint(std::string_view text);

}  // namespace corral::net
