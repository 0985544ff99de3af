// Load balancer: which of a destination's equal-cost ports a packet leaves by.
//
// The route stage of the pattern API. The routing table gives each
// destination its candidate ports (api/routing_table.h); when there is more
// than one, the router's load balancer picks. The default, `ecmp`, hashes the
// flow (salted per router): every packet of a flow takes one path, and the
// router does it inline with no call at all. Others (schemes/load_balancers.cc)
// spray packets, switch flowlets, or look at the router's own queues.
//
// Write `PortId choose(const Packet&, const PathGroup&, Timeslot now)` in a
// class deriving from LoadBalancer<Self, Params>; the base runs it over a
// batch with static dispatch (one virtual call per batch). It must return one
// of the group's ports: the engine's lookahead relies on packets leaving only
// by ports the table names (Router::forwards_by_table), and a port outside the
// group is not trusted: the packet is dropped as no_route and counted.
// State must change only on packets (a router that idles skips whole
// timeslots: Router::idles_when_empty), and randomness comes from rng(), the
// load balancer's own stream, so a run is the same on any number of cores and
// choosing a load balancer leaves the other components' draws unchanged.
#pragma once

#include <cstdint>

#include "api/component.h"
#include "api/packet.h"
#include "api/routing_table.h"

namespace flexplane {

// A destination's candidate ports: the table's group `index` (0 ..
// RoutingTable::num_groups()-1, shared by every destination with the same
// list) and its `count` ports.
struct PathGroup {
  uint32_t index = 0;
  const PortId* ports = nullptr;
  uint16_t count = 0;
};

class LoadBalancerBase : public ComponentBase {
 public:
  // True only for `ecmp`: the router then hashes inline and never calls
  // choose_batch().
  virtual bool flow_hash_only() const { return false; }
  // entries[i] is packet i's raw table entry (RoutingTable::Direct::lookup);
  // each group entry is replaced by the chosen port, the rest (single ports,
  // kNoRoute) are left as they are.
  virtual void choose_batch(const Packet* pkts, uint16_t* entries, uint32_t n, Timeslot now) = 0;
  // Called before bind(): the router's table (outlives the router).
  void set_routes(const RoutingTable* routes) { routes_ = routes; }

 protected:
  const RoutingTable* routes_ = nullptr;
};

template <class Derived, class P>
class LoadBalancer : public LoadBalancerBase, public Configured<P> {
 public:
  void bind(const ComponentEnv& env) override {
    this->env_ = env;
    static_cast<Derived*>(this)->on_bind();
  }
  void choose_batch(const Packet* pkts, uint16_t* entries, uint32_t n, Timeslot now) final {
    auto* self = static_cast<Derived*>(this);
    for (uint32_t i = 0; i < n; ++i) {
      if (!RoutingTable::is_group(entries[i])) continue;
      const RoutingTable::Ports c = routes_->group_ports(entries[i]);
      entries[i] = self->choose(pkts[i], PathGroup{routes_->group_index(entries[i]), c.first,
                                                   static_cast<uint16_t>(c.size())}, now);
    }
    self->after_batch();
  }
  void on_bind() {}      // optional hook: size state from shape() and routes()
  void after_batch() {}  // optional hook: forget per-batch bookkeeping

 protected:
  const RoutingTable& routes() const { return *routes_; }
};

}  // namespace flexplane
