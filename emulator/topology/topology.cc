#include "emulator/topology/topology.h"

#include <algorithm>
#include <stdexcept>

#include "api/params.h"

namespace flexplane {

uint32_t Topology::path_links(EndpointId src, EndpointId dst) const {
  return endpoint_port[src].router == endpoint_port[dst].router ? 2 : 4;
}

uint32_t Topology::path_latency(EndpointId src, EndpointId dst) const {
  if (endpoint_port[src].router == endpoint_port[dst].router) return 2 * endpoint_latency_timeslots;
  // Leaf-spine: two access links plus ToR->spine->ToR (links share one latency per tier).
  uint32_t core = 0;
  for (const auto& l : router_links) core = std::max(core, l.latency_timeslots);
  return 2 * endpoint_latency_timeslots + 2 * core;
}

std::vector<EndpointId> Topology::endpoints_of(uint32_t router) const {
  std::vector<EndpointId> out;
  for (uint32_t e = 0; e < num_endpoints; ++e)
    if (endpoint_port[e].router == router) out.push_back(static_cast<EndpointId>(e));
  return out;
}

int Topology::find_router(const std::string& name) const {
  for (size_t i = 0; i < routers.size(); ++i)
    if (routers[i].name == name) return static_cast<int>(i);
  return -1;
}

namespace {
void check(bool ok, const std::string& msg) {
  if (!ok) throw ConfigError(msg);
}
}  // namespace

Topology make_single_rack(uint32_t endpoints, uint32_t latency) {
  check(endpoints >= 2 && endpoints <= 4096, "topology: endpoints must be in [2, 4096], got " + std::to_string(endpoints));
  check(latency >= 1 && latency <= 1024, "topology: link latency must be in [1, 1024] timeslots");
  Topology t;
  t.kind = "single_rack";
  t.num_endpoints = endpoints;
  t.endpoint_latency_timeslots = latency;
  RouterNodeSpec tor{"tor0", "tor", static_cast<uint16_t>(endpoints), RoutingTable(endpoints, 0)};
  for (uint32_t e = 0; e < endpoints; ++e) {
    tor.routes.set(static_cast<EndpointId>(e), {static_cast<PortId>(e)});
    t.endpoint_port.push_back(PortRef{0, static_cast<PortId>(e)});
  }
  t.routers.push_back(std::move(tor));
  return t;
}

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
  return t;
}

}  // namespace flexplane
