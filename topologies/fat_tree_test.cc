#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "api/registry.h"
#include "emulator/engine/engine.h"
#include "emulator/topology/topology.h"

using namespace flexplane;

namespace {

// The router a packet of `flow` leaves `router` towards, through `port`.
uint32_t next_router(const Topology& t, uint32_t router, PortId port) {
  for (const RouterLink& l : t.router_links) {
    if (l.a.router == router && l.a.port == port) return l.b.router;
    if (l.b.router == router && l.b.port == port) return l.a.router;
  }
  FAIL("router " << t.routers[router].name << " port " << port << " has no link");
  return 0;
}

// The routers a packet of `flow` from src to dst crosses, by walking the tables.
std::vector<uint32_t> routers_on_path(const Topology& t, EndpointId src, EndpointId dst, uint32_t flow) {
  Packet p{};
  p.src = src;
  p.dst = dst;
  p.flow = flow;
  std::vector<uint32_t> out{t.endpoint_port[src].router};
  while (out.size() < 10) {
    const PortId port = t.routers[out.back()].routes.route(p);
    REQUIRE(port != kNoRoute);
    if (t.endpoint_port[dst].router == out.back() && t.endpoint_port[dst].port == port) return out;
    out.push_back(next_router(t, out.back(), port));
  }
  FAIL("path from " << src << " to " << dst << " does not end");
  return out;
}

}  // namespace

TEST_CASE("fat tree: k^3/4 endpoints, 5k^2/4 routers of k ports, three tiers", "[topology][fat_tree]") {
  for (uint32_t k : {4u, 6u, 8u, 16u}) {
    INFO("k " << k);
    const Topology t = make_fat_tree(k, 1);
    REQUIRE(t.num_endpoints == k * k * k / 4);
    REQUIRE(t.routers.size() == 5 * k * k / 4);
    REQUIRE(t.tiers() == std::vector<std::string>{"edge", "agg", "core"});
    std::map<std::string, uint32_t> per_tier;
    for (const auto& r : t.routers) {
      REQUIRE(r.num_ports == k);
      ++per_tier[r.tier];
    }
    REQUIRE(per_tier["edge"] == k * k / 2);
    REQUIRE(per_tier["agg"] == k * k / 2);
    REQUIRE(per_tier["core"] == k * k / 4);
    // Every router port is used exactly once: by an endpoint (edge down ports) or by one link.
    REQUIRE(t.router_links.size() == k * k * k / 2);  // k/2 * k/2 per pod twice, k pods
    std::set<std::pair<uint32_t, PortId>> used;
    for (const auto& e : t.endpoint_port) REQUIRE(used.insert({e.router, e.port}).second);
    for (const auto& l : t.router_links) {
      REQUIRE(used.insert({l.a.router, l.a.port}).second);
      REQUIRE(used.insert({l.b.router, l.b.port}).second);
    }
    REQUIRE(used.size() == t.routers.size() * k);
    REQUIRE(t.endpoints_of(0).size() == k / 2);
    REQUIRE(t.find_router("core0_0") == static_cast<int>(k * k));
  }
}

TEST_CASE("fat tree: paths are 2 links under one edge, 4 within a pod, 6 across pods", "[topology][fat_tree]") {
  const uint32_t k = 8;  // 128 endpoints: 4 per edge, 16 per pod
  const Topology t = make_fat_tree(k, 3);
  for (EndpointId src = 0; src < t.num_endpoints; src += 5)
    for (EndpointId dst = 0; dst < t.num_endpoints; ++dst) {
      if (src == dst) continue;
      const uint32_t expect = src / 4 == dst / 4 ? 2 : src / 16 == dst / 16 ? 4 : 6;
      for (uint32_t flow : {0u, 17u, 99991u}) {
        const Topology::Path p = t.path(src, dst, flow);
        INFO(src << " -> " << dst << " flow " << flow);
        REQUIRE(p.links == expect);
        REQUIRE(p.latency == 3 * expect);
        REQUIRE(routers_on_path(t, src, dst, flow).size() == expect - 1);
      }
    }
}

TEST_CASE("fat tree: ECMP spreads flows over every uplink of the edge and the aggregation tier",
          "[topology][fat_tree][ecmp]") {
  const uint32_t k = 8, h = k / 2;
  const Topology t = make_fat_tree(k, 1);
  // Cross-pod flows from endpoint 0 (edge0_0) to endpoint 100 (pod 6): 4 aggs x 4 cores.
  std::map<uint32_t, uint32_t> per_agg, per_core;
  std::map<uint32_t, std::set<uint32_t>> cores_behind_agg;
  const uint32_t flows = 4000;
  for (uint32_t f = 0; f < flows; ++f) {
    const std::vector<uint32_t> path = routers_on_path(t, 0, 100, f);
    REQUIRE(path.size() == 5);
    REQUIRE(t.routers[path[0]].tier == "edge");
    REQUIRE(t.routers[path[1]].tier == "agg");
    REQUIRE(t.routers[path[2]].tier == "core");
    REQUIRE(t.routers[path[3]].tier == "agg");
    REQUIRE(t.routers[path[4]].name == "edge6_1");
    ++per_agg[path[1]];
    ++per_core[path[2]];
    cores_behind_agg[path[1]].insert(path[2]);
  }
  // Every uplink of edge0_0 carries flows, and every core router too (each agg's own hash).
  REQUIRE(per_agg.size() == h);
  REQUIRE(per_core.size() == h * h);
  for (const auto& [agg, cores] : cores_behind_agg) REQUIRE(cores.size() == h);
  // ... and evenly: each within 20% of its fair share (the hash is fixed, so this is deterministic).
  for (const auto& [agg, n] : per_agg) {
    CHECK(n > flows / h * 8 / 10);
    CHECK(n < flows / h * 12 / 10);
  }
  for (const auto& [core, n] : per_core) {
    CHECK(n > flows / (h * h) * 8 / 10);
    CHECK(n < flows / (h * h) * 12 / 10);
  }
  // Within a pod, the agg is spread too and no core is crossed.
  std::set<uint32_t> aggs;
  for (uint32_t f = 0; f < 400; ++f) {
    const std::vector<uint32_t> path = routers_on_path(t, 0, 9, f);  // edge0_0 -> edge0_2
    REQUIRE(path.size() == 3);
    REQUIRE(t.routers[path[1]].tier == "agg");
    aggs.insert(path[1]);
  }
  REQUIRE(aggs.size() == h);
}

TEST_CASE("fat tree: registered by name with typed parameters; bad k is refused naming it", "[topology][fat_tree]") {
  ParamValues v;
  v.where = "test: topology";
  v.set("k", "6");
  v.set("link_latency_timeslots", "2");
  const Topology t = Registry<TopologyKind>::instance().get("fat_tree", "test").make(v, nullptr)->build();
  REQUIRE(t.kind == "fat_tree");
  REQUIRE(t.num_endpoints == 54);
  REQUIRE(t.path(0, 53).latency == 12);
  for (const char* bad : {"5", "2", "66"}) {
    ParamValues b;
    b.where = "test: topology";
    b.set("k", bad);
    INFO("k " << bad);
    REQUIRE_THROWS_AS(Registry<TopologyKind>::instance().get("fat_tree", "test").make(b, nullptr)->build(), ConfigError);
  }
  REQUIRE_THROWS_WITH(make_fat_tree(7, 1), Catch::Contains("k must be even"));
}

TEST_CASE("fat tree: grouped placement keeps each pod on one core, so only aggregation-core links cross cores",
          "[topology][fat_tree][placement]") {
  for (uint32_t k : {4u, 8u, 16u}) {
    const Topology t = make_fat_tree(k, 1);
    REQUIRE(t.router_group.size() == t.routers.size());
    for (uint32_t r = 0; r < t.routers.size(); ++r) {
      const std::string& name = t.routers[r].name;
      const int32_t pod = t.routers[r].tier == "core" ? -1 : std::stoi(name.substr(name.find_first_of("0123456789")));
      REQUIRE(t.router_group[r] == pod);
    }
    for (uint32_t cores : {1u, 2u, 3u, 4u, 8u, 16u}) {
      INFO("k " << k << ", cores " << cores);
      const std::vector<uint32_t> grouped = place_routers(t, cores, RouterPlacement::kGrouped);
      const std::vector<uint32_t> rr = place_routers(t, cores, RouterPlacement::kRoundRobin);
      REQUIRE(grouped.size() == t.routers.size());
      uint32_t crossing_grouped = 0, crossing_rr = 0, crossing_pod_links = 0;
      for (const RouterLink& l : t.router_links) {
        crossing_grouped += grouped[l.a.router] != grouped[l.b.router];
        crossing_rr += rr[l.a.router] != rr[l.b.router];
        if (t.router_group[l.a.router] >= 0 && t.router_group[l.b.router] >= 0)
          crossing_pod_links += grouped[l.a.router] != grouped[l.b.router];
      }
      REQUIRE(crossing_pod_links == 0);  // edge-aggregation links stay on their core
      for (uint32_t r = 0; r < t.routers.size(); ++r)
        if (t.router_group[r] >= 0) REQUIRE(grouped[r] == uint32_t(t.router_group[r]) * cores / k);  // pods in blocks
      std::vector<uint32_t> per_core(cores, 0);
      for (uint32_t c : grouped) ++per_core.at(c);
      if (cores <= k)  // no core left idle while there are pods enough (more cores than pods: some run only cores)
        for (uint32_t n : per_core) REQUIRE(n > 0);
      if (cores == 1) REQUIRE(crossing_rr == 0);
      else REQUIRE(crossing_grouped < crossing_rr);
    }
  }
  // A topology without groups is placed round robin either way.
  Topology flat = make_fat_tree(4, 1);
  flat.router_group.clear();
  REQUIRE(place_routers(flat, 3, RouterPlacement::kGrouped) == place_routers(flat, 3, RouterPlacement::kRoundRobin));
}
