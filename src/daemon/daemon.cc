// SPDX-License-Identifier: Apache-2.0
// The daemon's life: lock, store, reconcile, listen, serve, stop.
#include "daemon/daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "base/log.h"
#include "base/unique_fd.h"
#include "daemon/audit_log.h"
#include "daemon/credential_vault.h"
#include "daemon/credentials.h"
#include "daemon/events.h"
#include "daemon/profile.h"
#include "daemon/profiles.h"
#include "daemon/server.h"
#include "daemon/sessions.h"
#include "daemon/store.h"
#include "daemon/warm_pool.h"

namespace corral::daemon {
namespace {

Result<UniqueFd> prepareStateDir(const std::string& dir) {
  if (dir.empty() || dir[0] != '/') return Error(Errc::kInvalidArgument, "--state-dir " + dir + ": an absolute path is required");
  // Parents as the user's (0700 for the last one, which holds secrets and the database).
  for (size_t pos = 1; (pos = dir.find('/', pos)) != std::string::npos; ++pos) ::mkdir(dir.substr(0, pos).c_str(), 0700);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return sysError("mkdir " + dir);
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d.valid()) return sysError("open " + dir);
  struct stat st;
  if (::fstat(d.get(), &st) != 0) return sysError("stat " + dir);
  if (st.st_uid != ::geteuid()) return Error(Errc::kRefused, dir + " belongs to uid " + std::to_string(st.st_uid));
  if (::fchmod(d.get(), 0700) != 0) return sysError("chmod " + dir);
  UniqueFd lock(::openat(d.get(), "daemon.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock.valid()) return sysError("open " + dir + "/daemon.lock");
  // A daemon killed with kill -9 while it was forking a shim leaves, for a moment, a child
  // that holds the lock's open file until it execs (the fd is O_CLOEXEC): a restart that comes
  // within that moment waits a little for it instead of being refused.
  for (int attempt = 0; ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0; ++attempt) {
    if (errno != EWOULDBLOCK) return sysError("flock " + dir + "/daemon.lock");
    if (attempt == 100) return Error(Errc::kRefused, "another corral daemon is running on " + dir);
    ::poll(nullptr, 0, 10);
  }
  if (::mkdirat(d.get(), "sessions", 0700) != 0 && errno != EEXIST) return sysError("mkdir " + dir + "/sessions");
  return lock;
}

}  // namespace

int runDaemon(const DaemonOptions& opts) {
  log::setLevel(log::Level::kInfo);  // one line per event: the daemon's log is its record
  auto fail = [](const Error& e) {
    std::fprintf(stderr, "corral: daemon: %s\n", e.message().c_str());
    return 125;
  };
  // The signals that stop it, read from a signalfd; SIGPIPE is a write error, not a death.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  ::sigprocmask(SIG_BLOCK, &stop, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  UniqueFd stop_fd(::signalfd(-1, &stop, SFD_CLOEXEC));
  if (!stop_fd.valid()) return fail(sysError("signalfd"));
  auto lock = prepareStateDir(opts.state_dir);
  if (!lock) return fail(lock.error());
  auto store = Store::open(opts.state_dir + "/state.db");
  if (!store) return fail(store.error());
  auto core = [] {
    char self[4096];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    return n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
  }();
  auto audit = AuditLog::open(opts.state_dir);
  if (!audit) return fail(audit.error());
  // Lines the last daemon's claims committed with their state change but a power cut may have
  // taken from the log's end (audit_log.h, Reservation): back before anything else is written.
  {
    auto kept = store->auditOutbox();
    if (!kept) return fail(kept.error());
    auto replayed = audit->replay(*kept);
    if (!replayed) return fail(replayed.error());
    if (auto cleared = store->clearAuditOutbox(); !cleared) return fail(cleared.error());
    if (*replayed > 0) log::info("audit_replayed", "lines=" + std::to_string(*replayed));
  }
  audit->appendSelf("daemon_started", {{"schema_version", kSchemaVersion}});
  auto vault = CredentialVault::open(opts.state_dir);
  if (!vault) return fail(vault.error());
  Credentials credentials(*store, *vault, *audit);
  credentials.reconcile();
  // Every audit event also goes to the event stream, to the uid whose session or record it is.
  EventBus events(opts.event_queue);
  Store& db = *store;
  audit->setObserver([&events, &db](const std::string& event, const Peer& peer, const Json& fields) {
    int64_t owner = peer.pid == ::getpid() ? -1 : static_cast<int64_t>(peer.uid);
    if (fields.contains("owner_uid") && fields["owner_uid"].is_number_integer()) {
      owner = fields["owner_uid"].get<int64_t>();
    } else if (fields.contains("session") && fields["session"].is_string()) {
      if (auto row = db.session(fields["session"].get<std::string>()); row && *row) owner = (*row)->owner_uid;
    }
    Json shown = fields;
    shown.erase("owner_uid");
    events.publish(event, owner, shown);
  });
  Sessions sessions(*store, *audit, opts.state_dir, core, opts.freezer);
  sessions.setEvents(&events);
  // --warm: a plain create must work here, or the pool would fill and fail forever.
  if (opts.warm > 0 && !sessions.workspaceCapped())
    return fail(Error(Errc::kUnsupported, "--warm: a plain create is refused on this host (no mechanism can cap a session's "
                                          "workspace); give a profile with allow_weaker a warm count instead"));
  WarmPool pool(sessions, *store, opts.warm);
  sessions.setPool(&pool);
  // Before reconcile: members of pools no longer kept (another --warm, a profile changed while
  // no daemon ran) are drained, so reconcile removes them instead of adopting them.
  if (auto r = pool.refresh(); !r) return fail(r.error());
  // The cap counts --warm with every stored profile's warm (a profile add checks it too).
  if (const int64_t total = pool.warmExcept(-1, ""); total > kMaxWarm)
    return fail(Error(Errc::kInvalidArgument, "--warm " + std::to_string(opts.warm) + ": with the profiles' warm counts, " +
                                                  std::to_string(total) + " warm sandboxes, over the cap of " + std::to_string(kMaxWarm)));
  sessions.reconcile();
  credentials.renewStaleLeases(sessions);  // a rotation the daemon's death cut short reaches its sessions now
  std::thread([&sessions] { sessions.runExpiry(); }).detach();  // after reconcile: expired while away go first
  std::thread([&sessions] { sessions.runWatcher(); }).detach();
  std::thread([&pool] { pool.run(); }).detach();
  auto server = Server::listen({opts.socket, opts.allow_group});
  if (!server) return fail(server.error());
  log::info("daemon_ready", "socket=" + log::value(opts.socket) + " pid=" + std::to_string(::getpid()) +
                                " schema_version=" + std::to_string(kSchemaVersion) + " freezer=" + sessions.freezerName() + " warm=" + std::to_string(opts.warm));
  Profiles profiles(*store, *audit);
  profiles.setPool(&pool);
  ApiContext ctx{sessions, credentials, profiles, events};
  server->serve(ctx, stop_fd.get());
  if (opts.stop_sessions) sessions.stopAll();
  log::info("daemon_stopped", opts.stop_sessions ? "sessions=stopped" : "sessions=left_running");
  // Connection threads may still hold ctx: leave without running destructors under them.
  std::fflush(stderr);
  ::_exit(0);
}

}  // namespace corral::daemon
