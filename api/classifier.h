// Classifier: which queue of the chosen output port a packet joins.
//
// Write `QueueId classify(const Packet&, PortId)` and `uint16_t num_queues()`
// in a class deriving from Classifier<Self, Params>; the base runs it over a
// batch with static dispatch (one virtual call per batch, not per packet).
#pragma once

#include <cstdint>

#include "api/component.h"
#include "api/packet.h"

namespace flexplane {

class ClassifierBase {
 public:
  virtual ~ClassifierBase() = default;
  // Queues per port this classifier uses (1..64); decides the bank's shape.
  virtual uint16_t num_queues() const { return 1; }
  virtual void bind(const ComponentEnv& env) = 0;
  virtual void classify_batch(const Packet* pkts, const PortId* ports, QueueId* queues, uint32_t n) = 0;
};

template <class Derived, class P>
class Classifier : public ClassifierBase, public Configured<P> {
 public:
  void bind(const ComponentEnv& env) override {
    this->env_ = env;
    static_cast<Derived*>(this)->on_bind();
  }
  void classify_batch(const Packet* pkts, const PortId* ports, QueueId* queues, uint32_t n) final {
    auto* self = static_cast<Derived*>(this);
    // Clamp rather than trust: an out-of-range queue must not corrupt the bank.
    const QueueId last = static_cast<QueueId>(this->env_.shape.queues_per_port - 1);
    for (uint32_t i = 0; i < n; ++i) {
      const QueueId q = self->classify(pkts[i], ports[i]);
      queues[i] = q < last ? q : last;
    }
  }
  void on_bind() {}  // optional hook: size per-port state from shape()
};

}  // namespace flexplane
