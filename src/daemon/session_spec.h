// SPDX-License-Identifier: Apache-2.0
// What a session is made with (the create request's body) and what each command in it runs
// with: parsed strictly from JSON, turned into the sandbox's own SandboxSpec.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "daemon/json_fields.h"
#include "sandbox/spec.h"

namespace corral::daemon {

struct SessionSpec {
  std::optional<std::string> name;
  sandbox::Limits limits;
  std::vector<std::pair<std::string, std::string>> env;  // added to every command's environment
  std::optional<std::string> workspace_from;  // a host dir copied into the workspace once, at create
  std::optional<std::chrono::milliseconds> ttl;  // the session ends (is removed) this long after create
  std::vector<sandbox::RoBind> ro_binds;          // host paths readable inside (the daemon's rights)
  // Egress: "none" (loopback only) or "proxy" (exec's --net proxy: the grants below, through
  // an egress proxy the session's shim runs for the session's life).
  bool net_proxy = false;
  std::vector<std::string> allow;           // grants, canonical (policy::egress::Grant::text)
  std::vector<std::string> allow_internal;  // CIDRs granted names may resolve into
  std::vector<std::string> credentials;     // credential records by name, leased through the proxy
  // An ssh-key credential record: the shim runs an ssh agent with it (SSH_AUTH_SOCK inside)
  // that signs only for the sshd behind an open tcp:// grant.
  std::optional<std::string> ssh_key;
  // "backend": "vm": a microVM (docs/vm.md) holds the session's sandbox; its size and whether
  // TCG emulation is accepted where KVM is unusable ("vm": {"memory", "cpus", "allow_weaker": ["kvm"]}).
  bool vm = false;
  uint64_t vm_memory_bytes = 0;  // 0: the VM backend's default
  uint32_t vm_cpus = 0;          // 0: one
  bool vm_allow_tcg = false;
  // The profile it was made from, as recorded (the spec above is already the narrowed one).
  std::optional<std::string> profile;
  int64_t profile_version = 0;
};

// {"name", "limits": {"memory","pids","cpu_time","file_size","open_files","tmp_size",
// "workspace_size", "allow_weaker": ["memory"]}, "env": ["K=V"], "workspace": "/abs/dir", "ttl": "1h",
// "ro_binds": ["/host[:/sandbox]"], "net": "none"|"proxy", "allow": ["https://host"],
// "allow_internal": ["10.0.0.0/8"], "credentials": ["name"], "ssh_key": "name", "backend": "namespace"|"vm",
// "vm": {"memory": "512M", "cpus": 1, "allow_weaker": ["kvm"]}}; sizes and durations as
// strings ("512M", "30s"), counts as integers. Unknown fields are errors.
Result<SessionSpec> parseSessionSpec(const Json& j);
// The same document back, as parseSessionSpec reads it: with env for the shim (which alone
// keeps the values), without for the store and the API (values may be secrets).
Json sessionSpecJson(const SessionSpec& s, bool with_env);
// A credential record's name: [a-z][a-z0-9_-]{0,63} (a lease name, and the default of its variable).
Result<void> checkCredentialName(std::string_view name);
// Limits as the API shows them (no env: values may be secrets).
Json limitsJson(const sandbox::Limits& l);

struct CommandSpec {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd = "/workspace";                  // absolute inside the sandbox
  std::optional<std::chrono::milliseconds> timeout;
  bool stdin_open = false;                          // "stdin": true: a pipe the API writes (else /dev/null)
  std::optional<std::pair<uint16_t, uint16_t>> tty;  // "tty": {"rows", "cols"}: a terminal instead of pipes
};

// {"argv": [...], "env": ["K=V"], "cwd": "rel/under/workspace", "timeout": "10s", "stdin": true,
//  "tty": {"rows": 24, "cols": 80}}.
Result<CommandSpec> parseCommandSpec(const Json& j);

// A command's whole environment (the shim builds it): exec's base, then the session's env,
// then the command's own.
std::vector<std::string> commandEnvironment(const std::vector<std::pair<std::string, std::string>>& session_env,
                                            const std::vector<std::pair<std::string, std::string>>& cmd_env);
// "K=V" strings of pairs, and back (strictly).
std::vector<std::string> envStrings(const std::vector<std::pair<std::string, std::string>>& env);
Result<std::vector<std::pair<std::string, std::string>>> envPairs(const std::vector<std::string>& list, const std::string& where);

}  // namespace corral::daemon
