// SPDX-License-Identifier: Apache-2.0
// JSON payloads of the control protocol; every field checked for type and range on decode.
#include "vm/protocol.h"

#include <ctime>
#include <optional>

#include <nlohmann/json.hpp>

namespace corral::vm::protocol {
namespace {

using Json = nlohmann::json;

Error bad(const std::string& what) { return Error(Errc::kIo, "control channel: " + what); }

Result<Json> parseObject(std::string_view text, const char* what) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad(std::string(what) + " is not a JSON object");
  return j;
}

// Reads one field strictly: present, of the right type, in range.
Result<uint64_t> u64(const Json& j, const char* key, uint64_t max) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return bad(std::string(key) + ": not an unsigned number");
  const uint64_t v = it->get<uint64_t>();
  if (v > max) return bad(std::string(key) + ": out of range");
  return v;
}

Result<std::optional<uint64_t>> optU64(const Json& j, const char* key, uint64_t max) {
  auto it = j.find(key);
  if (it != j.end() && it->is_null()) return std::optional<uint64_t>{};
  ASSIGN_OR_RETURN(uint64_t v, u64(j, key, max));
  return std::optional<uint64_t>(v);
}

Result<std::string> str(const Json& j, const char* key, size_t max) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return bad(std::string(key) + ": not a string");
  std::string s = it->get<std::string>();
  if (s.size() > max) return bad(std::string(key) + ": too long");
  return s;
}

Result<std::vector<std::string>> strings(const Json& j, const char* key, size_t max_items) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() > max_items) return bad(std::string(key) + ": not a short array");
  std::vector<std::string> out;
  for (const Json& e : *it) {
    if (!e.is_string()) return bad(std::string(key) + ": holds a non-string");
    out.push_back(e.get<std::string>());
  }
  return out;
}

// The wire names of an enum, from a table of {value, name}.
template <typename E, size_t N>
const char* nameOf(const std::pair<E, const char*> (&table)[N], E value, const char* fallback) {
  for (const auto& [k, n] : table)
    if (k == value) return n;
  return fallback;
}
template <typename E, size_t N>
std::optional<E> valueOf(const std::pair<E, const char*> (&table)[N], const std::string& name) {
  for (const auto& [k, n] : table)
    if (name == n) return k;
  return std::nullopt;
}

constexpr uint64_t kMaxMs = 366ull * 24 * 3'600'000;
constexpr uint64_t kMaxBytes = 1ull << 40;
// As many outputs as a request may declare.
constexpr size_t kMaxOutputs = 65536;

}  // namespace

uint64_t realtimeNs() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

std::string encodeRequest(const sandbox::SandboxSpec& spec) {
  const sandbox::Limits& l = spec.limits;
  Json limits = {{"pids", l.pids},
                 {"file_size", l.file_size_bytes},
                 {"open_files", l.open_files},
                 {"tmp", l.tmp_bytes},
                 {"workspace", l.workspace_bytes},
                 {"memory", l.memory_bytes ? Json(*l.memory_bytes) : Json(nullptr)},
                 {"timeout_ms", l.timeout ? Json(static_cast<uint64_t>(l.timeout->count())) : Json(nullptr)},
                 {"cpu_time_ms", l.cpu_time ? Json(static_cast<uint64_t>(l.cpu_time->count())) : Json(nullptr)}};
  Json weaker = Json::array();
  for (sandbox::Limit w : l.allow_weaker) weaker.push_back(sandbox::limitName(w));
  limits["allow_weaker"] = weaker;
  Json j = {{"argv", spec.argv}, {"env", spec.env}, {"outputs", spec.outputs}, {"limits", limits},
            {"net_proxy_port", spec.proxy.channel >= 0 ? Json(spec.proxy.port) : Json(nullptr)},
            {"time_ns", realtimeNs()}};
  return j.dump();
}

Result<sandbox::SandboxSpec> decodeRequest(std::string_view text, bool* net_proxy, uint64_t* time_ns) {
  ASSIGN_OR_RETURN(Json j, parseObject(text, "request"));
  sandbox::SandboxSpec s;
  ASSIGN_OR_RETURN(s.argv, strings(j, "argv", 65536));
  ASSIGN_OR_RETURN(s.env, strings(j, "env", 65536));
  ASSIGN_OR_RETURN(s.outputs, strings(j, "outputs", kMaxOutputs));
  if (s.argv.empty()) return bad("request: empty argv");
  auto it = j.find("limits");
  if (it == j.end() || !it->is_object()) return bad("request: no limits");
  const Json& l = *it;
  ASSIGN_OR_RETURN(uint64_t pids, u64(l, "pids", 1u << 20));
  ASSIGN_OR_RETURN(uint64_t files, u64(l, "open_files", 1u << 20));
  s.limits.pids = static_cast<uint32_t>(pids);
  s.limits.open_files = static_cast<uint32_t>(files);
  ASSIGN_OR_RETURN(s.limits.file_size_bytes, u64(l, "file_size", kMaxBytes));
  ASSIGN_OR_RETURN(s.limits.tmp_bytes, u64(l, "tmp", kMaxBytes));
  ASSIGN_OR_RETURN(s.limits.workspace_bytes, u64(l, "workspace", kMaxBytes));
  ASSIGN_OR_RETURN(s.limits.memory_bytes, optU64(l, "memory", kMaxBytes));
  ASSIGN_OR_RETURN(auto timeout, optU64(l, "timeout_ms", kMaxMs));
  ASSIGN_OR_RETURN(auto cpu, optU64(l, "cpu_time_ms", kMaxMs));
  if (timeout) s.limits.timeout = std::chrono::milliseconds(*timeout);
  if (cpu) s.limits.cpu_time = std::chrono::milliseconds(*cpu);
  ASSIGN_OR_RETURN(auto weaker, strings(l, "allow_weaker", 16));
  for (const std::string& w : weaker) {
    auto limit = sandbox::limitFromName(w);
    if (!limit) return bad("request: unknown limit " + w);
    s.limits.allow_weaker.push_back(*limit);
  }
  ASSIGN_OR_RETURN(auto port, optU64(j, "net_proxy_port", 65535));
  if (port && *port == 0) return bad("request: net_proxy_port 0");
  if (port) s.proxy.port = static_cast<uint16_t>(*port);
  if (net_proxy) *net_proxy = port.has_value();
  ASSIGN_OR_RETURN(uint64_t now, u64(j, "time_ns", UINT64_MAX));
  if (time_ns) *time_ns = now;
  return s;
}

std::string encodeHello(const Hello& h) {
  return Json{{"kernel", h.kernel}, {"devices", h.devices}, {"pci", h.pci}, {"fs_types", h.fs_types}}.dump(
      -1, ' ', false, Json::error_handler_t::replace);
}

Result<Hello> decodeHello(std::string_view text) {
  ASSIGN_OR_RETURN(Json j, parseObject(text, "hello"));
  Hello h;
  ASSIGN_OR_RETURN(h.kernel, str(j, "kernel", 256));
  ASSIGN_OR_RETURN(h.devices, strings(j, "devices", 64));
  ASSIGN_OR_RETURN(h.pci, strings(j, "pci", 64));
  ASSIGN_OR_RETURN(h.fs_types, strings(j, "fs_types", 64));
  return h;
}

namespace {
bool isHex(const std::string& s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}
}  // namespace

std::string encodeReseed(const Reseed& r) {
  return Json{{"seed", r.seed_hex}, {"nonce", r.nonce_hex}, {"time_ns", r.time_ns}, {"skip_reseed", r.skip_reseed}}.dump();
}

Result<Reseed> decodeReseed(std::string_view text) {
  ASSIGN_OR_RETURN(Json j, parseObject(text, "reseed"));
  Reseed r;
  ASSIGN_OR_RETURN(r.seed_hex, str(j, "seed", 64));
  ASSIGN_OR_RETURN(r.nonce_hex, str(j, "nonce", 32));
  if (!isHex(r.seed_hex, 64) || !isHex(r.nonce_hex, 32)) return bad("reseed: seed or nonce is not hex of the right length");
  ASSIGN_OR_RETURN(r.time_ns, u64(j, "time_ns", UINT64_MAX));
  auto it = j.find("skip_reseed");
  if (it == j.end() || !it->is_boolean()) return bad("reseed: skip_reseed: not a boolean");
  r.skip_reseed = it->get<bool>();
  return r;
}

std::string encodeReseeded(const Reseeded& r) {
  Json h = Json::parse(encodeHello(r.hello));
  return Json{{"nonce", r.nonce_hex}, {"reseeded", r.reseeded}, {"hello", h}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<Reseeded> decodeReseeded(std::string_view text) {
  ASSIGN_OR_RETURN(Json j, parseObject(text, "reseeded"));
  Reseeded r;
  ASSIGN_OR_RETURN(r.nonce_hex, str(j, "nonce", 32));
  if (!isHex(r.nonce_hex, 32)) return bad("reseeded: the nonce is not hex of the right length");
  auto it = j.find("reseeded");
  if (it == j.end() || !it->is_boolean()) return bad("reseeded: not a boolean");
  r.reseeded = it->get<bool>();
  auto h = j.find("hello");
  if (h == j.end() || !h->is_object()) return bad("reseeded: no hello");
  ASSIGN_OR_RETURN(r.hello, decodeHello(h->dump()));
  return r;
}

namespace {
constexpr std::pair<OutputKind, const char*> kKinds[] = {
    {OutputKind::kFile, "file"}, {OutputKind::kSymlink, "symlink"}, {OutputKind::kDir, "dir"}, {OutputKind::kOther, "other"}};
}

std::string encodeOutputHeader(const OutputHeader& h) {
  return Json{{"path", h.path}, {"kind", nameOf(kKinds, h.kind, "other")}, {"links", h.links}, {"size", h.size}}.dump(-1, ' ', false,
                                                                                         Json::error_handler_t::replace);
}

Result<OutputHeader> decodeOutputHeader(std::string_view text) {
  ASSIGN_OR_RETURN(Json j, parseObject(text, "output header"));
  OutputHeader h;
  ASSIGN_OR_RETURN(h.path, str(j, "path", 4096));
  ASSIGN_OR_RETURN(std::string kind_name, str(j, "kind", 16));
  const std::optional<OutputKind> kind = valueOf(kKinds, kind_name);
  if (!kind) return bad("output header: unknown kind");
  h.kind = *kind;
  ASSIGN_OR_RETURN(h.links, u64(j, "links", 1u << 20));
  ASSIGN_OR_RETURN(h.size, u64(j, "size", kMaxBytes));
  return h;
}

namespace {
using OutputStatus = sandbox::OutputResult::Status;
constexpr std::pair<OutputStatus, const char*> kOutputStatuses[] = {{OutputStatus::kCopied, "copied"},
                                                                    {OutputStatus::kMissing, "missing"},
                                                                    {OutputStatus::kRefused, "refused"},
                                                                    {OutputStatus::kWithheld, "withheld"}};
}  // namespace

std::string encodeExit(const sandbox::RunReport& r) {
  Json limits = Json::array();
  for (const sandbox::LimitUse& u : r.limits)
    limits.push_back({{"limit", sandbox::limitName(u.limit)}, {"value", u.value ? Json(*u.value) : Json(nullptr)},
                      {"mechanism", u.mechanism}});
  Json outputs = Json::array();
  for (const sandbox::OutputResult& o : r.outputs) {
    outputs.push_back({{"path", o.path}, {"status", nameOf(kOutputStatuses, o.status, "missing")}, {"reason", o.reason}, {"bytes", o.bytes}});
  }
  Json j = {{"exit_code", r.exit_code},
            {"command_status", r.command_status ? Json(*r.command_status) : Json(nullptr)},
            {"signal", r.signal ? Json(*r.signal) : Json(nullptr)},
            {"killed_by", sandbox::killedByName(r.killed_by)},
            {"cpu_user_ms", static_cast<uint64_t>(r.cpu_user_ms)},
            {"cpu_sys_ms", static_cast<uint64_t>(r.cpu_sys_ms)},
            {"peak_memory", r.peak_memory_bytes ? Json(*r.peak_memory_bytes) : Json(nullptr)},
            {"cgroup", r.cgroup},
            {"landlock_abi", static_cast<uint64_t>(r.landlock_abi)},
            {"limits", limits},
            {"outputs", outputs},
            {"error", r.error}};
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<sandbox::RunReport> decodeExit(std::string_view text) {
  ASSIGN_OR_RETURN(Json j, parseObject(text, "exit report"));
  sandbox::RunReport r;
  ASSIGN_OR_RETURN(uint64_t code, u64(j, "exit_code", 255));
  r.exit_code = static_cast<int>(code);
  ASSIGN_OR_RETURN(auto status, optU64(j, "command_status", 255));
  ASSIGN_OR_RETURN(auto sig, optU64(j, "signal", 64));
  if (status) r.command_status = static_cast<int>(*status);
  if (sig) r.signal = static_cast<int>(*sig);
  ASSIGN_OR_RETURN(std::string killed, str(j, "killed_by", 16));
  bool known = false;
  for (auto k : {sandbox::KilledBy::kNone, sandbox::KilledBy::kTimeout, sandbox::KilledBy::kMemory,
                 sandbox::KilledBy::kPids, sandbox::KilledBy::kCpuTime, sandbox::KilledBy::kSignal})
    if (killed == sandbox::killedByName(k)) r.killed_by = k, known = true;
  if (!known) return bad("exit report: unknown killed_by");
  ASSIGN_OR_RETURN(uint64_t user, u64(j, "cpu_user_ms", kMaxMs));
  ASSIGN_OR_RETURN(uint64_t sys, u64(j, "cpu_sys_ms", kMaxMs));
  r.cpu_user_ms = static_cast<double>(user);
  r.cpu_sys_ms = static_cast<double>(sys);
  ASSIGN_OR_RETURN(r.peak_memory_bytes, optU64(j, "peak_memory", kMaxBytes));
  ASSIGN_OR_RETURN(r.cgroup, str(j, "cgroup", 8));
  ASSIGN_OR_RETURN(uint64_t abi, u64(j, "landlock_abi", 64));
  r.landlock_abi = static_cast<int>(abi);
  auto it = j.find("limits");
  if (it == j.end() || !it->is_array() || it->size() > 16) return bad("exit report: limits");
  for (const Json& e : *it) {
    if (!e.is_object()) return bad("exit report: limits");
    ASSIGN_OR_RETURN(std::string name, str(e, "limit", 32));
    auto limit = sandbox::limitFromName(name);
    if (!limit) return bad("exit report: unknown limit");
    ASSIGN_OR_RETURN(auto value, optU64(e, "value", UINT64_MAX));
    ASSIGN_OR_RETURN(std::string mech, str(e, "mechanism", 64));
    r.limits.push_back({*limit, value, "guest " + mech});
  }
  it = j.find("outputs");
  if (it == j.end() || !it->is_array() || it->size() > kMaxOutputs) return bad("exit report: outputs");
  for (const Json& e : *it) {
    if (!e.is_object()) return bad("exit report: outputs");
    sandbox::OutputResult o;
    ASSIGN_OR_RETURN(o.path, str(e, "path", 4096));
    ASSIGN_OR_RETURN(std::string status_name, str(e, "status", 16));
    const std::optional<OutputStatus> verdict = valueOf(kOutputStatuses, status_name);
    if (!verdict) return bad("exit report: unknown output status");
    o.status = *verdict;
    ASSIGN_OR_RETURN(o.reason, str(e, "reason", 4096));
    ASSIGN_OR_RETURN(o.bytes, u64(e, "bytes", kMaxBytes));
    r.outputs.push_back(std::move(o));
  }
  ASSIGN_OR_RETURN(r.error, str(j, "error", 4096));
  return r;
}

}  // namespace corral::vm::protocol
