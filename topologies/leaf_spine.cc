// leaf_spine: racks of endpoints under ToRs, every ToR linked to every spine (links_per_spine
// parallel links each); inter-rack traffic is spread over the spines by ECMP on a flow hash.
#include "emulator/topology/topology.h"

namespace flexplane {

namespace {
void check(bool ok, const std::string& msg) {
  if (!ok) throw ConfigError(msg);
}
}  // namespace

Topology make_leaf_spine(uint32_t racks, uint32_t per_rack, uint32_t spines, uint32_t links, uint32_t latency) {
  check(racks >= 1 && racks <= 1024, "topology: racks must be in [1, 1024], got " + std::to_string(racks));
  check(per_rack >= 1, "topology: endpoints_per_rack must be >= 1");
  check(spines >= 1 && spines <= 256, "topology: spines must be in [1, 256], got " + std::to_string(spines));
  check(links >= 1 && links <= 64, "topology: links_per_spine must be in [1, 64]");
  check(racks * per_rack >= 2 && racks * per_rack <= 65000, "topology: total endpoints must be in [2, 65000]");
  check(per_rack + spines * links <= 4096 && racks * links <= 4096, "topology: a router would have more than 4096 ports");
  check(latency >= 1 && latency <= 1024, "topology: link latency must be in [1, 1024] timeslots");
  Topology t;
  t.kind = "leaf_spine";
  t.num_endpoints = racks * per_rack;
  t.endpoint_latency_timeslots = latency;
  const uint32_t n = t.num_endpoints;
  for (uint32_t r = 0; r < racks; ++r) {
    RouterNodeSpec tor{"tor" + std::to_string(r), "tor", static_cast<uint16_t>(per_rack + spines * links),
                       RoutingTable(n, r + 1)};
    std::vector<PortId> uplinks;
    for (uint32_t u = 0; u < spines * links; ++u) uplinks.push_back(static_cast<PortId>(per_rack + u));
    for (uint32_t e = 0; e < n; ++e) {
      if (e / per_rack == r)
        tor.routes.set(static_cast<EndpointId>(e), {static_cast<PortId>(e % per_rack)});
      else
        tor.routes.set(static_cast<EndpointId>(e), uplinks);
    }
    t.routers.push_back(std::move(tor));
  }
  for (uint32_t e = 0; e < n; ++e) t.endpoint_port.push_back(PortRef{e / per_rack, static_cast<PortId>(e % per_rack)});
  for (uint32_t s = 0; s < spines; ++s) {
    const uint32_t id = racks + s;
    RouterNodeSpec spine{"spine" + std::to_string(s), "spine", static_cast<uint16_t>(racks * links),
                         RoutingTable(n, 0x5000 + s)};
    for (uint32_t e = 0; e < n; ++e) {
      std::vector<PortId> ports;
      for (uint32_t k = 0; k < links; ++k) ports.push_back(static_cast<PortId>((e / per_rack) * links + k));
      spine.routes.set(static_cast<EndpointId>(e), ports);
    }
    t.routers.push_back(std::move(spine));
    for (uint32_t r = 0; r < racks; ++r)
      for (uint32_t k = 0; k < links; ++k)
        t.router_links.push_back(RouterLink{PortRef{r, static_cast<PortId>(per_rack + s * links + k)},
                                            PortRef{id, static_cast<PortId>(r * links + k)}, latency});
  }
  t.index_links();
  return t;
}

struct LeafSpineParams {
  uint32_t racks = 2;                   // ToRs
  uint32_t endpoints_per_rack = 16;     // endpoints under each ToR
  uint32_t spines = 2;                  // spine routers
  uint32_t links_per_spine = 1;         // parallel links from each ToR to each spine
  uint32_t link_latency_timeslots = 1;  // every link's latency

  // The rules across parameters (make_leaf_spine checks them again), with the
  // config's place: `where` is "exp.yaml:3:11: topology (topology kind 'leaf_spine')".
  void validate(const std::string& where) const {
    const uint64_t endpoints = uint64_t{racks} * endpoints_per_rack;
    if (endpoints < 2 || endpoints > 65000)
      throw ConfigError(where + ": parameters 'racks' x 'endpoints_per_rack': " + std::to_string(racks) + " x " +
                        std::to_string(endpoints_per_rack) + " = " + std::to_string(endpoints) +
                        " endpoints, must be in [2, 65000]");
    if (uint64_t{endpoints_per_rack} + uint64_t{spines} * links_per_spine > 4096)
      throw ConfigError(where + ": parameters 'endpoints_per_rack' + 'spines' x 'links_per_spine': a ToR would have " +
                        std::to_string(uint64_t{endpoints_per_rack} + uint64_t{spines} * links_per_spine) +
                        " ports, more than 4096");
    if (uint64_t{racks} * links_per_spine > 4096)
      throw ConfigError(where + ": parameters 'racks' x 'links_per_spine': a spine would have " +
                        std::to_string(uint64_t{racks} * links_per_spine) + " ports, more than 4096");
  }
};

class LeafSpine final : public TopologyKindOf<LeafSpineParams> {
 public:
  Topology build() const override {
    const LeafSpineParams& p = params();
    return make_leaf_spine(p.racks, p.endpoints_per_rack, p.spines, p.links_per_spine, p.link_latency_timeslots);
  }
};

FLEXPLANE_REGISTER_TOPOLOGY(LeafSpine, "leaf_spine", "racks under ToRs, every ToR linked to every spine",
    param(&LeafSpineParams::racks, "racks", "ToRs (racks)", {1, 1024}),
    param(&LeafSpineParams::endpoints_per_rack, "endpoints_per_rack", "endpoints under each ToR", {1, 4096}),
    param(&LeafSpineParams::spines, "spines", "spine routers", {1, 256}),
    param(&LeafSpineParams::links_per_spine, "links_per_spine", "parallel links from each ToR to each spine", {1, 64}),
    param(&LeafSpineParams::link_latency_timeslots, "link_latency_timeslots", "latency of every link, timeslots",
          {1, 1024}));

}  // namespace flexplane
