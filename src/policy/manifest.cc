// SPDX-License-Identifier: Apache-2.0
// parseManifest: the manifest's JSON shape, field by field (docs/manifest.md).
#include "policy/manifest.h"

#include <algorithm>
#include <array>

#include "policy/egress_grant.h"
#include "policy/egress_internal.h"
#include "policy/manifest_fields.h"
#include "policy/path_policy.h"

namespace corral::policy {
namespace {

using namespace manifest_fields;

constexpr std::array<std::string_view, 4> kProviders = {"replay", "openai", "ollama", "anthropic"};

// The limit names `corral exec --allow-weaker` takes (sandbox::limitFromName, spelled out
// again because policy/ cannot link sandbox/).
constexpr std::array<std::string_view, 8> kLimitNames = {"memory",    "pids",       "cpu-time", "timeout",
                                                         "file-size", "open-files", "tmp-size", "workspace-size"};

milliseconds ms(uint64_t v) { return milliseconds(static_cast<int64_t>(v)); }

const Json* field(const Json& obj, std::string_view key) {
  auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}

// Reads obj[key] into out with read(value, where) when the key is present; out keeps its
// default otherwise.
template <typename T, typename Read>
Result<void> readOptional(const Json& obj, const Where& w, std::string_view key, T& out, Read read) {
  const Json* v = field(obj, key);
  if (!v) return {};
  auto r = read(*v, w.key(key));
  if (!r.ok()) return r.error();
  out = static_cast<T>(std::move(*r));
  return {};
}

auto listOf(EntryRule rule) {
  return [rule](const Json& v, const Where& w) { return list(v, w, rule); };
}
auto integerIn(Range r) {
  return [r](const Json& v, const Where& w) { return integer(v, w, r.lo, r.hi); };
}
auto durationIn(Range r) {
  return [r](const Json& v, const Where& w) { return duration(v, w, ms(r.lo), ms(r.hi)); };
}
auto sizeIn(Range r) {
  return [r](const Json& v, const Where& w) { return size(v, w, r.lo, r.hi); };
}

bool controlByte(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

Result<std::string> limitName(std::string_view name) {
  if (name == "kvm") return std::string(name);  // TCG emulation accepted (backend vm only: parseSandbox)
  if (std::find(kLimitNames.begin(), kLimitNames.end(), name) == kLimitNames.end())
    return Error(Errc::kInvalidArgument,
                 shown(name) + " is not a limit (memory, pids, cpu-time, timeout, file-size, open-files, "
                               "tmp-size, workspace-size; kvm with backend vm)");
  return std::string(name);
}

Result<std::string> apiKeyEnvName(const Json& v, const Where& w) {
  ASSIGN_OR_RETURN(std::string name, string(v, w));
  bool ok = !name.empty() && name.size() <= 255 && !(name[0] >= '0' && name[0] <= '9');
  for (char c : name) ok = ok && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  if (!ok) return w.error("must be the NAME of an environment variable ([A-Z_][A-Z0-9_]*), never the key itself");
  return name;
}

// "http(s)://host[:port][/path]": no user info (a password in a URL ends up in logs), no
// whitespace or control bytes.
Result<std::string> endpoint(const Json& v, const Where& w) {
  ASSIGN_OR_RETURN(std::string url, string(v, w));
  auto bad = [&](const char* why) { return w.error(std::string(why)); };
  if (url.size() > 2048) return bad("longer than 2048 bytes");
  for (char c : url) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '`')
      return bad("must be an http:// or https:// URL of printable ASCII without spaces");
  }
  std::string_view rest = url;
  if (rest.substr(0, 7) == "http://") rest.remove_prefix(7);
  else if (rest.substr(0, 8) == "https://") rest.remove_prefix(8);
  else return bad("must start with http:// or https://");
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos)
    return bad("must not carry user info ('user:pass@'); name the key with api_key_env");
  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos || close == 1) return bad("has a malformed [IPv6] host");
    host = authority.substr(0, close + 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return bad("has junk after the [IPv6] host");
    if (!after.empty()) port = after.substr(1);
    if (!after.empty() && port.empty()) return bad("has an empty port");
  } else if (size_t colon = authority.find(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) return bad("has an empty port");
  }
  if (host.empty()) return bad("has no host");
  if (!port.empty()) {
    uint32_t n = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || n > 65535) return bad("has a port outside 1..65535");
      n = n * 10 + static_cast<uint32_t>(c - '0');
    }
    if (n == 0 || n > 65535) return bad("has a port outside 1..65535");
  }
  return url;
}

Result<std::string> transcriptPath(const Json& v, const Where& w) {
  ASSIGN_OR_RETURN(std::string p, string(v, w));
  // Relative to the manifest's folder, in normal form: never ".." or absolute.
  // (outputPath's rules: the same normal form, and .corral/ is no place for it either.)
  if (p.empty()) return w.error("is empty");
  if (p.front() == '/') return w.error(shown(p) + " is absolute; give it relative to the manifest");
  if (auto r = path::outputPath(p); !r.ok()) return w.error(shown(p) + " " + r.error().context());
  return p;
}

Result<ModelSpec> parseModel(const Json& obj, const Where& w) {
  RETURN_IF_ERROR(onlyKeys(obj, w, {"provider", "endpoint", "model", "api_key_env", "transcript", "timeout",
                                    "max_retries", "max_tokens"}));
  ModelSpec m;
  const Json* provider = field(obj, "provider");
  if (!provider) return w.key("provider").error("required (one of replay, openai, ollama, anthropic)");
  ASSIGN_OR_RETURN(m.provider, string(*provider, w.key("provider")));
  if (std::find(kProviders.begin(), kProviders.end(), m.provider) == kProviders.end())
    return w.key("provider").error("must be one of replay, openai, ollama, anthropic");
  const bool replay = m.provider == "replay";
  if (replay) {
    // A replay drops the endpoint, so one manifest can be run live and then replayed.
    std::string ignored;
    RETURN_IF_ERROR(readOptional(obj, w, "endpoint", ignored, string));
    if (!field(obj, "transcript")) return w.key("transcript").error("required for provider replay");
    RETURN_IF_ERROR(readOptional(obj, w, "transcript", m.transcript, transcriptPath));
  } else {
    if (!field(obj, "endpoint")) return w.key("endpoint").error("required for provider " + m.provider);
    RETURN_IF_ERROR(readOptional(obj, w, "endpoint", m.endpoint, endpoint));
    if (field(obj, "transcript")) return w.key("transcript").error("only for provider replay");
  }
  RETURN_IF_ERROR(readOptional(obj, w, "model", m.model, string));
  if (m.model.size() > 256 || !validUtf8(m.model) || std::any_of(m.model.begin(), m.model.end(), controlByte))
    return w.key("model").error("must be a model name of at most 256 bytes without control bytes");
  if (!replay && m.model.empty()) return w.key("model").error("required (non-empty) for provider " + m.provider);
  RETURN_IF_ERROR(readOptional(obj, w, "api_key_env", m.api_key_env, apiKeyEnvName));
  RETURN_IF_ERROR(readOptional(obj, w, "timeout", m.timeout, durationIn(kModelTimeoutMs)));
  RETURN_IF_ERROR(readOptional(obj, w, "max_retries", m.max_retries, integerIn(kMaxRetries)));
  RETURN_IF_ERROR(readOptional(obj, w, "max_tokens", m.max_tokens, integerIn(kMaxTokens)));
  return m;
}

Result<Budgets> parseBudgets(const Json& obj, const Where& w) {
  RETURN_IF_ERROR(onlyKeys(obj, w, {"max_turns", "max_model_calls", "wall_time", "command_timeout",
                                    "max_output_bytes", "max_loops", "max_pending_tasks"}));
  Budgets b;
  bool present[7];
  RETURN_IF_ERROR(readBudgets(obj, w, b, present));
  // Checked after defaults: "wall_time":"30s" alone conflicts with the default 60s.
  if (b.command_timeout > b.wall_time) return w.key("command_timeout").error("must not exceed wall_time");
  return b;
}

// sandbox.vm: the VM's size, with the ranges `exec --vm-memory` and `--vm-cpus` take.
Result<void> parseVm(const Json& obj, const Where& w, SandboxLimitsSpec& s) {
  if (!obj.is_object()) return w.error("must be an object");
  RETURN_IF_ERROR(onlyKeys(obj, w, {"memory", "cpus"}));
  RETURN_IF_ERROR(readOptional(obj, w, "memory", s.vm_memory_bytes, sizeIn(kVmMemoryBytes)));
  RETURN_IF_ERROR(readOptional(obj, w, "cpus", s.vm_cpus, integerIn(kVmCpus)));
  return {};
}

// A manifest that asks for the VM backend gets it or nothing: what the VM backend cannot
// honour in a run is refused here, before anything is written (docs/manifest.md, sandbox).
Result<void> checkVmBackend(const SandboxLimitsSpec& s, const Where& w) {
  const uint64_t vm_memory = s.vm_memory_bytes.value_or(kVmDefaultMemoryBytes);
  if (s.memory_bytes && *s.memory_bytes > vm_memory)
    return w.key("memory").error("larger than the VM (sandbox.vm.memory " + std::to_string(vm_memory >> 20) + "M)");
  if (s.workspace_bytes && *s.workspace_bytes < kVmMinWorkspaceBytes)
    return w.key("workspace_size").error("the VM's workspace disk needs at least 8M (an ext4 image)");
  return {};
}

Result<SandboxLimitsSpec> parseSandbox(const Json& obj, const Where& w) {
  RETURN_IF_ERROR(onlyKeys(obj, w, {"memory", "pids", "cpu_time", "file_size", "tmp_size", "workspace_size",
                                    "allow_weaker", "backend", "vm"}));
  SandboxLimitsSpec s;
  if (const Json* b = field(obj, "backend")) {
    ASSIGN_OR_RETURN(s.backend, string(*b, w.key("backend")));
    if (s.backend != "namespace" && s.backend != "vm") return w.key("backend").error("must be namespace or vm");
  }
  if (const Json* v = field(obj, "vm")) {
    if (s.backend != "vm") return w.key("vm").error("only with backend vm");
    RETURN_IF_ERROR(parseVm(*v, w.key("vm"), s));
  }
  RETURN_IF_ERROR(readOptional(obj, w, "memory", s.memory_bytes, sizeIn(kSandboxBytes)));
  RETURN_IF_ERROR(readOptional(obj, w, "pids", s.pids, integerIn(kSandboxPids)));
  RETURN_IF_ERROR(readOptional(obj, w, "cpu_time", s.cpu_time, durationIn(kSandboxCpuMs)));
  RETURN_IF_ERROR(readOptional(obj, w, "file_size", s.file_size_bytes, sizeIn(kSandboxBytes)));
  RETURN_IF_ERROR(readOptional(obj, w, "tmp_size", s.tmp_bytes, sizeIn(kSandboxBytes)));
  RETURN_IF_ERROR(readOptional(obj, w, "workspace_size", s.workspace_bytes, sizeIn(kSandboxBytes)));
  RETURN_IF_ERROR(readOptional(obj, w, "allow_weaker", s.allow_weaker, listOf(limitName)));
  for (size_t i = 0; i < s.allow_weaker.size(); ++i)
    if (s.allow_weaker[i] == "kvm" && s.backend != "vm") return w.key("allow_weaker").at(i).error("kvm only with backend vm");
  if (s.backend == "vm") RETURN_IF_ERROR(checkVmBackend(s, w));
  return s;
}

// Each grant is kept in its canonical text ("https://api.example.com:443"), so the canonical
// manifest and a spawned task's copy compare equal however the operator spelled it. The
// error names the rule, not the URL (it may carry a token).
Result<NetworkSpec> parseNetwork(const Json& obj, const Where& w) {
  RETURN_IF_ERROR(onlyKeys(obj, w, {"allow", "internal"}));
  NetworkSpec n;
  RETURN_IF_ERROR(readOptional(obj, w, "allow", n.allow, listOf(anyString)));
  for (size_t i = 0; i < n.allow.size(); ++i) {
    auto grant = egress::parseGrantReasonOnly(n.allow[i]);
    if (!grant) return w.key("allow").at(i).error(grant.error().context() + " (URL not shown)");
    n.allow[i] = grant->text();
    for (size_t j = 0; j < i; ++j)
      if (n.allow[j] == n.allow[i]) return w.key("allow").at(i).error(n.allow[i] + " is granted twice");
  }
  // The same rules as `exec --allow-internal`: a CIDR holds no secret, so it is echoed.
  RETURN_IF_ERROR(readOptional(obj, w, "internal", n.internal, listOf(anyString)));
  for (size_t i = 0; i < n.internal.size(); ++i) {
    // The longest CIDR is an IPv6 address of 39 characters and "/128": refuse hostile
    // lengths before they are echoed.
    if (n.internal[i].size() > 64) return w.key("internal").at(i).error("is no CIDR (longer than 64 bytes)");
    auto cidr = egress::parseCidr(n.internal[i]);
    if (!cidr) return w.key("internal").at(i).error(cidr.error().message());
    n.internal[i] = cidr->text();
    for (size_t j = 0; j < i; ++j)
      if (n.internal[j] == n.internal[i]) return w.key("internal").at(i).error(n.internal[i] + " is given twice");
  }
  // A CIDR opens nothing by itself: it only widens where granted names may resolve.
  if (!n.internal.empty() && n.allow.empty()) return w.key("internal").error("needs a grant in network.allow");
  return n;
}

// "executables": each a basename, or {"name": basename, "literal_args": bool} for a program
// whose arguments may hold shell metacharacters (docs/manifest.md). git has its own gate.
Result<void> parseExecutables(const Json& arr, const Where& w, Manifest& m) {
  if (!arr.is_array()) return w.error("must be an array of names or {\"name\", \"literal_args\"} objects");
  if (arr.size() > kMaxListEntries) return w.error("more than " + std::to_string(kMaxListEntries) + " entries");
  for (size_t i = 0; i < arr.size(); ++i) {
    const Where at = w.at(i);
    const Json* name = &arr[i];
    bool literal = false;
    if (arr[i].is_object()) {
      RETURN_IF_ERROR(onlyKeys(arr[i], at, {"name", "literal_args"}));
      name = field(arr[i], "name");
      if (!name) return at.key("name").error("required");
      if (const Json* l = field(arr[i], "literal_args")) {
        if (!l->is_boolean()) return at.key("literal_args").error("must be true or false");
        literal = l->get<bool>();
      }
    }
    if (!name->is_string()) return at.error("must be a name or an object {\"name\": ..., \"literal_args\": true}");
    auto checked = executable(name->get_ref<const std::string&>());
    if (!checked.ok()) return at.error(checked.error().context());
    if (std::find(m.executables.begin(), m.executables.end(), *checked) != m.executables.end())
      return at.error("repeats an earlier entry");
    if (literal && *checked == "git") return at.key("literal_args").error("git has its own gate (docs/command-gate.md); it cannot take literal arguments");
    if (literal) m.literal_args.push_back(*checked);
    m.executables.push_back(std::move(*checked));
  }
  return {};
}

Result<std::vector<CredentialSpec>> parseCredentials(const Json& arr, const Where& w) {
  if (!arr.is_array()) return w.error("must be an array of objects");
  if (arr.size() > kMaxListEntries) return w.error("more than " + std::to_string(kMaxListEntries) + " entries");
  std::vector<CredentialSpec> out;
  for (size_t i = 0; i < arr.size(); ++i) {
    const Where at = w.at(i);
    RETURN_IF_ERROR(onlyKeys(arr[i], at, {"name", "env", "url", "header", "format"}));
    CredentialSpec c;
    for (const char* key : {"name", "env", "url"})
      if (!field(arr[i], key)) return at.key(key).error("required");
    RETURN_IF_ERROR(readOptional(arr[i], at, "name", c.name, string));
    RETURN_IF_ERROR(readOptional(arr[i], at, "env", c.env, string));
    RETURN_IF_ERROR(readOptional(arr[i], at, "url", c.url, string));
    RETURN_IF_ERROR(readOptional(arr[i], at, "header", c.header, string));
    RETURN_IF_ERROR(readOptional(arr[i], at, "format", c.format, string));
    out.push_back(std::move(c));
  }
  return out;
}

Result<void> checkVmRun(const Manifest& m, const Where& root) {
  if (m.sandbox.backend != "vm") return {};
  // The VM relays exec's --net proxy, but run's proxy (its trace entries, leases per
  // command) is not wired to it yet: refused, never run without the grants it asks for.
  if (!m.network.allow.empty()) return root.key("network").key("allow").error("not available with sandbox.backend vm yet");
  if (!m.credentials.empty()) return root.key("credentials").error("not available with sandbox.backend vm yet");
  return {};
}

}  // namespace

Result<Manifest> parseManifest(std::string_view bytes) {
  ASSIGN_OR_RETURN(Json doc, parseStrict(bytes, kMaxManifestBytes, "manifest"));
  const Where root{"manifest", ""};
  RETURN_IF_ERROR(onlyKeys(doc, root, {"version", "task", "model", "inputs", "outputs", "executables", "env",
                                       "network", "credentials", "budgets", "sandbox"}));
  Manifest m;
  const Json* version = field(doc, "version");
  if (!version) return root.key("version").error("required (1)");
  if (!version->is_number_unsigned() || version->get<uint64_t>() != static_cast<uint64_t>(kManifestVersion))
    return root.key("version").error("must be 1");
  if (!field(doc, "task")) return root.key("task").error("required");
  RETURN_IF_ERROR(readOptional(doc, root, "task", m.task, string));
  if (auto r = checkTask(m.task); !r.ok()) return root.key("task").error(r.error().context());
  if (!field(doc, "model")) return root.key("model").error("required (an object with at least provider)");
  RETURN_IF_ERROR(readOptional(doc, root, "model", m.model, parseModel));
  RETURN_IF_ERROR(readOptional(doc, root, "inputs", m.inputs, listOf(inputPattern)));
  RETURN_IF_ERROR(readOptional(doc, root, "outputs", m.outputs, listOf(outputEntry)));
  if (const Json* e = field(doc, "executables")) RETURN_IF_ERROR(parseExecutables(*e, root.key("executables"), m));
  RETURN_IF_ERROR(readOptional(doc, root, "env", m.env, envList));
  RETURN_IF_ERROR(readOptional(doc, root, "network", m.network, parseNetwork));
  RETURN_IF_ERROR(readOptional(doc, root, "credentials", m.credentials, parseCredentials));
  RETURN_IF_ERROR(readOptional(doc, root, "budgets", m.budgets, parseBudgets));
  RETURN_IF_ERROR(readOptional(doc, root, "sandbox", m.sandbox, parseSandbox));
  RETURN_IF_ERROR(checkVmRun(m, root));
  return m;
}

}  // namespace corral::policy
