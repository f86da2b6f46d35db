// SPDX-License-Identifier: Apache-2.0
// GET /v1/events: server-sent events from the bus (events.h), one subscription per connection.
#include "daemon/api.h"
#include "daemon/events.h"

namespace corral::daemon {

std::optional<ApiResponse> routeEvents(const ApiRequest& req, ApiContext& ctx) {
  if (req.segments.size() != 2 || req.segments[1] != "events") return std::nullopt;
  if (req.method != "GET") return errorResponse(405, "method_not_allowed", "GET");
  if (!req.body.empty()) return errorResponse(400, "invalid_request", "GET takes no body");
  auto sub = ctx.events.subscribe(req.peer);
  if (!sub) return errorResponse(503, "busy", "too many event subscribers");
  // Unsubscribed when the stream's last copy goes, also if the stream never ran (the client
  // left before the head was written).
  struct Held {
    EventBus& bus;
    std::shared_ptr<EventBus::Subscription> sub;
    ~Held() { bus.unsubscribe(sub); }
  };
  std::shared_ptr<Held> held(new Held{ctx.events, sub});  // never a temporary: its destructor unsubscribes
  ApiResponse res;
  res.content_type = "text/event-stream";
  res.stream = [held](const ChunkWriter& write) {
    const auto& sub = held->sub;
    // The first line at once: the client knows it is subscribed before any event.
    bool open = write(": corral events v1\n\n");
    std::deque<Event> batch;
    while (open) {
      uint64_t lost = 0;
      sub->next(batch, lost, 15'000);
      if (lost > 0) {
        Event gap;
        gap.name = "lost";
        gap.data = dumpJson({{"event", "lost"}, {"dropped", lost}});
        open = write("event: lost\ndata: " + gap.data + "\n\n");
      }
      // A write blocks while the client does not read, at most the connection's I/O timeout;
      // meanwhile the bus queues at most the cap for it and counts the rest.
      for (const Event& e : batch)
        if (open) open = write(sseFrame(e));
      if (batch.empty() && lost == 0 && open) open = write(": keepalive\n\n");
      batch.clear();
    }
  };
  return res;
}

}  // namespace corral::daemon
