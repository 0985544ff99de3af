// Stock load balancers (api/load_balancer.h): which of a destination's
// equal-cost ports a packet leaves by. `ecmp` is the default everywhere.
//
//   ecmp         one path per flow: hash(flow, router salt) % ports
//   spray        per packet, uniformly at random (random packet spraying)
//   round_robin  per packet, the group's ports in turn (one counter per group)
//   flowlet      per flowlet (LetFlow): a flow keeps its port while its packets
//                come less than gap_us apart, and draws a new one at random
//                after a longer gap
//   least_queue  per packet, the candidate port with the fewest packets queued
//                at this router, ties at random (DRILL with full information)
//
// Spraying reorders a flow's packets whenever its paths' queues differ; the
// closed-loop senders' reordering tolerance is docs/transports.md's business.
#include <algorithm>
#include <string>
#include <vector>

#include "api/registry.h"

namespace flexplane {

struct NoLbParams {};

class EcmpBalancer : public LoadBalancer<EcmpBalancer, NoLbParams> {
 public:
  bool flow_hash_only() const override { return true; }
  PortId choose(const Packet& p, const PathGroup& g, Timeslot) {
    return g.ports[flow_hash(p.flow, routes().salt()) % g.count];
  }
};

class SprayBalancer : public LoadBalancer<SprayBalancer, NoLbParams> {
 public:
  PortId choose(const Packet&, const PathGroup& g, Timeslot) { return g.ports[rng().below(g.count)]; }
};

class RoundRobinBalancer : public LoadBalancer<RoundRobinBalancer, NoLbParams> {
 public:
  // Each group starts at a random turn: routers started in lock-step would
  // otherwise send their simultaneous arrivals to the same next tier router.
  void on_bind() {
    next_.resize(routes().num_groups());
    for (uint32_t& n : next_) n = rng().below(1u << 30);
  }
  PortId choose(const Packet&, const PathGroup& g, Timeslot) { return g.ports[next_[g.index]++ % g.count]; }

 private:
  std::vector<uint32_t> next_;  // per group: the turn of its next packet (mod the group's size)
};

struct FlowletParams {
  double gap_us = 100;             // a flow silent this long starts a new flowlet
  uint32_t table_entries = 4096;   // flowlet slots, by flow hash; a power of two

  void validate(const std::string& where) const {
    if (table_entries & (table_entries - 1))
      throw ConfigError(where + ": table_entries must be a power of two (" + std::to_string(table_entries) + ")");
  }
};

class FlowletBalancer : public LoadBalancer<FlowletBalancer, FlowletParams> {
 public:
  void on_bind() {
    gap_ = std::max<Timeslot>(1, time().from_us(params().gap_us));
    slots_.assign(params().table_entries, Slot{});
    flowlets_.assign(shape().num_ports, 0);
  }
  PortId choose(const Packet& p, const PathGroup& g, Timeslot now) {
    // Two flows sharing a slot evict each other: each eviction starts a new
    // flowlet, as a switch's hashed flowlet table does.
    Slot& s = slots_[flow_hash(p.flow, routes().salt()) & (params().table_entries - 1)];
    const bool same = s.used && s.flow == p.flow && now - s.last < gap_ && s.group == g.index;
    if (!same) {
      s.flow = p.flow;
      s.group = g.index;
      s.port = g.ports[rng().below(g.count)];
      s.used = true;
      ++flowlets_[s.port];
    }
    s.last = now;
    return s.port;
  }
  std::vector<StatDesc> stat_descs() const override {
    return {{"flowlet_flowlets", "flowlets sent out of this port so far", StatDesc::kPerPort}};
  }
  void sample_stats(PortId port, StatsOut& out) const override { out.put(0, 0, static_cast<double>(flowlets_[port])); }

 private:
  struct Slot {
    Timeslot last = 0;
    uint32_t flow = 0;
    uint32_t group = 0;
    PortId port = 0;
    bool used = false;
  };
  Timeslot gap_ = 1;
  std::vector<Slot> slots_;
  std::vector<uint64_t> flowlets_;  // per port: flowlets begun on it
};

class LeastQueueBalancer : public LoadBalancer<LeastQueueBalancer, NoLbParams> {
 public:
  void on_bind() { pending_.assign(shape().num_ports, 0); }
  PortId choose(const Packet&, const PathGroup& g, Timeslot) {
    // Packets chosen earlier in this batch are not in the bank yet: count them.
    PortId best = g.ports[0];
    uint32_t best_len = ~0u, ties = 0;
    for (uint16_t i = 0; i < g.count; ++i) {
      const PortId port = g.ports[i];
      const uint32_t len = bank().port_packets(port) + pending_[port];
      if (len < best_len) {
        best = port, best_len = len, ties = 1;
      } else if (len == best_len && rng().below(++ties) == 0) {  // reservoir: each tie equally likely
        best = port;
      }
    }
    if (pending_[best]++ == 0) touched_.push_back(best);
    return best;
  }
  void after_batch() {
    for (PortId p : touched_) pending_[p] = 0;
    touched_.clear();
  }

 private:
  std::vector<uint32_t> pending_;  // per port: packets sent there in this batch
  std::vector<PortId> touched_;
};

FLEXPLANE_REGISTER_LOAD_BALANCER(EcmpBalancer, "ecmp", "one path per flow: hash(flow, router salt) % ports (default)");
FLEXPLANE_REGISTER_LOAD_BALANCER(SprayBalancer, "spray", "per packet, a port at random (random packet spraying)");
FLEXPLANE_REGISTER_LOAD_BALANCER(RoundRobinBalancer, "round_robin", "per packet, the group's ports in turn");
FLEXPLANE_REGISTER_LOAD_BALANCER(FlowletBalancer, "flowlet",
    "per flowlet (LetFlow): a new random port after a gap of gap_us",
    param(&FlowletParams::gap_us, "gap_us", "silence that ends a flowlet, microseconds", {0.001, 1e6}),
    param(&FlowletParams::table_entries, "table_entries", "flowlet slots by flow hash, a power of two", {1, 1 << 20}));
FLEXPLANE_REGISTER_LOAD_BALANCER(LeastQueueBalancer, "least_queue",
    "per packet, the candidate port with the fewest packets queued here (DRILL-like), ties at random");

}  // namespace flexplane
