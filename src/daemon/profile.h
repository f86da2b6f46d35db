// SPDX-License-Identifier: Apache-2.0
// Startup profiles: a named JSON document (docs/profile.schema.json) holding a session spec and
// an optional startup command with a readiness probe; and the narrowing of a profile by a
// create request's overrides, which may only take away (like a spawned subtask's manifest).
// Pure: values in, values out.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "daemon/json_fields.h"
#include "daemon/session_spec.h"

namespace corral::daemon {

inline constexpr size_t kMaxProfileBytes = size_t{256} * 1024;
// The most warm sandboxes one daemon keeps: --warm and every profile's warm together.
inline constexpr int64_t kMaxWarm = 64;

struct ReadinessProbe {
  CommandSpec cmd;                                     // run until it exits 0
  std::chrono::milliseconds interval{200};             // between tries
  std::chrono::milliseconds timeout{30'000};           // from the startup command's start
};

struct StartupCommand {
  CommandSpec cmd;  // started detached once the session is up (its command 1)
  std::optional<ReadinessProbe> ready;
};

struct Profile {  // NOLINT(bugprone-exception-escape): false positive from the nlohmann::json member's special members
  std::string name;         // [a-z][a-z0-9_-]{0,63}
  std::string description;  // shown by ls, at most 256 bytes
  Json session;             // as parseSessionSpec reads it, without "name" and "workspace"
  SessionSpec spec;         // the same, parsed
  std::optional<StartupCommand> startup;
  uint32_t warm = 0;        // sandboxes kept started for it (warm_pool.h), 0..kMaxWarm
};

// {"name", "description"?, "session"?: {...}, "warm"?: 0..64, "startup"?: {"argv", "env", "cwd",
// "timeout", "ready"?: {"argv", "env", "cwd", "interval", "timeout"}}}. Unknown fields, a
// session field a profile cannot hold, and anything parseSessionSpec refuses are errors that
// name the field ("profile.session.limits.memory: ...").
Result<Profile> parseProfile(std::string_view text);

// The spec a create request gets from `profile` and the request's own fields (`overrides`, a
// SessionCreate body without "profile"): each field given must be no wider than the
// profile's: limits at most the profile's (its defaults when it names none), allow_weaker,
// ro_binds, allow, allow_internal and credentials subsets of its own (a grant may be one its
// wildcard covers), net "none" for a "proxy" profile (dropping its grants, credentials and
// ssh_key), ssh_key only the profile's own, a ttl no longer; a narrowed allow must keep a
// tcp:// grant for the profile's ssh_key. env adds variables (a
// value is no permission); name and workspace are the request's. A widening field is refused
// (kRefused) with a message naming it and both values.
Result<SessionSpec> narrowProfile(const Profile& profile, const Json& overrides);

}  // namespace corral::daemon
