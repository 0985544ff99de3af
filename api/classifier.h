// Classifier: which queue of the chosen output port a packet joins.
//
// Write `QueueId classify(const Packet&, PortId)` and `uint16_t num_queues()`
// in a class deriving from Classifier<Self, Params>; the base runs it over a
// batch with static dispatch (one virtual call per batch, not per packet).
// A queue the port does not have is not trusted: the packet is dropped as
// classifier_out_of_range and counted (losses.csv).
#pragma once

#include <cstdint>

#include "api/component.h"
#include "api/packet.h"

namespace flexplane {

class ClassifierBase : public ComponentBase {
 public:
  // Queues per port this classifier uses (1..64); decides the bank's shape.
  virtual uint16_t num_queues() const { return 1; }
  // True only for a classifier that puts every packet in queue 0 (the
  // framework's "single"): the router then skips classify_batch().
  virtual bool single_queue() const { return false; }
  // Writes queues[i] for each packet; returns whether any is out of range
  // (>= the bank's queues per port: the router drops those).
  virtual bool classify_batch(const Packet* pkts, const PortId* ports, QueueId* queues, uint32_t n) = 0;
};

template <class Derived, class P>
class Classifier : public ClassifierBase, public Configured<P> {
 public:
  void bind(const ComponentEnv& env) override {
    this->env_ = env;
    static_cast<Derived*>(this)->on_bind();
  }
  bool uses_enqueue_time() const override { return uses_enqueue_time_v<Derived>(); }
  bool classify_batch(const Packet* pkts, const PortId* ports, QueueId* queues, uint32_t n) final {
    auto* self = static_cast<Derived*>(this);
    const uint32_t limit = this->env_.shape.queues_per_port;
    bool bad = false;
    for (uint32_t i = 0; i < n; ++i) {
      const QueueId q = self->classify(pkts[i], ports[i]);
      queues[i] = q;
      bad |= q >= limit;
    }
    return bad;
  }
  void on_bind() {}  // optional hook: size per-port state from shape()
};

}  // namespace flexplane
