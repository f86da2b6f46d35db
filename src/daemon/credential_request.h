// SPDX-License-Identifier: Apache-2.0
// The credential routes' bodies, parsed strictly: pure (fuzz_daemon_request drives them), and
// no error ever holds the value.
#pragma once

#include <string>

#include "base/result.h"
#include "base/secret.h"
#include "daemon/json_fields.h"

namespace corral::daemon {

// POST /v1/credentials: {"name", "host", "header"?, "env"?, "value"}.
struct AddCredential {
  std::string name, host, header = "Authorization", format = "Bearer {}", env;
  Secret value{""};
};
Result<AddCredential> parseAddCredential(const Json& j);
// POST /v1/credentials/{name}/rotate: {"value"}.
Result<Secret> parseRotateCredential(const Json& j);

}  // namespace corral::daemon
