// SPDX-License-Identifier: Apache-2.0
// The event stream (GET /v1/events, server-sent events): what the audit log records (session
// lifecycle, commands started and exited, credential uses, profiles) plus egress decision
// counts, fanned out to subscribers. Each subscriber has a bounded queue: one that does not
// read loses events (counted, and told how many once it reads again) instead of growing the
// daemon. Ids, counts and decisions only, as in the audit log.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/json_fields.h"
#include "daemon/peer.h"

namespace corral::daemon {

inline constexpr size_t kDefaultEventQueue = 1024;        // events per subscriber
inline constexpr size_t kMaxEventQueueBytes = 1u << 20;   // and their bytes
inline constexpr int kMaxSubscribers = 64;

struct Event {
  uint64_t id = 0;
  std::string name;
  std::string data;  // the event's JSON, one line
};

class EventBus {
 public:
  explicit EventBus(size_t queue_cap = kDefaultEventQueue) : cap_(queue_cap) {}

  // owner: the uid whose session or record it concerns; -1: the daemon's own (root only).
  void publish(const std::string& name, int64_t owner, const Json& fields);

  class Subscription {
   public:
    // Waits up to timeout_ms for events; moves out what is queued, and how many were dropped
    // since the last call. False once the bus closed the subscription.
    bool next(std::deque<Event>& out, uint64_t& dropped, int timeout_ms);

   private:
    friend class EventBus;
    Peer peer;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Event> queue;
    size_t bytes = 0;
    uint64_t dropped = 0, dropped_total = 0;
  };
  // nullptr when kMaxSubscribers are connected.
  std::shared_ptr<Subscription> subscribe(const Peer& peer);
  void unsubscribe(const std::shared_ptr<Subscription>& s);

  uint64_t published() const;
  uint64_t dropped() const;  // over every subscriber, ever

 private:
  const size_t cap_;
  mutable std::mutex mu_;
  uint64_t next_id_ = 1, dropped_ = 0;
  std::list<std::shared_ptr<Subscription>> subs_;
};

// "id: N\nevent: NAME\ndata: JSON\n\n"
std::string sseFrame(const Event& e);

}  // namespace corral::daemon
