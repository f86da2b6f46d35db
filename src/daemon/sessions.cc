// SPDX-License-Identifier: Apache-2.0
// Session lifecycle over the store and the shims. Order of every change, so a kill -9 at any
// point leaves something reconcile() can finish or undo: the store row first, then the
// process or file, then the row's new state.
#include "daemon/sessions.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/random_id.h"
#include "base/read_fd.h"
#include "base/remove_tree.h"
#include "daemon/shim.h"
#include "policy/units.h"

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

Sessions::Sessions(Store& store, std::string state_dir, std::string core_binary)
    : store_(store), state_dir_(std::move(state_dir)), core_(std::move(core_binary)) {}

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
  if (!row || !peer.mayAccess(row->owner_uid)) return Error(kNotFound, "no session " + id);
  return *row;
}

Result<Json> Sessions::callShim(const SessionRow& s, const Json& req) {
  auto l = linkFor(s.id);
  std::lock_guard lock(l->mu);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!l->link) {
      auto link = ShimLink::connect(dirOf(s.id), s.secret, {s.shim_pid, s.shim_start, s.init_pid, s.init_start});
      if (!link) return link.error();
      l->link.emplace(std::move(*link));
    }
    auto res = l->link->call(req);
    if (res || res.error().code() == static_cast<int>(Errc::kRefused)) return res;
    l->link.reset();  // a stale connection (the daemon restarted, the shim was busy): once more
  }
  return Error(Errc::kIo, "session " + s.id + ": its shim does not answer");
}

bool Sessions::alive(const std::string& id) {
  auto row = store_.session(id);
  if (!row || !*row || (*row)->state != "running") return false;
  return callShim(**row, {{"op", "hello"}, {"secret", (*row)->secret}}).ok();
}

Json Sessions::sessionJson(const SessionRow& s) {
  Json j = {{"id", s.id}, {"name", s.name}, {"state", s.state}, {"owner_uid", s.owner_uid}, {"created_at", s.created_at}};
  if (auto spec = parseJson(s.spec); spec && spec->is_object() && spec->contains("limits")) j["limits"] = (*spec)["limits"];
  return j;
}

Json Sessions::commandJson(const SessionRow& s, CommandRow c) {
  if (c.state == "starting" || c.state == "running") {
    if (auto st = readStatus(dirOf(s.id) + "/cmds/" + std::to_string(c.cmd))) {
      c.state = "exited";
      c.report = dumpJson(*st);
      if ((*st).contains("exit_code") && (*st)["exit_code"].is_number_integer()) c.exit_code = (*st)["exit_code"].get<int64_t>();
      (void)store_.setCommand(s.id, c.cmd, c.state, c.exit_code, c.report);
    } else if (s.state == "lost" || s.state == "stopped") {
      c.state = "lost";
    }
  }
  Json j = {{"id", c.cmd}, {"session", s.id}, {"state", c.state}, {"argc", c.argc}, {"created_at", c.created_at}};
  if (c.exit_code) j["exit_code"] = *c.exit_code;
  if (auto r = parseJson(c.report); !c.report.empty() && r) j["report"] = *r;
  return j;
}

Result<Json> Sessions::create(const Peer& peer, const SessionSpec& spec) {
  SessionRow row;
  row.id = randomHex16();
  row.name = spec.name.value_or(row.id);
  row.owner_uid = peer.uid;
  row.state = "creating";
  row.secret = randomSecret();
  row.spec = dumpJson(sessionSpecJson(spec, /*with_env=*/false));
  if (row.secret.empty()) return Error(Errc::kIo, "getrandom: no entropy for a session secret");
  const std::string dir = dirOf(row.id);
  RETURN_IF_ERROR(store_.insertSession(row));
  if (::mkdir(dir.c_str(), 0700) != 0) {
    const Error e = sysError("mkdir " + dir);
    (void)store_.deleteSession(row.id);
    return e;
  }
  log::info("session_creating", "session=" + row.id + " peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
  auto procs = startShim(core_, dir, {{"id", row.id}, {"secret", row.secret}, {"spec", sessionSpecJson(spec, /*with_env=*/true)}});
  if (!procs) {
    // Undo: nothing of it may stay (the shim exited when it reported the failure).
    UniqueFd parent(::open((state_dir_ + "/sessions").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    UniqueFd held(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (parent.valid() && held.valid()) removeTreeAt(parent.get(), row.id.c_str(), held.get());
    (void)store_.deleteSession(row.id);
    log::warn("session_create_failed", "session=" + row.id);
    return procs.error();
  }
  RETURN_IF_ERROR(store_.setSessionProcesses(row.id, procs->shim_pid, procs->shim_start, procs->init_pid, procs->init_start));
  RETURN_IF_ERROR(store_.setSessionState(row.id, "running"));
  row.state = "running";
  row.shim_pid = procs->shim_pid;
  row.shim_start = procs->shim_start;
  row.init_pid = procs->init_pid;
  row.init_start = procs->init_start;
  log::info("session_created", "session=" + row.id + " shim_pid=" + std::to_string(procs->shim_pid) +
                                   " init_pid=" + std::to_string(procs->init_pid));
  return sessionJson(row);
}

Result<Json> Sessions::list(const Peer& peer) {
  ASSIGN_OR_RETURN(auto rows, store_.sessions());
  Json out = Json::array();
  for (const SessionRow& s : rows)
    if (peer.mayAccess(s.owner_uid) && s.state != "removing") out.push_back(sessionJson(s));
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

void Sessions::finishRemove(const SessionRow& s) {
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
  UniqueFd parent(::open((state_dir_ + "/sessions").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd held(::open(dirOf(s.id).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (parent.valid() && held.valid() && !removeTreeAt(parent.get(), s.id.c_str(), held.get()))
    log::warn("session_dir_left", "session=" + s.id);
  (void)store_.deleteSession(s.id);
  std::lock_guard lock(links_mu_);
  links_.erase(s.id);
}

Result<Json> Sessions::remove(const Peer& peer, const std::string& id) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (s.state == "creating") return Error(kConflict, "session " + id + " is still being created");
  RETURN_IF_ERROR(store_.setSessionState(id, "removing"));
  finishRemove(s);
  log::info("session_removed", "session=" + id + " peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
  return Json{{"id", id}, {"state", "removed"}};
}

Result<Json> Sessions::startCommand(const Peer& peer, const std::string& id, const CommandSpec& cmd) {
  ASSIGN_OR_RETURN(SessionRow s, owned(peer, id));
  if (s.state != "running") return Error(kConflict, "session " + id + " is " + s.state);
  ASSIGN_OR_RETURN(int64_t n, store_.addCommand(id, static_cast<int64_t>(cmd.argv.size())));
  // The environment is the shim's to build: it alone holds the session's values.
  Json req = {{"op", "exec"}, {"cmd", n}, {"argv", cmd.argv}, {"env", envStrings(cmd.env)}, {"cwd", cmd.cwd}};
  if (cmd.timeout) req["timeout_ms"] = cmd.timeout->count();
  auto res = callShim(s, req);
  if (!res) {
    (void)store_.setCommand(id, n, "failed", 125, dumpJson({{"exit_code", 125}, {"error", res.error().message()}}));
    return res.error();
  }
  RETURN_IF_ERROR(store_.setCommand(id, n, "running", std::nullopt, ""));
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

void Sessions::reconcileOne(const SessionRow& s) {
  if (s.state == "removing") {
    finishRemove(s);
    log::info("reconcile_removed", "session=" + s.id);
    return;
  }
  if (s.state != "running" && s.state != "creating") return;
  // A create cut short may have no recorded shim yet: only the secret can find it then.
  auto link = ShimLink::connect(dirOf(s.id), s.secret, {s.shim_pid, s.shim_start, s.init_pid, s.init_start});
  if (!link) {
    if (s.state == "creating") {
      SessionRow gone = s;
      gone.shim_pid = 0;
      finishRemove(gone);
      log::info("reconcile_create_undone", "session=" + s.id);
    } else {
      (void)store_.setSessionState(s.id, "lost");
      log::warn("session_lost", "session=" + s.id + " reason=" + log::value(link.error().message()));
    }
    return;
  }
  if (s.state == "creating") {
    // The shim came up and knows the secret: finish the create with what it reports.
    const ShimProcesses& p = link->processes();
    (void)store_.setSessionProcesses(s.id, p.shim_pid, p.shim_start, p.init_pid, p.init_start);
    (void)store_.setSessionState(s.id, "running");
    log::info("reconcile_create_completed", "session=" + s.id + " shim_pid=" + std::to_string(p.shim_pid));
  } else {
    log::info("session_adopted", "session=" + s.id + " shim_pid=" + std::to_string(s.shim_pid));
  }
  auto l = linkFor(s.id);
  std::lock_guard lock(l->mu);
  l->link.emplace(std::move(*link));
}

void Sessions::reconcile() {
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
}

void Sessions::stopAll() {
  auto rows = store_.sessions();
  if (!rows) return;
  for (const SessionRow& s : *rows) {
    if (s.state != "running") continue;
    if (callShim(s, {{"op", "stop"}}).ok()) (void)store_.setSessionState(s.id, "stopped");
  }
}

}  // namespace corral::daemon
