// SPDX-License-Identifier: Apache-2.0
// The credential routes' bodies, parsed strictly: pure (fuzz_daemon_request drives them), and
// no error ever holds the value.
#pragma once

#include <string>

#include "base/result.h"
#include "base/secret.h"
#include "daemon/json_fields.h"

namespace corral::daemon {

// POST /v1/credentials: {"name", "host", "header"?, "env"?, "value"} (kind "header", the
// default), or {"name", "kind": "ssh-key", "value"}: the text of an unencrypted OpenSSH
// ssh-ed25519 private key file, which a session's ssh agent signs with (docs/daemon.md).
// An ssh-key record is stored with an empty header and env, and its public key's fingerprint
// ("SHA256:...") as format: the store needs no column of its own for it.
inline constexpr char kSshKeyKind[] = "ssh-key";
struct AddCredential {
  std::string kind = "header";
  std::string name, host, header = "Authorization", format = "Bearer {}", env;
  Secret value{""};
};
Result<AddCredential> parseAddCredential(const Json& j);
// POST /v1/credentials/{name}/rotate: {"value"}, checked against the record's kind by
// checkCredentialValue once the record is found.
Result<Secret> parseRotateCredential(const Json& j);
// A header record's value (no control byte, the lease table's bounds), or an ssh-key record's
// (a key the agent can use: returns its "SHA256:..." fingerprint). Errors never hold the value.
Result<std::string> checkCredentialValue(std::string_view kind, const Secret& value);
// Whether a stored row is an ssh-key record (its header is empty).
inline bool isSshKeyRecord(const std::string& header) { return header.empty(); }

}  // namespace corral::daemon
