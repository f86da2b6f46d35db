// SPDX-License-Identifier: Apache-2.0
// The warm pool: session sandboxes started before anyone asks (init, namespaces, root,
// filters, limits, an empty workspace), each claimed by exactly one create and never reused.
// One pool per spec: the daemon's default (--warm N) and each profile with "warm" > 0.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"
#include "daemon/json_fields.h"
#include "daemon/peer.h"
#include "daemon/session_spec.h"
#include "daemon/store.h"

namespace corral::daemon {

class Sessions;

class WarmPool {
 public:
  WarmPool(Sessions& sessions, Store& store, uint32_t default_warm) : sessions_(sessions), store_(store), default_warm_(default_warm) {}

  // The pool a create's spec would claim from: a hash of everything that shapes the sandbox
  // (limits, env, binds, egress; a profile's name, version and owner), not of what a claim
  // sets (name, ttl, workspace copy-in). nullopt: never pooled (it leases credentials).
  static std::optional<std::string> keyOf(const SessionSpec& spec, int64_t owner);
  // Whether a pool of that key is kept now (a claim tries it only then).
  bool kept(const std::string& key);
  // Targets again from --warm and every profile's newest version; members of any pool no
  // longer kept are drained at once (removing: no claim can take them), then destroyed.
  Result<void> refresh();
  // The warm count of every pool but the profile (owner, name): a profile add checks the cap.
  int64_t warmExcept(int64_t owner, const std::string& name);
  // A member was claimed or drained: the filler looks again.
  void wake();
  // A claim's wake-up of the filler, held until the create's response is written when a
  // DeferWakes is alive on this thread (the server's, around one request): the filler's fork
  // of the next member must not take the core the answer is waiting for.
  void wakeAfterResponse();
  class DeferWakes {
   public:
    DeferWakes();
    ~DeferWakes();  // the wakes held meanwhile happen here
    DeferWakes(const DeferWakes&) = delete;
    DeferWakes& operator=(const DeferWakes&) = delete;
  };
  // Fills one member at a time, destroys drained ones, backs off after failures. Its own thread.
  [[noreturn]] void run();
  // GET /v1/pool: the default pool and the peer's profiles' pools (root: all).
  Json status(const Peer& peer);

 private:
  struct Target {
    std::string key;
    std::optional<std::string> profile;
    int64_t owner = -1, version = 0;
    SessionSpec spec;
    int64_t warm = 0;
    int failures = 0;  // in a row; the next try waits 1 s << failures (at most 60 s)
    std::chrono::steady_clock::time_point next_try{};
  };
  Sessions& sessions_;
  Store& store_;
  const int64_t default_warm_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
  std::map<std::string, Target> targets_;  // by key
};

}  // namespace corral::daemon
