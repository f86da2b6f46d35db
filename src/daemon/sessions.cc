// SPDX-License-Identifier: Apache-2.0
// Session lifecycle over the store and the shims. Order of every change, so a kill -9 at any
// point leaves something reconcile() can finish or undo: the store row first, then the
// process or file, then the row's new state.
#include "daemon/sessions.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/log.h"
#include "base/random_id.h"
#include "base/read_fd.h"
#include "base/remove_tree.h"
#include "daemon/orphans.h"
#include "daemon/shim.h"
#include "daemon/warm_pool.h"
#include "policy/units.h"
#include "sandbox/userns.h"
#include "sandbox/workspace.h"

namespace corral::daemon {
namespace {

constexpr int kStopTimeoutMs = 30'000;

std::string randomSecret() {
  unsigned char bytes[32];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) return "";
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool validId(const std::string& id) {
  if (id.size() != 16) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::optional<Json> readStatus(const std::string& cmd_dir) {
  UniqueFd fd(::open((cmd_dir + "/status.json").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return std::nullopt;
  auto text = readUpTo(fd.get(), 65536, "status.json");
  if (!text) return std::nullopt;
  auto j = parseJson(*text);
  if (!j || !j->is_object()) return std::nullopt;
  return *j;
}

}  // namespace

Sessions::Sessions(Store& store, AuditLog& audit, std::string state_dir, std::string core_binary, FreezerChoice freezer)
    : store_(store), audit_(audit), state_dir_(std::move(state_dir)), core_(std::move(core_binary)), workspace_(workspaceMechanism()),
      freezer_(findFreezer(freezer, state_dir_ + "/sessions")) {}

std::string Sessions::dirOf(const std::string& id) const { return state_dir_ + "/sessions/" + id; }

std::shared_ptr<Sessions::Link> Sessions::linkFor(const std::string& id) {
  std::lock_guard lock(links_mu_);
  auto& l = links_[id];
  if (!l) l = std::make_shared<Link>();
  return l;
}

Result<SessionRow> Sessions::owned(const Peer& peer, const std::string& id) {
  if (!validId(id)) return Error(kNotFound, "no session " + policy::printable(id));
  ASSIGN_OR_RETURN(auto row, store_.session(id));
  // Another uid's session is reported exactly as a missing one: its existence is not theirs to learn.
  // A warm pool member is nobody's session until a claim makes it one.
  if (!row || !row->pool.empty() || !peer.mayAccess(row->owner_uid)) return Error(kNotFound, "no session " + id);
  return *row;
}

Result<Json> Sessions::callShim(const SessionRow& s, const Json& req, UniqueFd* fd) {
  auto l = linkFor(s.id);
  std::lock_guard lock(l->mu);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!l->link) {
      auto link = ShimLink::connect(dirOf(s.id), s.secret, {s.shim_pid, s.shim_start, s.init_pid, s.init_start});
      if (!link) return link.error();
      l->link.emplace(std::move(*link));
    }
    auto res = l->link->call(req, fd);
    if (res || res.error().code() == static_cast<int>(Errc::kRefused)) return res;
    l->link.reset();  // a stale connection (the daemon restarted, the shim was busy): once more
  }
  return Error(Errc::kIo, "session " + s.id + ": its shim does not answer");
}

bool Sessions::alive(const std::string& id) {
  auto row = store_.session(id);
  if (!row || !*row || ((*row)->state != "running" && (*row)->state != "paused")) return false;
  return callShim(**row, {{"op", "hello"}, {"secret", (*row)->secret}}).ok();
}

namespace {
bool vmBacked(const SessionRow& s);
}  // namespace

Json Sessions::sessionJson(const SessionRow& s) {
  Json j = {{"id", s.id}, {"name", s.name}, {"state", s.state}, {"owner_uid", s.owner_uid}, {"created_at", s.created_at}};
  // Which freezer pause uses for it: none when this daemon has none, or its init is not in one.
  j["freezer"] = freezer_.usable && !freezerState(freezer_, s.id).empty() ? freezer_.name() : "none";
  j["backend"] = "namespace";
  if (s.expires_at) j["expires_at_ms"] = s.expires_at;
  // The stored spec parsed once (vmBacked() would parse it again).
  if (auto spec = parseJson(s.spec); spec && spec->is_object()) {
    if (spec->value("backend", std::string()) == "vm") j["backend"] = "vm";
    for (const char* key : {"limits", "net", "allow", "allow_internal", "ro_binds", "credentials", "ssh_key", "profile", "profile_version"})
      if (spec->contains(key)) j[key] = (*spec)[key];
  }
  return j;
}

Json Sessions::commandJson(const SessionRow& s, CommandRow c) {
  if (c.state == "starting" || c.state == "running") {
    if (auto st = readStatus(dirOf(s.id) + "/cmds/" + std::to_string(c.cmd))) {
      c.state = "exited";
      c.report = dumpJson(*st);
      if ((*st).contains("exit_code") && (*st)["exit_code"].is_number_integer()) c.exit_code = (*st)["exit_code"].get<int64_t>();
      // Recorded once, by whichever reader saw the status first: the event goes with it.
      if (auto first = store_.finishCommand(s.id, c.cmd, c.exit_code, c.report); first && *first)
        audit_.appendSelf("command_exited", {{"session", s.id}, {"cmd", c.cmd}, {"exit_code", c.exit_code ? Json(*c.exit_code) : Json(nullptr)},
                                             {"owner_uid", s.owner_uid}});
    } else if (s.state == "lost" || s.state == "stopped") {
      c.state = "lost";
    }
  }
  Json j = {{"id", c.cmd}, {"session", s.id}, {"state", c.state}, {"argc", c.argc}, {"created_at", c.created_at}};
  if (c.exit_code) j["exit_code"] = *c.exit_code;
  if (auto r = parseJson(c.report); !c.report.empty() && r) j["report"] = *r;
  return j;
}

namespace {

// A session whose sandbox a microVM holds (its stored spec says "backend": "vm").
bool vmBacked(const SessionRow& s) {
  auto j = parseJson(s.spec);
  return j && j->is_object() && j->value("backend", std::string()) == "vm";
}

// What a VM session cannot do yet, refused by name (docs/daemon.md, "Not yet").
Error notOnVm(const std::string& what) {
  return Error(Errc::kUnsupported, what + ": not yet on a VM session (backend vm; docs/daemon.md, \"Not yet\")");
}

}  // namespace

Result<Json> Sessions::create(const Peer& peer, const SessionSpec& spec, const std::vector<LeasedCredential>& leases) {
  SessionRow row;
  row.id = randomHex16();
  row.name = spec.name.value_or(row.id);
  row.owner_uid = peer.uid;
  row.state = "creating";
  row.created_at = static_cast<int64_t>(::time(nullptr));
  row.secret = randomSecret();
  row.spec = dumpJson(sessionSpecJson(spec, /*with_env=*/false));
  if (spec.ttl) row.expires_at = nowMs() + spec.ttl->count();
  if (row.secret.empty()) return Error(Errc::kIo, "getrandom: no entropy for a session secret");
  const std::string dir = dirOf(row.id);
  // Refused before anything is made: a workspace nothing here can cap, unless accepted weaker.
  const auto& weaker = spec.limits.allow_weaker;
  // A VM session's workspace is the guest's own disk, of exactly that size: nothing to cap here.
  if (!spec.vm && !workspace_.capped && std::find(weaker.begin(), weaker.end(), sandbox::Limit::kWorkspaceSize) == weaker.end())
    return Error(Errc::kUnsupported, "workspace-size: no mechanism can cap a session's workspace here (" +
                                         workspace_.description + ")");
  if (spec.workspace_from && peer.uid != ::geteuid())
    return Error(Errc::kRefused, "body.workspace: the daemon runs as another uid and would read the directory with its "
                                 "rights, not yours; copy files in with `corral session cp` instead");
  if (!spec.ro_binds.empty() && peer.uid != ::geteuid())
    return Error(Errc::kRefused, "body.ro_binds: the daemon runs as another uid and would open the paths with its rights, not yours");
  if (pool_ && leases.empty() && !spec.vm)
    if (auto key = WarmPool::keyOf(spec, peer.uid); key && pool_->kept(*key)) {
      ASSIGN_OR_RETURN(auto claimed, claim(peer, *key, spec, row));
      if (claimed) return std::move(*claimed);
    }
  RETURN_IF_ERROR(store_.insertSession(row));
  for (const LeasedCredential& l : leases) RETURN_IF_ERROR(store_.addSessionCredential(row.id, peer.uid, l.name, l.version));
  // Undo: nothing of it may stay (a shim that reported a failure has exited).
  auto undo = [&](const Error& e) {
    SessionRow gone = row;
    gone.shim_pid = 0;
    finishRemove(gone);
    log::warn("session_create_failed", "session=" + row.id);
    audit_.append("session_create_failed", peer, {{"session", row.id}});
    return e;
  };
  if (::mkdir(dir.c_str(), 0700) != 0) return undo(sysError("mkdir " + dir));
  log::info("session_creating", "session=" + row.id + " peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
  if (auto ws = prepareWorkspace(peer, spec, dir); !ws) return undo(ws.error());
  auto procs = launch(row, spec, leases);
  if (!procs) return undo(procs.error());
  row.state = "running";
  row.shim_pid = procs->shim_pid;
  row.shim_start = procs->shim_start;
  row.init_pid = procs->init_pid;
  row.init_start = procs->init_start;
  log::info("session_created", "session=" + row.id + " shim_pid=" + std::to_string(procs->shim_pid) +
                                   " init_pid=" + std::to_string(procs->init_pid) +
                                   " expires_at=" + std::to_string(row.expires_at));
  Json lease_names = Json::array();
  for (const LeasedCredential& l : leases) lease_names.push_back(l.name);
  audit_.append("session_created", peer, {{"session", row.id}, {"shim_pid", procs->shim_pid}, {"init_pid", procs->init_pid},
                                          {"workspace_capped", workspace_.capped}, {"expires_at_ms", row.expires_at},
                                          {"net", spec.net_proxy ? "proxy" : "none"}, {"credentials", lease_names}});
  if (row.expires_at) expiry_cv_.notify_all();
  Json out = sessionJson(row);
  out["warm"] = false;
  return out;
}

Result<std::optional<Json>> Sessions::claim(const Peer& peer, const std::string& key, const SessionSpec& spec, SessionRow row) {
  // A --workspace copy-in happens after the claim: "claiming" until it is done, so a kill -9
  // in between leaves a row reconcile() removes (the create was never answered).
  row.state = spec.workspace_from ? "claiming" : "running";
  row.name = spec.name.value_or("");  // none: the member's id, which the session keeps
  auto created = [&](const SessionRow& s) -> Json {
    return {{"session", s.id},           {"shim_pid", s.shim_pid},
            {"init_pid", s.init_pid},    {"workspace_capped", workspace_.capped},
            {"expires_at_ms", s.expires_at}, {"net", spec.net_proxy ? "proxy" : "none"},
            {"credentials", Json::array()}, {"warm", true}};
  };
  for (int attempt = 0; attempt < 3; ++attempt) {
    // The audit line is committed with the claim (store.h, audit_log.h): one sync for both.
    // A copy-in's create is audited once the copy is done, as a cold create is. The
    // reservation holds the log's lock: it ends before anything else here can log.
    std::optional<AuditLog::Reservation> audit_line(std::in_place, audit_);
    auto check = [&](const SessionRow& s) {
      Store::ClaimCheck c;
      // A member whose sandbox died while it waited (OOM, a kill from outside) is never handed
      // out. Not a round trip to the shim (that would cost the claim a wake-up of another
      // process): the pidfds of its shim and init that its link holds (made when it was
      // filled), else both by pid and start time (a reused pid fails). try_lock: the claim
      // holds the store's lock, and a link's holder may be waiting for the store.
      std::optional<bool> up;
      if (auto l = linkFor(s.id); l->mu.try_lock()) {
        std::lock_guard held(l->mu, std::adopt_lock);
        if (l->link && l->link->processes().shim_pid == s.shim_pid && l->link->processes().init_pid == s.init_pid) up = l->link->alive();
      }
      c.alive = up ? *up
                   : s.shim_pid > 0 && s.init_pid > 0 &&
                         processStartTime(static_cast<int>(s.shim_pid)) == static_cast<uint64_t>(s.shim_start) &&
                         processStartTime(static_cast<int>(s.init_pid)) == static_cast<uint64_t>(s.init_start);
      if (c.alive && !spec.workspace_from) c.audit_line = audit_line->line("session_created", peer, created(s));
      return c;
    };
    ASSIGN_OR_RETURN(auto got, store_.claimPoolMember(key, row, check, audit_line->syncedSeq()));
    audit_line->write();  // nothing when no line was made (none claimed, a dead member, a copy-in)
    audit_line.reset();
    if (!got) return std::optional<Json>();
    SessionRow s = std::move(*got);
    // Refilled in the background, once this create is answered (or failed): after the
    // response is written when the server defers it (WarmPool::DeferWakes).
    struct Wake {
      WarmPool* pool;
      ~Wake() { pool->wakeAfterResponse(); }
    } wake{pool_};
    if (s.state == "removing") {
      log::warn("pool_member_dead", "member=" + s.id + " shim_pid=" + std::to_string(s.shim_pid));
      finishRemove(s);
      continue;
    }
    if (spec.workspace_from) {
      if (auto copied = copyIn(peer, spec, dirOf(s.id)); !copied) {
        (void)store_.setSessionState(s.id, "removing");
        finishRemove(s);
        log::warn("session_create_failed", "session=" + s.id);
        audit_.append("session_create_failed", peer, {{"session", s.id}});
        return copied.error();
      }
      RETURN_IF_ERROR(store_.setSessionState(s.id, "running"));
      s.state = "running";
    }
    log::info("session_created", "session=" + s.id + " shim_pid=" + std::to_string(s.shim_pid) + " init_pid=" +
                                     std::to_string(s.init_pid) + " expires_at=" + std::to_string(s.expires_at) + " warm=true" +
                                     " peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
    if (spec.workspace_from) audit_.append("session_created", peer, created(s));
    if (s.expires_at) expiry_cv_.notify_all();
    Json out = sessionJson(s);
    out["warm"] = true;
    return std::optional<Json>(std::move(out));
  }
  return std::optional<Json>();
}

Result<std::string> Sessions::fillPoolMember(const std::string& pool, const SessionSpec& spec) {
  SessionRow row;
  row.id = randomHex16();
  row.name = row.id;
  row.owner_uid = static_cast<int64_t>(::geteuid());
  row.state = "creating";
  row.created_at = static_cast<int64_t>(::time(nullptr));
  row.secret = randomSecret();
  row.spec = dumpJson(sessionSpecJson(spec, /*with_env=*/false));
  row.pool = pool;
  if (row.secret.empty()) return Error(Errc::kIo, "getrandom: no entropy for a session secret");
  const Peer self{::geteuid(), ::getegid(), ::getpid()};
  auto fail = [&](const Error& e) {
    SessionRow gone = row;
    gone.shim_pid = 0;
    finishRemove(gone);
    return e.wrap("member " + row.id);
  };
  // The row first (as a create's): a kill -9 from here on leaves something reconcile() finds.
  RETURN_IF_ERROR(store_.insertSession(row));
  if (::mkdir(dirOf(row.id).c_str(), 0700) != 0) return fail(sysError("mkdir " + dirOf(row.id)));
  if (auto ws = prepareWorkspace(self, spec, dirOf(row.id)); !ws) return fail(ws.error());
  auto procs = launch(row, spec, {}, /*pooled=*/true);
  if (!procs) return fail(procs.error());
  ASSIGN_OR_RETURN(bool ready, store_.setPoolMemberReady(row.id));
  if (!ready) {  // drained while it started: never handed out
    row.shim_pid = procs->shim_pid;
    finishRemove(row);
    return Error(kConflict, "member " + row.id + ": its pool was drained while it started");
  }
  // Its control connection now: the first command of the session that claims it needs none.
  if (auto link = ShimLink::connect(dirOf(row.id), row.secret, *procs); link) {
    auto l = linkFor(row.id);
    std::lock_guard lock(l->mu);
    l->link.emplace(std::move(*link));
  }
  log::info("pool_member_ready", "member=" + row.id + " pool=" + pool + " shim_pid=" + std::to_string(procs->shim_pid) +
                                     " init_pid=" + std::to_string(procs->init_pid));
  audit_.appendSelf("pool_member_ready", {{"member", row.id}, {"pool", pool}, {"shim_pid", procs->shim_pid}, {"init_pid", procs->init_pid}});
  return row.id;
}

void Sessions::destroyDrainedMembers() {
  auto rows = store_.sessions();
  if (!rows) return;
  for (const SessionRow& s : *rows) {
    if (s.pool.empty() || s.state != "removing") continue;
    finishRemove(s);
    log::info("pool_member_destroyed", "member=" + s.id + " pool=" + s.pool);
    audit_.appendSelf("pool_member_destroyed", {{"member", s.id}, {"pool", s.pool}});
  }
}

Result<ShimProcesses> Sessions::launch(const SessionRow& row, const SessionSpec& spec, const std::vector<LeasedCredential>& leases,
                                       bool pooled) {
  // The lease values travel after the config (shim_link.h), in a string wiped once written.
  std::string lease_text;
  if (!leases.empty()) {
    Json lease_list = Json::array();
    for (const LeasedCredential& l : leases)
      lease_list.push_back({{"name", l.name}, {"env", l.env}, {"host", l.host}, {"header", l.header}, {"format", l.format},
                            {"value", std::string(l.value.revealForInjection())}});
    lease_text = dumpJson(lease_list);
    for (Json& l : lease_list) {
      auto& v = l["value"].get_ref<std::string&>();
      std::fill(v.begin(), v.end(), '\0');
    }
  }
  auto procs = startShim(core_, dirOf(row.id), {{"id", row.id}, {"secret", row.secret}, {"spec", sessionSpecJson(spec, /*with_env=*/true)}},
                         lease_text);
  std::fill(lease_text.begin(), lease_text.end(), '\0');
  if (!procs) return procs.error();
  RETURN_IF_ERROR(store_.setSessionProcesses(row.id, procs->shim_pid, procs->shim_start, procs->init_pid, procs->init_start));
  // Init has started nothing yet: in the freezer cgroup now, everything it forks is in it too.
  // A VM session's "init" is QEMU's jailer: the guest is not paused by freezing it (refused).
  if (freezer_.usable && !spec.vm)
    if (auto f = freezerAdopt(freezer_, row.id, static_cast<pid_t>(procs->init_pid), static_cast<uint64_t>(procs->init_start)); !f)
      log::warn("freezer_adopt_failed", "session=" + row.id + " reason=" + log::value(f.error().message()));
  if (!pooled) RETURN_IF_ERROR(store_.setSessionState(row.id, "running"));
  return procs;
}

Result<Json> Sessions::recover(const Peer& peer, const std::string& id, const std::vector<std::pair<std::string, std::string>>& env,
                               const std::vector<LeasedCredential>& leases) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (s.state != "lost") return Error(kConflict, "session " + id + " is " + s.state + ": only a lost session is recovered");
  if (vmBacked(s)) return notOnVm("recover (the workspace was the lost VM's own disk)");
  ASSIGN_OR_RETURN(Json stored, parseJson(s.spec));
  ASSIGN_OR_RETURN(SessionSpec spec, parseSessionSpec(stored));
  spec.env = env;
  spec.workspace_from.reset();  // copied in once, at create
  const std::string secret = randomSecret();
  if (secret.empty()) return Error(Errc::kIo, "getrandom: no entropy for a session secret");
  // "recovering" with the new secret first: a daemon killed now finds the new shim by it, or
  // marks the session lost again (reconcileOne), never removes it.
  ASSIGN_OR_RETURN(bool marked, store_.markRecovering(id, secret));
  if (!marked) return Error(kConflict, "session " + id + " is no longer lost");
  {
    auto l = linkFor(id);
    std::lock_guard lock(l->mu);
    l->link.reset();
  }
  if (workspace_.capped) {
    UniqueFd held(::open(dirOf(id).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (!held.valid()) return sysError("open " + dirOf(id));
    if (auto m = mountWorkspaceImage(held.get(), dirOf(id)); !m) {
      (void)store_.setSessionState(id, "lost");
      return m.error().wrap("session " + id + ": its workspace image");
    }
  }
  s.secret = secret;
  for (const LeasedCredential& l : leases) RETURN_IF_ERROR(store_.renewSessionCredential(id, s.owner_uid, l.name, l.version));
  auto procs = launch(s, spec, leases);
  if (!procs) {
    (void)store_.setSessionState(id, "lost");
    log::warn("session_recover_failed", "session=" + id);
    return procs.error();
  }
  log::info("session_recovered", "session=" + id + " shim_pid=" + std::to_string(procs->shim_pid) +
                                     " peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
  audit_.append("session_recovered", peer, {{"session", id}, {"shim_pid", procs->shim_pid}, {"env_count", env.size()}});
  ASSIGN_OR_RETURN(auto row, store_.session(id));
  if (!row) return Error(kNotFound, "no session " + id);
  return sessionJson(*row);
}

Result<void> Sessions::prepareWorkspace(const Peer& peer, const SessionSpec& spec, const std::string& dir) {
  UniqueFd held(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!held.valid()) return sysError("open " + dir);
  const auto ids = sandbox::userns::planIdMap(::getuid(), ::getgid());
  // A VM session's workspace is in the guest's disk: the directory here stays empty, uncapped.
  RETURN_IF_ERROR(makeWorkspace(held.get(), dir, spec.limits.workspace_bytes, workspace_.capped && !spec.vm, workspace_, ids.host_uid,
                                ids.host_gid));
  return copyIn(peer, spec, dir);
}

Result<void> Sessions::copyIn(const Peer& peer, const SessionSpec& spec, const std::string& dir) {
  if (!spec.workspace_from) return {};
  UniqueFd held(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!held.valid()) return sysError("open " + dir);
  const auto ids = sandbox::userns::planIdMap(::getuid(), ::getgid());
  // Copied in once, with the peer's own rights (create() refused a peer of another uid).
  ASSIGN_OR_RETURN(UniqueFd from, sandbox::workspace::openHostDir(*spec.workspace_from));
  UniqueFd ws(::openat(held.get(), "workspace", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!ws.valid()) return sysError("open workspace");
  ASSIGN_OR_RETURN(auto stats, sandbox::workspace::stage(from.get(), ws.get(), {ids.host_uid, ids.host_gid, ::geteuid() == 0}));
  log::info("workspace_copied_in", "files=" + std::to_string(stats.files) + " bytes=" + std::to_string(stats.bytes) +
                                       " skipped=" + std::to_string(stats.skipped) + " peer_uid=" + std::to_string(peer.uid));
  return {};
}

Result<bool> Sessions::isVmSession(const Peer& peer, const std::string& id) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  return vmBacked(s);
}

Result<Json> Sessions::vmFileCall(const Peer& peer, const std::string& id, const Json& req) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (s.state != "running") return Error(kConflict, "session " + id + " is " + s.state);
  return callShim(s, req);
}

Result<Sessions::Workspace> Sessions::workspace(const Peer& peer, const std::string& id) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (s.state == "creating" || s.state == "removing" || s.state == "recovering")
    return Error(kConflict, "session " + id + " is " + s.state);
  if (vmBacked(s)) return notOnVm("stat, list and remove (a VM session's agent serves get and put only)");
  const std::string dir = dirOf(id);
  UniqueFd held(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!held.valid()) return sysError("open " + dir);
  // A capped workspace that is not mounted is an empty mount point: never write into that.
  struct stat st;
  if (::fstatat(held.get(), "workspace.img", &st, AT_SYMLINK_NOFOLLOW) == 0 && !workspaceMounted(dir))
    return Error(kConflict, "session " + id + ": its workspace image is not mounted (restart the daemon to mount it)");
  Workspace w{UniqueFd(::openat(held.get(), "workspace", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)), 0, 0, 0};
  if (!w.dir.valid()) return sysError("open the workspace of " + id);
  const auto ids = sandbox::userns::planIdMap(::getuid(), ::getgid());
  w.uid = ids.host_uid;
  w.gid = ids.host_gid;
  auto spec_json = parseJson(s.spec);
  auto spec = spec_json ? parseSessionSpec(*spec_json) : Result<SessionSpec>(spec_json.error());
  w.cap = spec ? spec->limits.workspace_bytes : sandbox::Limits{}.workspace_bytes;
  return w;
}

Result<Json> Sessions::list(const Peer& peer) {
  ASSIGN_OR_RETURN(auto rows, store_.sessions());
  Json out = Json::array();
  for (const SessionRow& s : rows)
    if (peer.mayAccess(s.owner_uid) && s.pool.empty() && s.state != "removing" && s.state != "claiming") out.push_back(sessionJson(s));
  return Json{{"sessions", out}};
}

Result<Json> Sessions::show(const Peer& peer, const std::string& id) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  Json j = sessionJson(s);
  ASSIGN_OR_RETURN(auto cmds, store_.commands(id));
  Json commands = Json::array();
  for (CommandRow& c : cmds) commands.push_back(commandJson(s, std::move(c)));
  j["commands"] = commands;
  return j;
}

void Sessions::finishRemove(const SessionRow& s, std::string* kept) {
  // A frozen process cannot die: thawed first, its cgroup removed once the shim has ended it.
  if (!freezerState(freezer_, s.id).empty()) (void)freezerSet(freezer_, s.id, false);
  if (s.shim_pid != 0) {
    auto l = linkFor(s.id);
    std::lock_guard lock(l->mu);
    if (!l->link) {
      auto link = ShimLink::connect(dirOf(s.id), s.secret, {s.shim_pid, s.shim_start, s.init_pid, s.init_start});
      if (link) l->link.emplace(std::move(*link));
    }
    if (l->link) {
      (void)l->link->call({{"op", "stop"}});
      if (!l->link->waitGone(kStopTimeoutMs)) log::warn("session_stop_slow", "session=" + s.id);
      l->link.reset();
    }
  }
  // A shim that did not stop (it never answered: a create cut short while it was starting, a
  // shim that hangs) would go on writing into the directory removed below: killed first.
  for (const ShimProcess& p : findShims(state_dir_ + "/sessions"))
    if (p.id == s.id) {
      const int killed = killProcessTree(p.pid, p.start, kStopTimeoutMs);
      log::warn("orphan_killed", "session=" + s.id + " shim_pid=" + std::to_string(p.pid) + " processes=" + std::to_string(killed) +
                                     " recorded_state=" + s.state);
    }
  freezerRemove(freezer_, s.id);
  // The workspace's mount first: the removal below must never descend into a mounted image,
  // and a failed unmount keeps everything (the row too, so a later rm or restart tries again).
  if (!unmountWorkspace(dirOf(s.id))) {
    log::warn("workspace_unmount_failed", "session=" + s.id);
    return;
  }
  UniqueFd parent(::open((state_dir_ + "/sessions").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd held(::open(dirOf(s.id).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (kept && held.valid()) {
    // Kept: moved out of the session's directory whole (an image, or the uncapped directory).
    const std::string kept_dir = state_dir_ + "/kept";
    if (::mkdir(kept_dir.c_str(), 0700) != 0 && errno != EEXIST) log::warn("workspace_keep_failed", "session=" + s.id);
    struct stat st;
    const bool image = ::fstatat(held.get(), "workspace.img", &st, AT_SYMLINK_NOFOLLOW) == 0;
    const std::string to = kept_dir + "/" + s.id + (image ? ".img" : "");
    if (::renameat(held.get(), image ? "workspace.img" : "workspace", AT_FDCWD, to.c_str()) == 0) *kept = to;
    else log::warn("workspace_keep_failed", "session=" + s.id);
  }
  if (parent.valid() && held.valid() && !removeTreeAt(parent.get(), s.id.c_str(), held.get()))
    log::warn("session_dir_left", "session=" + s.id);
  (void)store_.deleteSession(s.id);
  {
    std::lock_guard lock(egress_mu_);
    egress_seen_.erase(s.id);
  }
  std::lock_guard lock(links_mu_);
  links_.erase(s.id);
}

Result<Json> Sessions::remove(const Peer& peer, const std::string& id, bool keep_workspace) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (s.state == "creating" || s.state == "recovering" || s.state == "claiming") return Error(kConflict, "session " + id + " is " + s.state);
  if (s.state == "removing") return Error(kConflict, "session " + id + " is being removed");
  collectLeaseUses(s);  // the last uses its shim counted, before it ends
  recordEndedCommands(s);
  RETURN_IF_ERROR(store_.setSessionState(id, "removing"));
  std::string kept;
  finishRemove(s, keep_workspace ? &kept : nullptr);
  // cppcheck-suppress knownConditionTrueFalse ; kept is set through the pointer finishRemove gets
  log::info("session_removed", "session=" + id + " kept_workspace=" + (kept.empty() ? "false" : "true") +
                                   " peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
  audit_.append("session_removed", peer, {{"session", id}, {"kept_workspace", !kept.empty()}});
  Json out = {{"id", id}, {"state", "removed"}};
  if (keep_workspace) {
    // cppcheck-suppress knownConditionTrueFalse ; as above
    if (kept.empty()) return Error(Errc::kIo, "session " + id + " removed, but its workspace could not be kept");
    out["kept_workspace"] = kept;
  }
  return out;
}

Result<Json> Sessions::startCommand(const Peer& peer, const std::string& id, const CommandSpec& cmd, UniqueFd* io) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (s.state != "running") return Error(kConflict, "session " + id + " is " + s.state);
  if (cmd.tty && vmBacked(s)) return notOnVm("tty");
  ASSIGN_OR_RETURN(int64_t n, store_.addCommand(id, static_cast<int64_t>(cmd.argv.size())));
  // The environment is the shim's to build: it alone holds the session's values.
  Json req = {{"op", "exec"}, {"cmd", n}, {"argv", cmd.argv}, {"env", envStrings(cmd.env)}, {"cwd", cmd.cwd}};
  if (cmd.timeout) req["timeout_ms"] = cmd.timeout->count();
  if (cmd.stdin_open) req["stdin"] = true;
  if (cmd.tty) req.update({{"tty_rows", cmd.tty->first}, {"tty_cols", cmd.tty->second}});
  auto res = callShim(s, req, io);
  if (!res) {
    (void)store_.setCommand(id, n, "failed", 125, dumpJson({{"exit_code", 125}, {"error", res.error().message()}}));
    return res.error();
  }
  RETURN_IF_ERROR(store_.setCommand(id, n, "running", std::nullopt, ""));
  audit_.append("command_started", peer, {{"session", id}, {"cmd", n}, {"argc", cmd.argv.size()}, {"env_count", cmd.env.size()}});
  log::info("command_started", "session=" + id + " cmd=" + std::to_string(n) + " argc=" + std::to_string(cmd.argv.size()) +
                                   " peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
  return Json{{"id", n}, {"session", id}, {"state", "running"}};
}

Result<Json> Sessions::command(const Peer& peer, const std::string& id, int64_t n) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  ASSIGN_OR_RETURN(auto c, store_.command(id, n));
  if (!c) return Error(kNotFound, "session " + id + " has no command " + std::to_string(n));
  return commandJson(s, std::move(*c));
}

Result<std::string> Sessions::commandDir(const Peer& peer, const std::string& id, int64_t n) {
  RETURN_IF_ERROR(owned(peer, id));
  ASSIGN_OR_RETURN(auto c, store_.command(id, n));
  if (!c) return Error(kNotFound, "session " + id + " has no command " + std::to_string(n));
  if (c->state == "failed") return Error(kConflict, "command " + std::to_string(n) + " never started");
  return dirOf(id) + "/cmds/" + std::to_string(n);
}

Result<Json> Sessions::signalCommand(const Peer& peer, const std::string& id, int64_t n, int sig) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (s.state != "running") return Error(kConflict, "session " + id + " is " + s.state);
  RETURN_IF_ERROR(callShim(s, {{"op", "signal"}, {"cmd", n}, {"signal", sig}}));
  return Json{{"id", n}, {"session", id}, {"signal", sig}};
}

Result<UniqueFd> Sessions::commandIoFromShim(const Peer& peer, const std::string& id, int64_t n, bool tty) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (s.state != "running" && s.state != "paused") return Error(kConflict, "session " + id + " is " + s.state);
  UniqueFd fd;
  auto res = callShim(s, {{"op", "take_io"}, {"cmd", n}, {"tty", tty}}, &fd);
  if (!res && res.error().code() == static_cast<int>(Errc::kRefused)) return Error(kConflict, res.error().message());
  if (!res) return res.error();
  if (!fd.valid()) return Error(Errc::kIo, "session " + id + ": its shim passed no descriptor");
  log::info("command_io_reobtained", "session=" + id + " cmd=" + std::to_string(n) + " peer_uid=" + std::to_string(peer.uid));
  return fd;
}

Result<bool> Sessions::closeCommandIoInShim(const Peer& peer, const std::string& id, int64_t n, bool tty) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (s.state != "running" && s.state != "paused") return false;  // no shim: nothing of it is open
  ASSIGN_OR_RETURN(Json res, callShim(s, {{"op", "close_io"}, {"cmd", n}, {"tty", tty}}));
  return res.contains("closed") && res["closed"] == true;
}

Result<Json> Sessions::pause(const Peer& peer, const std::string& id) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (vmBacked(s)) return pauseVm(peer, s, true);
  if (!freezer_.usable) return Error(Errc::kUnsupported, "pause: " + freezer_.description);
  if (s.state == "paused") return Json{{"id", id}, {"state", "paused"}};
  if (s.state != "running") return Error(kConflict, "session " + id + " is " + s.state);
  if (freezerState(freezer_, id).empty()) return Error(Errc::kUnsupported, "pause: session " + id + " has no freezer cgroup");
  RETURN_IF_ERROR(freezerSet(freezer_, id, true));
  RETURN_IF_ERROR(store_.setSessionState(id, "paused"));
  audit_.append("session_paused", peer, {{"session", id}});
  log::info("session_paused", "session=" + id + " peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
  return Json{{"id", id}, {"state", "paused"}};
}

Result<Json> Sessions::resume(const Peer& peer, const std::string& id) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (vmBacked(s)) return pauseVm(peer, s, false);
  if (!freezer_.usable) return Error(Errc::kUnsupported, "resume: " + freezer_.description);
  if (s.state == "running") return Json{{"id", id}, {"state", "running"}};
  if (s.state != "paused") return Error(kConflict, "session " + id + " is " + s.state);
  RETURN_IF_ERROR(freezerSet(freezer_, id, false));
  RETURN_IF_ERROR(store_.setSessionState(id, "running"));
  audit_.append("session_resumed", peer, {{"session", id}});
  log::info("session_resumed", "session=" + id + " peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
  return Json{{"id", id}, {"state", "running"}};
}

// A VM session: QMP stop or cont in its shim (shim_vm.h); the store follows what QEMU says.
Result<Json> Sessions::pauseVm(const Peer& peer, const SessionRow& s, bool pause) {
  const std::string want = pause ? "paused" : "running";
  if (s.state == want) return Json{{"id", s.id}, {"state", want}};
  if (s.state != (pause ? "running" : "paused")) return Error(kConflict, "session " + s.id + " is " + s.state);
  ASSIGN_OR_RETURN(Json r, callShim(s, {{"op", pause ? "vm_pause" : "vm_resume"}}));
  if (r.contains("error")) return Error(Errc::kIo, r["error"].is_string() ? r["error"].get<std::string>() : "the VM's monitor refused");
  if (!r["running"].is_boolean() || r["running"].get<bool>() == pause) return Error(Errc::kIo, "session " + s.id + ": the VM did not " + (pause ? "stop" : "continue"));
  RETURN_IF_ERROR(store_.setSessionState(s.id, want));
  const char* event = pause ? "session_paused" : "session_resumed";
  audit_.append(event, peer, {{"session", s.id}});
  log::info(event, "session=" + s.id + " backend=vm peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
  return Json{{"id", s.id}, {"state", want}};
}

void Sessions::collectLeaseUses(const SessionRow& s) {
  if (s.state != "running" && s.state != "paused") return;
  auto spec = parseJson(s.spec);
  if (!spec || !spec->is_object() || !spec->contains("net") || (*spec)["net"] != "proxy") return;
  auto held = store_.sessionCredentials(s.id);
  if (!held) return;
  auto res = callShim(s, {{"op", "leases"}});
  if (!res || !res->contains("leases") || !(*res)["leases"].is_array()) return;
  auto number = [](const Json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : int64_t{0};
  };
  for (const Json& u : (*res)["leases"]) {
    if (!u.is_object() || !u.contains("name") || !u["name"].is_string()) continue;
    const std::string name = u["name"].get<std::string>();
    const int64_t uses = number(u, "uses"), last = number(u, "last_used_ms");
    for (const Store::SessionLease& l : *held)
      if (l.name == name && uses > l.seen_uses) {
        (void)store_.foldCredentialUses(s.id, l.owner, name, uses, last);
        audit_.appendSelf("credential_used",
                          {{"session", s.id}, {"credential", name}, {"uses", uses - l.seen_uses}, {"owner_uid", l.owner}});
      }
  }
  // Egress decisions since the last look: counted on the event stream, not the audit log
  // (a busy session would write one fsynced line per second).
  if (!events_ || !res->contains("egress")) return;
  const int64_t allowed = number((*res)["egress"], "allowed"), refused = number((*res)["egress"], "refused");
  std::lock_guard lock(egress_mu_);
  auto& seen = egress_seen_[s.id];
  if (allowed != seen.allowed || refused != seen.refused) {
    events_->publish("egress", s.owner_uid, {{"session", s.id}, {"allowed", allowed - seen.allowed}, {"refused", refused - seen.refused},
                                             {"allowed_total", allowed}, {"refused_total", refused}});
    seen.allowed = allowed;
    seen.refused = refused;
  }
  // And each decision the shim still holds that was not sent yet, one event each: the host and
  // the decision, never a header (the shim keeps none). A gap (more decisions in a second than
  // the shim holds) is said as lost.
  const Json& recent = (*res)["egress"].contains("recent") ? (*res)["egress"]["recent"] : Json::array();
  if (!recent.is_array()) return;
  for (const Json& d : recent) {
    const int64_t seq = number(d, "seq");
    if (seq <= seen.seq) continue;
    auto text = [&](const char* key) { return d.contains(key) && d[key].is_string() ? d[key].get<std::string>() : std::string(); };
    Json ev = {{"session", s.id}, {"seq", seq}, {"kind", text("kind")}, {"method", text("method")}, {"host", text("host")},
               {"decision", text("decision")}, {"rule", text("rule")}, {"status", number(d, "status")}};
    if (seq > seen.seq + 1) ev["lost_before"] = seq - seen.seq - 1;
    events_->publish("egress_decision", s.owner_uid, ev);
    seen.seq = seq;
  }
}

void Sessions::recordEndedCommands(const SessionRow& s) {
  // A command's end is recorded (and its event sent) by the first reader of its status.
  if (auto cmds = store_.commands(s.id))
    for (CommandRow& c : *cmds)
      if (c.state == "running") (void)commandJson(s, std::move(c));
}

void Sessions::runWatcher() {
  for (int round = 0;; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto rows = store_.sessions();
    if (!rows) continue;
    for (const SessionRow& s : *rows) {
      if (s.state != "running" && s.state != "paused") continue;
      recordEndedCommands(s);
      if (round % 5 == 0) collectLeaseUses(s);
    }
  }
}

void Sessions::collectLeaseUses(int64_t owner) {
  auto rows = store_.sessions();
  if (!rows) return;
  for (const SessionRow& s : *rows)
    if (owner < 0 || s.owner_uid == owner) collectLeaseUses(s);
}

void Sessions::runExpiry() {
  for (;;) {
    int64_t next = 0;
    if (auto rows = store_.sessions()) {
      const int64_t now = nowMs();
      for (const SessionRow& s : *rows) {
        if (s.expires_at == 0 || !s.pool.empty() || s.state == "creating" || s.state == "removing" || s.state == "recovering" ||
            s.state == "claiming")
          continue;
        if (s.expires_at > now) {
          next = next == 0 ? s.expires_at : std::min(next, s.expires_at);
          continue;
        }
        collectLeaseUses(s);
        recordEndedCommands(s);
        if (!store_.setSessionState(s.id, "removing")) continue;
        finishRemove(s);
        log::info("session_expired", "session=" + s.id + " expires_at=" + std::to_string(s.expires_at));
        audit_.appendSelf("session_expired", {{"session", s.id}, {"expires_at_ms", s.expires_at}, {"owner_uid", s.owner_uid}});
      }
    }
    // Until the nearest expiry, a new session's notify, or a minute (a create still in flight).
    std::unique_lock lock(expiry_mu_);
    const int64_t wait_ms = next == 0 ? 60'000 : std::clamp<int64_t>(next - nowMs(), 1, 60'000);
    expiry_cv_.wait_for(lock, std::chrono::milliseconds(wait_ms));
  }
}

void Sessions::reconcileOne(const SessionRow& s) {
  if (s.state == "removing" || s.state == "claiming") {
    // claiming: a create served from the pool, cut short in its copy-in; never answered, so undone.
    finishRemove(s);
    log::info(s.state == "claiming" ? "reconcile_claim_undone" : "reconcile_removed", "session=" + s.id);
    return;
  }
  if (!s.pool.empty()) return reconcileMember(s);
  // After a host reboot nothing is mounted: the kept images come back (a lost session's files stay reachable).
  if (workspace_.capped && s.state != "creating") {
    UniqueFd held(::open(dirOf(s.id).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (auto m = held.valid() ? mountWorkspaceImage(held.get(), dirOf(s.id)) : Result<void>(); !m)
      log::warn("workspace_mount_failed", "session=" + s.id + " reason=" + log::value(m.error().message()));
  }
  if (s.state != "running" && s.state != "creating" && s.state != "paused" && s.state != "recovering") return;
  // A create cut short may have no recorded shim yet: only the secret can find it then.
  auto link = ShimLink::connect(dirOf(s.id), s.secret, {s.shim_pid, s.shim_start, s.init_pid, s.init_start});
  if (!link) {
    if (s.state == "recovering") {
      (void)store_.setSessionState(s.id, "lost");  // its workspace is kept: recover again
      log::info("reconcile_recover_undone", "session=" + s.id);
    } else if (s.state == "creating") {
      SessionRow gone = s;
      gone.shim_pid = 0;
      finishRemove(gone);
      log::info("reconcile_create_undone", "session=" + s.id);
    } else {
      (void)store_.setSessionState(s.id, "lost");
      log::warn("session_lost", "session=" + s.id + " reason=" + log::value(link.error().message()));
      audit_.appendSelf("session_lost", {{"session", s.id}, {"owner_uid", s.owner_uid}});
    }
    return;
  }
  if (s.state == "creating" || s.state == "recovering") {
    // The shim came up and knows the secret: finish the create with what it reports.
    const ShimProcesses& p = link->processes();
    (void)store_.setSessionProcesses(s.id, p.shim_pid, p.shim_start, p.init_pid, p.init_start);
    // launch() may have been cut short before it put init in the freezer: no command can have
    // started (the row was not running), so init alone is all there is to move.
    const auto tasks = freezerTasks(freezer_, s.id);
    if (freezer_.usable && !vmBacked(s) && std::find(tasks.begin(), tasks.end(), static_cast<pid_t>(p.init_pid)) == tasks.end())
      if (auto f = freezerAdopt(freezer_, s.id, static_cast<pid_t>(p.init_pid), static_cast<uint64_t>(p.init_start)); !f)
        log::warn("freezer_adopt_failed", "session=" + s.id + " reason=" + log::value(f.error().message()));
    (void)store_.setSessionState(s.id, "running");
    log::info("reconcile_create_completed", "session=" + s.id + " shim_pid=" + std::to_string(p.shim_pid));
  } else {
    // A pause or resume cut short between the freezer and the store: the freezer says what is
    // (a VM session's QEMU, asked through its shim; no answer: the store's word stands).
    const std::string frozen = freezerState(freezer_, s.id);
    std::string state = frozen == "FROZEN" || frozen == "FREEZING" ? "paused" : "running";
    if (vmBacked(s)) {
      auto r = link->call({{"op", "vm_state"}});
      state = r && (*r)["running"].is_boolean() ? ((*r)["running"].get<bool>() ? "running" : "paused") : s.state;
    }
    if (state != s.state) (void)store_.setSessionState(s.id, state);
    if (frozen == "FREEZING") (void)freezerSet(freezer_, s.id, true);
    log::info("session_adopted", "session=" + s.id + " shim_pid=" + std::to_string(s.shim_pid) + " state=" + state);
    audit_.appendSelf("session_adopted", {{"session", s.id}, {"shim_pid", s.shim_pid}, {"state", state}, {"owner_uid", s.owner_uid}});
  }
  auto l = linkFor(s.id);
  std::lock_guard lock(l->mu);
  l->link.emplace(std::move(*link));
}

void Sessions::reconcileMember(const SessionRow& s) {
  // The same identity check as a session's: the recorded shim (pidfd, pid and start time),
  // or for a member cut short before its row knew the shim, the secret alone.
  auto link = ShimLink::connect(dirOf(s.id), s.secret, {s.shim_pid, s.shim_start, s.init_pid, s.init_start});
  if (!link) {
    SessionRow gone = s;
    if (s.state == "creating") gone.shim_pid = 0;
    finishRemove(gone);
    log::info("reconcile_member_destroyed", "member=" + s.id + " pool=" + s.pool + " state=" + s.state);
    return;
  }
  if (s.state == "creating") {
    const ShimProcesses& p = link->processes();
    (void)store_.setSessionProcesses(s.id, p.shim_pid, p.shim_start, p.init_pid, p.init_start);
    const auto tasks = freezerTasks(freezer_, s.id);
    if (freezer_.usable && std::find(tasks.begin(), tasks.end(), static_cast<pid_t>(p.init_pid)) == tasks.end())
      if (auto f = freezerAdopt(freezer_, s.id, static_cast<pid_t>(p.init_pid), static_cast<uint64_t>(p.init_start)); !f)
        log::warn("freezer_adopt_failed", "member=" + s.id + " reason=" + log::value(f.error().message()));
    (void)store_.setPoolMemberReady(s.id);
  }
  log::info("pool_member_adopted", "member=" + s.id + " pool=" + s.pool + " shim_pid=" + std::to_string(link->processes().shim_pid));
  auto l = linkFor(s.id);
  std::lock_guard lock(l->mu);
  l->link.emplace(std::move(*link));
}

void Sessions::reconcile() {
  AuditLog::Batch batch(audit_);  // one sync for every session's line, not one each
  auto rows = store_.sessions();
  if (!rows) {
    log::error("reconcile_failed", rows.error());
    return;
  }
  for (const SessionRow& s : *rows) {
    reconcileOne(s);
    // Commands: a status on disk wins; one never handed to the shim (no spool dir) failed.
    auto cmds = store_.commands(s.id);
    if (!cmds) continue;
    for (const CommandRow& c : *cmds) {
      if (c.state != "starting") continue;
      struct stat st;
      if (::stat((dirOf(s.id) + "/cmds/" + std::to_string(c.cmd)).c_str(), &st) == 0)
        (void)store_.setCommand(s.id, c.cmd, "running", std::nullopt, "");
      else
        (void)store_.setCommand(s.id, c.cmd, "failed", 125, dumpJson({{"exit_code", 125}, {"error", "interrupted before it started"}}));
    }
  }
  sweepOrphans();
}

void Sessions::sweepOrphans() {
  auto rows = store_.sessions();
  if (!rows) return;
  std::map<std::string, const SessionRow*> recorded;
  for (const SessionRow& s : *rows) recorded[s.id] = &s;
  // A shim is a session's only if it is the recorded, adopted one: pid and start time of a
  // running or paused row. Any other (a create cut short before its row knew the shim, a row
  // lost from the store, a lost session's shim that would not answer) is killed with its tree.
  for (const ShimProcess& p : findShims(state_dir_ + "/sessions")) {
    auto it = recorded.find(p.id);
    const SessionRow* s = it == recorded.end() ? nullptr : it->second;
    if (s && (s->state == "running" || s->state == "paused" || s->state == "pooled") && s->shim_pid == p.pid && static_cast<uint64_t>(s->shim_start) == p.start)
      continue;
    // A frozen process cannot die: its session's freezer cgroup is thawed first.
    if (!freezerState(freezer_, p.id).empty()) (void)freezerSet(freezer_, p.id, false);
    const int killed = killProcessTree(p.pid, p.start, kStopTimeoutMs);
    log::warn("orphan_killed", "session=" + p.id + " shim_pid=" + std::to_string(p.pid) + " processes=" + std::to_string(killed) +
                                   " recorded_state=" + (s ? s->state : std::string("none")));
    audit_.appendSelf("orphan_killed", {{"session", p.id}, {"shim_pid", p.pid}, {"processes", killed},
                                        {"recorded_state", s ? s->state : std::string("none")}});
  }
  // Directories of no recorded session: their freezer cgroup and workspace mount go (nothing
  // can use them), the files stay for an operator to look at.
  DIR* d = ::opendir((state_dir_ + "/sessions").c_str());
  if (!d) return;
  std::vector<std::string> unrecorded;
  while (dirent* e = ::readdir(d))
    if (validId(e->d_name) && !recorded.count(e->d_name)) unrecorded.emplace_back(e->d_name);
  ::closedir(d);
  for (const std::string& id : unrecorded) {
    freezerRemove(freezer_, id);
    const bool unmounted = unmountWorkspace(dirOf(id));
    log::warn("session_dir_unrecorded", "session=" + id + " unmounted=" + (unmounted ? "true" : "false"));
  }
}

void Sessions::stopAll() {
  auto rows = store_.sessions();
  if (!rows) return;
  for (const SessionRow& s : *rows) {
    if (!s.pool.empty()) {  // a member holds nothing: it goes, rather than waiting stopped
      finishRemove(s);
      continue;
    }
    if (s.state != "running") continue;
    if (callShim(s, {{"op", "stop"}}).ok()) (void)store_.setSessionState(s.id, "stopped");
  }
}

}  // namespace corral::daemon
