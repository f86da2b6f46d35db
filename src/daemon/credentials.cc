// SPDX-License-Identifier: Apache-2.0
// Credential records: validation, the order of file and row changes, metadata out.
#include "daemon/credentials.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "base/log.h"
#include "daemon/session_spec.h"
#include "daemon/sessions.h"
#include "daemon/shim.h"
#include "net/lease_spec.h"
#include "net/lease_table.h"
#include "policy/units.h"

namespace corral::daemon {

namespace {

constexpr int kCreatingWaitRounds = 2600;  // 50 ms each: the shim's own ready timeout (120 s) and some

// Ends a session's leases by killing its shim (the proxy and the values live there alone): by
// pidfd, and only when the process is still the recorded shim (pid and start time). True when
// no recorded shim holds the value any more.
bool killShim(const SessionRow& s) {
  if (s.shim_pid <= 0) return false;
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(s.shim_pid), 0)));
  if (!pidfd.valid()) return errno == ESRCH;
  if (static_cast<int64_t>(processStartTime(static_cast<int>(s.shim_pid))) != s.shim_start) return true;  // another process now
  return ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) == 0;
}

}  // namespace

Credentials::Reach Credentials::pushValue(int64_t owner, const std::string& name, int64_t version, std::string_view value,
                                          Sessions& sessions, const std::string& only) {
  Reach reach;
  auto holders = store_.leaseholders(owner, name);
  if (!holders) {
    log::warn("credential_rotation_unlisted", "credential=" + name + " reason=" + log::value(holders.error().message()));
    return reach;
  }
  for (const Store::Leaseholder& h : *holders) {
    if (h.version >= version || (!only.empty() && h.session_id != only)) continue;
    auto row = store_.session(h.session_id);
    if (!row || !*row) continue;
    auto push = [&](const SessionRow& s) {
      Json req = {{"op", "rotate_lease"}, {"name", name}, {"value", std::string(value)}};
      auto answer = sessions.callSessionShim(s, req);
      std::string& copy = req["value"].get_ref<std::string&>();
      std::fill(copy.begin(), copy.end(), '\0');
      return answer;
    };
    auto pushed = push(**row);
    if (!pushed && (*row)->state == "creating") {
      // Made while this rotation runs: its shim may not be up yet. Wait for the create to end
      // (running, or the session removed), then give it the value.
      for (int i = 0; i < kCreatingWaitRounds; ++i) {
        row = store_.session(h.session_id);
        if (!row || !*row || (*row)->state != "creating") break;
        ::usleep(50'000);
      }
      if (!row || !*row || ((*row)->state != "running" && (*row)->state != "paused")) continue;  // it holds nothing now
      pushed = push(**row);
    }
    if (pushed) {
      (void)store_.setSessionCredentialVersion(h.session_id, owner, name, version);
      ++reach.reached;
      continue;
    }
    // Fail closed: a shim that did not take the new value must not go on injecting the old one.
    const bool ended = killShim(**row);
    ++reach.cut;
    audit_.appendSelf("credential_lease_cut", {{"session", h.session_id}, {"credential", name}, {"version", version},
                                               {"owner_uid", owner}, {"shim_killed", ended}});
    log::warn("credential_lease_cut", "session=" + h.session_id + " credential=" + name + " version=" + std::to_string(version) +
                                          " shim_killed=" + (ended ? "true" : "false") + " reason=" + log::value(pushed.error().message()));
  }
  return reach;
}

Json Credentials::metadata(const CredentialRow& c) const {
  Json j = {{"name", c.name},
            {"owner_uid", c.owner_uid},
            {"fingerprint", c.fingerprint},
            {"version", c.version},
            {"created_at", c.created_at},
            {"use_count", c.use_count},
            {"active_leases", c.active_leases},
            {"stale_leases", c.stale_leases}};
  j["rotated_at"] = c.rotated_at ? Json(c.rotated_at) : Json(nullptr);
  j["last_used_ms"] = c.last_used_ms ? Json(c.last_used_ms) : Json(nullptr);
  if (isSshKeyRecord(c.header)) {
    // The public key's fingerprint (what ssh-keygen -l shows) and the keyed one; never the key.
    j["kind"] = kSshKeyKind;
    j["ssh_fingerprint"] = c.format;
    return j;
  }
  j["kind"] = "header";
  j["host"] = c.host;
  j["header"] = c.header + ": " + c.format;
  j["env"] = c.env;
  return j;
}

Result<Json> Credentials::add(const Peer& peer, AddCredential cmd) {
  std::lock_guard lock(mu_);
  const int64_t owner = peer.uid;
  ASSIGN_OR_RETURN(auto existing, store_.credential(owner, cmd.name));
  if (existing) return Error(kConflict, "credential '" + cmd.name + "' exists (corral credential rotate, or rm first)");
  const std::string_view value = cmd.value.revealForInjection();
  // The sealed file first, then the row: a crash between leaves a file reconcile() removes.
  RETURN_IF_ERROR(vault_.store(owner, cmd.name, value));
  CredentialRow row{owner, cmd.name, cmd.host, cmd.header, cmd.format, cmd.env, vault_.fingerprint(value)};
  if (auto r = store_.insertCredential(row); !r) {
    (void)vault_.remove(owner, cmd.name);
    return r.error();
  }
  Json added = {{"credential", cmd.name}, {"kind", cmd.kind}, {"host", cmd.host}, {"fingerprint", row.fingerprint}};
  if (cmd.kind == kSshKeyKind) added["ssh_fingerprint"] = cmd.format;
  audit_.append("credential_added", peer, added);
  log::info("credential_added", "credential=" + cmd.name + " kind=" + cmd.kind + " host=" + log::value(cmd.host) +
                                    (cmd.kind == kSshKeyKind ? " ssh_key=" + cmd.format : std::string()) +
                                    " peer_uid=" + std::to_string(peer.uid) + " peer_pid=" + std::to_string(peer.pid));
  ASSIGN_OR_RETURN(auto made, store_.credential(owner, cmd.name));
  if (!made) return Error(kNotFound, "credential '" + cmd.name + "' vanished");
  return metadata(*made);
}

Result<Json> Credentials::rotate(const Peer& peer, const std::string& name, const Secret& value, Sessions& sessions) {
  std::lock_guard lock(mu_);
  if (!checkCredentialName(name)) return Error(kNotFound, "no credential " + policy::printable(name));
  ASSIGN_OR_RETURN(auto existing, store_.credential(peer.uid, name));
  if (!existing) return Error(kNotFound, "no credential '" + name + "'");
  // The new value is checked as its record's kind: an ssh-key record takes only a usable key.
  const bool ssh = isSshKeyRecord(existing->header);
  ASSIGN_OR_RETURN(std::string ssh_fp, checkCredentialValue(ssh ? kSshKeyKind : "header", value));
  // The new sealed file replaces the old one atomically; the row follows (a crash between is
  // a fingerprint reconcile() recomputes).
  RETURN_IF_ERROR(vault_.store(peer.uid, name, value.revealForInjection()));
  const std::string fp = vault_.fingerprint(value.revealForInjection());
  RETURN_IF_ERROR(store_.rotateCredential(peer.uid, name, fp, ssh ? &ssh_fp : nullptr));
  ASSIGN_OR_RETURN(auto bumped, store_.credential(peer.uid, name));
  if (!bumped) return Error(kNotFound, "credential '" + name + "' vanished");
  // Sealed and counted first, then every live lease: a daemon killed in between finishes this
  // at its next start (renewStaleLeases); the answer leaves only once every shim has the value.
  const Reach reach = pushValue(peer.uid, name, bumped->version, value.revealForInjection(), sessions);
  ASSIGN_OR_RETURN(auto row, store_.credential(peer.uid, name));
  if (!row) return Error(kNotFound, "credential '" + name + "' vanished");
  audit_.append("credential_rotated", peer, {{"credential", name}, {"version", row->version}, {"fingerprint", fp},
                                             {"sessions_reached", reach.reached}, {"sessions_cut", reach.cut},
                                             {"stale_leases", row->stale_leases}});
  log::info("credential_rotated", "credential=" + name + " version=" + std::to_string(row->version) +
                                      " sessions_reached=" + std::to_string(reach.reached) + " sessions_cut=" + std::to_string(reach.cut) +
                                      " stale_leases=" + std::to_string(row->stale_leases) + " peer_uid=" + std::to_string(peer.uid));
  return metadata(*row);
}

Result<Json> Credentials::list(const Peer& peer) {
  // Root sees every owner's records, as it sees every session; names resolve under its own uid.
  ASSIGN_OR_RETURN(auto rows, store_.credentials(peer.uid == 0 ? -1 : static_cast<int64_t>(peer.uid)));
  Json out = Json::array();
  for (const CredentialRow& c : rows) out.push_back(metadata(c));
  return Json{{"credentials", out}};
}

Result<Json> Credentials::show(const Peer& peer, const std::string& name) {
  if (!checkCredentialName(name)) return Error(kNotFound, "no credential " + policy::printable(name));
  ASSIGN_OR_RETURN(auto row, store_.credential(peer.uid, name));
  if (!row) return Error(kNotFound, "no credential '" + name + "'");
  return metadata(*row);
}

Result<Json> Credentials::remove(const Peer& peer, const std::string& name) {
  std::lock_guard lock(mu_);
  if (!checkCredentialName(name)) return Error(kNotFound, "no credential " + policy::printable(name));
  ASSIGN_OR_RETURN(auto row, store_.credential(peer.uid, name));
  if (!row) return Error(kNotFound, "no credential '" + name + "'");
  if (row->active_leases > 0)
    return Error(kConflict, "credential '" + name + "' is leased to " + std::to_string(row->active_leases) +
                                " running session(s): remove them first");
  // The row first: a crash after it leaves a file without a record, which reconcile() removes.
  RETURN_IF_ERROR(store_.deleteCredential(peer.uid, name));
  RETURN_IF_ERROR(vault_.remove(peer.uid, name));
  audit_.append("credential_removed", peer, {{"credential", name}});
  log::info("credential_removed", "credential=" + name + " peer_uid=" + std::to_string(peer.uid));
  return Json{{"name", name}, {"removed", true}};
}

Result<std::vector<LeasedCredential>> Credentials::lease(const Peer& peer, const std::vector<std::string>& names,
                                                         const std::optional<std::string>& ssh_key) {
  std::lock_guard lock(mu_);
  std::vector<LeasedCredential> out;
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(auto row, store_.credential(peer.uid, name));
    if (!row) return Error(Errc::kInvalidArgument, "body.credentials: no credential '" + name + "' of uid " + std::to_string(peer.uid));
    if (isSshKeyRecord(row->header))
      return Error(Errc::kInvalidArgument, "body.credentials: '" + name + "' is an ssh-key record (give it as ssh_key, --ssh-key)");
    ASSIGN_OR_RETURN(Secret value, vault_.load(peer.uid, name));
    out.push_back({row->name, row->env, row->host, row->header, row->format, row->version, std::move(value)});
  }
  if (ssh_key) {
    ASSIGN_OR_RETURN(auto row, store_.credential(peer.uid, *ssh_key));
    if (!row) return Error(Errc::kInvalidArgument, "body.ssh_key: no credential '" + *ssh_key + "' of uid " + std::to_string(peer.uid));
    if (!isSshKeyRecord(row->header))
      return Error(Errc::kInvalidArgument, "body.ssh_key: '" + *ssh_key + "' is not an ssh-key record (a header record is leased with credentials, --credential)");
    ASSIGN_OR_RETURN(Secret value, vault_.load(peer.uid, *ssh_key));
    // Travels to the shim as a lease with an empty header (shim_egress.h): its agent signs with it.
    out.push_back({row->name, row->env, row->host, row->header, row->format, row->version, std::move(value)});
  }
  // Two records under one variable: the sandbox could hold only one placeholder.
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t k = i + 1; k < out.size(); ++k)
      if (!out[i].env.empty() && out[i].env == out[k].env)
        return Error(Errc::kInvalidArgument, "body.credentials: '" + out[i].name + "' and '" + out[k].name + "' both use " + out[i].env);
  return out;
}

void Credentials::renewStaleLeases(Sessions& sessions) {
  std::lock_guard lock(mu_);
  auto rows = store_.credentials(-1);
  if (!rows) return;
  for (const CredentialRow& c : *rows) {
    if (c.stale_leases == 0) continue;
    auto value = vault_.load(c.owner_uid, c.name);
    if (!value) {
      log::warn("credential_unreadable", "credential=" + c.name + " reason=" + log::value(value.error().message()));
      continue;
    }
    const Reach reach = pushValue(c.owner_uid, c.name, c.version, value->revealForInjection(), sessions);
    log::info("credential_rotation_finished", "credential=" + c.name + " version=" + std::to_string(c.version) +
                                                  " sessions_reached=" + std::to_string(reach.reached) +
                                                  " sessions_cut=" + std::to_string(reach.cut));
  }
}

Result<void> Credentials::catchUp(const std::string& session_id, int64_t owner, const std::vector<LeasedCredential>& leases,
                                  Sessions& sessions) {
  std::lock_guard lock(mu_);  // after any rotation in progress: it has sealed and bumped its version
  int64_t cut = 0;
  for (const LeasedCredential& l : leases) {
    ASSIGN_OR_RETURN(auto row, store_.credential(owner, l.name));
    if (!row || row->version <= l.version) continue;  // not rotated since the lease read it
    ASSIGN_OR_RETURN(Secret value, vault_.load(owner, l.name));
    const Reach reach = pushValue(owner, l.name, row->version, value.revealForInjection(), sessions, session_id);
    log::info("credential_lease_caught_up", "session=" + session_id + " credential=" + l.name + " version=" +
                                                std::to_string(row->version) + " sessions_reached=" + std::to_string(reach.reached) +
                                                " sessions_cut=" + std::to_string(reach.cut));
    cut += reach.cut;
  }
  if (cut > 0) return Error(Errc::kIo, "session " + session_id + ": its shim did not take a credential rotated while it was created");
  return {};
}

void Credentials::reconcile() {
  std::lock_guard lock(mu_);
  auto files = vault_.sealedFiles();
  if (!files) {
    log::warn("credential_reconcile_failed", "reason=" + log::value(files.error().message()));
    return;
  }
  for (const auto& [owner, name] : *files) {
    auto row = store_.credential(owner, name);
    if (!row) continue;
    if (!*row) {
      (void)vault_.remove(owner, name);
      log::info("credential_orphan_removed", "credential=" + log::value(name) + " owner_uid=" + std::to_string(owner));
      continue;
    }
    auto value = vault_.load(owner, name);
    if (!value) {
      log::warn("credential_unreadable", "credential=" + name + " reason=" + log::value(value.error().message()));
      continue;
    }
    const std::string fp = vault_.fingerprint(value->revealForInjection());
    // An ssh-key record shows its public key's fingerprint too: recomputed with the other.
    std::optional<std::string> ssh_fp;
    if (isSshKeyRecord((*row)->header))
      if (auto k = checkCredentialValue(kSshKeyKind, *value); k) ssh_fp = *k;
    if (fp != (*row)->fingerprint || (ssh_fp && *ssh_fp != (*row)->format)) {
      (void)store_.setCredentialFingerprint(owner, name, fp, ssh_fp ? &*ssh_fp : nullptr);
      log::info("credential_fingerprint_corrected", "credential=" + name);
    }
  }
}

}  // namespace corral::daemon
