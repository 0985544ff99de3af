// The network graph the engine instantiates: endpoints, routers, the links
// between them and each router's routing table; and the registry of topology
// kinds that build it (topologies/*.cc, picked by `topology.kind`).
//
// Every endpoint hangs off exactly one router port (its ToR); routers connect
// to each other by bidirectional links. All links run at the same rate (one
// abstract packet per timeslot); a faster link is several parallel links, as
// in Flexplane. Latency is per link, in timeslots, and at least 1: that one
// timeslot of delay is what lets cores run without a global barrier. Nothing
// here assumes a number of tiers: paths are walked along the routing tables.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/packet.h"
#include "api/params.h"
#include "api/registry.h"
#include "api/routing_table.h"

namespace flexplane {

struct PortRef {
  uint32_t router = 0;
  PortId port = 0;
};

struct RouterNodeSpec {
  std::string name;   // unique, e.g. "tor0", "spine1"
  std::string tier;   // e.g. "tor", "spine" (configs pick schemes by tier)
  uint16_t num_ports = 0;
  RoutingTable routes;
};

struct RouterLink {
  PortRef a, b;
  uint32_t latency_timeslots = 1;
};

// Which core runs each router when EngineOptions::router_core is empty.
// Round robin: ToRs (each with its rack) in turn, then the other routers.
// Grouped: the topology's router groups (Topology::router_group, a fat tree's
// pods) in contiguous blocks, group g on core g * cores / groups, then the
// ungrouped routers each to the core with fewest routers; a topology without
// groups is placed round robin. Outputs never depend on it; speed does
// (docs/performance.md).
enum class RouterPlacement { kGrouped, kRoundRobin };
inline const char* router_placement_name(RouterPlacement p) {
  return p == RouterPlacement::kGrouped ? "grouped" : "round_robin";
}
// The placement named `name` (as router_placement_name spells it); false if none is.
inline bool parse_router_placement(const std::string& name, RouterPlacement* out) {
  for (RouterPlacement p : {RouterPlacement::kGrouped, RouterPlacement::kRoundRobin})
    if (name == router_placement_name(p)) {
      *out = p;
      return true;
    }
  return false;
}

struct Topology {
  std::string kind;  // the registered kind that built it
  uint32_t num_endpoints = 0;
  std::vector<RouterNodeSpec> routers;
  std::vector<PortRef> endpoint_port;   // endpoint e <-> (router, port), both directions
  uint32_t endpoint_latency_timeslots = 1;  // endpoint <-> ToR links
  std::vector<RouterLink> router_links;
  // Optional placement hint: routers with the same group (>= 0; a fat tree's
  // pod) exchange most of their traffic with each other, so the engine keeps a
  // group on one core when it can (EngineOptions::placement). -1: no group.
  // Empty: no hints.
  std::vector<int32_t> router_group;

  // The path a packet of `flow` takes from src to dst, following the routing
  // tables (ECMP by the flow's hash): links crossed and the sum of their
  // latencies in timeslots. Throws std::runtime_error if the tables do not
  // lead to dst (no route, a dead end, a loop).
  struct Path {
    uint32_t links = 0;
    uint32_t latency = 0;
  };
  Path path(EndpointId src, EndpointId dst, uint32_t flow = 0) const;
  // The same, or false (and `why`) where path() would throw.
  bool find_path(EndpointId src, EndpointId dst, uint32_t flow, Path* out, std::string* why = nullptr) const;
  uint32_t path_latency(EndpointId src, EndpointId dst, uint32_t flow = 0) const { return path(src, dst, flow).latency; }
  // Endpoints attached to `router`, in increasing id order.
  std::vector<EndpointId> endpoints_of(uint32_t router) const;
  // Index of the router named `name`, or -1.
  int find_router(const std::string& name) const;
  // The routers' tiers, each once, in router order.
  std::vector<std::string> tiers() const;

  // Call after the links are added (kinds do): indexes them for path(), and
  // shares the routing tables' last private pages (RoutingTable::share).
  void index_links();

 private:
  std::vector<std::vector<int32_t>> link_at_;  // [router][port]: index into router_links, or -1
};

// ---- Topology kinds: `topology: {kind: NAME, ...parameters}` in a config.

class TopologyKind {
 public:
  virtual ~TopologyKind() = default;
  // Build the topology from the parsed parameters; throws ConfigError.
  virtual Topology build() const = 0;
};

// A topology kind: a Params struct (api/params.h) and build().
template <class P>
class TopologyKindOf : public TopologyKind, public WithParams<P> {};

template <> struct KindName<TopologyKind> { static const char* get() { return "topology kind"; } };

// FLEXPLANE_REGISTER_TOPOLOGY(Class, "name", "doc", param(...)...)
#define FLEXPLANE_REGISTER_TOPOLOGY(Class, name, doc, ...) \
  FLEXPLANE_REGISTER_(TopologyKind, Class, name, doc __VA_OPT__(, ) __VA_ARGS__)

// The built-in kinds (topologies/single_rack.cc, leaf_spine.cc, fat_tree.cc),
// also callable directly.
// N endpoints on one ToR: ports 0..N-1 face endpoints 0..N-1.
Topology make_single_rack(uint32_t endpoints, uint32_t latency_timeslots);
// R racks of N endpoints; S spines; each ToR has `links_per_spine` parallel
// links to every spine (oversubscription = N : S*links_per_spine). ToR ports
// 0..N-1 face its endpoints, then uplinks spine-major. Spine ports are
// rack-major. Inter-rack traffic is spread by ECMP over a flow hash.
Topology make_leaf_spine(uint32_t racks, uint32_t endpoints_per_rack, uint32_t spines, uint32_t links_per_spine,
                         uint32_t latency_timeslots);
// The k-ary fat tree (topologies/fat_tree.cc: numbering, ports and routing
// there): k^3/4 endpoints, tiers "edge", "agg", "core"; ECMP up by flow hash.
Topology make_fat_tree(uint32_t k, uint32_t latency_timeslots);

}  // namespace flexplane
