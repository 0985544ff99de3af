// The drop / ECN-mark reporting seam.
//
// A queue manager or scheduler never just forgets a packet: it calls drop()
// (on arrival), drop_head() (at dequeue), evict() (from inside the queue) or
// mark_ecn() with a Reason. Verdicts counts the event against its (port,
// queue) and forwards every drop to the EventSink, which in virtual time feeds
// the per-packet log and the flows' outcomes and in live mode tells the
// endpoint to drop the real packet (exactly one verdict per request).
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

// Packets a router lost before they reached any queue, by reason (no_route,
// classifier_out_of_range): they have no (port, queue) to be counted against.
struct RouterLosses {
  uint64_t by_reason[kNumReasons] = {};
  uint64_t total() const {
    uint64_t n = 0;
    for (uint64_t v : by_reason) n += v;
    return n;
  }
};

class Verdicts {
 public:
  Verdicts() = default;
  Verdicts(QueueBank* bank, uint32_t router_id, EventSink* sink) : bank_(bank), router_id_(router_id), sink_(sink) {}

  // Set by the framework: the time once per batch, the queue before each
  // enqueue call.
  void set_now(Timeslot now) { now_ = now; }
  void set_context(PortId port, QueueId q) {
    port_ = port;
    queue_ = q;
  }

  // --- on arrival, for the packet being enqueued (the current port, queue)

  // The arriving packet is refused (not enqueued).
  void drop(const Packet& p, Reason r) {
    bank_->count_refusal();
    bank_->count_drop(port(), queue(), QueueBank::DropStage::kOnArrival, r);
    report(p, port(), r);
  }

  // CE-mark `p` if it is ECN-capable; returns false (and counts nothing) if it
  // is not, so the caller can drop instead, as RFC 3168 routers do.
  bool mark_ecn(Packet& p, Reason r) { return mark_ecn(p, port(), queue(), r); }

  // --- anywhere, naming the queue

  // CE-mark `p`, a packet of (port, q): on arrival, at dequeue, or in the queue.
  bool mark_ecn(Packet& p, PortId port, QueueId q, Reason r) {
    if (!p.ect()) return false;
    if (!p.ce()) {
      p.flags |= kFlagCe;
      bank_->count_mark(port, q, r);
    }
    return true;
  }

  // Drop the head of (port, q) instead of sending it; precondition: not empty.
  // Returns the dropped packet.
  Packet drop_head(PortId port, QueueId q, Reason r) {
    const Packet p = bank_->remove_at(port, q, 0);
    bank_->count_drop(port, q, QueueBank::DropStage::kAtDequeue, r);
    report(p, port, r);
    return p;
  }

  // Drop a packet already in the bank (`index` behind the head of port/q)
  // to make room for another (pFabric, FQ-CoDel's fattest flow).
  void evict(PortId port, QueueId q, uint32_t index, Reason r) {
    const Packet p = bank_->remove_at(port, q, index);
    bank_->count_drop(port, q, QueueBank::DropStage::kEvicted, r);
    report(p, port, r);
  }

  // --- the framework's own

  // Drop a packet that never reached a queue (no route, no such queue):
  // counted per router, reported to the sink with the port it was headed for.
  void drop_unqueued(const Packet& p, PortId port, Reason r) {
    ++losses_.by_reason[static_cast<unsigned>(r)];
    report(p, port, r);
  }

  const RouterLosses& losses() const { return losses_; }
  PortId port() const { return static_cast<PortId>(port_); }
  QueueId queue() const { return static_cast<QueueId>(queue_); }
  Timeslot now() const { return now_; }

 private:
  void report(const Packet& p, PortId port, Reason r) {
    if (sink_) sink_->on_drop(p, router_id_, port, r, now_);
  }

  QueueBank* bank_ = nullptr;
  uint32_t router_id_ = 0;
  EventSink* sink_ = nullptr;
  // Stored wider than PortId / QueueId: set_context() runs once per arrival, and
  // a store of a uint8_t (a char type) or uint16_t would oblige the compiler to
  // reload every bank field of those types after it (docs/performance.md, "The
  // saturated hot path").
  uint32_t port_ = 0;
  uint32_t queue_ = 0;
  Timeslot now_ = 0;
  RouterLosses losses_;
};

}  // namespace flexplane
