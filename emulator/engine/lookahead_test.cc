#include "emulator/engine/lookahead.h"

#include <catch2/catch.hpp>

#include "emulator/config/router_factory.h"

using namespace flexplane;

TEST_CASE("a rack's promise: arrivals of possibly-remote packets, then the source's quiet time", "[lookahead]") {
  RackPromise r;
  r.latency = 2;
  // Nothing promised yet: what was sent at 0 may leave the rack; it arrives at 2.
  r.update(0, 50);
  REQUIRE(r.earliest_remote_arrival(0) == 1);
  REQUIRE(r.earliest_remote_arrival(1) == 2);
  // From 2 on, only the promise counts: quiet until 50, arriving at 52.
  REQUIRE(r.earliest_remote_arrival(2) == 52);
  // Sends while the promise holds change nothing.
  for (Timeslot t = 1; t <= 10; ++t) r.update(t, 50);
  REQUIRE(r.earliest_remote_arrival(10) == 52);
  // Once the promised time comes, the rack may send out again.
  r.update(50, 51);
  REQUIRE(r.earliest_remote_arrival(50) == 51);
  r.update(51, kNoRemoteTraffic);
  REQUIRE(r.earliest_remote_arrival(53) == kNoRemoteTraffic + 2);
}

namespace {

// Generic router that forwards nothing and does not route by table.
class OpaqueRouter final : public Router {
 public:
  void bind(const RouterEnv& env) override { bank_.reset(env.num_ports, 1, 4); }
  void input(Packet*, uint32_t, Timeslot) override {}
  uint32_t output(Timeslot, Packet*, PortId*) override { return 0; }
  const QueueBank& bank() const override { return bank_; }
  const RouterLosses& losses() const override { return losses_; }
  RouterLosses losses_;

 private:
  QueueBank bank_;
};

// Two racks of two endpoints and one spine, all links 1 timeslot. Routers:
// tor0, tor1, spine; by default on cores 0, 1 and 0. Ports: a ToR's
// endpoints are 0-1 and its uplink 2; the spine's port r leads to tor r.
struct TwoRacks {
  Topology topo = make_leaf_spine(2, 2, 1, 1, 1);
  std::vector<std::unique_ptr<Router>> routers;
  std::vector<std::unique_ptr<Link>> link_storage;
  std::vector<DirectedLink> links;
  RackPromise rack0, rack1;
  std::vector<uint32_t> core = {0, 1, 0};
  // What each of 3 cores has published: watermark, promise to each core.
  std::atomic<Timeslot> next[3] = {};
  std::atomic<Timeslot> promise[3][3] = {};

  explicit TwoRacks(bool opaque_spine = false) {
    for (uint32_t r = 0; r < 3; ++r) {
      if (r == 2 && opaque_spine) {
        routers.push_back(std::make_unique<OpaqueRouter>());
      } else {
        RouterSpec spec;
        spec.where = "test";
        spec.scheme = "droptail";
        routers.push_back(build_router(spec));
      }
      RouterEnv env;
      env.router_id = r;
      env.num_ports = topo.routers[r].num_ports;
      env.routes = &topo.routers[r].routes;
      routers.back()->bind(env);
    }
    for (const RouterLink& rl : topo.router_links)
      for (auto [from, to] : {std::pair{rl.a, rl.b}, std::pair{rl.b, rl.a}}) {
        link_storage.push_back(std::make_unique<Link>());
        link_storage.back()->init(1, 8);
        links.push_back(DirectedLink{from, to, link_storage.back().get()});
      }
  }
  Link& link(uint32_t from_router, uint32_t to_router) {
    for (auto& l : links)
      if (l.from.router == from_router && l.to.router == to_router) return *const_cast<Link*>(l.link);
    FAIL("no such link");
    return *link_storage[0];
  }
  // What core `from` promises core `to` after timeslot `now`.
  Timeslot promise_of(uint32_t from, uint32_t to, Timeslot now) {
    std::vector<const Router*> rs = {routers[0].get(), routers[1].get(), routers[2].get()};
    std::vector<CoreProgress> cores(3);
    for (uint32_t c = 0; c < 3; ++c) {
      cores[c].next = &next[c];
      for (uint32_t d = 0; d < 3; ++d) cores[c].promise_to.push_back(&promise[c][d]);
    }
    std::vector<LookaheadPlan> plans = LookaheadPlan::build(topo, core, rs, links, {&rack0, &rack1, nullptr}, cores);
    std::vector<Timeslot> by_core(3);
    plans[from].promises(now, by_core);
    return by_core[to];
  }
  Timeslot promise_to_core1(Timeslot now) { return promise_of(0, 1, now); }
  static Packet to(EndpointId dst) {
    Packet p{};
    p.src = 0;
    p.dst = dst;
    p.size_bytes = 1500;
    return p;
  }
};

}  // namespace

TEST_CASE("a core's promise follows its rack's promise through the routing tables", "[lookahead]") {
  TwoRacks net;
  SECTION("a rack that never sends out of itself: idle for good") {
    net.rack0.update(0, kNoRemoteTraffic);
    REQUIRE(net.promise_to_core1(5) == kNoRemoteTraffic);
  }
  SECTION("quiet until 100: tor0 sends up at 101, the spine at 102, tor1 sees it at 103") {
    // tor1's own uplink brings the spine only rack 0's packets, which never
    // go to tor1: core 1 itself does not hold the promise back.
    net.rack0.update(0, 100);
    REQUIRE(net.promise_to_core1(5) == 103);
  }
  SECTION("a rack that may have sent out at 5: the earliest arrival at tor1 is 8") {
    net.rack0.update(5, 100);
    REQUIRE(net.promise_to_core1(5) == 8);
  }
}

TEST_CASE("queued and in-flight packets cut a promise short", "[lookahead]") {
  TwoRacks net;
  net.rack0.update(0, kNoRemoteTraffic);
  SECTION("a packet queued at the spine for tor1 may leave next timeslot") {
    Packet p = TwoRacks::to(3);
    net.routers[2]->input(&p, 1, 5);
    REQUIRE(net.promise_to_core1(5) == 7);
  }
  SECTION("a packet queued at the spine for tor0 does not") {
    Packet p = TwoRacks::to(1);
    net.routers[2]->input(&p, 1, 5);
    REQUIRE(net.promise_to_core1(5) == kNoRemoteTraffic);
  }
  SECTION("a packet queued at tor0 for the uplink goes through the spine") {
    Packet p = TwoRacks::to(2);
    net.routers[0]->input(&p, 1, 5);
    REQUIRE(net.promise_to_core1(5) == 8);
  }
  SECTION("a packet in flight from tor0 reaches the spine at 7, tor1 at 8") {
    REQUIRE(net.link(0, 2).put(6, TwoRacks::to(3)));
    REQUIRE(net.promise_to_core1(6) == 8);
  }
}

TEST_CASE("a router that does not forward by table promises only the next timeslot", "[lookahead]") {
  TwoRacks net(/*opaque_spine=*/true);
  net.rack0.update(0, kNoRemoteTraffic);
  REQUIRE(net.promise_to_core1(5) == 7);
}

TEST_CASE("a spine on a core of its own builds on the promises of the ToRs' cores", "[lookahead]") {
  // tor0 on core 0, tor1 on core 1, the spine on core 2. What reaches tor1
  // from the spine comes over tor0's uplink, from core 0.
  TwoRacks net;
  net.core = {0, 1, 2};
  const Timeslot now = 20;
  SECTION("core 0 has run up to 20 and promised its uplink idle until 100: tor1 sees nothing before 101") {
    net.next[0] = 21;
    net.promise[0][2] = 100;
    REQUIRE(net.promise_of(2, 1, now) == 101);
  }
  SECTION("a packet core 0 already sent, arriving at 21: tor1 may see it at 22") {
    net.next[0] = 21;
    net.promise[0][2] = 100;
    REQUIRE(net.link(0, 2).put(20, TwoRacks::to(3)));
    REQUIRE(net.promise_of(2, 1, now) == 22);
  }
  SECTION("core 0 is behind (has run up to 9) with no promise: only what the watermark says") {
    net.next[0] = 10;
    REQUIRE(net.promise_of(2, 1, now) == 22);  // the spine may send next timeslot
  }
  SECTION("core 0 is far ahead with no promise: nothing past the part looked at (16 timeslots)") {
    net.next[0] = 60;
    REQUIRE(net.promise_of(2, 1, now) == 21 + 16 + 1);
  }
  SECTION("the promise to core 0 ignores core 0's own uplink: rack 0's packets never come back down") {
    net.next[1] = 21;
    net.promise[1][2] = 100;  // tor1's uplink idle until 100
    REQUIRE(net.promise_of(2, 0, now) == 101);
  }
}
