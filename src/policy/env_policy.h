// SPDX-License-Identifier: Apache-2.0
// The environment a sandboxed command gets: a fixed non-secret base plus explicit --env.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace corral::policy::env {

inline constexpr size_t kMaxNameLength = 255;

// PATH, HOME, LANG, USER, LOGNAME, TMPDIR, SHELL, PWD as "K=V", fixed values. Nothing is
// ever taken from the caller's environment: it is where host secrets live.
std::vector<std::string> baseEnvironment();

// "KEY=VALUE": KEY matches [A-Za-z_][A-Za-z0-9_]* (at most kMaxNameLength), VALUE may be
// empty but holds no NUL. Errors name at most the key, never the value, which may be a
// secret; the caller prefixes the option ("--env FOO: expected KEY=VALUE").
Result<std::pair<std::string, std::string>> parseAssignment(std::string_view kv);

// The base environment with extra applied in order: a later assignment of a key replaces
// an earlier one and any base value. Sorted by key, each key once.
std::vector<std::string> buildEnvironment(const std::vector<std::pair<std::string, std::string>>& extra);

}  // namespace corral::policy::env
