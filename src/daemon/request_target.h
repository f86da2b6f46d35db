// SPDX-License-Identifier: Apache-2.0
// An API request's target split into path segments: pure (the server calls it on every
// request; fuzz_daemon_request drives it with arbitrary bytes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace corral::daemon {

// "/v1/sessions/x" -> {"v1", "sessions", "x"}; ok false for anything else than an absolute
// path without a query, fragment or empty part. '%' escapes are decoded only in a file's path
// (/v1/sessions/ID/{files,stat}/...), where a name may hold any byte but '/' and NUL; anywhere
// else a '%' is refused, so no id or route has two spellings.
std::vector<std::string> splitTarget(std::string_view target, bool* ok);

}  // namespace corral::daemon
