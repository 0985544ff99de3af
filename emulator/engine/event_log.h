// Per-core record of what happened to packets: drops always (they decide
// which flows can finish), deliveries only when the per-packet log is on.
// Each core appends to its own log; the engine merges and sorts at the end,
// so the result does not depend on how nodes were spread over cores.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "api/packet.h"
#include "api/reason.h"
#include "api/verdicts.h"

namespace flexplane {

struct PacketEvent {
  enum Kind : uint8_t { kDelivered = 0, kDropped = 1 };
  Timeslot time = 0;
  uint32_t flow = 0;
  uint32_t seq = 0;
  EndpointId src = 0;
  EndpointId dst = 0;
  uint32_t router = 0;   // dropping router (drops only)
  PortId port = 0;       // output port at the dropping router (drops only)
  Kind kind = kDelivered;
  Reason reason = Reason::kCount;  // drops only
  bool ce = false;                 // deliveries: arrived CE-marked

  auto key() const { return std::make_tuple(time, kind, flow, seq, router, port); }
  bool operator==(const PacketEvent& o) const {
    return key() == o.key() && src == o.src && dst == o.dst && reason == o.reason && ce == o.ce;
  }
};

class EventLog final : public EventSink {
 public:
  explicit EventLog(bool log_deliveries = false) : log_deliveries_(log_deliveries) {}

  // Also pass every drop to `forward`; keep drops in memory only if `record`.
  void set_drop_handling(EventSink* forward, bool record) {
    forward_ = forward;
    record_drops_ = record;
  }

  void on_drop(const Packet& p, uint32_t router_id, PortId port, Reason reason, Timeslot now) override {
    if (forward_) forward_->on_drop(p, router_id, port, reason, now);
    if (!record_drops_) return;
    PacketEvent e = event_for(p, now);
    e.router = router_id;
    e.port = port;
    e.kind = PacketEvent::kDropped;
    e.reason = reason;
    events_.push_back(e);
  }

  bool log_deliveries() const { return log_deliveries_; }
  void on_deliver(const Packet& p, Timeslot now) {
    PacketEvent e = event_for(p, now);
    e.kind = PacketEvent::kDelivered;
    e.ce = p.ce();
    events_.push_back(e);
  }

  const std::vector<PacketEvent>& events() const { return events_; }
  std::vector<PacketEvent>& events() { return events_; }

 private:
  static PacketEvent event_for(const Packet& p, Timeslot now) {
    PacketEvent e;
    e.time = now;
    e.flow = p.flow;
    e.seq = p.seq;
    e.src = p.src;
    e.dst = p.dst;
    return e;
  }

  bool log_deliveries_;
  EventSink* forward_ = nullptr;
  bool record_drops_ = true;
  std::vector<PacketEvent> events_;
};

inline void sort_events(std::vector<PacketEvent>& ev) {
  std::sort(ev.begin(), ev.end(), [](const PacketEvent& a, const PacketEvent& b) { return a.key() < b.key(); });
}

}  // namespace flexplane
