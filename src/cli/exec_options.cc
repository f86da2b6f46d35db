// SPDX-License-Identifier: Apache-2.0
// A small hand-rolled parser for `corral exec` options: one table, one handler per option.
#include "cli/exec_options.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>
#include <utility>

#include "net/upstream_proxy.h"
#include "policy/env_policy.h"
#include "policy/manifest_fields.h"
#include "policy/path_policy.h"
#include "policy/units.h"

namespace corral::cli {
namespace {

using policy::printable;

constexpr uint64_t kMaxCount = 1u << 20;  // --pids and --open-files: 1..1048576
constexpr uint64_t kMaxSandboxBytes = policy::manifest_fields::kSandboxBytes.hi;  // 1T

struct State {
  ExecInvocation inv;
  std::vector<std::pair<std::string, std::string>> env;
};

Error invalid(std::string message) { return Error(Errc::kInvalidArgument, std::move(message)); }

// "--memory 12Q" + "'12Q' is not a size" -> "--memory 12Q: '12Q' is not a size".
Error withValue(std::string_view opt, std::string_view value, const Error& e) {
  return e.wrap(std::string(opt) + " " + printable(value));
}

// A host path handed to the caller for I/O. NUL would cut it at the syscall; control bytes
// have no business in a path given on a command line and would garble one-line messages.
Result<void> checkHostPath(std::string_view opt, std::string_view value) {
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return withValue(opt, value, invalid("contains a control character"));
  }
  return {};
}

Result<void> onWorkspace(State& s, std::string_view opt, std::string_view v) {
  RETURN_IF_ERROR(checkHostPath(opt, v));
  s.inv.spec.workspace = std::string(v);
  return {};
}

Result<void> onOutput(State& s, std::string_view opt, std::string_view v) {
  auto rel = policy::path::outputPath(v);
  if (!rel) return withValue(opt, v, rel.error());
  auto& outs = s.inv.spec.outputs;
  if (std::find(outs.begin(), outs.end(), *rel) != outs.end())
    return invalid(std::string(opt) + " " + printable(v) + ": given twice");
  outs.push_back(std::move(*rel));
  return {};
}

Result<void> onNet(State& s, std::string_view opt, std::string_view v) {
  if (v == "none") return {};
  if (v == "proxy") {
    s.inv.net_proxy = true;
    return {};
  }
  return withValue(opt, v, invalid("not a network mode (none or proxy)"));
}

// The URL is echoed only once it parsed as a grant: a grant holds no userinfo, path or
// query, so nothing secret survives into it. A refused URL may carry one
// (https://user:token@host), so the error names the rule, not the text.
Result<void> onAllow(State& s, std::string_view opt, std::string_view v) {
  auto grant = policy::egress::parseGrantReasonOnly(v);
  if (!grant) return invalid(std::string(opt) + ": " + grant.error().message() + " (URL not shown)");
  auto& grants = s.inv.allow;
  if (std::find(grants.begin(), grants.end(), *grant) != grants.end())
    return invalid(std::string(opt) + " " + grant->text() + ": given twice");
  grants.push_back(std::move(*grant));
  return {};
}

// A CIDR holds no secret, so it is echoed; a duplicate is a typo worth naming.
Result<void> onAllowInternal(State& s, std::string_view opt, std::string_view v) {
  auto cidr = policy::egress::parseCidr(v);
  if (!cidr) return invalid(std::string(opt) + ": " + cidr.error().message());
  auto& internal = s.inv.internal;
  if (std::find(internal.begin(), internal.end(), *cidr) != internal.end())
    return invalid(std::string(opt) + " " + cidr->text() + ": given twice");
  internal.push_back(*cidr);
  return {};
}

// The URL may hold the parent's password: errors name the rule only (parseUpstreamProxy).
Result<void> onUpstreamProxy(State& s, std::string_view opt, std::string_view v) {
  if (v != "env") {
    auto parent = net::parseUpstreamProxy(v);
    if (!parent) return invalid(std::string(opt) + ": " + parent.error().message());
  }
  s.inv.upstream_proxy = std::string(v);
  return {};
}

// A variable name, never its value.
Result<void> onUpstreamProxyAuth(State& s, std::string_view opt, std::string_view v) {
  bool ok = !v.empty() && v.size() <= 128 && !(v[0] >= '0' && v[0] <= '9');
  for (char c : v) ok = ok && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  if (!ok) return invalid(std::string(opt) + ": expected an environment variable name [A-Z_][A-Z0-9_]* holding user:password");
  s.inv.upstream_proxy_auth = std::string(v);
  return {};
}

// A path on the host, read by the proxy (net/ssh_agent.h), which names any problem with it.
Result<void> onSshKey(State& s, std::string_view, std::string_view v) {
  s.inv.ssh_key = std::string(v);
  return {};
}

// NAME=ENVVAR@URL[;opts]: names where the secret is, never the secret itself.
Result<void> onCredential(State& s, std::string_view, std::string_view v) {
  ASSIGN_OR_RETURN(net::LeaseSpec spec, net::parseCredentialFlag(v));
  for (const net::LeaseSpec& other : s.inv.credentials) {
    if (other.name == spec.name) return invalid("--credential " + spec.name + ": given twice");
    if (other.env == spec.env)
      return invalid("--credential " + spec.name + ": variable " + spec.env + " already names credential " + other.name);
  }
  s.inv.credentials.push_back(std::move(spec));
  return {};
}

Result<void> onLeaseCa(State& s, std::string_view opt, std::string_view v) {
  RETURN_IF_ERROR(checkHostPath(opt, v));
  s.inv.lease_ca = std::string(v);
  return {};
}

// Only the key is echoed: the value may be a secret.
Result<void> onEnv(State& s, std::string_view opt, std::string_view v) {
  auto kv = policy::env::parseAssignment(v);
  // Without '=' the whole argument may be a token pasted by mistake: never echo it.
  if (!kv && v.find('=') == std::string_view::npos)
    return Error(Errc::kInvalidArgument, std::string(opt) + ": expected KEY=VALUE (argument not shown)");
  if (!kv) return withValue(opt, v.substr(0, v.find('=')), kv.error());
  s.env.push_back(std::move(*kv));
  return {};
}

template <typename T>
Result<T> parsed(std::string_view opt, std::string_view v, Result<T> r) {
  if (!r) return withValue(opt, v, r.error());
  return r;
}

// A sandbox size, 1 byte to 1T as in a manifest. The bound is not cosmetic: the kernel rounds
// a tmpfs size= up to whole pages, and a size within a page of 2^64 wraps to 0, which tmpfs
// takes as "no limit".
Result<uint64_t> sandboxSize(std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(uint64_t n, parsed(opt, v, policy::parseSize(v)));
  if (n > kMaxSandboxBytes) return withValue(opt, v, invalid("larger than 1T, the most a sandbox limit takes"));
  return n;
}

Result<void> onMemory(State& s, std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(s.inv.spec.limits.memory_bytes, sandboxSize(opt, v));
  return {};
}
Result<void> onFileSize(State& s, std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(s.inv.spec.limits.file_size_bytes, sandboxSize(opt, v));
  return {};
}
Result<void> onTmpSize(State& s, std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(s.inv.spec.limits.tmp_bytes, sandboxSize(opt, v));
  return {};
}
Result<void> onWorkspaceSize(State& s, std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(s.inv.spec.limits.workspace_bytes, sandboxSize(opt, v));
  return {};
}
Result<void> onTimeout(State& s, std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(s.inv.spec.limits.timeout, parsed(opt, v, policy::parseDuration(v)));
  return {};
}
Result<void> onCpuTime(State& s, std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(s.inv.spec.limits.cpu_time, parsed(opt, v, policy::parseDuration(v)));
  return {};
}
Result<void> onPids(State& s, std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(uint64_t n, parsed(opt, v, policy::parseCount(v, kMaxCount)));
  s.inv.spec.limits.pids = static_cast<uint32_t>(n);
  return {};
}
Result<void> onOpenFiles(State& s, std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(uint64_t n, parsed(opt, v, policy::parseCount(v, kMaxCount)));
  s.inv.spec.limits.open_files = static_cast<uint32_t>(n);
  return {};
}

// HOST[:SANDBOX]. Paths containing ':' cannot be told apart from the separator, so more
// than one ':' is refused rather than guessed at.
Result<void> onRoBind(State& s, std::string_view opt, std::string_view v) {
  size_t colon = v.find(':');
  if (colon != std::string_view::npos && v.find(':', colon + 1) != std::string_view::npos)
    return withValue(opt, v, invalid("more than one ':'; paths containing ':' are not supported"));
  std::string_view host = v.substr(0, colon);
  std::string_view target = colon == std::string_view::npos ? host : v.substr(colon + 1);
  if (host.empty()) return withValue(opt, v, invalid("the host path is empty"));
  if (target.empty()) return withValue(opt, v, invalid("the sandbox path after ':' is empty"));
  RETURN_IF_ERROR(checkHostPath(opt, v));
  if (host.front() != '/') return withValue(opt, v, invalid("the host path is not absolute"));
  std::string shown_target = std::string(opt) + " target";
  auto checked = policy::path::sandboxMountPath(target);
  if (!checked) return withValue(shown_target, target, checked.error());
  auto& binds = s.inv.spec.ro_binds;
  if (std::any_of(binds.begin(), binds.end(), [&](const sandbox::RoBind& b) { return b.sandbox == *checked; }))
    return withValue(shown_target, target, invalid("given twice"));
  binds.push_back(sandbox::RoBind{std::string(host), std::move(*checked)});
  return {};
}

Result<void> onAllowWeaker(State& s, std::string_view opt, std::string_view v) {
  if (v == "kvm") {  // --backend vm: accept QEMU's TCG emulation where KVM is unusable
    s.inv.vm.allow_tcg = true;
    s.inv.vm_options_given = true;
    return {};
  }
  auto limit = sandbox::limitFromName(v);
  if (!limit)
    return withValue(opt, v,
                     invalid("not a limit (memory, pids, cpu-time, timeout, file-size, open-files, tmp-size, "
                             "workspace-size)"));
  auto& weaker = s.inv.spec.limits.allow_weaker;
  if (std::find(weaker.begin(), weaker.end(), *limit) == weaker.end()) weaker.push_back(*limit);
  return {};
}

Result<void> onBackend(State& s, std::string_view opt, std::string_view v) {
  if (v == "ns") return {};
  if (v == "vm") {
    s.inv.backend_vm = true;
    return {};
  }
  return withValue(opt, v, invalid("not a backend (ns or vm)"));
}
Result<void> onVmMemory(State& s, std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(s.inv.vm.memory_bytes, sandboxSize(opt, v));
  if (s.inv.vm.memory_bytes < vm::kMinMemoryBytes || s.inv.vm.memory_bytes > vm::kMaxMemoryBytes)
    return withValue(opt, v, invalid("not between 128M and 64G"));
  s.inv.vm_options_given = true;
  return {};
}
Result<void> onVmCpus(State& s, std::string_view opt, std::string_view v) {
  ASSIGN_OR_RETURN(uint64_t n, parsed(opt, v, policy::parseCount(v, vm::kMaxCpus)));
  s.inv.vm.cpus = static_cast<uint32_t>(n);
  s.inv.vm_options_given = true;
  return {};
}
Result<void> onVmCold(State& s, std::string_view, std::string_view) {
  s.inv.vm.cold = true;
  s.inv.vm_options_given = true;
  return {};
}
Result<void> onVmKernel(State& s, std::string_view opt, std::string_view v) {
  RETURN_IF_ERROR(checkHostPath(opt, v));
  s.inv.vm.kernel = std::string(v);
  s.inv.vm_options_given = true;
  return {};
}

Result<void> onReport(State& s, std::string_view opt, std::string_view v) {
  RETURN_IF_ERROR(checkHostPath(opt, v));
  s.inv.report_file = std::string(v);
  return {};
}

Result<void> onJson(State& s, std::string_view, std::string_view) {
  s.inv.json = true;
  return {};
}
Result<void> onTiming(State& s, std::string_view, std::string_view) {
  s.inv.timing = true;
  return {};
}
Result<void> onHelp(State& s, std::string_view, std::string_view) {
  s.inv.help = true;
  return {};
}

using Handler = Result<void> (*)(State&, std::string_view opt, std::string_view value);
struct Option {
  std::string_view name;
  bool takes_value;
  bool repeatable;
  Handler handle;
};

constexpr std::array<Option, 31> kOptions = {{
    {"--workspace", true, false, onWorkspace},
    {"--output", true, true, onOutput},
    {"--net", true, false, onNet},
    {"--allow", true, true, onAllow},
    {"--allow-internal", true, true, onAllowInternal},
    {"--credential", true, true, onCredential},
    {"--lease-ca", true, false, onLeaseCa},
    {"--upstream-proxy", true, false, onUpstreamProxy},
    {"--upstream-proxy-auth", true, false, onUpstreamProxyAuth},
    {"--ssh-key", true, false, onSshKey},
    {"--env", true, true, onEnv},
    {"--memory", true, false, onMemory},
    {"--pids", true, false, onPids},
    {"--timeout", true, false, onTimeout},
    {"--cpu-time", true, false, onCpuTime},
    {"--file-size", true, false, onFileSize},
    {"--tmp-size", true, false, onTmpSize},
    {"--workspace-size", true, false, onWorkspaceSize},
    {"--open-files", true, false, onOpenFiles},
    {"--ro-bind", true, true, onRoBind},
    {"--allow-weaker", true, true, onAllowWeaker},
    {"--json", false, false, onJson},
    {"--backend", true, false, onBackend},
    {"--vm-memory", true, false, onVmMemory},
    {"--vm-cpus", true, false, onVmCpus},
    {"--vm-kernel", true, false, onVmKernel},
    {"--vm-cold", false, false, onVmCold},
    {"--report", true, false, onReport},
    {"--timing", false, false, onTiming},
    {"--help", false, false, onHelp},
    {"-h", false, false, onHelp},
}};

const Option* findOption(std::string_view name) {
  for (const Option& o : kOptions)
    if (o.name == name) return &o;
  return nullptr;
}

bool isOption(std::string_view arg) { return arg.size() >= 2 && arg[0] == '-'; }

std::string sizeText(uint64_t bytes) {
  constexpr std::array<std::pair<int, char>, 4> kUnits = {{{40, 'T'}, {30, 'G'}, {20, 'M'}, {10, 'K'}}};
  for (const auto& [shift, unit] : kUnits)
    if (bytes >= (1ull << shift) && bytes % (1ull << shift) == 0) return std::to_string(bytes >> shift) + unit;
  return std::to_string(bytes);
}

// --allow only means something through the proxy; giving it without --net proxy is a
// mistake worth naming rather than a silently unreachable grant. With the proxy, the
// variables that point clients at it are corral's, not the caller's.
Result<void> checkNetwork(const State& s) {
  if (!s.inv.net_proxy) {
    if (!s.inv.allow.empty()) return invalid("--allow needs --net proxy");
    if (!s.inv.credentials.empty()) return invalid("--credential needs --net proxy");
    if (!s.inv.internal.empty()) return invalid("--allow-internal needs --net proxy");
    if (s.inv.upstream_proxy) return invalid("--upstream-proxy needs --net proxy");
    if (s.inv.ssh_key) return invalid("--ssh-key needs --net proxy");
  }
  // The agent signs only for servers behind a tcp grant's tunnel: without one, nothing.
  if (s.inv.ssh_key && std::none_of(s.inv.allow.begin(), s.inv.allow.end(), [](const policy::egress::Grant& g) {
        return g.scheme == policy::egress::Scheme::kTcp;
      }))
    return invalid("--ssh-key needs an --allow tcp://host:port grant (the key signs only for servers behind one)");
  if (s.inv.upstream_proxy_auth && !s.inv.upstream_proxy) return invalid("--upstream-proxy-auth needs --upstream-proxy");
  // A CIDR opens nothing by itself: it only widens where granted names may resolve.
  if (!s.inv.internal.empty() && s.inv.allow.empty()) return invalid("--allow-internal needs an --allow grant by name");
  if (s.inv.lease_ca && s.inv.credentials.empty()) return invalid("--lease-ca needs --credential");
  if (!s.inv.net_proxy) return {};
  const auto& owned = policy::egress::kProxyEnvironmentNames;
  auto isOwned = [&](std::string_view key) { return std::find(std::begin(owned), std::end(owned), key) != std::end(owned); };
  for (const auto& [key, value] : s.env)
    if (isOwned(key)) return invalid("--env " + key + ": set by --net proxy (it points at corral's egress proxy)");
  // The placeholder takes the variable's place inside: it may not replace one corral fixes
  // or collide with one the caller sets.
  for (const net::LeaseSpec& c : s.inv.credentials) {
    if (isOwned(c.env) || c.env == "PATH" || c.env == "HOME" || c.env.starts_with("LD_"))
      return invalid("--credential " + c.name + ": variable " + c.env + " is set by corral inside the sandbox");
    for (const auto& [key, value] : s.env)
      if (key == c.env) return invalid("--credential " + c.name + ": variable " + c.env + " is also given with --env");
  }
  return {};
}

}  // namespace

Result<ExecInvocation> parseExecArgs(const std::vector<std::string>& args) {
  State s;
  std::set<std::string_view> seen;
  size_t i = 0;
  while (i < args.size()) {
    std::string_view arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (!isOption(arg)) break;  // like env(1): the first non-option starts the command
    std::string_view name = arg;
    std::optional<std::string_view> value;
    size_t eq = arg.find('=');
    if (eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    // The value is not echoed here: "--allow=URL" or "--envv=TOKEN=x" may carry a secret.
    const Option* opt = findOption(name);
    if (opt == nullptr) return invalid("unknown option " + printable(name));
    ++i;
    if (!opt->takes_value && value) return invalid(std::string(name) + ": takes no value");
    if (opt->takes_value && !value) {
      // A following "--x" is far more likely a forgotten value than a value.
      if (i < args.size() && args[i].substr(0, 2) != "--") value = args[i++];
    }
    if (opt->takes_value && (!value || value->empty())) return invalid(std::string(name) + ": missing value");
    if (!opt->repeatable && !seen.insert(opt->name).second) return invalid(std::string(name) + ": given twice");
    RETURN_IF_ERROR(opt->handle(s, name, value.value_or("")));
    if (s.inv.help) return std::move(s.inv);
  }
  if (i >= args.size()) return invalid("missing command: corral exec [options] -- CMD [ARGS...]");
  for (size_t a = i; a < args.size(); ++a) {
    // execve takes C strings: a NUL would silently cut the argument.
    if (args[a].find('\0') != std::string::npos)
      return invalid("command argument " + std::to_string(a - i) + " contains a NUL byte");
  }
  if (args[i].empty()) return invalid("command: the program name is empty");
  RETURN_IF_ERROR(checkNetwork(s));
  if (s.inv.vm_options_given && !s.inv.backend_vm)
    return invalid("--vm-memory, --vm-cpus, --vm-kernel, --vm-cold and --allow-weaker kvm need --backend vm");
  s.inv.spec.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  s.inv.spec.env = policy::env::buildEnvironment(s.env);
  return std::move(s.inv);
}

std::string execUsage() {
  const sandbox::Limits d;
  std::string u;
  u += "usage: corral exec [options] [--] CMD [ARGS...]\n";
  u += "Run one command in a fresh sandbox. Options end at -- or at the first non-option.\n";
  u += "  --workspace DIR          copy DIR in as /workspace (default: an empty one)\n";
  u += "  --output REL             copy REL back to DIR after the run (repeatable)\n";
  u += "  --net none|proxy         none: loopback only (default); proxy: HTTP(S) and SOCKS5 via corral's proxy\n";
  u += "  --allow URL              with --net proxy: grant http|https|tcp://host[:port] or *.domain (repeatable)\n";
  u += "  --allow-internal CIDR    granted names may resolve into this private range (repeatable)\n";
  u += "  --upstream-proxy URL|env send allowed traffic through a parent proxy (env: HTTPS_PROXY, NO_PROXY)\n";
  u += "  --upstream-proxy-auth VAR the parent's user:password, from corral's environment variable VAR\n";
  u += "  --ssh-key PATH           an ssh-agent socket (SSH_AUTH_SOCK) signing with this host key file\n";
  u += "  --credential SPEC        with --net proxy: NAME=ENVVAR@URL[;header=H;format=F] lease (repeatable)\n";
  u += "  --lease-ca FILE          PEM CAs trusted toward lease upstreams (default: the system store)\n";
  u += "  --env K=V                set a variable; nothing else passes from here (repeatable)\n";
  u += "  --memory SIZE            memory limit, e.g. 512M (default: none)\n";
  u += "  --pids N                 process limit (default: " + std::to_string(d.pids) + ")\n";
  u += "  --timeout DURATION       wall-clock limit, e.g. 30s, 5m; exit 124 when it fires\n";
  u += "  --cpu-time DURATION      CPU time limit (default: none)\n";
  u += "  --file-size SIZE         largest file the command may write (default: " + sizeText(d.file_size_bytes) + ")\n";
  u += "  --open-files N           open file descriptors (default: " + std::to_string(d.open_files) + ")\n";
  u += "  --tmp-size SIZE          size of /tmp (default: " + sizeText(d.tmp_bytes) + ")\n";
  u += "  --workspace-size SIZE    size of /workspace (default: " + sizeText(d.workspace_bytes) + ")\n";
  u += "  --ro-bind HOST[:SANDBOX] make HOST readable at SANDBOX (default: same path; repeatable)\n";
  u += "  --allow-weaker LIMIT     accept a weaker mechanism for LIMIT, e.g. memory (repeatable)\n";
  u += "  --backend ns|vm          ns: namespaces (default); vm: a QEMU microVM (docs/vm.md)\n";
  u += "  --vm-memory SIZE         with --backend vm: the VM's RAM (default: 512M)\n";
  u += "  --vm-cpus N              with --backend vm: its vCPUs (default: 1)\n";
  u += "  --vm-kernel PATH         with --backend vm: the guest kernel (default: newest /boot/vmlinuz-*)\n";
  u += "  --vm-cold                with --backend vm: boot cold (default: restore a cached snapshot)\n";
  u += "                           --allow-weaker kvm: run under TCG emulation where KVM is unusable\n";
  u += "  --json                   print a JSON report on stderr\n";
  u += "  --report FILE            write the JSON report to FILE\n";
  u += "  --help                   show this help\n";
  u += "Exit status: the command's; 128+N if killed by signal N; 124 on timeout; 125 if corral failed.\n";
  return u;
}

}  // namespace corral::cli
