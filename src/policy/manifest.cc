// SPDX-License-Identifier: Apache-2.0
// parseManifest: the manifest's JSON shape, field by field (docs/manifest.md).
#include "policy/manifest.h"

#include <algorithm>
#include <array>

#include "policy/manifest_fields.h"

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

Result<std::string> limitName(std::string_view name) {
  if (std::find(kLimitNames.begin(), kLimitNames.end(), name) == kLimitNames.end())
    return Error(Errc::kInvalidArgument,
                 shown(name) + " is not a limit (memory, pids, cpu-time, timeout, file-size, open-files, "
                               "tmp-size, workspace-size)");
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
  if (!p.empty() && p.front() == '/') return w.error(shown(p) + " is absolute; give it relative to the manifest");
  if (auto r = outputEntry(p); !r.ok()) return w.error(r.error().context());
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
  bool replay = m.provider == "replay";
  if (const Json* v = field(obj, "endpoint")) {
    // A replay ignores the endpoint, so one manifest can be recorded live and replayed.
    if (replay) RETURN_IF_ERROR(string(*v, w.key("endpoint")));
    else { ASSIGN_OR_RETURN(m.endpoint, endpoint(*v, w.key("endpoint"))); }
  } else if (!replay) {
    return w.key("endpoint").error("required for provider " + m.provider);
  }
  if (const Json* v = field(obj, "model")) {
    ASSIGN_OR_RETURN(m.model, string(*v, w.key("model")));
    if (m.model.size() > 256 || !validUtf8(m.model) ||
        std::any_of(m.model.begin(), m.model.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
      return w.key("model").error("must be a model name of at most 256 bytes without control bytes");
  }
  if (!replay && m.model.empty()) return w.key("model").error("required (non-empty) for provider " + m.provider);
  if (const Json* v = field(obj, "api_key_env")) { ASSIGN_OR_RETURN(m.api_key_env, apiKeyEnvName(*v, w.key("api_key_env"))); }
  if (const Json* v = field(obj, "transcript")) {
    if (!replay) return w.key("transcript").error("only for provider replay");
    ASSIGN_OR_RETURN(m.transcript, transcriptPath(*v, w.key("transcript")));
  } else if (replay) {
    return w.key("transcript").error("required for provider replay");
  }
  if (const Json* v = field(obj, "timeout")) {
    ASSIGN_OR_RETURN(m.timeout, duration(*v, w.key("timeout"), ms(kModelTimeoutMs.lo), ms(kModelTimeoutMs.hi)));
  }
  if (const Json* v = field(obj, "max_retries")) {
    ASSIGN_OR_RETURN(uint64_t n, integer(*v, w.key("max_retries"), kMaxRetries.lo, kMaxRetries.hi));
    m.max_retries = static_cast<uint32_t>(n);
  }
  if (const Json* v = field(obj, "max_tokens")) {
    ASSIGN_OR_RETURN(uint64_t n, integer(*v, w.key("max_tokens"), kMaxTokens.lo, kMaxTokens.hi));
    m.max_tokens = static_cast<uint32_t>(n);
  }
  return m;
}

Result<Budgets> parseBudgets(const Json& obj, const Where& w) {
  RETURN_IF_ERROR(onlyKeys(obj, w, {"max_turns", "max_model_calls", "wall_time", "command_timeout",
                                    "max_output_bytes", "max_loops", "max_pending_tasks"}));
  Budgets b;
  bool present[7];
  RETURN_IF_ERROR(readBudgets(obj, w, b, present));
  if (b.command_timeout > b.wall_time)
    return w.key("command_timeout").error("must not exceed wall_time");
  return b;
}

Result<SandboxLimitsSpec> parseSandbox(const Json& obj, const Where& w) {
  RETURN_IF_ERROR(onlyKeys(obj, w, {"memory", "pids", "cpu_time", "file_size", "tmp_size", "workspace_size",
                                    "allow_weaker"}));
  SandboxLimitsSpec s;
  auto bytes = [&](const char* key, std::optional<uint64_t>& out) -> Result<void> {
    if (const Json* v = field(obj, key)) { ASSIGN_OR_RETURN(out, size(*v, w.key(key), kSandboxBytes.lo, kSandboxBytes.hi)); }
    return {};
  };
  RETURN_IF_ERROR(bytes("memory", s.memory_bytes));
  if (const Json* v = field(obj, "pids")) {
    ASSIGN_OR_RETURN(uint64_t n, integer(*v, w.key("pids"), kSandboxPids.lo, kSandboxPids.hi));
    s.pids = static_cast<uint32_t>(n);
  }
  if (const Json* v = field(obj, "cpu_time")) {
    ASSIGN_OR_RETURN(s.cpu_time, duration(*v, w.key("cpu_time"), ms(kSandboxCpuMs.lo), ms(kSandboxCpuMs.hi)));
  }
  RETURN_IF_ERROR(bytes("file_size", s.file_size_bytes));
  RETURN_IF_ERROR(bytes("tmp_size", s.tmp_bytes));
  RETURN_IF_ERROR(bytes("workspace_size", s.workspace_bytes));
  if (const Json* v = field(obj, "allow_weaker")) { ASSIGN_OR_RETURN(s.allow_weaker, list(*v, w.key("allow_weaker"), limitName)); }
  return s;
}

// Parsed for shape so a grant is reported as unavailable rather than as an unknown field.
Result<NetworkSpec> parseNetwork(const Json& obj, const Where& w) {
  RETURN_IF_ERROR(onlyKeys(obj, w, {"allow"}));
  NetworkSpec n;
  if (const Json* v = field(obj, "allow")) { ASSIGN_OR_RETURN(n.allow, list(*v, w.key("allow"), anyString)); }
  return n;
}

Result<std::vector<CredentialSpec>> parseCredentials(const Json& arr, const Where& w) {
  if (!arr.is_array()) return w.error("must be an array of objects");
  if (arr.size() > kMaxListEntries) return w.error("more than " + std::to_string(kMaxListEntries) + " entries");
  std::vector<CredentialSpec> out;
  for (size_t i = 0; i < arr.size(); ++i) {
    Where at = w.at(i);
    RETURN_IF_ERROR(onlyKeys(arr[i], at, {"name", "env", "url", "header", "format"}));
    CredentialSpec c;
    for (auto [key, dst] : {std::pair{"name", &c.name}, {"env", &c.env}, {"url", &c.url}}) {
      const Json* v = field(arr[i], key);
      if (!v) return at.key(key).error("required");
      ASSIGN_OR_RETURN(*dst, string(*v, at.key(key)));
    }
    if (const Json* v = field(arr[i], "header")) { ASSIGN_OR_RETURN(c.header, string(*v, at.key("header"))); }
    if (const Json* v = field(arr[i], "format")) { ASSIGN_OR_RETURN(c.format, string(*v, at.key("format"))); }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

Result<Manifest> parseManifest(std::string_view bytes) {
  ASSIGN_OR_RETURN(Json doc, parseStrict(bytes, kMaxManifestBytes, "manifest"));
  Where root{"manifest", ""};
  RETURN_IF_ERROR(onlyKeys(doc, root, {"version", "task", "model", "inputs", "outputs", "executables", "env",
                                       "network", "credentials", "budgets", "sandbox"}));
  Manifest m;
  const Json* version = field(doc, "version");
  if (!version) return root.key("version").error("required (1)");
  if (!version->is_number_unsigned() || version->get<uint64_t>() != static_cast<uint64_t>(kManifestVersion))
    return root.key("version").error("must be 1");
  const Json* task = field(doc, "task");
  if (!task) return root.key("task").error("required");
  ASSIGN_OR_RETURN(m.task, string(*task, root.key("task")));
  if (auto r = checkTask(m.task); !r.ok()) return root.key("task").error(r.error().context());
  const Json* model = field(doc, "model");
  if (!model) return root.key("model").error("required (an object with at least provider)");
  ASSIGN_OR_RETURN(m.model, parseModel(*model, root.key("model")));
  if (const Json* v = field(doc, "inputs")) { ASSIGN_OR_RETURN(m.inputs, list(*v, root.key("inputs"), inputPattern)); }
  if (const Json* v = field(doc, "outputs")) { ASSIGN_OR_RETURN(m.outputs, list(*v, root.key("outputs"), outputEntry)); }
  if (const Json* v = field(doc, "executables")) {
    ASSIGN_OR_RETURN(m.executables, list(*v, root.key("executables"), executable));
  }
  if (const Json* v = field(doc, "env")) { ASSIGN_OR_RETURN(m.env, envList(*v, root.key("env"))); }
  if (const Json* v = field(doc, "network")) { ASSIGN_OR_RETURN(m.network, parseNetwork(*v, root.key("network"))); }
  if (const Json* v = field(doc, "credentials")) {
    ASSIGN_OR_RETURN(m.credentials, parseCredentials(*v, root.key("credentials")));
  }
  if (const Json* v = field(doc, "budgets")) { ASSIGN_OR_RETURN(m.budgets, parseBudgets(*v, root.key("budgets"))); }
  if (const Json* v = field(doc, "sandbox")) { ASSIGN_OR_RETURN(m.sandbox, parseSandbox(*v, root.key("sandbox"))); }
  // TODO(corral): #4 the egress proxy; until then a grant could only be ignored, and a
  // manifest that silently loses its network grants is worse than one that is refused.
  if (!m.network.allow.empty())
    return root.key("network").key("allow").error("network grants need the egress proxy (not available in this build)");
  if (!m.credentials.empty())
    return root.key("credentials").error("credentials need the egress proxy (not available in this build)");
  return m;
}

}  // namespace corral::policy
