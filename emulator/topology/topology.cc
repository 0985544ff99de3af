#include "emulator/topology/topology.h"

#include <algorithm>
#include <stdexcept>

namespace flexplane {

void Topology::index_links() {
  for (RouterNodeSpec& r : routers) r.routes.share();  // the kinds have filled the tables
  link_at_.assign(routers.size(), {});
  for (size_t r = 0; r < routers.size(); ++r) link_at_[r].assign(routers[r].num_ports, -1);
  for (size_t i = 0; i < router_links.size(); ++i)
    for (const PortRef& end : {router_links[i].a, router_links[i].b})
      if (end.router < link_at_.size() && end.port < link_at_[end.router].size())
        link_at_[end.router][end.port] = static_cast<int32_t>(i);
}

Topology::Path Topology::path(EndpointId src, EndpointId dst, uint32_t flow) const {
  Path p;
  std::string why;
  if (!find_path(src, dst, flow, &p, &why))
    throw std::runtime_error("topology: no path from endpoint " + std::to_string(src) + " to " + std::to_string(dst) +
                             ": " + why);
  return p;
}

bool Topology::find_path(EndpointId src, EndpointId dst, uint32_t flow, Path* out, std::string* why) const {
  auto fail = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (src >= num_endpoints || dst >= num_endpoints) return fail("no such endpoint");
  Packet p{};
  p.flow = flow;
  p.src = src;
  p.dst = dst;
  Path path{1, endpoint_latency_timeslots};  // the source's access link
  uint32_t r = endpoint_port[src].router;
  for (size_t hop = 0; hop <= routers.size(); ++hop) {
    const PortId port = routers[r].routes.route(p);
    if (port == kNoRoute) return fail("router " + routers[r].name + " has no route");
    if (endpoint_port[dst].router == r && endpoint_port[dst].port == port) {
      path.links += 1;
      path.latency += endpoint_latency_timeslots;
      *out = path;
      return true;
    }
    int32_t link = -1;
    if (r < link_at_.size() && port < link_at_[r].size()) {
      link = link_at_[r][port];
    } else {  // not indexed: look it up
      for (size_t i = 0; i < router_links.size() && link < 0; ++i)
        if ((router_links[i].a.router == r && router_links[i].a.port == port) ||
            (router_links[i].b.router == r && router_links[i].b.port == port))
          link = static_cast<int32_t>(i);
    }
    if (link < 0) return fail("router " + routers[r].name + " port " + std::to_string(port) + " leads nowhere");
    const RouterLink& l = router_links[link];
    path.links += 1;
    path.latency += l.latency_timeslots;
    r = l.a.router == r && l.a.port == port ? l.b.router : l.a.router;
  }
  return fail("the routing tables loop");
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

std::vector<std::string> Topology::tiers() const {
  std::vector<std::string> out;
  for (const auto& r : routers)
    if (std::find(out.begin(), out.end(), r.tier) == out.end()) out.push_back(r.tier);
  return out;
}

}  // namespace flexplane
