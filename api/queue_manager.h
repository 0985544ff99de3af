// Queue manager (AQM): accept a packet into the bank, drop it, or mark it;
// optionally also act when a packet leaves (drop or mark the head).
//
// Write `void enqueue(Packet&, PortId, QueueId, Timeslot now, Verdicts&)` in a
// class deriving from QueueManager<Self, Params>. Every packet must end in
// exactly one of bank().push(...) or out.drop(...); the framework checks and
// drops (Reason::kBankOverflow) anything a scheme left unaccounted, so no
// packet is ever silently lost.
//
// A queue manager that acts at dequeue (CoDel, PIE's delay measurement) also
// writes `bool dequeue(PortId, QueueId, Timeslot now, Packet& out, Verdicts&)`:
// the scheduler's dequeue() of a head packet then goes through it. It sends the
// head by `out = bank().pop(port, q)` and returns true, or drops heads with
// `v.drop_head(port, q, reason)` (counted as dropped_at_dequeue) and returns
// false if that emptied the queue; it may CE-mark with
// `v.mark_ecn(packet, port, q, reason)`.
#pragma once

#include <cstdint>

#include "api/component.h"
#include "api/packet.h"
#include "api/reason.h"
#include "api/verdicts.h"

namespace flexplane {

class QueueManagerBase : public ComponentBase {
 public:
  // Most packets any one queue may hold; sizes the bank's storage.
  virtual uint32_t queue_capacity_pkts() const = 0;
  // queues == nullptr: every packet joins queue 0 of its port (the
  // single-queue classifier; PatternRouter then skips classification).
  virtual void enqueue_batch(Packet* pkts, const PortId* ports, const QueueId* queues, uint32_t n, Timeslot now,
                             Verdicts& out) = 0;
  // Whether dequeue_head() does more than pop the head.
  virtual bool acts_at_dequeue() const { return false; }
  // The packet that leaves (port, q) now, if any; see the file comment.
  virtual bool dequeue_head(PortId port, QueueId q, Timeslot now, Packet& out, Verdicts& v) = 0;
};

template <class Derived, class P>
class QueueManager : public QueueManagerBase, public Configured<P> {
 public:
  void bind(const ComponentEnv& env) override {
    this->env_ = env;
    static_cast<Derived*>(this)->on_bind();
  }
  void on_bind() {}  // optional hook: size per-port state from shape()
  bool uses_enqueue_time() const override { return uses_enqueue_time_v<Derived>(); }

  void enqueue_batch(Packet* pkts, const PortId* ports, const QueueId* queues, uint32_t n, Timeslot now,
                     Verdicts& out) final {
    out.set_now(now);
    // With one queue per port the loop is compiled for queue 0 (no queue
    // array to read, and the queue's address follows from the port alone).
    if (queues)
      enqueue_loop<false>(pkts, ports, queues, n, now, out);
    else
      enqueue_loop<true>(pkts, ports, queues, n, now, out);
  }

  bool acts_at_dequeue() const final { return has_dequeue; }
  bool dequeue_head(PortId port, QueueId q, Timeslot now, Packet& out, Verdicts& v) final {
    if constexpr (has_dequeue && !uses_enqueue_time_v<Derived>()) {
      // Called from the scheduler's turn: name this queue manager, not the
      // scheduler, should it read enqueue times it did not declare (QueueBank::
      // set_reader). Schemes that declare them (CoDel, PIE) skip the two stores.
      QueueBank& b = this->bank();
      const char* const scheduler = b.reader();
      b.set_reader(this->env_.label);
      const bool sent = static_cast<Derived*>(this)->dequeue(port, q, now, out, v);
      b.set_reader(scheduler);
      return sent;
    } else if constexpr (has_dequeue) {
      return static_cast<Derived*>(this)->dequeue(port, q, now, out, v);
    } else {
      if (this->bank().empty(port, q)) return false;
      out = this->bank().pop(port, q);
      return true;
    }
  }

 private:
  template <bool kQueue0>
  [[gnu::always_inline]] void enqueue_loop(Packet* pkts, const PortId* ports, const QueueId* queues, uint32_t n,
                                           Timeslot now, Verdicts& out) {
    auto* self = static_cast<Derived*>(this);
    for (uint32_t i = 0; i < n; ++i) {
      // Locals: the stores below may alias the arrays as far as the compiler knows.
      const PortId port = ports[i];
      const QueueId q = kQueue0 ? QueueId{0} : queues[i];
      // bank() as the scheme reads it (not a copy hoisted out of the loop),
      // so that the compiler finds the queue once for the count and the push.
      QueueBank& b = this->bank();
      b.count_arrival(port, q);
      const uint64_t settled = b.settled();
      out.set_context(port, q);
      self->enqueue(pkts[i], port, q, now, out);
      if (__builtin_expect(b.settled() == settled, 0)) unaccounted(pkts[i], out);
    }
  }

  // A packet the scheme neither pushed nor dropped: dropped here (out of line:
  // the enqueue loop is every scheme's hot path).
  [[gnu::cold, gnu::noinline]] static void unaccounted(const Packet& p, Verdicts& out) {
    out.drop(p, Reason::kBankOverflow);
  }

  static constexpr bool has_dequeue = requires(Derived& d, PortId p, QueueId q, Timeslot t, Packet& o, Verdicts& v) {
    { d.dequeue(p, q, t, o, v) } -> std::same_as<bool>;
  };
};

}  // namespace flexplane
