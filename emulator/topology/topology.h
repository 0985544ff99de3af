// The network graph the engine instantiates: endpoints, routers, the links
// between them and each router's routing table.
//
// Every endpoint hangs off exactly one router port (its ToR); routers connect
// to each other by bidirectional links. All links run at the same rate (one
// abstract packet per timeslot); a faster link is several parallel links, as
// in Flexplane. Latency is per link, in timeslots, and at least 1: that one
// timeslot of delay is what lets cores run without a global barrier.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/packet.h"
#include "api/routing_table.h"

namespace flexplane {

struct PortRef {
  uint32_t router = 0;
  PortId port = 0;
};

struct RouterNodeSpec {
  std::string name;   // unique, e.g. "tor0", "spine1"
  std::string tier;   // "tor" | "spine" | ... (config picks schemes by tier)
  uint16_t num_ports = 0;
  RoutingTable routes;
};

struct RouterLink {
  PortRef a, b;
  uint32_t latency_timeslots = 1;
};

struct Topology {
  std::string kind;  // "single_rack" | "leaf_spine"
  uint32_t num_endpoints = 0;
  std::vector<RouterNodeSpec> routers;
  std::vector<PortRef> endpoint_port;   // endpoint e <-> (router, port), both directions
  uint32_t endpoint_latency_timeslots = 1;  // endpoint <-> ToR links
  std::vector<RouterLink> router_links;

  // Number of links a packet crosses from src to dst (2 within a rack, 4 via a spine).
  uint32_t path_links(EndpointId src, EndpointId dst) const;
  // Sum of link latencies along that path, in timeslots.
  uint32_t path_latency(EndpointId src, EndpointId dst) const;
  // Endpoints attached to `router`, in increasing id order.
  std::vector<EndpointId> endpoints_of(uint32_t router) const;
  // Index of the router named `name`, or -1.
  int find_router(const std::string& name) const;
};

// N endpoints on one ToR: ports 0..N-1 face endpoints 0..N-1.
Topology make_single_rack(uint32_t endpoints, uint32_t latency_timeslots);

// R racks of N endpoints; S spines; each ToR has `links_per_spine` parallel
// links to every spine (oversubscription = N : S*links_per_spine). ToR ports
// 0..N-1 face its endpoints, then uplinks spine-major. Spine ports are
// rack-major. Inter-rack traffic is spread by ECMP over a flow hash.
Topology make_leaf_spine(uint32_t racks, uint32_t endpoints_per_rack, uint32_t spines, uint32_t links_per_spine,
                         uint32_t latency_timeslots);

}  // namespace flexplane
