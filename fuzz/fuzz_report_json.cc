// SPDX-License-Identifier: Apache-2.0
// Fuzzes renderReport: one line, parses back with nlohmann, keys in order, values preserved.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "check.h"
#include "cli/report_json.h"

namespace corral::fuzz {
namespace {

using Json = nlohmann::ordered_json;
using sandbox::RunReport;

// Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF): what nlohmann
// accepts, so exactly the strings that must come back unchanged.
bool validUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : 9;
    if (n == 9 || i + n >= s.size()) return false;
    uint32_t cp = n == 0 ? c : c & (0x3f >> n);
    for (size_t k = 1; k <= n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

std::string fuzzedString(FuzzedDataProvider& in) { return in.ConsumeRandomLengthString(64); }

template <typename T>
std::optional<T> maybe(FuzzedDataProvider& in) {
  if (!in.ConsumeBool()) return std::nullopt;
  return in.ConsumeIntegral<T>();
}

RunReport fuzzedReport(FuzzedDataProvider& in) {
  RunReport r;
  r.exit_code = in.ConsumeIntegral<int>();
  r.command_status = maybe<int>(in);
  r.signal = maybe<int>(in);
  // Scoped enums have int as their underlying type: out-of-range values are legal and
  // exercise the "?" fallbacks.
  r.killed_by = static_cast<sandbox::KilledBy>(in.ConsumeIntegralInRange(0, 7));
  r.wall_ms = in.ConsumeFloatingPoint<double>();
  r.cpu_user_ms = in.ConsumeBool() ? NAN : in.ConsumeFloatingPoint<double>();
  r.cpu_sys_ms = in.ConsumeBool() ? INFINITY : in.ConsumeFloatingPoint<double>();
  r.peak_memory_bytes = maybe<uint64_t>(in);
  r.cgroup = fuzzedString(in);
  r.landlock_abi = in.ConsumeIntegral<int>();
  for (size_t n = in.ConsumeIntegralInRange<size_t>(0, 10); n > 0; --n)
    r.limits.push_back({static_cast<sandbox::Limit>(in.ConsumeIntegralInRange(0, 9)), maybe<uint64_t>(in),
                        fuzzedString(in)});
  for (size_t n = in.ConsumeIntegralInRange<size_t>(0, 10); n > 0; --n) {
    sandbox::OutputResult o;
    o.path = fuzzedString(in);
    o.status = static_cast<sandbox::OutputResult::Status>(in.ConsumeIntegralInRange(0, 4));  // 4: out of range
    o.reason = fuzzedString(in);
    o.bytes = in.ConsumeIntegral<uint64_t>();
    r.outputs.push_back(std::move(o));
  }
  r.error = in.ConsumeRemainingBytesAsString();
  return r;
}

// A string field: unchanged when it was valid UTF-8, otherwise valid with U+FFFD for the bad bytes.
void checkString(const Json& j, const std::string& want, const char* field) {
  PROPERTY(j.is_string(), std::string(field) + " is not a string");
  const std::string& got = j.get_ref<const std::string&>();
  if (validUtf8(want)) {
    PROPERTY(got == want, std::string(field) + " changed: " + got);
  } else {
    PROPERTY(got.find("\xef\xbf\xbd") != std::string::npos, std::string(field) + " lost bad bytes without U+FFFD");
  }
}

template <typename T>
void checkOptional(const Json& j, const std::optional<T>& want, const char* field) {
  if (!want) {
    PROPERTY(j.is_null(), std::string(field) + " should be null");
  } else {
    PROPERTY(j.is_number_integer() && j.get<T>() == *want, std::string(field) + " changed: " + j.dump());
  }
}

void checkDouble(const Json& j, double want, const char* field) {
  if (!std::isfinite(want)) {
    PROPERTY(j.is_null(), std::string(field) + " non-finite should be null: " + j.dump());
  } else {
    PROPERTY(j.is_number() && j.get<double>() == want, std::string(field) + " changed: " + j.dump());
  }
}

void check(const RunReport& r) {
  const std::string text = cli::renderReport(r);
  PROPERTY(text.find('\n') == std::string::npos, "report is more than one line");
  for (char c : text)  // JSON escapes U+0000..U+001F; DEL may stand as it is
    PROPERTY(static_cast<unsigned char>(c) >= 0x20, "raw control byte in the report: " + text.substr(0, 300));
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  PROPERTY(!j.is_discarded(), "report does not parse: " + text);
  PROPERTY(j.is_object(), text);

  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  std::vector<std::string> want_keys = {"version",   "exit_code",         "command_status", "signal",
                                        "killed_by", "wall_ms",           "cpu_user_ms",    "cpu_sys_ms",
                                        "peak_memory_bytes", "cgroup",    "landlock_abi",   "limits",
                                        "outputs"};
  if (!r.error.empty()) want_keys.push_back("error");
  PROPERTY(keys == want_keys, "keys missing or out of the documented order: " + text.substr(0, 300));

  PROPERTY(j["version"] == 1, "version is not 1");
  PROPERTY(j["exit_code"].get<int>() == r.exit_code, "exit_code changed");
  checkOptional(j["command_status"], r.command_status, "command_status");
  checkOptional(j["signal"], r.signal, "signal");
  PROPERTY(j["killed_by"] == sandbox::killedByName(r.killed_by), "killed_by changed: " + j["killed_by"].dump());
  checkDouble(j["wall_ms"], r.wall_ms, "wall_ms");
  checkDouble(j["cpu_user_ms"], r.cpu_user_ms, "cpu_user_ms");
  checkDouble(j["cpu_sys_ms"], r.cpu_sys_ms, "cpu_sys_ms");
  checkOptional(j["peak_memory_bytes"], r.peak_memory_bytes, "peak_memory_bytes");
  checkString(j["cgroup"], r.cgroup, "cgroup");
  PROPERTY(j["landlock_abi"].get<int>() == r.landlock_abi, "landlock_abi changed");

  // One key per limit name; a later entry for the same limit replaces an earlier one.
  std::map<std::string, const sandbox::LimitUse*> last;
  for (const auto& l : r.limits) last[sandbox::limitName(l.limit)] = &l;
  PROPERTY(j["limits"].is_object() && j["limits"].size() == last.size(), "limits: " + j["limits"].dump());
  for (const auto& [name, l] : last) {
    PROPERTY(j["limits"].contains(name), "limit missing: " + name);
    checkOptional(j["limits"][name]["value"], l->value, "limits.value");
    checkString(j["limits"][name]["mechanism"], l->mechanism, "limits.mechanism");
  }

  PROPERTY(j["outputs"].is_array() && j["outputs"].size() == r.outputs.size(), "outputs count changed");
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const Json& o = j["outputs"][i];
    checkString(o["path"], r.outputs[i].path, "outputs.path");
    checkString(o["reason"], r.outputs[i].reason, "outputs.reason");
    PROPERTY(o["bytes"].get<uint64_t>() == r.outputs[i].bytes, "outputs.bytes changed");
    const std::string status = o["status"].get<std::string>();
    PROPERTY(status == "copied" || status == "missing" || status == "refused" || status == "withheld" || status == "?", status);
  }
  if (!r.error.empty()) checkString(j["error"], r.error, "error");
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  corral::fuzz::check(corral::fuzz::fuzzedReport(in));
  return 0;
}
