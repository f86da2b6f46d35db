// SPDX-License-Identifier: Apache-2.0
// RunReport -> one line of JSON.
#include "cli/report_json.h"

#include <nlohmann/json.hpp>

namespace corral::cli {
namespace {

using Json = nlohmann::ordered_json;  // keys in the documented order, for people reading it

constexpr int kReportVersion = 1;

template <typename T>
Json orNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

const char* statusName(sandbox::OutputResult::Status s) {
  switch (s) {
    case sandbox::OutputResult::Status::kCopied: return "copied";
    case sandbox::OutputResult::Status::kMissing: return "missing";
    case sandbox::OutputResult::Status::kRefused: return "refused";
    case sandbox::OutputResult::Status::kWithheld: return "withheld";
  }
  return "?";
}

}  // namespace

std::string renderReport(const sandbox::RunReport& r, const nlohmann::ordered_json* extra) {
  Json j;
  j["version"] = kReportVersion;
  j["exit_code"] = r.exit_code;
  j["command_status"] = orNull(r.command_status);
  j["signal"] = orNull(r.signal);
  j["killed_by"] = sandbox::killedByName(r.killed_by);
  j["wall_ms"] = r.wall_ms;
  j["cpu_user_ms"] = r.cpu_user_ms;
  j["cpu_sys_ms"] = r.cpu_sys_ms;
  j["peak_memory_bytes"] = orNull(r.peak_memory_bytes);
  j["cgroup"] = r.cgroup;
  j["landlock_abi"] = r.landlock_abi;
  Json limits = Json::object();
  for (const sandbox::LimitUse& l : r.limits)
    limits[sandbox::limitName(l.limit)] = Json{{"value", orNull(l.value)}, {"mechanism", l.mechanism}};
  j["limits"] = std::move(limits);
  Json outputs = Json::array();
  for (const sandbox::OutputResult& o : r.outputs)
    outputs.push_back(Json{{"path", o.path}, {"status", statusName(o.status)}, {"reason", o.reason}, {"bytes", o.bytes}});
  j["outputs"] = std::move(outputs);
  if (extra)
    for (const auto& [key, value] : extra->items()) j[key] = value;
  if (!r.error.empty()) j["error"] = r.error;
  // replace, not the default strict: dump() throws on invalid UTF-8, and an output's name
  // is whatever bytes the command chose. NaN/inf doubles dump as null.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace corral::cli
