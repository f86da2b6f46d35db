// SPDX-License-Identifier: Apache-2.0
// The client subcommands' request helper.
#include "cli/daemon_call.h"

#include <cstdio>

#include "cli/option_echo.h"
#include "daemon/api_client.h"

namespace corral::cli {

int failLine(const std::string& who, const std::string& msg) {
  std::fprintf(stderr, "corral: %s: %s\n", who.c_str(), oneLine(msg).c_str());
  return kExitRefused;
}

std::optional<daemon::Json> apiCall(const std::string& who, const std::string& method, const std::string& target,
                                    const std::optional<daemon::Json>& body, int want) {
  auto client = daemon::ApiClient::connect();
  if (!client) {
    failLine(who, client.error().message());
    return std::nullopt;
  }
  auto r = client->request(method, target, body);
  if (!r) {
    failLine(who, r.error().message());
    return std::nullopt;
  }
  if (want >= 0 && r->status != want) {
    failLine(who, daemon::apiErrorMessage(*r));
    return std::nullopt;
  }
  return r->body;
}

void printJson(const daemon::Json& j) { std::printf("%s\n", daemon::dumpJson(j).c_str()); }

}  // namespace corral::cli
