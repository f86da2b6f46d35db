// SPDX-License-Identifier: Apache-2.0
// Session and command specs: strict JSON in, sandbox values out.
#include "daemon/session_spec.h"
#include "daemon/terminal_frame.h"

#include <cctype>

#include <algorithm>

#include "policy/egress_grant.h"
#include "policy/egress_internal.h"
#include "policy/env_policy.h"
#include "policy/path_policy.h"
#include "policy/units.h"

namespace corral::daemon {
namespace {

constexpr size_t kMaxEnv = 256;
constexpr size_t kMaxArgs = 4096;

Result<std::vector<std::pair<std::string, std::string>>> parseEnv(const std::optional<std::vector<std::string>>& list,
                                                                   const std::string& where) {
  if (!list) return std::vector<std::pair<std::string, std::string>>();
  return envPairs(*list, where);
}

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> envPairs(const std::vector<std::string>& list, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& kv : list) {
    auto parsed = policy::env::parseAssignment(kv);
    if (!parsed) return parsed.error().wrap(where);  // names the key at most, never the value
    out.push_back(std::move(*parsed));
  }
  return out;
}

std::vector<std::string> envStrings(const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(std::string(k).append("=").append(v));
  return out;
}

namespace {

Result<std::optional<uint64_t>> size(const Fields& f, std::string_view key) {
  ASSIGN_OR_RETURN(auto text, f.string(key, 64));
  if (!text) return std::optional<uint64_t>();
  auto v = policy::parseSize(*text);
  if (!v) return v.error().wrap("limits." + std::string(key));
  return std::optional<uint64_t>(*v);
}

Result<std::optional<std::chrono::milliseconds>> duration(const Fields& f, std::string_view key, const std::string& where) {
  ASSIGN_OR_RETURN(auto text, f.string(key, 64));
  if (!text) return std::optional<std::chrono::milliseconds>();
  auto v = policy::parseDuration(*text);
  if (!v) return v.error().wrap(where + "." + std::string(key));
  return std::optional<std::chrono::milliseconds>(*v);
}

Result<sandbox::Limits> parseLimits(const Json* j) {
  sandbox::Limits l;
  if (!j) return l;
  ASSIGN_OR_RETURN(Fields f, Fields::of(*j, "limits", {"memory", "pids", "cpu_time", "file_size", "open_files",
                                                        "tmp_size", "workspace_size", "allow_weaker"}));
  ASSIGN_OR_RETURN(l.memory_bytes, size(f, "memory"));
  ASSIGN_OR_RETURN(auto pids, f.count("pids", 1u << 22));
  if (pids) l.pids = static_cast<uint32_t>(*pids);
  ASSIGN_OR_RETURN(l.cpu_time, duration(f, "cpu_time", "limits"));
  ASSIGN_OR_RETURN(auto fsize, size(f, "file_size"));
  if (fsize) l.file_size_bytes = *fsize;
  ASSIGN_OR_RETURN(auto nofile, f.count("open_files", 1u << 20));
  if (nofile) l.open_files = static_cast<uint32_t>(*nofile);
  ASSIGN_OR_RETURN(auto tmp, size(f, "tmp_size"));
  if (tmp) l.tmp_bytes = *tmp;
  ASSIGN_OR_RETURN(auto ws, size(f, "workspace_size"));
  if (ws) l.workspace_bytes = *ws;
  // Below this an ext4 image has no room for its own metadata (and no workspace is useful).
  if (l.workspace_bytes < (1u << 20)) return Error(Errc::kInvalidArgument, "limits.workspace_size: at least 1M");
  ASSIGN_OR_RETURN(auto weaker, f.strings("allow_weaker", 16, 64));
  for (const std::string& name : weaker.value_or(std::vector<std::string>{})) {
    auto lim = sandbox::limitFromName(name);
    if (!lim) return Error(Errc::kInvalidArgument, "limits.allow_weaker: unknown limit '" + policy::printable(name) + "'");
    l.allow_weaker.push_back(*lim);
  }
  return l;
}

std::string sizeText(uint64_t bytes) { return std::to_string(bytes); }

Result<std::vector<sandbox::RoBind>> parseRoBinds(const std::optional<std::vector<std::string>>& list) {
  std::vector<sandbox::RoBind> out;
  for (const std::string& v : list.value_or(std::vector<std::string>{})) {
    const size_t colon = v.find(':');
    if (colon != std::string::npos && v.find(':', colon + 1) != std::string::npos)
      return Error(Errc::kInvalidArgument, "body.ro_binds: more than one ':' in an entry");
    const std::string host = v.substr(0, colon), target = colon == std::string::npos ? host : v.substr(colon + 1);
    if (host.empty() || host.front() != '/' || host.find('\0') != std::string::npos)
      return Error(Errc::kInvalidArgument, "body.ro_binds: an absolute host path is required");
    auto checked = policy::path::sandboxMountPath(target);
    if (!checked) return checked.error().wrap("body.ro_binds");
    if (std::any_of(out.begin(), out.end(), [&](const sandbox::RoBind& b) { return b.sandbox == *checked; }))
      return Error(Errc::kInvalidArgument, "body.ro_binds: " + *checked + " given twice");
    out.push_back({host, *checked});
  }
  return out;
}

// Egress: grants and CIDRs canonical (as the proxy will read them), credentials by name.
Result<void> parseEgress(const Fields& f, SessionSpec& s) {
  ASSIGN_OR_RETURN(auto net, f.string("net", 16));
  if (net && *net != "none" && *net != "proxy") return Error(Errc::kInvalidArgument, "body.net: \"none\" or \"proxy\"");
  s.net_proxy = net && *net == "proxy";
  ASSIGN_OR_RETURN(auto allow, f.strings("allow", 256, 1024));
  for (const std::string& g : allow.value_or(std::vector<std::string>{})) {
    auto grant = policy::egress::parseGrant(g);
    if (!grant) return grant.error().wrap("body.allow");
    if (std::find(s.allow.begin(), s.allow.end(), grant->text()) == s.allow.end()) s.allow.push_back(grant->text());
  }
  ASSIGN_OR_RETURN(auto internal, f.strings("allow_internal", 64, 64));
  for (const std::string& c : internal.value_or(std::vector<std::string>{})) {
    auto cidr = policy::egress::parseCidr(c);
    if (!cidr) return cidr.error().wrap("body.allow_internal");
    if (std::find(s.allow_internal.begin(), s.allow_internal.end(), cidr->text()) == s.allow_internal.end())
      s.allow_internal.push_back(cidr->text());
  }
  ASSIGN_OR_RETURN(auto creds, f.strings("credentials", 32, 64));
  for (const std::string& n : creds.value_or(std::vector<std::string>{})) {
    RETURN_IF_ERROR(checkCredentialName(n));
    if (std::find(s.credentials.begin(), s.credentials.end(), n) != s.credentials.end())
      return Error(Errc::kInvalidArgument, "body.credentials: '" + n + "' given twice");
    s.credentials.push_back(n);
  }
  ASSIGN_OR_RETURN(auto ssh_key, f.string("ssh_key", 64));
  if (ssh_key) {
    if (auto n = checkCredentialName(*ssh_key); !n) return n.error().wrap("body.ssh_key");
    if (std::find(s.credentials.begin(), s.credentials.end(), *ssh_key) != s.credentials.end())
      return Error(Errc::kInvalidArgument, "body.ssh_key: '" + *ssh_key + "' is in credentials too");
    s.ssh_key = *ssh_key;
  }
  if (!s.net_proxy && (!s.allow.empty() || !s.allow_internal.empty() || !s.credentials.empty() || s.ssh_key))
    return Error(Errc::kInvalidArgument, "body: allow, allow_internal, credentials and ssh_key need \"net\": \"proxy\"");
  if (!s.allow_internal.empty() && s.allow.empty())
    return Error(Errc::kInvalidArgument, "body.allow_internal: needs an allow grant by name");
  // The agent signs only for servers behind a tcp grant's tunnel (exec's --ssh-key rule).
  if (s.ssh_key && std::none_of(s.allow.begin(), s.allow.end(), [](const std::string& g) { return g.rfind("tcp://", 0) == 0; }))
    return Error(Errc::kInvalidArgument, "body.ssh_key: needs an allow tcp://host:port grant (the key signs only for servers behind one)");
  return {};
}

// "backend" and "vm". What a VM session cannot honour yet is refused here, by name, so that no
// option is silently dropped (docs/daemon.md, "Sessions on the VM backend").
Result<void> parseBackend(const Fields& f, SessionSpec& s) {
  ASSIGN_OR_RETURN(auto backend, f.string("backend", 16));
  if (backend && *backend != "namespace" && *backend != "vm") return Error(Errc::kInvalidArgument, "body.backend: \"namespace\" or \"vm\"");
  s.vm = backend && *backend == "vm";
  const Json* vm = f.object("vm");
  if (vm && !s.vm) return Error(Errc::kInvalidArgument, "body.vm: needs \"backend\": \"vm\"");
  if (vm) {
    ASSIGN_OR_RETURN(Fields v, Fields::of(*vm, "vm", {"memory", "cpus", "allow_weaker"}));
    ASSIGN_OR_RETURN(auto mem, size(v, "memory"));
    if (mem && (*mem < (128ull << 20) || *mem > (64ull << 30))) return Error(Errc::kInvalidArgument, "body.vm.memory: 128M to 64G");
    s.vm_memory_bytes = mem.value_or(0);
    ASSIGN_OR_RETURN(auto cpus, v.count("cpus", 64));
    if (cpus && *cpus == 0) return Error(Errc::kInvalidArgument, "body.vm.cpus: 1 to 64");
    s.vm_cpus = static_cast<uint32_t>(cpus.value_or(0));
    ASSIGN_OR_RETURN(auto weaker, v.strings("allow_weaker", 4, 16));
    for (const std::string& w : weaker.value_or(std::vector<std::string>{})) {
      if (w != "kvm") return Error(Errc::kInvalidArgument, "body.vm.allow_weaker: only \"kvm\" (TCG emulation where KVM is unusable)");
      s.vm_allow_tcg = true;
    }
  }
  if (!s.vm) return {};
  auto refuse = [](const std::string& what) {
    return Error(Errc::kUnsupported, "body." + what + ": not yet on a VM session (backend vm; docs/daemon.md, \"Not yet\")");
  };
  if (s.net_proxy) return refuse("net proxy");
  if (!s.ro_binds.empty()) return refuse("ro_binds");
  if (s.workspace_from) return refuse("workspace");
  return {};
}

}  // namespace

Result<SessionSpec> parseSessionSpec(const Json& j) {
  ASSIGN_OR_RETURN(Fields f, Fields::of(j, "body", {"name", "limits", "env", "workspace", "ttl", "ro_binds", "net", "allow",
                                                     "allow_internal", "credentials", "ssh_key", "profile", "profile_version",
                                                     "backend", "vm"}));
  SessionSpec s;
  ASSIGN_OR_RETURN(s.name, f.string("name", 64));
  if (s.name) {
    if (s.name->empty()) return Error(Errc::kInvalidArgument, "body.name: may not be empty");
    for (char c : *s.name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
        return Error(Errc::kInvalidArgument, "body.name: only letters, digits, '-', '_' and '.'");
  }
  ASSIGN_OR_RETURN(s.limits, parseLimits(f.object("limits")));
  ASSIGN_OR_RETURN(auto env, f.strings("env", kMaxEnv, 65536));
  ASSIGN_OR_RETURN(s.env, parseEnv(env, "body.env"));
  ASSIGN_OR_RETURN(s.workspace_from, f.string("workspace", 4096));
  if (s.workspace_from && (s.workspace_from->empty() || s.workspace_from->front() != '/' ||
                           s.workspace_from->find('\0') != std::string::npos))
    return Error(Errc::kInvalidArgument, "body.workspace: an absolute host path is required");
  ASSIGN_OR_RETURN(s.ttl, duration(f, "ttl", "body"));
  if (s.ttl && s.ttl->count() <= 0) return Error(Errc::kInvalidArgument, "body.ttl: must be positive");
  ASSIGN_OR_RETURN(auto binds, f.strings("ro_binds", 64, 4096));
  ASSIGN_OR_RETURN(s.ro_binds, parseRoBinds(binds));
  RETURN_IF_ERROR(parseEgress(f, s));
  RETURN_IF_ERROR(parseBackend(f, s));
  ASSIGN_OR_RETURN(s.profile, f.string("profile", 64));
  ASSIGN_OR_RETURN(auto version, f.count("profile_version", INT32_MAX));
  s.profile_version = static_cast<int64_t>(version.value_or(0));
  return s;
}

Result<void> checkCredentialName(std::string_view name) {
  const bool ok = !name.empty() && name.size() <= 64 && name.front() >= 'a' && name.front() <= 'z' &&
                  std::all_of(name.begin(), name.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; });
  if (!ok) return Error(Errc::kInvalidArgument, "credential name '" + policy::printable(name) + "': 1 to 64 of a-z 0-9 _ -, starting with a letter");
  return {};
}

Json limitsJson(const sandbox::Limits& l) {
  Json j = Json::object();
  if (l.memory_bytes) j["memory"] = sizeText(*l.memory_bytes);
  j["pids"] = l.pids;
  if (l.cpu_time) j["cpu_time"] = std::to_string(l.cpu_time->count()) + "ms";
  j["file_size"] = sizeText(l.file_size_bytes);
  j["open_files"] = l.open_files;
  j["tmp_size"] = sizeText(l.tmp_bytes);
  j["workspace_size"] = sizeText(l.workspace_bytes);
  Json weaker = Json::array();
  for (sandbox::Limit w : l.allow_weaker) weaker.push_back(sandbox::limitName(w));
  j["allow_weaker"] = weaker;
  return j;
}

Json sessionSpecJson(const SessionSpec& s, bool with_env) {
  Json j = Json::object();
  if (s.name) j["name"] = *s.name;
  j["limits"] = limitsJson(s.limits);
  if (with_env) j["env"] = envStrings(s.env);
  if (s.workspace_from) j["workspace"] = *s.workspace_from;
  if (s.ttl) j["ttl"] = std::to_string(s.ttl->count()) + "ms";
  if (!s.ro_binds.empty()) {
    Json binds = Json::array();
    for (const auto& b : s.ro_binds) binds.push_back(b.host + ":" + b.sandbox);
    j["ro_binds"] = binds;
  }
  j["net"] = s.net_proxy ? "proxy" : "none";
  if (!s.allow.empty()) j["allow"] = s.allow;
  if (!s.allow_internal.empty()) j["allow_internal"] = s.allow_internal;
  if (!s.credentials.empty()) j["credentials"] = s.credentials;
  if (s.ssh_key) j["ssh_key"] = *s.ssh_key;
  if (s.vm) {
    j["backend"] = "vm";
    Json vm = Json::object();
    if (s.vm_memory_bytes) vm["memory"] = sizeText(s.vm_memory_bytes);
    if (s.vm_cpus) vm["cpus"] = s.vm_cpus;
    if (s.vm_allow_tcg) vm["allow_weaker"] = Json::array({"kvm"});
    j["vm"] = vm;
  }
  if (s.profile) {
    j["profile"] = *s.profile;
    j["profile_version"] = s.profile_version;
  }
  return j;
}

Result<CommandSpec> parseCommandSpec(const Json& j) {
  ASSIGN_OR_RETURN(Fields f, Fields::of(j, "body", {"argv", "env", "cwd", "timeout", "stdin", "tty"}));
  CommandSpec c;
  ASSIGN_OR_RETURN(auto argv, f.strings("argv", kMaxArgs, 65536));
  if (!argv || argv->empty() || argv->front().empty()) return Error(Errc::kInvalidArgument, "body.argv: a command is required");
  for (const std::string& a : *argv)
    if (a.find('\0') != std::string::npos) return Error(Errc::kInvalidArgument, "body.argv: an argument holds a NUL byte");
  c.argv = std::move(*argv);
  ASSIGN_OR_RETURN(auto env, f.strings("env", kMaxEnv, 65536));
  ASSIGN_OR_RETURN(c.env, parseEnv(env, "body.env"));
  ASSIGN_OR_RETURN(auto cwd, f.string("cwd", 1024));
  if (cwd && !cwd->empty() && *cwd != ".") {
    auto checked = policy::path::outputPath(*cwd);
    if (!checked) return checked.error().wrap("body.cwd");
    c.cwd = "/workspace/" + *cwd;
  }
  ASSIGN_OR_RETURN(c.timeout, duration(f, "timeout", "body"));
  ASSIGN_OR_RETURN(auto in, f.boolean("stdin"));
  c.stdin_open = in.value_or(false);
  if (const Json* tty = f.object("tty")) {
    ASSIGN_OR_RETURN(Fields t, Fields::of(*tty, "body.tty", {"rows", "cols"}));
    ASSIGN_OR_RETURN(auto rows, t.count("rows", terminal::kMaxSide));
    ASSIGN_OR_RETURN(auto cols, t.count("cols", terminal::kMaxSide));
    if (!rows || !cols || *rows == 0 || *cols == 0)
      return Error(Errc::kInvalidArgument, "body.tty: rows and cols are required, each 1.." + std::to_string(terminal::kMaxSide));
    c.tty = std::pair{static_cast<uint16_t>(*rows), static_cast<uint16_t>(*cols)};
    // The terminal is the command's stdin (typed through the terminal connection).
    if (c.stdin_open) return Error(Errc::kInvalidArgument, "body.stdin: a tty command reads its terminal");
  }
  return c;
}

std::vector<std::string> commandEnvironment(const std::vector<std::pair<std::string, std::string>>& session_env,
                                            const std::vector<std::pair<std::string, std::string>>& cmd_env) {
  std::vector<std::pair<std::string, std::string>> all = session_env;
  all.insert(all.end(), cmd_env.begin(), cmd_env.end());
  return policy::env::buildEnvironment(all);
}

}  // namespace corral::daemon
