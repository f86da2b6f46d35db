// SPDX-License-Identifier: Apache-2.0
// Warm pool targets, the filler thread, and what GET /v1/pool reports.
#include "daemon/warm_pool.h"

#include <algorithm>

#include "base/log.h"
#include "base/sha256.h"
#include "daemon/profile.h"
#include "daemon/sessions.h"

namespace corral::daemon {
namespace {

constexpr auto kMaxBackoff = std::chrono::seconds(60);

// This thread's DeferWakes depth, and the pools whose wake it holds (nullptr: none).
thread_local int t_defer_depth = 0;
thread_local WarmPool* t_deferred[4] = {};

}  // namespace

std::optional<std::string> WarmPool::keyOf(const SessionSpec& spec, int64_t owner) {
  // A leased secret or key is bound to one session at its start: never pooled.
  if (!spec.credentials.empty() || spec.ssh_key) return std::nullopt;
  SessionSpec shape = spec;
  shape.name.reset();
  shape.ttl.reset();
  shape.workspace_from.reset();
  // A profile's pool is its owner's alone (another uid's profile of the same name is another).
  const std::string who = spec.profile ? "owner=" + std::to_string(owner) + "\n" : std::string();
  return sha256Hex(who + dumpJson(sessionSpecJson(shape, /*with_env=*/true))).substr(0, 32);
}

bool WarmPool::kept(const std::string& key) {
  std::lock_guard lock(mu_);
  return targets_.count(key) > 0;
}

Result<void> WarmPool::refresh() {
  std::map<std::string, Target> next;
  if (default_warm_ > 0) {
    ASSIGN_OR_RETURN(SessionSpec spec, parseSessionSpec(Json::object()));
    Target t;
    t.key = *keyOf(spec, -1);
    t.spec = std::move(spec);
    t.warm = default_warm_;
    next[t.key] = std::move(t);
  }
  ASSIGN_OR_RETURN(auto rows, store_.profiles(-1));
  for (const ProfileRow& row : rows) {
    auto p = parseProfile(row.doc);
    if (!p || p->warm == 0) continue;
    auto spec = narrowProfile(*p, Json::object());
    if (!spec) continue;
    spec->profile = p->name;
    spec->profile_version = row.version;
    auto key = keyOf(*spec, row.owner_uid);
    if (!key) continue;
    Target t;
    t.key = *key;
    t.profile = p->name;
    t.owner = row.owner_uid;
    t.version = row.version;
    t.spec = std::move(*spec);
    t.warm = p->warm;
    next[t.key] = std::move(t);
  }
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mu_);
    for (auto& [key, t] : next) {
      keys.push_back(key);
      if (auto old = targets_.find(key); old != targets_.end()) {
        t.failures = old->second.failures;
        t.next_try = old->second.next_try;
      }
    }
    targets_ = std::move(next);
  }
  // Drained in the same call: a member of a pool no longer kept can never be claimed after it.
  ASSIGN_OR_RETURN(int64_t drained, store_.drainPools(keys));
  if (drained > 0) log::info("pool_drained", "members=" + std::to_string(drained));
  wake();
  return {};
}

int64_t WarmPool::warmExcept(int64_t owner, const std::string& name) {
  std::lock_guard lock(mu_);
  int64_t sum = 0;
  for (const auto& [key, t] : targets_)
    if (!(t.profile && *t.profile == name && t.owner == owner)) sum += t.warm;
  return sum;
}

void WarmPool::wake() {
  std::lock_guard lock(mu_);
  woken_ = true;
  cv_.notify_all();
}

void WarmPool::wakeAfterResponse() {
  if (t_defer_depth == 0) return wake();
  for (WarmPool*& slot : t_deferred) {
    if (slot == this) return;
    if (!slot) {
      slot = this;
      return;
    }
  }
  wake();  // no slot left: at once rather than never
}

WarmPool::DeferWakes::DeferWakes() { ++t_defer_depth; }

WarmPool::DeferWakes::~DeferWakes() {
  if (--t_defer_depth > 0) return;
  for (WarmPool*& slot : t_deferred) {
    if (slot) slot->wake();
    slot = nullptr;
  }
}

void WarmPool::run() {
  for (;;) {
    sessions_.destroyDrainedMembers();
    std::map<std::string, int64_t> have;
    if (auto counts = store_.poolCounts())
      for (const auto& [key, pooled, creating] : *counts) have[key] = pooled + creating;
    std::optional<Target> todo;
    auto wait_until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    {
      std::lock_guard lock(mu_);
      const auto now = std::chrono::steady_clock::now();
      double emptiest = 2;
      for (const auto& [key, t] : targets_) {
        const int64_t n = have[key];
        if (n >= t.warm) continue;
        if (t.next_try > now) {
          wait_until = std::min(wait_until, t.next_try);
          continue;
        }
        // The emptiest pool first, so one large pool does not starve the others.
        const double fill = static_cast<double>(n) / static_cast<double>(t.warm);
        if (fill < emptiest) {
          emptiest = fill;
          todo = t;
        }
      }
    }
    if (todo) {
      auto made = sessions_.fillPoolMember(todo->key, todo->spec);
      std::lock_guard lock(mu_);
      auto t = targets_.find(todo->key);
      if (t == targets_.end()) continue;
      if (made) {
        t->second.failures = 0;
        continue;
      }
      t->second.failures = std::min(t->second.failures + 1, 7);
      const auto backoff = std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(1) * (1 << (t->second.failures - 1)), kMaxBackoff);
      t->second.next_try = std::chrono::steady_clock::now() + backoff;
      log::warn("pool_fill_failed", "pool=" + todo->key + " failures=" + std::to_string(t->second.failures) +
                                        " retry_ms=" + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count()) +
                                        " reason=" + log::value(made.error().message()));
      continue;
    }
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, wait_until, [&] { return woken_; });
    woken_ = false;
  }
}

Json WarmPool::status(const Peer& peer) {
  std::map<std::string, std::pair<int64_t, int64_t>> have;
  if (auto counts = store_.poolCounts())
    for (const auto& [key, pooled, creating] : *counts) have[key] = {pooled, creating};
  std::lock_guard lock(mu_);
  Json pools = Json::array();
  int64_t total = 0;
  for (const auto& [key, t] : targets_) {
    total += t.warm;
    if (t.profile && !peer.mayAccess(t.owner)) continue;
    Json j = {{"kind", t.profile ? "profile" : "default"}, {"target", t.warm}, {"ready", have[key].first},
              {"starting", have[key].second}, {"failures", t.failures}};
    if (t.profile) j.update({{"profile", *t.profile}, {"profile_version", t.version}, {"owner_uid", t.owner}});
    pools.push_back(std::move(j));
  }
  return Json{{"cap", kMaxWarm}, {"target_total", total}, {"pools", pools}};
}

}  // namespace corral::daemon
