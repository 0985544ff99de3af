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

TEST_CASE("routing table: pages with the same entries are shared, and a copy or a later set() changes only its own table",
          "[routing]") {
  const size_t before = RoutePagePool::instance().size();
  {
    const uint32_t n = 3 * RoutePage::kSize + 5;  // three full pages and a partial one
    RoutingTable a(n, 1), b(n, 2);
    for (uint32_t d = 0; d < n; ++d) {  // the same entries, different salts
      a.set(static_cast<EndpointId>(d), d % 7 ? std::vector<PortId>{1, 2} : std::vector<PortId>{3});
      b.set(static_cast<EndpointId>(d), d % 7 ? std::vector<PortId>{1, 2} : std::vector<PortId>{3});
    }
    a.share();
    b.share();
    for (uint32_t i = 0; i < 4; ++i) REQUIRE(a.same_page(b, i));
    REQUIRE(RoutePagePool::instance().size() >= before + 4);

    RoutingTable c = a;  // a copy shares every page
    for (uint32_t i = 0; i < 4; ++i) REQUIRE(c.same_page(a, i));
    c.set(static_cast<EndpointId>(RoutePage::kSize + 3), {9});  // ... until it changes one: that page only
    REQUIRE(ports(c, static_cast<EndpointId>(RoutePage::kSize + 3)) == std::vector<PortId>{9});
    REQUIRE(ports(a, static_cast<EndpointId>(RoutePage::kSize + 3)) == std::vector<PortId>{1, 2});
    REQUIRE(!c.same_page(a, 1));
    REQUIRE(c.same_page(a, 0));
    REQUIRE(c.same_page(a, 2));

    RoutingTable d = c;  // copied while c still writes into page 1: d gets a page of its own
    d.set(static_cast<EndpointId>(RoutePage::kSize + 4), {8});
    REQUIRE(ports(c, static_cast<EndpointId>(RoutePage::kSize + 4)) == std::vector<PortId>{1, 2});
    REQUIRE(ports(d, static_cast<EndpointId>(RoutePage::kSize + 3)) == std::vector<PortId>{9});
    REQUIRE(ports(d, static_cast<EndpointId>(RoutePage::kSize + 4)) == std::vector<PortId>{8});

    c.set(static_cast<EndpointId>(RoutePage::kSize + 3), {1, 2});  // set back: c's page equals a's again
    c.share();
    REQUIRE(c.same_page(a, 1));

    // Out of order, back and forth between pages: the same table as in order.
    RoutingTable e(n, 1);
    for (uint32_t d2 = n; d2-- > 0;)
      e.set(static_cast<EndpointId>(d2), d2 % 7 ? std::vector<PortId>{1, 2} : std::vector<PortId>{3});
    e.share();
    for (uint32_t i = 0; i < 4; ++i) REQUIRE(e.same_page(a, i));
    Packet p{};
    for (uint32_t dst = 0; dst < n + 3; ++dst) {
      p.dst = static_cast<EndpointId>(dst);
      p.flow = dst * 31;
      REQUIRE(e.route(p) == a.route(p));
      REQUIRE(e.direct().lookup(p.dst) == a.direct().lookup(p.dst));
    }
  }
  REQUIRE(RoutePagePool::instance().size() == before);  // the last table gone, its pages are freed
}

TEST_CASE("routing table: a k = 16 fat tree's tables share a few pages", "[routing][fat_tree]") {
  const size_t before = RoutePagePool::instance().size();
  const Topology t = make_fat_tree(16, 1);  // 1,024 endpoints: one page per table
  const size_t distinct = RoutePagePool::instance().size() - before;
  // Edges: the position of their 8 endpoints in the page (128 ways); aggs:
  // their pod's (16); cores: one page, all alike. Fewer if an earlier test's
  // tables are still alive and hold some of them.
  REQUIRE(distinct <= 128 + 16 + 1);
  const uint32_t first_agg = 16 * 8, first_core = 2 * 16 * 8;
  REQUIRE(t.routers[first_agg].routes.same_page(t.routers[first_agg + 1].routes, 0));  // two aggs of pod 0
  REQUIRE(!t.routers[first_agg].routes.same_page(t.routers[first_agg + 8].routes, 0));  // ... and one of pod 1
  REQUIRE(t.routers[first_core].routes.same_page(t.routers[first_core + 5].routes, 0));
}
