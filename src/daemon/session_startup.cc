// SPDX-License-Identifier: Apache-2.0
// A profile's startup command and its readiness probe, run through the session's own commands.
#include <chrono>
#include <thread>

#include "base/log.h"
#include "daemon/sessions.h"

namespace corral::daemon {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Result<Json> Sessions::runStartup(const Peer& peer, const std::string& id, const StartupCommand& startup) {
  ASSIGN_OR_RETURN(Json started, startCommand(peer, id, startup.cmd));
  const int64_t cmd = started["id"].get<int64_t>();
  Json out = {{"cmd", cmd}, {"ready", !startup.ready.has_value()}, {"probes", 0}};
  if (!startup.ready) return out;
  const ReadinessProbe& probe = *startup.ready;
  const auto deadline = Clock::now() + probe.timeout;
  int64_t probes = 0, last_exit = -1;
  for (;;) {
    ASSIGN_OR_RETURN(Json p, startCommand(peer, id, probe.cmd));
    ++probes;
    const int64_t n = p["id"].get<int64_t>();
    // The probe's status, read as any client would (the shim spools it when it ends).
    for (;;) {
      ASSIGN_OR_RETURN(Json c, command(peer, id, n));
      if (c["state"] != "running" && c["state"] != "starting") {
        last_exit = c.contains("exit_code") && c["exit_code"].is_number_integer() ? c["exit_code"].get<int64_t>() : -1;
        break;
      }
      if (Clock::now() >= deadline) {
        (void)signalCommand(peer, id, n, 9);
        last_exit = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (last_exit == 0) break;
    if (Clock::now() + probe.interval >= deadline)
      return Error(Errc::kRefused, "the profile's readiness probe did not pass within " + std::to_string(probe.timeout.count()) +
                                       "ms (" + std::to_string(probes) + " tries, last exit " + std::to_string(last_exit) + ")");
    std::this_thread::sleep_for(probe.interval);
  }
  out["ready"] = true;
  out["probes"] = probes;
  log::info("session_ready", "session=" + id + " startup_cmd=" + std::to_string(cmd) + " probes=" + std::to_string(probes));
  audit_.append("session_startup_ready", peer, {{"session", id}, {"cmd", cmd}, {"probes", probes}});
  return out;
}

}  // namespace corral::daemon
