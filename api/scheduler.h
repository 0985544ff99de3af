// Scheduler: which packet a port sends this timeslot.
//
// Write `bool schedule(PortId, Timeslot now, Packet& out)` in a class deriving
// from Scheduler<Self, Params>; it is called once per timeslot for each port
// whose queues are not all empty. It takes the head of a queue with
// `dequeue(port, q, now, out)`, which goes through the queue manager when that
// acts at dequeue (CoDel) and so may return false when drops emptied the
// queue: then pick again, or return false to leave the port idle this
// timeslot (also what a non-work-conserving scheduler does). A scheduler that
// sends from behind the head uses bank().pop_at(...) and bypasses the queue
// manager's dequeue hook. verdicts() reports drops and marks a scheduler
// makes itself. In router mode schedule() is called several times in a row
// for one port at the same `now` (a burst, as many packets as the link may
// send); keep no state that assumes one call per timeslot.
#pragma once

#include <concepts>
#include <cstdint>

#include "api/component.h"
#include "api/packet.h"
#include "api/queue_manager.h"

namespace flexplane {

class SchedulerBase : public ComponentBase {
 public:
  // For each port with backlog pick at most one packet, in port order: bit b
  // of nonempty[w] is port 64 w + b (a copy of the bank's port mask taken
  // before the first pick). Returns the number written to out / out_ports.
  virtual uint32_t schedule_ports(const uint64_t* nonempty, uint32_t words, Timeslot now, Packet* out,
                                  PortId* out_ports) = 0;
  // Router mode: up to `max` packets of one backlogged port at `now`, by
  // calling schedule() while it sends and the port has backlog.
  virtual uint32_t schedule_burst(PortId port, Timeslot now, uint32_t max, Packet* out) = 0;
  // Whether it picks queues only through bank().nonempty_queues(), which
  // leaves out queues paused by PFC (api/pfc.h): declare `static constexpr
  // bool kHonoursPause = true;`. PFC with several queues per port needs it;
  // with one, the router never offers a paused port.
  virtual bool honours_pause() const { return false; }
};

template <class Derived, class P>
class Scheduler : public SchedulerBase, public Configured<P> {
 public:
  void bind(const ComponentEnv& env) override {
    this->env_ = env;
    static_cast<Derived*>(this)->on_bind();
  }
  void on_bind() {}  // optional hook: size per-port state from shape()
  bool uses_enqueue_time() const override { return uses_enqueue_time_v<Derived>(); }
  bool honours_pause() const override {
    if constexpr (requires { Derived::kHonoursPause; })
      return Derived::kHonoursPause;
    else
      return false;
  }

  uint32_t schedule_ports(const uint64_t* nonempty, uint32_t words, Timeslot now, Packet* out,
                          PortId* out_ports) final {
    auto* self = static_cast<Derived*>(this);
    this->env_.verdicts->set_now(now);
    uint32_t m = 0;
    for (uint32_t w = 0; w < words; ++w) {
      for (uint64_t bits = nonempty[w]; bits; bits &= bits - 1) {
        const PortId port = static_cast<PortId>(w * 64 + __builtin_ctzll(bits));
        if (self->schedule(port, now, out[m])) out_ports[m++] = port;
      }
    }
    return m;
  }

  uint32_t schedule_burst(PortId port, Timeslot now, uint32_t max, Packet* out) final {
    auto* self = static_cast<Derived*>(this);
    this->env_.verdicts->set_now(now);
    uint32_t m = 0;
    while (m < max && this->bank().port_packets(port) > 0 && self->schedule(port, now, out[m])) ++m;
    return m;
  }

 protected:
  // Take the head of (port, q): through the queue manager if it acts at
  // dequeue, else a plain pop. Precondition: the queue is not empty. False
  // if the queue manager's drops emptied it.
  bool dequeue(PortId port, QueueId q, Timeslot now, Packet& out) {
    if (QueueManagerBase* qm = this->env_.dequeuer) return qm->dequeue_head(port, q, now, out, *this->env_.verdicts);
    out = this->bank().pop(port, q);
    return true;
  }
  Verdicts& verdicts() { return *this->env_.verdicts; }
};

}  // namespace flexplane
