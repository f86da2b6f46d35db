// SPDX-License-Identifier: Apache-2.0
// Names of limits and kill reasons, as they appear in reports, flags and docs.
#include "sandbox/spec.h"

#include <array>
#include <utility>

namespace corral::sandbox {
namespace {
constexpr std::array<std::pair<Limit, const char*>, 8> kLimitNames = {{
    {Limit::kMemory, "memory"},
    {Limit::kPids, "pids"},
    {Limit::kCpuTime, "cpu-time"},
    {Limit::kTimeout, "timeout"},
    {Limit::kFileSize, "file-size"},
    {Limit::kOpenFiles, "open-files"},
    {Limit::kTmpSize, "tmp-size"},
    {Limit::kWorkspaceSize, "workspace-size"},
}};
}  // namespace

const char* limitName(Limit limit) {
  for (const auto& [l, n] : kLimitNames)
    if (l == limit) return n;
  return "?";
}

std::optional<Limit> limitFromName(std::string_view name) {
  for (const auto& [l, n] : kLimitNames)
    if (name == n) return l;
  return std::nullopt;
}

const char* killedByName(KilledBy k) {
  switch (k) {
    case KilledBy::kNone: return "none";
    case KilledBy::kTimeout: return "timeout";
    case KilledBy::kMemory: return "memory";
    case KilledBy::kPids: return "pids";
    case KilledBy::kCpuTime: return "cpu-time";
    case KilledBy::kSignal: return "signal";
  }
  return "?";
}

}  // namespace corral::sandbox
