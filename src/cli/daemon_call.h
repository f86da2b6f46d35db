// SPDX-License-Identifier: Apache-2.0
// One request to the daemon's API for the client subcommands (session, credential, profile):
// the daemon's error printed in one line under the subcommand's name.
#pragma once

#include <optional>
#include <string>

#include "daemon/json_fields.h"

namespace corral::cli {

inline constexpr int kExitRefused = 125;

// "corral: WHO: MESSAGE" on stderr (one line); returns kExitRefused.
int failLine(const std::string& who, const std::string& msg);
// The body of a `want` answer; anything else prints the daemon's error (or why it could not be
// reached) and gives nullopt. want -1: any status, its body returned, nothing printed.
std::optional<daemon::Json> apiCall(const std::string& who, const std::string& method, const std::string& target,
                                    const std::optional<daemon::Json>& body, int want);
void printJson(const daemon::Json& j);

}  // namespace corral::cli
