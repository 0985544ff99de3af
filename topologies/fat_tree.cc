// fat_tree: the k-ary fat tree of Al-Fares et al. (SIGCOMM 2008). k pods, each
// with k/2 edge and k/2 aggregation routers; (k/2)^2 core routers; k^3/4
// endpoints, k/2 under each edge router. Full bisection: every router has k
// ports, half down and half up.
//
// Numbering (routers in this order, so router ids are stable):
//   edge  pod p, index i   router p*(k/2) + i            name edge<p>_<i>, tier "edge"
//   agg   pod p, index j   router k*(k/2) + p*(k/2) + j  name agg<p>_<j>,  tier "agg"
//   core  group j, index c router k*k/2 + j*(k/2) + c    name core<j>_<c>, tier "core"
//   endpoint h: pod h / (k/2)^2, edge (h / (k/2)) % (k/2), edge port h % (k/2)
// Ports: edge 0..k/2-1 face its endpoints, k/2+j goes up to agg j of its pod;
// agg 0..k/2-1 go down to the pod's edges, k/2+c up to core<j>_<c>; core port
// p goes down to agg<p>_<j> (core group j links to the j-th agg of every pod).
//
// Routing: down is unique (core -> the destination's pod, agg -> its edge,
// edge -> its port); up is ECMP over all k/2 uplinks by the flow's hash, at
// the edge and again at the aggregation tier, each router salting the hash
// differently so the two choices are independent (no polarisation). Paths:
// 2 links under one edge, 4 within a pod, 6 across pods.
#include "emulator/topology/topology.h"

namespace flexplane {

namespace {
void check(bool ok, const std::string& msg) {
  if (!ok) throw ConfigError(msg);
}
}  // namespace

Topology make_fat_tree(uint32_t k, uint32_t latency) {
  // k = 64: 65,536 endpoints, every EndpointId (16 bits) in use.
  check(k >= 4 && k <= 64 && k % 2 == 0, "topology: fat_tree k must be even and in [4, 64], got " + std::to_string(k));
  check(latency >= 1 && latency <= 1024, "topology: link latency must be in [1, 1024] timeslots");
  const uint32_t h = k / 2;  // half the ports: endpoints per edge, edges/aggs per pod, cores per group
  const uint32_t n = k * h * h;
  const uint32_t first_agg = k * h, first_core = 2 * k * h;
  Topology t;
  t.kind = "fat_tree";
  t.num_endpoints = n;
  t.endpoint_latency_timeslots = latency;
  auto pod_of = [&](uint32_t e) { return e / (h * h); };
  auto edge_of = [&](uint32_t e) { return (e / h) % h; };  // within its pod
  std::vector<PortId> up;
  for (uint32_t u = 0; u < h; ++u) up.push_back(static_cast<PortId>(h + u));
  std::vector<std::vector<PortId>> one(k);  // {p}, built once (not a vector per destination: 335 M at k = 64)
  for (uint32_t p = 0; p < k; ++p) one[p] = {static_cast<PortId>(p)};

  for (uint32_t p = 0; p < k; ++p)
    for (uint32_t i = 0; i < h; ++i) {
      const uint32_t id = p * h + i;
      RouterNodeSpec edge{"edge" + std::to_string(p) + "_" + std::to_string(i), "edge", static_cast<uint16_t>(k),
                          RoutingTable(n, id + 1)};
      for (uint32_t e = 0; e < n; ++e)
        edge.routes.set(static_cast<EndpointId>(e), e / h == id ? one[e % h] : up);
      t.routers.push_back(std::move(edge));
    }
  for (uint32_t e = 0; e < n; ++e) t.endpoint_port.push_back(PortRef{e / h, static_cast<PortId>(e % h)});

  for (uint32_t p = 0; p < k; ++p)
    for (uint32_t j = 0; j < h; ++j) {
      const uint32_t id = first_agg + p * h + j;
      RouterNodeSpec agg{"agg" + std::to_string(p) + "_" + std::to_string(j), "agg", static_cast<uint16_t>(k),
                         RoutingTable(n, id + 1)};
      for (uint32_t e = 0; e < n; ++e)
        agg.routes.set(static_cast<EndpointId>(e), pod_of(e) == p ? one[edge_of(e)] : up);
      t.routers.push_back(std::move(agg));
      for (uint32_t i = 0; i < h; ++i)  // edge<p>_<i> port h+j <-> agg<p>_<j> port i
        t.router_links.push_back(RouterLink{PortRef{p * h + i, static_cast<PortId>(h + j)},
                                            PortRef{id, static_cast<PortId>(i)}, latency});
    }

  for (uint32_t j = 0; j < h; ++j)
    for (uint32_t c = 0; c < h; ++c) {
      const uint32_t id = first_core + j * h + c;
      RouterNodeSpec core{"core" + std::to_string(j) + "_" + std::to_string(c), "core", static_cast<uint16_t>(k),
                          RoutingTable(n, id + 1)};
      for (uint32_t e = 0; e < n; ++e) core.routes.set(static_cast<EndpointId>(e), one[pod_of(e)]);
      t.routers.push_back(std::move(core));
      for (uint32_t p = 0; p < k; ++p)  // agg<p>_<j> port h+c <-> core<j>_<c> port p
        t.router_links.push_back(RouterLink{PortRef{first_agg + p * h + j, static_cast<PortId>(h + c)},
                                            PortRef{id, static_cast<PortId>(p)}, latency});
    }
  // Placement hint: a pod's edges and aggregations together; cores belong to no pod.
  t.router_group.assign(t.routers.size(), -1);
  for (uint32_t p = 0; p < k; ++p)
    for (uint32_t i = 0; i < h; ++i) t.router_group[p * h + i] = t.router_group[first_agg + p * h + i] = int32_t(p);
  t.index_links();
  return t;
}

struct FatTreeParams {
  uint32_t k = 4;                       // ports per router (even)
  uint32_t link_latency_timeslots = 1;  // every link's latency

  // `where` names the config's place ("exp.yaml:3:11: topology (topology kind 'fat_tree')").
  void validate(const std::string& where) const {
    if (k % 2)
      throw ConfigError(where + ": parameter 'k': value " + std::to_string(k) +
                        " is odd (a fat tree router has k/2 ports down and k/2 up)");
  }
};

class FatTree final : public TopologyKindOf<FatTreeParams> {
 public:
  Topology build() const override { return make_fat_tree(params().k, params().link_latency_timeslots); }
};

FLEXPLANE_REGISTER_TOPOLOGY(FatTree, "fat_tree",
    "k-ary fat tree: k pods of k/2 edge + k/2 agg routers, (k/2)^2 cores, k^3/4 endpoints; ECMP up by flow hash",
    param(&FatTreeParams::k, "k", "ports per router, even (k^3/4 endpoints)", {4, 64}),
    param(&FatTreeParams::link_latency_timeslots, "link_latency_timeslots", "latency of every link, timeslots",
          {1, 1024}));

}  // namespace flexplane
