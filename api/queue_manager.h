// Queue manager (AQM): accept a packet into the bank, drop it, or mark it.
//
// Write `void enqueue(Packet&, PortId, QueueId, Timeslot now, Verdicts&)` in a
// class deriving from QueueManager<Self, Params>. Every packet must end in
// exactly one of bank().push(...) or out.drop(...); the framework checks and
// drops (Reason::kBankOverflow) anything a scheme left unaccounted, so no
// packet is ever silently lost.
#pragma once

#include <cstdint>

#include "api/component.h"
#include "api/packet.h"
#include "api/reason.h"
#include "api/verdicts.h"

namespace flexplane {

class QueueManagerBase {
 public:
  virtual ~QueueManagerBase() = default;
  // Most packets any one queue may hold; sizes the bank's storage.
  virtual uint32_t queue_capacity_pkts() const = 0;
  virtual void bind(const ComponentEnv& env) = 0;
  virtual void enqueue_batch(Packet* pkts, const PortId* ports, const QueueId* queues, uint32_t n, Timeslot now,
                             Verdicts& out) = 0;
};

template <class Derived, class P>
class QueueManager : public QueueManagerBase, public Configured<P> {
 public:
  void bind(const ComponentEnv& env) override {
    this->env_ = env;
    static_cast<Derived*>(this)->on_bind();
  }
  void on_bind() {}  // optional hook: size per-port state from shape()

  void enqueue_batch(Packet* pkts, const PortId* ports, const QueueId* queues, uint32_t n, Timeslot now,
                     Verdicts& out) final {
    auto* self = static_cast<Derived*>(this);
    QueueBank& b = this->bank();
    out.set_now(now);
    for (uint32_t i = 0; i < n; ++i) {
      // Locals: the stores below may alias the arrays as far as the compiler knows.
      const PortId port = ports[i];
      const QueueId q = queues[i];
      ++b.counters(port, q).arrived;
      const uint64_t settled = b.settled();
      out.set_context(port, q);
      self->enqueue(pkts[i], port, q, now, out);
      if (__builtin_expect(b.settled() == settled, 0)) out.drop(pkts[i], Reason::kBankOverflow);
    }
  }
};

}  // namespace flexplane
