// The drop / ECN-mark reporting seam.
//
// A queue manager (or scheduler) never just forgets a packet: it calls drop(),
// evict() or mark_ecn() with a Reason. Verdicts counts the event against the
// current (port, queue) and forwards drops to the EventSink, which in virtual
// time feeds the per-packet log and in live mode tells the endpoint to drop
// the real packet.
#pragma once

#include <cstdint>

#include "api/packet.h"
#include "api/queue_bank.h"
#include "api/reason.h"

namespace flexplane {

// Receives every drop, from any router. Implementations must be cheap; they
// run on the router's core.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_drop(const Packet& p, uint32_t router_id, PortId port, Reason reason, Timeslot now) = 0;
};

class Verdicts {
 public:
  Verdicts() = default;
  Verdicts(QueueBank* bank, uint32_t router_id, EventSink* sink) : bank_(bank), router_id_(router_id), sink_(sink) {}

  // Set by the framework: the timeslot once per batch, the queue before each
  // enqueue call.
  void set_now(Timeslot now) { now_ = now; }
  void set_context(PortId port, QueueId q) {
    port_ = port;
    queue_ = q;
  }
  void set_context(PortId port, QueueId q, Timeslot now) {
    set_context(port, q);
    set_now(now);
  }

  // The arriving packet is refused (not enqueued).
  void drop(const Packet& p, Reason r) {
    bank_->count_refusal();
    QueueCounters& c = bank_->counters(port_, queue_);
    ++c.dropped_on_arrival;
    ++c.drops[static_cast<unsigned>(r)];
    if (sink_) sink_->on_drop(p, router_id_, port_, r, now_);
  }

  // CE-mark `p` if it is ECN-capable; returns false (and counts nothing) if it
  // is not, so the caller can drop instead, as RFC 3168 routers do.
  bool mark_ecn(Packet& p, Reason r) {
    if (!p.ect()) return false;
    if (!p.ce()) {
      p.flags |= kFlagCe;
      QueueCounters& c = bank_->counters(port_, queue_);
      ++c.marked;
      ++c.marks[static_cast<unsigned>(r)];
    }
    return true;
  }

  // Drop a packet already in the bank (`index` behind the head of port/q).
  void evict(PortId port, QueueId q, uint32_t index, Reason r) {
    const Packet p = bank_->remove_at(port, q, index);
    QueueCounters& c = bank_->counters(port, q);
    ++c.dropped_from_queue;
    ++c.drops[static_cast<unsigned>(r)];
    if (sink_) sink_->on_drop(p, router_id_, port, r, now_);
  }

  // Drop a packet that never reached a queue (e.g. no route): counted by the
  // router, reported to the sink.
  void drop_unrouted(const Packet& p, Reason r) {
    ++unrouted_;
    if (sink_) sink_->on_drop(p, router_id_, kNoRoute, r, now_);
  }

  uint64_t unrouted() const { return unrouted_; }
  PortId port() const { return port_; }
  QueueId queue() const { return queue_; }
  Timeslot now() const { return now_; }

 private:
  QueueBank* bank_ = nullptr;
  uint32_t router_id_ = 0;
  EventSink* sink_ = nullptr;
  PortId port_ = 0;
  QueueId queue_ = 0;
  Timeslot now_ = 0;
  uint64_t unrouted_ = 0;
};

}  // namespace flexplane
