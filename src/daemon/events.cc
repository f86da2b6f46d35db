// SPDX-License-Identifier: Apache-2.0
// Fan-out of events to bounded subscriber queues.
#include "daemon/events.h"

#include <chrono>

#include "base/log.h"

namespace corral::daemon {

void EventBus::publish(const std::string& name, int64_t owner, const Json& fields) {
  Event e;
  e.name = name;
  Json j = fields;
  std::lock_guard lock(mu_);
  e.id = next_id_++;
  j["event"] = name;
  j["id"] = e.id;
  e.data = dumpJson(j);
  for (const auto& s : subs_) {
    const bool may = owner < 0 ? s->peer.uid == 0 : s->peer.mayAccess(owner);
    if (!may) continue;
    std::lock_guard sl(s->mu);
    if (s->queue.size() >= cap_ || s->bytes + e.data.size() > kMaxEventQueueBytes) {
      // Counted, never queued: a subscriber that does not read costs at most its cap.
      if (s->dropped_total++ == 0)
        log::warn("events_dropped", "peer_uid=" + std::to_string(s->peer.uid) + " peer_pid=" + std::to_string(s->peer.pid) +
                                        " queue=" + std::to_string(s->queue.size()));
      ++s->dropped;
      ++dropped_;
      continue;
    }
    s->bytes += e.data.size();
    s->queue.push_back(e);
    s->cv.notify_one();
  }
}

bool EventBus::Subscription::next(std::deque<Event>& out, uint64_t& lost, int timeout_ms) {
  std::unique_lock lock(mu);
  cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return !queue.empty() || dropped > 0; });
  out.swap(queue);
  queue.clear();
  bytes = 0;
  lost = dropped;
  dropped = 0;
  return true;
}

std::shared_ptr<EventBus::Subscription> EventBus::subscribe(const Peer& peer) {
  std::lock_guard lock(mu_);
  if (subs_.size() >= static_cast<size_t>(kMaxSubscribers)) return nullptr;
  auto s = std::make_shared<Subscription>();
  s->peer = peer;
  subs_.push_back(s);
  return s;
}

void EventBus::unsubscribe(const std::shared_ptr<Subscription>& s) {
  std::lock_guard lock(mu_);
  subs_.remove(s);
  std::lock_guard sl(s->mu);
  if (s->dropped_total > 0)
    log::info("events_subscriber_gone", "peer_uid=" + std::to_string(s->peer.uid) + " peer_pid=" + std::to_string(s->peer.pid) +
                                            " dropped=" + std::to_string(s->dropped_total));
}

uint64_t EventBus::published() const {
  std::lock_guard lock(mu_);
  return next_id_ - 1;
}

uint64_t EventBus::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

std::string sseFrame(const Event& e) { return "id: " + std::to_string(e.id) + "\nevent: " + e.name + "\ndata: " + e.data + "\n\n"; }

}  // namespace corral::daemon
