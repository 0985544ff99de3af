// Routing tables: two bytes per destination (a port, a shared ECMP group, or
// no route), each distinct list of ports stored once; routes as before.
#include "api/routing_table.h"

#include <catch2/catch.hpp>

#include "api/rng.h"
#include "emulator/topology/topology.h"

using namespace flexplane;

// A destination's candidate ports as a vector, for comparisons.
static std::vector<PortId> ports(const RoutingTable& t, EndpointId dst) {
  const auto c = t.candidates(dst);
  return {c.begin(), c.end()};
}

TEST_CASE("routing table: single ports, shared ECMP groups and no route", "[routing]") {
  RoutingTable t(8, 7);
  t.set(0, {1});
  t.set(1, {2, 3, 4});
  t.set(2, {5});        // a single port between two uses of the same group
  t.set(3, {2, 3, 4});  // ... shares it, not only with the destination just before
  t.set(4, {3, 2, 4});  // another order is another group (the hash picks by position)
  t.set(5, {});         // no route
  t.set(7, {0x8001});   // a port number that cannot be stored inline goes to a group of one
  REQUIRE(t.num_destinations() == 8);
  REQUIRE(t.num_groups() == 3);
  REQUIRE(ports(t, 0) == std::vector<PortId>{1});
  REQUIRE(ports(t, 2) == std::vector<PortId>{5});
  REQUIRE(ports(t, 3) == std::vector<PortId>{2, 3, 4});
  REQUIRE(ports(t, 4) == std::vector<PortId>{3, 2, 4});
  REQUIRE(t.candidates(5).empty());
  REQUIRE(t.candidates(6).empty());  // never set
  REQUIRE(ports(t, 7) == std::vector<PortId>{0x8001});
  REQUIRE(t.candidates(9).empty());  // beyond the table
  Packet p{};
  for (uint32_t flow = 0; flow < 256; ++flow) {
    p.flow = flow;
    p.dst = 1;
    const PortId a = t.route(p);
    REQUIRE(a == std::vector<PortId>{2, 3, 4}[flow_hash(flow, 7) % 3]);
    p.dst = 3;
    REQUIRE(t.route(p) == a);
    p.dst = 4;
    REQUIRE(t.route(p) == std::vector<PortId>{3, 2, 4}[flow_hash(flow, 7) % 3]);
    p.dst = 0;
    REQUIRE(t.route(p) == 1);
    p.dst = 5;
    REQUIRE(t.route(p) == kNoRoute);
    p.dst = 6;
    REQUIRE(t.route(p) == kNoRoute);
    p.dst = 7;
    REQUIRE(t.route(p) == 0x8001);
    p.dst = 200;
    REQUIRE(t.route(p) == kNoRoute);
  }
  t.set(1, {6});  // replaced
  REQUIRE(ports(t, 1) == std::vector<PortId>{6});
  t.set(12, {2, 3, 4});  // grows the table
  REQUIRE(t.num_destinations() == 13);
  REQUIRE(ports(t, 12) == std::vector<PortId>{2, 3, 4});
  REQUIRE(t.num_groups() == 3);
}

TEST_CASE("routing table: a fat tree's routers hold one group each, at most", "[routing][fat_tree]") {
  // Edge and aggregation routers: one ECMP group (the uplinks); cores route every
  // destination by a single port.
  const Topology t = make_fat_tree(8, 1);
  for (const RouterNodeSpec& r : t.routers) {
    INFO(r.name);
    REQUIRE(r.routes.num_destinations() == t.num_endpoints);
    REQUIRE(r.routes.num_groups() == (r.tier == "core" ? 0u : 1u));
  }
}
