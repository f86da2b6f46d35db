// SPDX-License-Identifier: Apache-2.0
// The machine-readable `corral exec` report (--json, --report FILE).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sandbox/spec.h"

namespace corral::cli {

// One line of JSON, no trailing newline, format version 1:
//   {"version":1,"exit_code":0,"command_status":0|null,"signal":9|null,"killed_by":"none",
//    "wall_ms":1.5,"cpu_user_ms":0.5,"cpu_sys_ms":0.25,"peak_memory_bytes":123|null,
//    "cgroup":"v2","landlock_abi":4,
//    "limits":{"memory":{"value":123|null,"mechanism":"cgroup-v2"},...},
//    "outputs":[{"path":"a","status":"copied|missing|refused","reason":"","bytes":3}],
//    "egress":[{...net::eventJson...}],   (only with --net proxy: one per request or tunnel)
//    "leases":[{...net::leaseEventJson...}],  (only with --credential: one per lease use)
//    "error":"..."}   (error only when set)
// Strings that are not valid UTF-8 (file names can be anything) are rendered with U+FFFD
// in place of the bad bytes rather than failing the report.
// extra: an object whose keys ("egress", "leases") are added after "outputs".
std::string renderReport(const sandbox::RunReport& r, const nlohmann::ordered_json* extra = nullptr);

}  // namespace corral::cli
