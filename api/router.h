// The generic router API: a router consumes the packets that arrive in a
// timeslot and emits at most one packet per output port per timeslot.
//
// Most schemes never implement this directly: PatternRouter (api/pattern_router.h)
// composes route -> classify -> enqueue -> schedule. Schemes that do not fit the
// pattern (e.g. a shared-buffer switch) derive from Router and WithParams<P>
// (api/params.h) and register with FLEXPLANE_REGISTER_ROUTER.
#pragma once

#include <cstdint>
#include <vector>

#include "api/packet.h"
#include "api/queue_bank.h"
#include "api/routing_table.h"
#include "api/scheme_stats.h"
#include "api/time.h"
#include "api/verdicts.h"

namespace flexplane {

struct RouterEnv {
  uint32_t router_id = 0;
  uint16_t num_ports = 0;
  uint32_t mtu_bytes = 1500;             // bytes of a full-sized (abstract) packet
  TimeBase time;                         // tick length and line rate (api/time.h)
  const RoutingTable* routes = nullptr;  // owned by the engine, outlives the router
  EventSink* sink = nullptr;             // may be null
  uint64_t seed = 1;                     // run seed; combine with router_id for streams
};

// A PFC pause frame (IEEE 802.1Qbb; api/pfc.h): from now on the neighbour
// on `port` may not send packets of the priorities set in `paused` (bit q:
// priority q, which is queue q of the neighbour's port towards us); 0 resumes
// all. Frames are edges: a router sends one when the set changes.
struct PauseFrame {
  PortId port = 0;
  uint8_t paused = 0;
};

class PfcState;  // api/pfc.h

class Router {
 public:
  virtual ~Router() = default;
  virtual void bind(const RouterEnv& env) = 0;
  // Packets arriving at `now`, in input-port order; the engine may split a
  // timeslot's arrivals over several calls (its rack's endpoints first, then
  // other routers), all before output(). The router takes them all: each is
  // queued or dropped (with a reason). It may reorder or overwrite `pkts`.
  virtual void input(Packet* pkts, uint32_t n, Timeslot now) = 0;
  // Packets that arrived one after another, in this order (router mode's
  // receive bursts): taken in exactly that order. By default the same as
  // input(); a router that reorders simultaneous arrivals (PatternRouter
  // rotates them, for fairness among inputs) must not reorder these.
  virtual void input_in_order(Packet* pkts, uint32_t n, Timeslot now) { input(pkts, n, now); }
  // Emit at most one packet per output port; returns how many were written.
  // `out` and `out_ports` have room for num_ports entries.
  virtual uint32_t output(Timeslot now, Packet* out, PortId* out_ports) = 0;
  // Router mode's burst dequeue: up to `max` packets leaving `port` at `now`,
  // in departure order; fewer when the port runs dry or its scheduler idles
  // it. Each is the packet one more output() at the same `now` would have
  // sent there, so the result is output() called up to `max` times, in one
  // call. The default does exactly that; it needs a router bound with
  // num_ports == 1 (router mode binds each port's scheme so), since output()
  // may send on every port. The emulator keeps calling output().
  virtual uint32_t dequeue_burst(PortId port, Timeslot now, uint32_t max, Packet* out) {
    uint32_t m = 0;
    PortId sent_on;
    while (m < max && output(now, out + m, &sent_on) == 1 && sent_on == port) ++m;
    return m;
  }
  // True if output() names each port at most once per timeslot, only ports
  // < num_ports, in increasing port order; the engine then skips checking
  // that (PatternRouter: true).
  virtual bool one_packet_per_port() const { return false; }
  // True if every packet leaves on a port the routing table names for its
  // destination, and a port sends only while bank() holds a packet for it.
  // The engine can then tell from the tables and the bank when a link to
  // another core must stay idle (lookahead; PatternRouter: true).
  virtual bool forwards_by_table() const { return false; }
  // True if output() at a timeslot in which no packet arrived (no input()
  // call) and bank() holds no packet sends nothing and changes nothing that a
  // later call, bank() or sample_stats() could see: no timers, no periodic
  // updates that run on their own. The engine then skips such calls, and the
  // router's whole timeslot, when it has nothing to do ("Cost in proportion
  // to activity", docs/design.md); it keeps the object bank() returns after
  // bind(), once. PatternRouter: true (its scheduler is asked
  // only for backlogged ports, and components update lazily on packets).
  virtual bool idles_when_empty() const { return false; }
  // Lossless fabrics (PFC; api/pfc.h, docs/design.md "PFC"). A router that
  // pauses() takes its arrivals through input_from(), with each packet's
  // ingress port, and after each output() hands over the pause frames it
  // sends (pause_frames(); at most one per port); the engine carries each to
  // the neighbour on that port with the link's latency, where the neighbour's
  // pause() applies it. Any router may be paused: by default it ignores it.
  virtual bool pauses() const { return false; }
  virtual void input_from(Packet* pkts, const PortId* ingress, uint32_t n, Timeslot now) { input(pkts, n, now); }
  // `out` has room for num_ports frames; returns how many were written.
  virtual uint32_t pause_frames(Timeslot /*now*/, PauseFrame* /*out*/) { return 0; }
  virtual void pause(PortId /*port*/, uint8_t /*paused*/, Timeslot /*now*/) {}
  // Pause counters and state, for outputs (null: no PFC).
  virtual const PfcState* pfc() const { return nullptr; }
  // The framework-owned accounting (occupancy, counters).
  virtual const QueueBank& bank() const = 0;
  // Packets dropped before reaching any queue, by reason (no_route,
  // classifier_out_of_range); each was also reported to the EventSink.
  virtual const RouterLosses& losses() const = 0;
  // The scheme's own statistics (api/scheme_stats.h), sampled per port
  // beside the occupancy; none by default.
  virtual std::vector<StatDesc> stat_descs() const { return {}; }
  virtual void sample_stats(PortId port, StatsOut& out) const {}
};

}  // namespace flexplane
