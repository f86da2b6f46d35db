// SPDX-License-Identifier: Apache-2.0
// Profile documents parsed strictly, and narrowed by a create request's overrides.
#include "daemon/profile.h"

#include <algorithm>

#include "policy/egress_grant.h"
#include "policy/units.h"
#include "vm/vm_options.h"

namespace corral::daemon {
namespace {

// parseSessionSpec's and parseCommandSpec's errors name "body..." or a nested object: said
// again as where the field sits in a profile.
Error rebase(const Error& e, const std::string& where) {
  const std::string& c = e.context();
  if (c.rfind("body", 0) == 0) return Error(e.code(), where + c.substr(4));
  return Error(e.code(), where + ": " + c);
}

Result<CommandSpec> parseStartupCommand(const Json& j, const std::string& where, std::initializer_list<std::string_view> extra) {
  // parseCommandSpec knows argv, env, cwd, timeout; the probe's own keys are read by the caller.
  if (!j.is_object()) return Error(Errc::kInvalidArgument, where + ": expected a JSON object");
  Json plain = Json::object();
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(extra.begin(), extra.end(), it.key()) == extra.end()) plain[it.key()] = it.value();
  auto c = parseCommandSpec(plain);
  if (!c) return rebase(c.error(), where);
  return c;
}

Result<std::chrono::milliseconds> durationOr(const Fields& f, std::string_view key, std::chrono::milliseconds dflt,
                                              const std::string& where) {
  ASSIGN_OR_RETURN(auto text, f.string(key, 64));
  if (!text) return dflt;
  auto v = policy::parseDuration(*text);
  if (!v) return v.error().wrap(where + "." + std::string(key));
  if (v->count() <= 0) return Error(Errc::kInvalidArgument, where + "." + std::string(key) + ": must be positive");
  return *v;
}

Error widens(const std::string& field, const std::string& asked, const std::string& profile) {
  return Error(Errc::kRefused, "override " + field + " " + asked + " widens the profile's " + profile +
                                   " (an override may only narrow a profile)");
}

std::string sizeOrNone(const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : std::string("none"); }
std::string msOrNone(const std::optional<std::chrono::milliseconds>& v) {
  return v ? std::to_string(v->count()) + "ms" : std::string("none");
}

// An optional ceiling: none is unlimited, so any value narrows it and none widens a value.
template <class T, class Show>
Result<void> atMostOptional(const std::string& field, const std::optional<T>& asked, const std::optional<T>& profile, Show show) {
  if (profile && (!asked || *profile < *asked)) return widens(field, show(asked), show(profile));
  return {};
}

template <class T>
Result<void> atMost(const std::string& field, T asked, T profile) {
  if (asked > profile) return widens(field, std::to_string(asked), std::to_string(profile));
  return {};
}

Result<void> narrowLimits(const sandbox::Limits& p, const sandbox::Limits& o, const Json& given, sandbox::Limits& out) {
  // Each limit given: no more than the profile's (an unset optional one is unlimited).
  auto ceiling = [&](const char* key, auto member) -> Result<void> {
    if (!given.contains(key)) return {};
    RETURN_IF_ERROR(atMost(std::string("limits.") + key, o.*member, p.*member));
    out.*member = o.*member;
    return {};
  };
  auto optionalCeiling = [&](const char* key, auto member, auto show) -> Result<void> {
    if (!given.contains(key)) return {};
    RETURN_IF_ERROR(atMostOptional(std::string("limits.") + key, o.*member, p.*member, show));
    out.*member = o.*member;
    return {};
  };
  using L = sandbox::Limits;
  RETURN_IF_ERROR(optionalCeiling("memory", &L::memory_bytes, sizeOrNone));
  RETURN_IF_ERROR(optionalCeiling("cpu_time", &L::cpu_time, msOrNone));
  RETURN_IF_ERROR(ceiling("pids", &L::pids));
  RETURN_IF_ERROR(ceiling("file_size", &L::file_size_bytes));
  RETURN_IF_ERROR(ceiling("open_files", &L::open_files));
  RETURN_IF_ERROR(ceiling("tmp_size", &L::tmp_bytes));
  RETURN_IF_ERROR(ceiling("workspace_size", &L::workspace_bytes));
  if (given.contains("allow_weaker")) {
    // Accepting a weaker mechanism is a widening: only what the profile accepts may stay.
    for (sandbox::Limit l : o.allow_weaker)
      if (std::find(p.allow_weaker.begin(), p.allow_weaker.end(), l) == p.allow_weaker.end())
        return widens("limits.allow_weaker", sandbox::limitName(l), "list (which does not accept it)");
    out.allow_weaker = o.allow_weaker;
  }
  return {};
}

template <class T, class Same>
Result<void> subset(const std::string& field, const std::vector<T>& asked, const std::vector<T>& profile, Same same,
                    std::string (*show)(const T&)) {
  for (const T& a : asked)
    if (std::none_of(profile.begin(), profile.end(), [&](const T& p) { return same(a, p); }))
      return widens(field, show(a), "list (which does not hold it)");
  return {};
}

std::string showString(const std::string& s) { return "'" + policy::printable(s) + "'"; }
std::string showBind(const sandbox::RoBind& b) { return "'" + policy::printable(b.host + ":" + b.sandbox) + "'"; }

// A grant is covered by an equal one, or by a wildcard whose names include its host.
bool grantCovered(const std::string& asked, const std::string& profile) {
  if (asked == profile) return true;
  auto a = policy::egress::parseGrant(asked), p = policy::egress::parseGrant(profile);
  if (!a || !p || a->wildcard || !p->wildcard) return false;
  return policy::egress::grantMatches(*p, a->scheme, a->host, a->port);
}

}  // namespace

Result<Profile> parseProfile(std::string_view text) {
  if (text.size() > kMaxProfileBytes) return Error(Errc::kInvalidArgument, "profile: over 256 KiB");
  auto parsed = parseJson(text);
  if (!parsed) return parsed.error().wrap("profile");
  const Json& j = *parsed;
  ASSIGN_OR_RETURN(Fields f, Fields::of(j, "profile", {"name", "description", "session", "warm", "startup"}));
  Profile p;
  ASSIGN_OR_RETURN(auto name, f.string("name", 64));
  if (!name) return Error(Errc::kInvalidArgument, "profile.name: required");
  if (auto n = checkCredentialName(*name); !n)
    return Error(Errc::kInvalidArgument, "profile.name '" + policy::printable(*name) + "': 1 to 64 of a-z 0-9 _ -, starting with a letter");
  p.name = *name;
  ASSIGN_OR_RETURN(auto desc, f.string("description", 256));
  p.description = desc.value_or("");
  if (std::any_of(p.description.begin(), p.description.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
    return Error(Errc::kInvalidArgument, "profile.description: holds a control byte");
  p.session = Json::object();
  if (const Json* s = f.object("session")) {
    if (!s->is_object()) return Error(Errc::kInvalidArgument, "profile.session: expected a JSON object");
    for (const char* own : {"name", "workspace", "profile", "profile_version"})
      if (s->contains(own)) return Error(Errc::kInvalidArgument, std::string("profile.session.") + own + ": not part of a profile");
    p.session = *s;
  }
  auto spec = parseSessionSpec(p.session);
  if (!spec) return rebase(spec.error(), "profile.session");
  p.spec = std::move(*spec);
  if (j.contains("warm")) {
    const Json& warm = j["warm"];
    if (!warm.is_number_integer() || warm.get<int64_t>() < 0 || warm.get<int64_t>() > kMaxWarm)
      return Error(Errc::kInvalidArgument, "profile.warm: expected an integer from 0 to " + std::to_string(kMaxWarm));
    p.warm = static_cast<uint32_t>(warm.get<int64_t>());
    // A lease is opened for one session, by its creator: a sandbox waiting for nobody holds none
    // (an ssh key is leased like a header record).
    if (p.warm > 0 && p.spec.vm)
      return Error(Errc::kInvalidArgument, "profile.warm: a VM profile (backend vm) cannot keep warm sandboxes yet");
    if (p.warm > 0 && (!p.spec.credentials.empty() || p.spec.ssh_key))
      return Error(Errc::kInvalidArgument, "profile.warm: a profile that leases credentials or an ssh key cannot keep warm sandboxes");
  }
  if (const Json* s = f.object("startup")) {
    StartupCommand st;
    ASSIGN_OR_RETURN(st.cmd, parseStartupCommand(*s, "profile.startup", {"ready"}));
    if (s->contains("ready")) {
      const Json& r = (*s)["ready"];
      ReadinessProbe probe;
      ASSIGN_OR_RETURN(probe.cmd, parseStartupCommand(r, "profile.startup.ready", {"interval", "timeout"}));
      ASSIGN_OR_RETURN(Fields rf, Fields::of(r, "profile.startup.ready", {"argv", "env", "cwd", "interval", "timeout"}));
      ASSIGN_OR_RETURN(probe.interval, durationOr(rf, "interval", probe.interval, "profile.startup.ready"));
      ASSIGN_OR_RETURN(probe.timeout, durationOr(rf, "timeout", probe.timeout, "profile.startup.ready"));
      if (probe.timeout > std::chrono::minutes(10)) return Error(Errc::kInvalidArgument, "profile.startup.ready.timeout: at most 10m");
      if (probe.interval > probe.timeout)
        return Error(Errc::kInvalidArgument, "profile.startup.ready.interval: longer than its timeout");
      st.ready = std::move(probe);
    }
    p.startup = std::move(st);
  }
  return p;
}

Result<SessionSpec> narrowProfile(const Profile& profile, const Json& overrides) {
  const SessionSpec& p = profile.spec;
  // Grants or credentials given alone narrow the profile's proxy: read them as under it.
  Json as_given = overrides;
  if (as_given.is_object() && !as_given.contains("net") && p.net_proxy) as_given["net"] = "proxy";
  // A VM profile's overrides are read as a VM session's (its refusals, its "vm" object).
  if (as_given.is_object() && !as_given.contains("backend") && p.vm) as_given["backend"] = "vm";
  // ssh_key is checked against the profile's below, not with the override's own grants.
  if (as_given.is_object()) as_given.erase("ssh_key");
  ASSIGN_OR_RETURN(SessionSpec o, parseSessionSpec(as_given));
  SessionSpec out = p;
  auto has = [&](const char* k) { return overrides.contains(k); };
  if (has("ssh_key")) {
    // The profile's own record or nothing: another (or one a profile without any) widens it.
    const Json& k = overrides["ssh_key"];
    if (!k.is_string() || !checkCredentialName(k.get<std::string>()))
      return Error(Errc::kInvalidArgument, "body.ssh_key: expected a credential name");
    if (!p.ssh_key || *p.ssh_key != k.get<std::string>())
      return widens("ssh_key", showString(k.get<std::string>()), p.ssh_key ? showString(*p.ssh_key) : std::string("none"));
  }
  // The backend is the profile's: neither way is an override's to change. The VM may be made
  // smaller, and TCG's acceptance dropped, never the reverse.
  if (has("backend") && o.vm != p.vm) return widens("backend", o.vm ? "vm" : "namespace", p.vm ? "vm" : "namespace");
  if (has("vm")) {
    const uint64_t pm = p.vm_memory_bytes ? p.vm_memory_bytes : vm::kDefaultMemoryBytes;
    const uint32_t pc = p.vm_cpus ? p.vm_cpus : 1;
    if (o.vm_memory_bytes > pm) return widens("vm.memory", std::to_string(o.vm_memory_bytes), std::to_string(pm));
    if (o.vm_cpus > pc) return widens("vm.cpus", std::to_string(o.vm_cpus), std::to_string(pc));
    if (o.vm_allow_tcg && !p.vm_allow_tcg) return widens("vm.allow_weaker", "kvm", "none");
    if (o.vm_memory_bytes) out.vm_memory_bytes = o.vm_memory_bytes;
    if (o.vm_cpus) out.vm_cpus = o.vm_cpus;
    const Json& given = overrides["vm"];
    if (given.is_object() && given.contains("allow_weaker")) out.vm_allow_tcg = o.vm_allow_tcg;
  }
  out.name = o.name;
  out.workspace_from = o.workspace_from;
  // Variables are added after the profile's (a later assignment of a key wins).
  out.env.insert(out.env.end(), o.env.begin(), o.env.end());
  if (has("limits")) RETURN_IF_ERROR(narrowLimits(p.limits, o.limits, overrides["limits"], out.limits));
  if (has("ttl")) {
    RETURN_IF_ERROR(atMostOptional("ttl", o.ttl, p.ttl, msOrNone));
    out.ttl = o.ttl;
  }
  if (has("ro_binds")) {
    RETURN_IF_ERROR(subset<sandbox::RoBind>("ro_binds", o.ro_binds, p.ro_binds,
                                            [](const sandbox::RoBind& a, const sandbox::RoBind& b) { return a.host == b.host && a.sandbox == b.sandbox; },
                                            showBind));
    out.ro_binds = o.ro_binds;
  }
  if (has("net")) {
    if (o.net_proxy && !p.net_proxy) return widens("net", "proxy", "none");
    out.net_proxy = o.net_proxy;
    if (!o.net_proxy) {
      out.allow.clear();
      out.allow_internal.clear();
      out.credentials.clear();
      out.ssh_key.reset();
    }
  }
  if (has("allow")) {
    RETURN_IF_ERROR(subset<std::string>("allow", o.allow, p.allow, grantCovered, showString));
    out.allow = o.allow;
  }
  if (has("allow_internal")) {
    RETURN_IF_ERROR(subset<std::string>("allow_internal", o.allow_internal, p.allow_internal,
                                        [](const std::string& a, const std::string& b) { return a == b; }, showString));
    out.allow_internal = o.allow_internal;
  }
  if (has("credentials")) {
    RETURN_IF_ERROR(subset<std::string>("credentials", o.credentials, p.credentials,
                                        [](const std::string& a, const std::string& b) { return a == b; }, showString));
    out.credentials = o.credentials;
  }
  if (!out.allow_internal.empty() && out.allow.empty())
    return Error(Errc::kInvalidArgument, "body.allow_internal: needs an allow grant by name");
  // The key stays with the session unless net none drops it: an allow that leaves it no sshd is refused.
  if (out.ssh_key && std::none_of(out.allow.begin(), out.allow.end(), [](const std::string& g) { return g.rfind("tcp://", 0) == 0; }))
    return Error(Errc::kInvalidArgument, "body.allow: leaves the profile's ssh_key no tcp://host:port grant (the key signs only for servers behind one)");
  return out;
}

}  // namespace corral::daemon
