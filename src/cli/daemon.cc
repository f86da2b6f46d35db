// SPDX-License-Identifier: Apache-2.0
// `corral daemon`: options into daemon::DaemonOptions.
#include "cli/daemon.h"

#include <grp.h>

#include <cstdio>
#include <cstdlib>

#include "cli/daemon_args.h"
#include "cli/option_echo.h"
#include "daemon/audit_log.h"
#include "daemon/daemon.h"
#include "daemon/paths.h"

namespace corral::cli {
namespace {

constexpr char kUsage[] =
    "usage: corral daemon [--state-dir DIR] [--socket PATH] [--allow-group GROUP] [--stop-sessions] [--event-queue N]\n"
    "                     [--freezer auto|v1|v2] [--warm N]\n"
    "  Serves the session API over a UNIX socket, in the foreground; one logfmt line per event on\n"
    "  stderr. Defaults: /var/lib/corral and /run/corral/api.sock as root, else\n"
    "  $XDG_STATE_HOME/corral (~/.local/state/corral) and $XDG_RUNTIME_DIR/corral/api.sock.\n"
    "  SIGTERM stops it and leaves sessions running (--stop-sessions: ends them too).\n"
    "  --event-queue N: events held for each GET /v1/events subscriber that is not reading (1024);\n"
    "  past it, that subscriber loses events (counted, and told how many) instead of the daemon growing.\n"
    "  --freezer: what pause uses: the cgroup v1 freezer, cgroup v2's cgroup.freeze, or auto (v1 if\n"
    "  usable, else v2); corral doctor says what auto finds.\n"
    "  --warm N: keeps N sandboxes (0 to 64) started for creates with no options, so such a create\n"
    "  only claims one; refilled in the background, never reused (profiles have their own \"warm\").\n"
    "usage: corral daemon verify-log STATE/audit.jsonl\n"
    "  Checks the daemon's hash-chained event log: exit 0 when every line chains, 1 where it breaks.\n";

}  // namespace

int daemonMain(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!args.empty() && args[0] == "verify-log") {
    if (args.size() != 2) {
      std::fprintf(stderr, "corral: daemon: usage: corral daemon verify-log STATE/audit.jsonl\n");
      return 125;
    }
    auto n = daemon::verifyAuditLog(args[1]);
    if (!n) {
      std::fprintf(stderr, "corral: daemon: verify-log: %s\n", oneLine(n.error().message()).c_str());
      return n.error().isErrno() ? 125 : 1;
    }
    std::printf("ok: %lld events, the chain holds\n", static_cast<long long>(*n));
    return 0;
  }
  auto scanned = scanArgs(args, {{"--state-dir", true}, {"--socket", true}, {"--allow-group", true}, {"--stop-sessions", false},
                                  {"--event-queue", true}, {"--freezer", true}, {"--warm", true}}, 0);
  if (!scanned || !scanned->rest.empty()) {
    std::fprintf(stderr, "corral: daemon: %s (try corral daemon --help)\n",
                 scanned ? "takes no arguments" : oneLine(scanned.error().message()).c_str());
    return 125;
  }
  daemon::DaemonOptions opts;
  opts.state_dir = scanned->has("--state-dir") ? scanned->get("--state-dir") : daemon::defaultStateDir();
  opts.socket = scanned->has("--socket") ? scanned->get("--socket") : daemon::defaultSocket();
  opts.stop_sessions = scanned->has("--stop-sessions");
  if (scanned->has("--event-queue")) {
    const std::string v = scanned->get("--event-queue");
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || v[0] == '-' || n < 1 || n > 1'000'000) {
      std::fprintf(stderr, "corral: daemon: --event-queue: a count from 1 to 1000000\n");
      return 125;
    }
    opts.event_queue = static_cast<size_t>(n);
  }
  if (scanned->has("--warm")) {
    const std::string v = scanned->get("--warm");
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || v[0] == '-' || v[0] == '+' || v.size() > 3 || n > 64) {
      std::fprintf(stderr, "corral: daemon: --warm: a count from 0 to 64\n");
      return 125;
    }
    opts.warm = static_cast<uint32_t>(n);
  }
  if (scanned->has("--freezer")) {
    const std::string v = scanned->get("--freezer");
    if (v != "auto" && v != "v1" && v != "v2") {
      std::fprintf(stderr, "corral: daemon: --freezer: auto, v1 or v2\n");
      return 125;
    }
    opts.freezer = v == "v1" ? daemon::FreezerChoice::kV1 : v == "v2" ? daemon::FreezerChoice::kV2 : daemon::FreezerChoice::kAuto;
  }
  if (scanned->has("--allow-group")) {
    const std::string name = scanned->get("--allow-group");
    const group* g = ::getgrnam(name.c_str());
    if (!g) {
      std::fprintf(stderr, "corral: daemon: --allow-group %s: no such group\n", oneLine(name).c_str());
      return 125;
    }
    opts.allow_group = g->gr_gid;
  }
  return daemon::runDaemon(opts);
}

}  // namespace corral::cli
