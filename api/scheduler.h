// Scheduler: which packet a port sends this timeslot.
//
// Write `bool schedule(PortId, Timeslot now, Packet& out)` in a class deriving
// from Scheduler<Self, Params>; it is called once per timeslot for each port
// whose queues are not all empty, and dequeues through bank().pop(...).
// Returning false leaves the port idle this timeslot (non-work-conserving).
#pragma once

#include <cstdint>

#include "api/component.h"
#include "api/packet.h"

namespace flexplane {

class SchedulerBase {
 public:
  virtual ~SchedulerBase() = default;
  virtual void bind(const ComponentEnv& env) = 0;
  // For each port in `ports` (all have backlog) pick at most one packet.
  // Returns the number written to out / out_ports.
  virtual uint32_t schedule_batch(const PortId* ports, uint32_t n, Timeslot now, Packet* out, PortId* out_ports) = 0;
};

template <class Derived, class P>
class Scheduler : public SchedulerBase, public Configured<P> {
 public:
  void bind(const ComponentEnv& env) override {
    this->env_ = env;
    static_cast<Derived*>(this)->on_bind();
  }
  void on_bind() {}  // optional hook: size per-port state from shape()

  uint32_t schedule_batch(const PortId* ports, uint32_t n, Timeslot now, Packet* out, PortId* out_ports) final {
    auto* self = static_cast<Derived*>(this);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; ++i) {
      if (self->schedule(ports[i], now, out[m])) out_ports[m++] = ports[i];
    }
    return m;
  }
};

}  // namespace flexplane
